#version 450
// affine: y[i] = a*x[i] + b for i < n; a user kernel for the root package's
// tests (LoadKernel, Launch, capture of a user kernel).
// Bindings: 0 x (read), 1 y (write). Push: a float32, b float32, n uint32.
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { float a; float b; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) y[i] = pc.a * x[i] + pc.b;
}
