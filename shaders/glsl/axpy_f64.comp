#version 450
// axpy_f64: y[i] = a*x[i] + y[i] for i < n.
// Elements are float64, loaded, computed and stored in float64
// (shaderFloat64).
// x may be y (in place).
// Bindings: 0 x (read), 1 y (read-write). Push: a float64, n uint32.
// One element per invocation; groups: ceil(n/256), spread over y past the x limit.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { double x[]; };
layout(std430, set = 0, binding = 1) buffer Y { double y[]; };
layout(push_constant) uniform Push { double a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n) return;
    y[i] = pc.a * x[i] + y[i];
}
