#version 450
// fill: d = value over a shape of up to MAXR axes (the layout and row rules
// of binary.comp): every element, or with dynamic rows those of the first
// rows the Rows binding holds. value is the element's bits in the push
// words lo, hi (Float16's in lo's low 16 bits, float64's in both), so
// every value but a Float16 NaN's payload is written exactly.
// flags: 1 dynamic rows, 8 d contiguous.
#include "types.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) writeonly buffer D { ST d[]; };
layout(std430, set = 0, binding = 1) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint rank, flags, perGroup, offD, lo, hi;
    uint shape[MAXR];
    uint sD[MAXR];
} pc;

ST value() {
#if defined(T_F16)
    return float16_t(unpackHalf2x16(pc.lo).x);
#elif defined(T_F64)
    return packDouble2x32(uvec2(pc.lo, pc.hi));
#elif defined(T_I32)
    return int(pc.lo);
#elif defined(T_U32)
    return pc.lo;
#else
    return uintBitsToFloat(pc.lo);
#endif
}

void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.shape[0]) : pc.shape[0];
    uint inner = 1u;
    for (uint ax = 1u; ax < pc.rank; ++ax) inner *= pc.shape[ax];
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * inner;
    ST v = value();
    if ((pc.flags & 8u) != 0u) { // contiguous: no index arithmetic
        for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG)
            d[pc.offD + e] = v;
        return;
    }
    for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG) {
        uint at = pc.offD;
        uint rem = e;
        for (uint ax = pc.rank - 1u; ax > 0u; --ax) {
            at += (rem % pc.shape[ax]) * pc.sD[ax];
            rem /= pc.shape[ax];
        }
        d[at + rem * pc.sD[0]] = v;
    }
}
