#version 450
// binary: o = a op b element-wise over a shape of up to MAXR axes, each
// operand with its own offset and strides (a stride of 0 broadcasts).
// Group g covers rows [g*perGroup, (g+1)*perGroup) of axis 0, clipped to
// the row count: shape[0], or (dynamic) min(rows, shape[0]) read from the
// Rows binding when the launch runs. An operand flagged contiguous is
// addressed as offset + element index, with no index arithmetic.
// op: 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum. Integer division
// truncates toward zero and gives 0 for a zero divisor.
// flags: 1 dynamic rows, 2 a contiguous, 4 b contiguous, 8 o contiguous.
// With LINEAR defined, the fast path for contiguous operands instead
// (linear.glsl).
#include "types.glsl"
#ifndef LINEAR
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer A { ST a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { ST b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { ST o[]; };
layout(std430, set = 0, binding = 3) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint op, rank, flags, perGroup;
    uint offA, offB, offO;
    uint shape[MAXR];
    uint sA[MAXR];
    uint sB[MAXR];
    uint sO[MAXR];
} pc;
#endif

CT apply(uint op, CT x, CT y) {
    switch (op) {
    case 0u: return x + y;
    case 1u: return x - y;
    case 2u: return x * y;
    case 3u:
#ifdef IS_FLOAT
        return x / y;
#else
        return y == CT(0) ? CT(0) : x / y;
#endif
    case 4u: return max(x, y);
    default: return min(x, y);
    }
}

#ifdef LINEAR
#define BINARY 1
#define ELEM(u, v, alpha) apply(pc.op, u, v)
#include "linear.glsl"
#else
void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.shape[0]) : pc.shape[0];
    uint inner = 1u;
    for (uint ax = 1u; ax < pc.rank; ++ax) inner *= pc.shape[ax];
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * inner;
    bool ca = (pc.flags & 2u) != 0u, cb = (pc.flags & 4u) != 0u, co = (pc.flags & 8u) != 0u;
    if (ca && cb && co) { // every operand contiguous: no index arithmetic
        for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG)
            o[pc.offO + e] = ST(apply(pc.op, CT(a[pc.offA + e]), CT(b[pc.offB + e])));
        return;
    }
    for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG) {
        uvec3 at = uvec3(pc.offA, pc.offB, pc.offO);
        uint rem = e;
        for (uint ax = pc.rank - 1u; ax > 0u; --ax) {
            uint c = rem % pc.shape[ax];
            rem /= pc.shape[ax];
            at += c * uvec3(pc.sA[ax], pc.sB[ax], pc.sO[ax]);
        }
        at += rem * uvec3(pc.sA[0], pc.sB[0], pc.sO[0]);
        uint ia = ca ? pc.offA + e : at.x;
        uint ib = cb ? pc.offB + e : at.y;
        uint io = co ? pc.offO + e : at.z;
        o[io] = ST(apply(pc.op, CT(a[ia]), CT(b[ib])));
    }
}
#endif
