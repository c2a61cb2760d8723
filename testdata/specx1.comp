#version 450
// specx1: y[i] = x[i] * K + gl_WorkGroupSize.x for i < n, with the
// workgroup's x size set by specialization constant 1 and an unrelated
// constant K with ID 0: a requested workgroup size sets constant 1 only.
// Bindings: 0 x (read), 1 y (write). Push: n uint32.
layout(local_size_x = 16, local_size_x_id = 1) in;
layout(constant_id = 0) const uint K = 3;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = x[i] * float(K) + float(gl_WorkGroupSize.x);
}
