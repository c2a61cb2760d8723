#version 450
// saxpy: y[i] = a*x[i] + y[i] for i < n.
// x is readonly and y is read and written, so LoadKernel derives the
// bindings [read read-write]; the push-constant block is 8 bytes.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { float a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = pc.a * x[i] + y[i];
}
