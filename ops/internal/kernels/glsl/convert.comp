#version 450
// convert: d = s converted to d's element type, element-wise over a shape
// of up to MAXR axes (the layout and row rules of binary.comp). The source
// type is chosen by S_F32, S_F16, S_F64, S_I32 or S_U32, the destination's
// by T_* (types.glsl). Same types copy (Transpose). Floats become integers
// truncated toward zero, saturated to the integer's range, NaN as 0;
// integers become integers keeping their 32 bits (two's complement, as Go
// and NumPy convert); float64 becomes Float16 through float32.
// flags: 1 dynamic rows, 2 s contiguous, 8 d contiguous.
#include "types.glsl"
#if defined(S_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define SST float16_t
#define S_FLOAT 1
#elif defined(S_F64)
#define SST double
#define S_FLOAT 1
#elif defined(S_I32)
#define SST int
#elif defined(S_U32)
#define SST uint
#else
#define SST float
#define S_FLOAT 1
#endif
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer S { SST s[]; };
layout(std430, set = 0, binding = 1) writeonly buffer D { ST d[]; };
layout(std430, set = 0, binding = 2) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint rank, flags, perGroup, offS, offD;
    uint shape[MAXR];
    uint sS[MAXR];
    uint sD[MAXR];
} pc;

ST convert(SST v) {
#if defined(S_FLOAT) && !defined(IS_FLOAT)
#if defined(S_F64)
    double f = v;
#else
    float f = float(v);
#endif
    if (isnan(f)) return ST(0);
#if defined(T_I32)
    if (f <= -2147483648.0) return -2147483647 - 1;
    if (f >= 2147483647.0) return 2147483647;
    return int(f);
#else
    if (f <= 0.0) return 0u;
    if (f >= 4294967295.0) return 4294967295u;
    return uint(f);
#endif
#elif defined(T_F16) && defined(S_F64)
    return ST(float(v));
#else
    return ST(v);
#endif
}

void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.shape[0]) : pc.shape[0];
    uint inner = 1u;
    for (uint ax = 1u; ax < pc.rank; ++ax) inner *= pc.shape[ax];
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * inner;
    bool cs = (pc.flags & 2u) != 0u, cd = (pc.flags & 8u) != 0u;
    if (cs && cd) { // both contiguous: no index arithmetic
        for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG)
            d[pc.offD + e] = convert(s[pc.offS + e]);
        return;
    }
    for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG) {
        uvec2 at = uvec2(pc.offS, pc.offD);
        uint rem = e;
        for (uint ax = pc.rank - 1u; ax > 0u; --ax) {
            uint c = rem % pc.shape[ax];
            rem /= pc.shape[ax];
            at += c * uvec2(pc.sS[ax], pc.sD[ax]);
        }
        at += rem * uvec2(pc.sS[0], pc.sD[0]);
        d[cd ? pc.offD + e : at.y] = convert(s[cs ? pc.offS + e : at.x]);
    }
}
