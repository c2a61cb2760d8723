// unary.glsl: y = f(x) element-wise over a shape of up to MAXR axes (the
// layout and row rules of binary.comp), or with AXPY defined y = alpha*x + y.
// op (unary): 0 exp, 1 log, 2 sqrt, 3 tanh, 4 sigmoid, 5 relu, 6 gelu (tanh
// form), 7 gelu (erf form), 8 silu, 9 scale (alpha*x). The transcendental
// ops (0, 1, 3, 4, 6, 7, 8) exist for float32 and Float16 only: GLSL has no
// double exp.
// alpha: the push words alphaLo/alphaHi, or (flag 16) the Alpha binding's
// value when the launch runs.
// flags: 1 dynamic rows, 2 x contiguous, 8 y contiguous, 16 alpha param.
// With LINEAR defined, the fast path for contiguous operands instead
// (linear.glsl).

#ifndef LINEAR
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { ST x[]; };
#ifdef AXPY
layout(std430, set = 0, binding = 1) buffer Y { ST y[]; };
#else
layout(std430, set = 0, binding = 1) writeonly buffer Y { ST y[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer Rows { uint rowsDyn; };
layout(std430, set = 0, binding = 3) readonly buffer Alpha { PT alphaDyn; };
layout(push_constant) uniform Push {
    uint op, rank, flags, perGroup;
    uint offX, offY, alphaLo, alphaHi;
    uint shape[MAXR];
    uint sX[MAXR];
    uint sY[MAXR];
} pc;
#endif

#if !defined(T_F64)
// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
float erfApprox(float v) {
    float s = sign(v), t = 1.0 / (1.0 + 0.3275911 * abs(v));
    float p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return s * (1.0 - p * exp(-v * v));
}

// tanhStable is tanh with no overflow for large |v|: exp(-2|v|) is at most 1.
float tanhStable(float v) {
    if (abs(v) < 0.625) { // near 0, where 1 - exp(-2|v|) would cancel
        // Taylor to v^19: the first term left out is below 2^-26 of the
        // result here (to v^11 it reached 2^-17 near 0.6).
        float v2 = v * v;
        float p = -443861162.0 / 1856156927625.0;
        p = 6404582.0 / 10854718875.0 + v2 * p;
        p = -929569.0 / 638512875.0 + v2 * p;
        p = 21844.0 / 6081075.0 + v2 * p;
        p = -1382.0 / 155925.0 + v2 * p;
        p = 62.0 / 2835.0 + v2 * p;
        p = -17.0 / 315.0 + v2 * p;
        p = 2.0 / 15.0 + v2 * p;
        p = -1.0 / 3.0 + v2 * p;
        return v * (1.0 + v2 * p);
    }
    float t = exp(-2.0 * abs(v));
    return sign(v) * (1.0 - t) / (1.0 + t);
}

float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }
#endif

CT apply(uint op, CT v, CT alpha) {
    switch (op) {
#if !defined(T_F64)
    case 0u: return exp(v);
    case 1u: return log(v);
    case 3u: return tanhStable(v);
    case 4u: return sigmoid(v);
    case 6u: return 0.5 * v * (1.0 + tanhStable(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case 7u: return 0.5 * v * (1.0 + erfApprox(v * 0.7071067811865476));
    case 8u: return v * sigmoid(v);
#endif
    case 2u: return sqrt(v);
    case 5u: return max(v, CT(0));
    default: return alpha * v;
    }
}

#ifdef LINEAR
#ifdef AXPY
#define ELEM(u, v, alpha) ((alpha) * (u) + (v))
#else
#define ELEM(u, v, alpha) apply(pc.op, u, alpha)
#endif
#include "linear.glsl"
#else
void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.shape[0]) : pc.shape[0];
    CT alpha = CT((pc.flags & 16u) != 0u ? alphaDyn : scalarOf(pc.alphaLo, pc.alphaHi));
    uint inner = 1u;
    for (uint ax = 1u; ax < pc.rank; ++ax) inner *= pc.shape[ax];
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * inner;
    bool cx = (pc.flags & 2u) != 0u, cy = (pc.flags & 8u) != 0u;
    if (cx && cy) { // both contiguous: no index arithmetic
        for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG) {
#ifdef AXPY
            y[pc.offY + e] = ST(alpha * CT(x[pc.offX + e]) + CT(y[pc.offY + e]));
#else
            y[pc.offY + e] = ST(apply(pc.op, CT(x[pc.offX + e]), alpha));
#endif
        }
        return;
    }
    for (uint e = r0 * inner + gl_LocalInvocationID.x; e < end; e += WG) {
        uvec2 at = uvec2(pc.offX, pc.offY);
        uint rem = e;
        for (uint ax = pc.rank - 1u; ax > 0u; --ax) {
            uint c = rem % pc.shape[ax];
            rem /= pc.shape[ax];
            at += c * uvec2(pc.sX[ax], pc.sY[ax]);
        }
        at += rem * uvec2(pc.sX[0], pc.sY[0]);
        uint ix = cx ? pc.offX + e : at.x;
        uint iy = cy ? pc.offY + e : at.y;
#ifdef AXPY
        y[iy] = ST(alpha * CT(x[ix]) + CT(y[iy]));
#else
        y[iy] = ST(apply(pc.op, CT(x[ix]), alpha));
#endif
    }
}
#endif
