#version 450
// spin: y[i] = y[i]*0.999 + 1, repeated count times, for i < n: a kernel
// whose device cost is linear in a pushed loop count, for the checks of
// device time. Bindings: 0 y (read-write). Push: n, count uint32.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; uint count; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    float v = y[i];
    for (uint k = 0u; k < pc.count; k++) {
        v = v * 0.999 + 1.0;
    }
    y[i] = v;
}
