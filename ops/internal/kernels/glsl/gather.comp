#version 450
// gather: o[i, :] = table[idx[i], :] for rows i < N (an embedding lookup).
// table is V rows of D elements, idx N uint32 (an int32's bits: a negative
// index is past V), o N rows of D; each with an offset and strides. A row
// whose index is V or more is written as zeros. Group g covers rows
// [g*perGroup, (g+1)*perGroup); with flag 1 N is min(rows, N) read when
// the launch runs.
#include "types.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Table { ST table[]; };
layout(std430, set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { ST o[]; };
layout(std430, set = 0, binding = 3) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint flags, perGroup, N, V, D;
    uint offT, sTr, sTc, offI, sI, offO, sOr, sOc;
} pc;

void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.N) : pc.N;
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * pc.D;
    for (uint e = r0 * pc.D + gl_LocalInvocationID.x; e < end; e += WG) {
        uint i = e / pc.D, c = e % pc.D;
        uint v = idx[pc.offI + i * pc.sI];
        o[pc.offO + i * pc.sOr + c * pc.sOc] = v < pc.V ? table[pc.offT + v * pc.sTr + c * pc.sTc] : ST(0);
    }
}
