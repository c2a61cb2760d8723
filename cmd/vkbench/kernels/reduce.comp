#version 450
// reduce.wgsl in GLSL, statement for statement: the kernels suite times
// the two modules on the same input, so the gap between them is the
// translators'.

layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer P { float partial[]; };

const uint WG = 256u;

shared float sums[WG];

void main() {
    uint li = gl_LocalInvocationIndex;
    uint wid = gl_WorkGroupID.x;
    uint n = uint(x.length());
    float acc = 0.0;
    for (uint i = wid * WG + li; i < n; i += gl_NumWorkGroups.x * WG) {
        acc += x[i];
    }
    sums[li] = acc;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (li < s) {
            sums[li] += sums[li + s];
        }
        barrier();
    }
    if (li == 0u) {
        partial[wid] = sums[0];
    }
}
