#version 450
// rownorm: Softmax, LayerNorm and RMSNorm over the last axis of up to MAXR
// axes. Row q (the row-major index over every axis but the last) is
// reduced by one workgroup, its lanes striding over its C elements, with
// trees in shared memory between the passes; each lane writes only
// elements it read itself, after the row's reductions, so y may be x.
// Group g covers rows [g*perGroup, (g+1)*perGroup), and those a multiple
// of the dispatch's groups times perGroup on, so that a dispatch of any
// size covers every row. With flag 1 axis 0's extent is min(rows,
// shape[0]) read when the launch runs; with flag 16 the normalised axis's
// (C) is, so each row covers its first min(rows, C) elements.
// op 0 softmax: y = exp(x - max) / sum(exp(x - max));
// op 1 layernorm: y = (x - mean) / sqrt(var + eps) * w + b (var: the mean
//      of the squared deviations, the biased estimate);
// op 2 rmsnorm: y = x / sqrt(mean(x^2) + eps) * w + b.
// w and b are vectors of C elements (offset and stride each), used when
// flags 2 and 4 say so; eps is the push words or (flag 8) the Eps binding.
// flags: 1 dynamic rows, 2 has w, 4 has b, 8 eps param, 16 dynamic C,
// 32 lane rows.
// With flag 32 (short rows, or a share of more rows than a group a row
// can take) each lane instead walks whole rows of its group's share
// alone, with no shared memory or barrier: one group a row would leave
// most lanes idle and make each lane loop over every row of the share,
// and a CPU driver (llvmpipe) cuts an invocation's loops short after a
// fixed number of iterations, all loops together.
#include "types.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { ST x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { ST y[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { ST w[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { ST bias[]; };
layout(std430, set = 0, binding = 4) readonly buffer Rows { uint rowsDyn; };
layout(std430, set = 0, binding = 5) readonly buffer Eps { PT epsDyn; };
layout(push_constant) uniform Push {
    uint op, rank, flags, perGroup;
    uint offX, offY, offW, offB;
    uint sW, sB, epsLo, epsHi;
    uint shape[MAXR];
    uint sX[MAXR];
    uint sY[MAXR];
} pc;

shared CT part[64];

// total is the sum (or, with takeMax, the largest) of every lane's v.
CT total(CT v, bool takeMax) {
    uint lid = gl_LocalInvocationID.x;
    barrier(); // the previous total's readers are done with part
    part[lid] = v;
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
        if (lid < half_) part[lid] = takeMax ? max(part[lid], part[lid + half_]) : part[lid] + part[lid + half_];
        barrier();
    }
    return part[0];
}

// rowAt is where row q starts in x and y.
uvec2 rowAt(uint q) {
    uvec2 at = uvec2(pc.offX, pc.offY);
    uint rem = q;
    for (uint ax = pc.rank - 1u; ax > 0u; --ax) {
        uint c = rem % pc.shape[ax - 1u];
        rem /= pc.shape[ax - 1u];
        at += c * uvec2(pc.sX[ax - 1u], pc.sY[ax - 1u]);
    }
    return at;
}

// reduce is v summed (or, with takeMax, the largest) over the lanes that
// share a row: every lane of the group, or the lane alone (lane rows).
CT reduce(CT v, bool takeMax, bool lane) {
    return lane ? v : total(v, takeMax);
}

// row normalises row q of C elements, its lanes taking elements i0, i0 +
// di, ... (lid and WG for a group a row, 0 and 1 for lane rows).
void row(uint q, uint C, CT eps, uint i0, uint di, bool lane) {
    uvec2 at = rowAt(q);
    uint last = pc.rank - 1u, sx = pc.sX[last], sy = pc.sY[last];
    bool hasW = (pc.flags & 2u) != 0u, hasB = (pc.flags & 4u) != 0u;
    CT center = CT(0), inv = CT(1);
    if (pc.op == 0u) {
#if !defined(T_F64)
        CT m = CT(x[at.x]);
        for (uint i = i0; i < C; i += di) m = max(m, CT(x[at.x + i * sx]));
        m = reduce(m, true, lane);
        CT s = CT(0);
        for (uint i = i0; i < C; i += di) s += exp(CT(x[at.x + i * sx]) - m);
        s = reduce(s, false, lane);
        center = m;
        inv = CT(1) / s;
#endif
    } else {
        if (pc.op == 1u) {
            CT s = CT(0);
            for (uint i = i0; i < C; i += di) s += CT(x[at.x + i * sx]);
            center = reduce(s, false, lane) / CT(C);
        }
        CT s2 = CT(0);
        for (uint i = i0; i < C; i += di) {
            CT d = CT(x[at.x + i * sx]) - center;
            s2 += d * d;
        }
        inv = inversesqrt(reduce(s2, false, lane) / CT(C) + eps);
    }
    if (!lane) barrier(); // every lane's reads of x come before any lane's writes of y
    for (uint i = i0; i < C; i += di) {
        CT v = CT(x[at.x + i * sx]) - center;
#if !defined(T_F64)
        if (pc.op == 0u) v = exp(v);
#endif
        v *= inv;
        if (hasW) v *= CT(w[pc.offW + i * pc.sW]);
        if (hasB) v += CT(bias[pc.offB + i * pc.sB]);
        y[at.y + i * sy] = ST(v);
    }
}

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint last = pc.rank - 1u, C = pc.shape[last];
    if ((pc.flags & 16u) != 0u) C = min(rowsDyn, C);
    uint outer = 1u; // rows per index of axis 0
    for (uint ax = 1u; ax < last; ++ax) outer *= pc.shape[ax];
    uint lead = pc.rank > 1u ? pc.shape[0] : 1u;
    if (pc.rank > 1u && (pc.flags & 1u) != 0u) lead = min(rowsDyn, pc.shape[0]);
    uint rows = lead * outer;
    CT eps = CT((pc.flags & 8u) != 0u ? epsDyn : scalarOf(pc.epsLo, pc.epsHi));
    uint stride = gl_NumWorkGroups.x * pc.perGroup;
    if ((pc.flags & 32u) != 0u) {
        for (uint q0 = gl_WorkGroupID.x * pc.perGroup; q0 < rows; q0 += stride)
        for (uint q = q0 + lid; q < min(rows, q0 + pc.perGroup); q += WG) row(q, C, eps, 0u, 1u, true);
        return;
    }
    for (uint q0 = gl_WorkGroupID.x * pc.perGroup; q0 < rows; q0 += stride)
    for (uint q = q0; q < min(rows, q0 + pc.perGroup); ++q) row(q, C, eps, lid, WG, false);
}
