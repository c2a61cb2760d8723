#version 450
// matmul_coopmat: C = act(A·B + bias) through the device's cooperative
// matrices (VK_KHR_cooperative_matrix: the tensor cores and matrix units
// of GPUs). A workgroup is one subgroup and keeps a block of WM x WN
// tiles of C, each TM x TN, in accumulator matrices; per step of TK along
// K it stages a block of A and of B in shared memory (converted to the
// matrices' input type, zero past the edges), so any layout, stride and
// size is taken: the staging is where strides and edges are handled,
// the multiply-adds run on whole tiles. The tile sizes and the subgroup
// size are specialization constants, from the device's configuration.
// The workgroup is the subgroup size the device reports; a driver that
// runs it as several smaller subgroups has each compute the same tiles,
// and the first alone stores them.
//
// Types: the inputs' matrices are ELEM (float16_t with -DELEM_F16, else
// float), the accumulators float32 (ACC); C is rounded once at the end.
// With -DELEM_I8 (MatmulInt8's build) A and B are int8, the sums and C
// int32, and there is no bias or activation.
//
// Groups: x = ceil(N / (WN*TN)), y = ceil(M / (WM*TM)), z = batches.
// Bindings: 0 A, 1 B (read); 2 C (write); 3 bias (read; not with
// -DELEM_I8).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef ELEM_I8
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#define ELEM int8_t
#define ACC int
#define COUT int
#else
#include "matmul_common.glsl"
#define COUT ELEM
#endif

layout(constant_id = 0) const uint SG = 32u; // the subgroup size: one subgroup per workgroup
layout(constant_id = 1) const uint TM = 16u; // the configuration's M, N and K
layout(constant_id = 2) const uint TN = 16u;
layout(constant_id = 3) const uint TK = 16u;
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer A_ { ELEM a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B_ { ELEM b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C_ { COUT c[]; };
#ifndef ELEM_I8
layout(std430, set = 0, binding = 3) readonly buffer Bias_ { ELEM bias[]; };
#endif
layout(push_constant) uniform Push {
    uint M, N, K, kSplit;
    uint aOff, aM, aK, aB; // A[b][m][k] at aOff + b*aB + m*aM + k*aK
    uint bOff, bK, bN, bB;
    uint cOff, cM, cN, cB;
    uint biasOff, biasN, act, splits; // bias[n] at biasOff + n*biasN; act: activation code
    uint flags;                        // bit 0: add the bias
} pc;

const uint WM = 2u, WN = 2u;
const uint BM = WM * TM, BN = WN * TN;

shared ELEM As[BM * TK];
shared ELEM Bs[TK * BN];
shared ACC Cs[BM * BN];

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN, batch = gl_WorkGroupID.z;
    uint aBase = pc.aOff + batch * pc.aB, bBase = pc.bOff + batch * pc.bB;
    coopmat<ACC, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> acc[WM][WN];
    [[unroll]] for (uint i = 0u; i < WM; ++i)
        [[unroll]] for (uint j = 0u; j < WN; ++j) acc[i][j] = coopmat<ACC, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(ACC(0));
    for (uint k0 = 0u; k0 < pc.K; k0 += TK) {
        // Branches, not a select: no load past A's or B's edge is made.
        for (uint e = lane; e < BM * TK; e += SG) {
            uint r = row0 + e / TK, k = k0 + e % TK;
            ELEM v = ELEM(0);
            if (r < pc.M && k < pc.K) v = a[aBase + r * pc.aM + k * pc.aK];
            As[e] = v;
        }
        for (uint e = lane; e < TK * BN; e += SG) {
            uint k = k0 + e / BN, col = col0 + e % BN;
            ELEM v = ELEM(0);
            if (k < pc.K && col < pc.N) v = b[bBase + k * pc.bK + col * pc.bN];
            Bs[e] = v;
        }
        barrier();
        coopmat<ELEM, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ma[WM];
        [[unroll]] for (uint i = 0u; i < WM; ++i) coopMatLoad(ma[i], As, i * TM * TK, TK, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
            coopmat<ELEM, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> mb;
            coopMatLoad(mb, Bs, j * TN, BN, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0u; i < WM; ++i) acc[i][j] = coopMatMulAdd(ma[i], mb, acc[i][j]);
        }
        barrier();
    }
    if (gl_SubgroupID == 0u) {
        [[unroll]] for (uint i = 0u; i < WM; ++i)
            [[unroll]] for (uint j = 0u; j < WN; ++j) coopMatStore(acc[i][j], Cs, i * TM * BN + j * TN, BN, gl_CooperativeMatrixLayoutRowMajor);
    }
    barrier();
    uint cBase = pc.cOff + batch * pc.cB;
    for (uint e = lane; e < BM * BN; e += SG) {
        uint r = row0 + e / BN, col = col0 + e % BN;
        if (r >= pc.M || col >= pc.N) continue;
#ifdef ELEM_I8
        c[cBase + r * pc.cM + col * pc.cN] = Cs[e];
#else
        ACC v = Cs[e];
        if ((pc.flags & 1u) != 0u) v += ACC(bias[pc.biasOff + col * pc.biasN]);
        c[cBase + r * pc.cM + col * pc.cN] = ELEM(activate(v, pc.act));
#endif
    }
}
