#version 450
// matmul_gemv (float32): the matrix-vector products, m = 1 or n = 1, as
// y[j] = act(sum_k v[k] * W[j][k] + bias[j]), W being B seen as n x k
// (m = 1) or A (n = 1). Bandwidth-bound: each element of W is read once,
// eight at a time (four 64-bit lanes) where its layout allows, since on a
// CPU driver every load whose address differs per invocation is a loop
// over the SIMD lanes.
//
// Two forms, by W's layout (push mode):
//   0 dot:  W's k stride is 1; invocation j forms the dot product of row j
//           with v, eight k at a time (flag 2: W's offset, j and batch
//           strides are multiples of 8), then the K % 8 tail one by one;
//   1 axpy: W's j stride is 1; invocation o keeps y[8o .. 8o+7] and adds
//           v[k] times W's eight elements of step k (flag 2: W's offset, k
//           and batch strides are multiples of 8, and the octet past J of
//           the last step lies inside W's buffer; the host checks it).
// Flag 1 adds the bias. Any J, K and batches; v and y any strides.
// Groups: x = ceil(J / 64) (dot) or ceil(ceil(J/8) / 64) (axpy), z = batches.
//
// Bindings: 0 W, 1 v (read), 2 y (write), 3 bias (read).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "matmul_common.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer W_ { float w[]; };
layout(std430, set = 0, binding = 0) readonly buffer W8_ { u64vec4 w8[]; };
layout(std430, set = 0, binding = 1) readonly buffer V_ { float v[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y_ { float y[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias_ { float bias[]; };
layout(push_constant) uniform Push {
    uint J, K, mode, flags;
    uint wOff, wJ, wK, wB;
    uint vOff, vK, vB, unused;
    uint yOff, yJ, yB, act;
    uint biasOff, biasJ;
} pc;

vec2 floats(uint64_t x) { return uintBitsToFloat(unpackUint2x32(x)); }

void store(uint batch, uint j, float s) {
    if ((pc.flags & 1u) != 0u) s += bias[pc.biasOff + j * pc.biasJ];
    y[pc.yOff + batch * pc.yB + j * pc.yJ] = activate(s, pc.act);
}

void main() {
    uint J = pc.J;
    uint batch = gl_WorkGroupID.z;
    uint vBase = pc.vOff + batch * pc.vB;
    uint wBase = pc.wOff + batch * pc.wB;
    bool wide = (pc.flags & 2u) != 0u;
    if (pc.mode == 0u) {
        uint j = gl_GlobalInvocationID.x;
        if (j >= J) return;
        uint row = wBase + j * pc.wJ;
        uint k8 = wide ? pc.K >> 3 : 0u;
        float s = 0.0;
        for (uint q = 0u; q < k8; ++q) {
            u64vec4 x = w8[(row >> 3) + q];
            uint k = vBase + 8u * q * pc.vK;
            vec2 p0 = floats(x.x), p1 = floats(x.y), p2 = floats(x.z), p3 = floats(x.w);
            float t = p0.x * v[k];
            t = fma(p0.y, v[k + pc.vK], t);
            t = fma(p1.x, v[k + 2u * pc.vK], t);
            t = fma(p1.y, v[k + 3u * pc.vK], t);
            t = fma(p2.x, v[k + 4u * pc.vK], t);
            t = fma(p2.y, v[k + 5u * pc.vK], t);
            t = fma(p3.x, v[k + 6u * pc.vK], t);
            t = fma(p3.y, v[k + 7u * pc.vK], t);
            s += t;
        }
        for (uint k = k8 * 8u; k < pc.K; ++k) s = fma(w[row + k], v[vBase + k * pc.vK], s);
        store(batch, j, s);
        return;
    }
    uint o = gl_GlobalInvocationID.x;
    uint n8 = (J + 7u) >> 3;
    if (o >= n8) return;
    vec4 lo = vec4(0.0), hi = vec4(0.0);
    if (wide) {
        uint base = (wBase >> 3) + o, step = pc.wK >> 3;
        for (uint k = 0u; k < pc.K; ++k) {
            u64vec4 x = w8[base + k * step];
            float vk = v[vBase + k * pc.vK];
            lo = fma(vec4(vk), vec4(floats(x.x), floats(x.y)), lo);
            hi = fma(vec4(vk), vec4(floats(x.z), floats(x.w)), hi);
        }
    } else {
        uint col[8];
        [[unroll]] for (uint e = 0u; e < 8u; ++e) col[e] = wBase + min(8u * o + e, J - 1u) * pc.wJ;
        for (uint k = 0u; k < pc.K; ++k) {
            float vk = v[vBase + k * pc.vK];
            uint kk = k * pc.wK;
            lo = fma(vec4(vk), vec4(w[col[0] + kk], w[col[1] + kk], w[col[2] + kk], w[col[3] + kk]), lo);
            hi = fma(vec4(vk), vec4(w[col[4] + kk], w[col[5] + kk], w[col[6] + kk], w[col[7] + kk]), hi);
        }
    }
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        if (8u * o + e < J) store(batch, 8u * o + e, lo[e]);
        if (8u * o + 4u + e < J) store(batch, 8u * o + 4u + e, hi[e]);
    }
}
