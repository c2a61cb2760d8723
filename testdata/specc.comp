#version 450
// specc: y[i] = x[i] * K for i < n, with a fixed workgroup size (64, not
// specializable) and an unrelated specialization constant K with ID 0: a
// requested workgroup size must leave K at 3.
// Bindings: 0 x (read), 1 y (write). Push: n uint32.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint K = 3;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = x[i] * float(K);
}
