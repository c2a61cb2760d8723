#version 450
// matmul_generic: C = act(A·B + bias) for any layout, any shape and any
// element type (-DELEM_F16, -DELEM_F64; float32 by default). A, B and C are
// read and written through element offsets and strides (push constants),
// so transposes, views and broadcast batches need no copy. Each
// invocation keeps a 4 x 4 block of C and loads one element at a time,
// clamping rows and columns past the edges for loads and storing only
// inside C: no size needs to be a multiple of anything.
//
// Groups: x = ceil(N / (4*W.x)), y = ceil(M / (4*W.y)), z = batches *
// splits; W is 16 x 8, and 8 x 1 with -DPARTIAL. With -DPARTIAL (split-K) group z's split s sums k in
// [s*kSplit, min(K, (s+1)*kSplit)) into partial sums P[z][M][N] in the
// accumulation type, with no bias or activation: matmul_reduce finishes.
//
// With -DDYNAMIC (the _dyn builds) M is min(rows, M), rows read from
// binding 4 when the launch runs: group x takes TM*W.y rows and all of N
// (an indirect launch sizes x alone), one batch and no split.
//
// Bindings: 0 A, 1 B (read); 2 C (write) and 3 bias (read), or 2 P (write)
// with -DPARTIAL; 4 rows (read) with -DDYNAMIC.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "matmul_common.glsl"
#ifdef PARTIAL
layout(local_size_x = 8, local_size_y = 1) in; // split-K's outputs are few: small groups, no idle lanes
#else
layout(local_size_x = 16, local_size_y = 8) in;
#endif
layout(std430, set = 0, binding = 0) readonly buffer A_ { ELEM a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B_ { ELEM b[]; };
#ifdef PARTIAL
layout(std430, set = 0, binding = 2) writeonly buffer P_ { ACC p[]; };
#else
layout(std430, set = 0, binding = 2) writeonly buffer C_ { ELEM c[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias_ { ELEM bias[]; };
#endif
#ifdef DYNAMIC
layout(std430, set = 0, binding = 4) readonly buffer Rows_ { uint rowsDyn; };
#endif
layout(push_constant) uniform Push {
    uint M, N, K, kSplit;
    uint aOff, aM, aK, aB; // A[b][m][k] at aOff + b*aB + m*aM + k*aK
    uint bOff, bK, bN, bB;
    uint cOff, cM, cN, cB;
    uint biasOff, biasN, act, splits; // bias[n] at biasOff + n*biasN; act: activation code
    uint flags;                        // bit 0: add the bias
} pc;

const uint TM = 4u, TN = 4u;

// tile computes the TM x TN block of C at row0, col0 of group z's batch
// and split, M rows in all.
void tile(uint M, uint row0, uint col0, uint z) {
    uint batch = z / pc.splits, split = z % pc.splits;
    uint k0 = split * pc.kSplit, k1 = min(pc.K, k0 + pc.kSplit);
    uint aBase[TM], bBase[TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i) aBase[i] = pc.aOff + batch * pc.aB + min(row0 + i, M - 1u) * pc.aM;
    [[unroll]] for (uint j = 0u; j < TN; ++j) bBase[j] = pc.bOff + batch * pc.bB + min(col0 + j, pc.N - 1u) * pc.bN;
    ACC acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i)
        [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = ACC(0);
    for (uint k = k0; k < k1; ++k) {
        ACC av[TM], bv[TN];
        [[unroll]] for (uint i = 0u; i < TM; ++i) av[i] = ACC(a[aBase[i] + k * pc.aK]);
        [[unroll]] for (uint j = 0u; j < TN; ++j) bv[j] = ACC(b[bBase[j] + k * pc.bK]);
        [[unroll]] for (uint i = 0u; i < TM; ++i)
            [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
        uint r = row0 + i;
        if (r >= M) break;
        [[unroll]] for (uint j = 0u; j < TN; ++j) {
            uint col = col0 + j;
            if (col >= pc.N) break;
#ifdef PARTIAL
            p[(z * pc.M + r) * pc.N + col] = acc[i][j];
#else
            ACC v = acc[i][j];
            if ((pc.flags & 1u) != 0u) v += ACC(bias[pc.biasOff + col * pc.biasN]);
            c[pc.cOff + batch * pc.cB + r * pc.cM + col * pc.cN] = ELEM(activate(v, pc.act));
#endif
        }
    }
}

void main() {
#ifdef DYNAMIC
    // Group x takes TM*W.y rows and every column block of them in turn:
    // an indirect launch sizes x alone, by the rows the param holds.
    uint M = min(rowsDyn, pc.M);
    uint row0 = (gl_WorkGroupID.x * gl_WorkGroupSize.y + gl_LocalInvocationID.y) * TM;
    if (row0 >= M) return;
    for (uint col0 = gl_LocalInvocationID.x * TN; col0 < pc.N; col0 += gl_WorkGroupSize.x * TN) tile(M, row0, col0, 0u);
#else
    uint row0 = gl_GlobalInvocationID.y * TM;
    uint col0 = gl_GlobalInvocationID.x * TN;
    if (row0 >= pc.M || col0 >= pc.N) return;
    tile(pc.M, row0, col0, gl_WorkGroupID.z);
#endif
}
