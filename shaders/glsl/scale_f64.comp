#version 450
// scale_f64: y[i] = a*x[i] for i < n.
// Elements are float64, loaded, computed and stored in float64
// (shaderFloat64).
// y is write-only: what it held before does not matter, so a launcher
// need not order it after y's earlier writes or inherit their failure.
// x may be y (in place: each invocation reads its element before writing it).
// Bindings: 0 x (read), 1 y (write). Push: a float64, n uint32.
// One element per invocation; groups: ceil(n/256), spread over y past the x limit.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { double x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { double y[]; };
layout(push_constant) uniform Push { double a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n) return;
    y[i] = pc.a * x[i];
}
