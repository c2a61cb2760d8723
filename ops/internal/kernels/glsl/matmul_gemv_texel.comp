#version 450
// matmul_gemv_texel (float32): matmul_gemv's products, m = 1 or n = 1,
// y[j] = act(sum_k v[k] * W[j][k] + bias[j]), with W and v read as rgba32f
// storage texels, for CPU drivers: lavapipe compiles a storage-buffer load
// whose address differs per lane into a loop over the lanes, but a texel
// load into one gather of each lane's 16 bytes. Groups of LOCAL (8,
// lavapipe's SIMD lanes) invocations.
//
// Two forms, by W's layout (push mode):
//   0 dot (n = 1, W = A): W's k stride is 1, row j at wOff + j * wS. A
//     group takes ROWS rows; invocation l takes texels l, l + 8, ... of
//     each row, so each texel of v it loads serves ROWS rows. The K % 4
//     tail goes one element a lane; invocation r then adds the group's
//     LOCAL partials of row r in a fixed order.
//   1 axpy (m = 1, W = B seen as n x k): W's j stride is 1, step k at
//     wOff + k * wS; invocation o keeps y[4o .. 4o+3] and adds v[k] times
//     W's texel of step k (the host checks that the last step's texel
//     past J lies inside W's buffer).
// wOff, wS and vOff are multiples of 4 (texel-aligned); v's k stride is 1.
// Flag 1 adds the bias. Groups: x = ceil(J / ROWS) (dot) or
// ceil(ceil(J / 4) / LOCAL) (axpy).
//
// Bindings: 0 W (texels), 1 W (elements, for the K % 4 tail), 2 v
// (texels), 3 v (elements), 4 y (write), 5 bias.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "matmul_common.glsl"
#define LOCAL 8
#define ROWS 8
layout(local_size_x = LOCAL) in;
layout(set = 0, binding = 0, rgba32f) readonly uniform imageBuffer w4;
layout(std430, set = 0, binding = 1) readonly buffer W_ { float w[]; };
layout(set = 0, binding = 2, rgba32f) readonly uniform imageBuffer v4;
layout(std430, set = 0, binding = 3) readonly buffer V_ { float v[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y_ { float y[]; };
layout(std430, set = 0, binding = 5) readonly buffer Bias_ { float bias[]; };
layout(push_constant) uniform Push {
    uint J, K, mode, flags;
    uint wOff, wS, vOff, yOff;
    uint yJ, act, biasOff, biasJ;
} pc;
shared vec4 part[LOCAL][ROWS];

vec4 wt(uint t) { return imageLoad(w4, int(t)); }
vec4 vt(uint t) { return imageLoad(v4, int(t)); }

void store(uint j, float s) {
    if ((pc.flags & 1u) != 0u) s += bias[pc.biasOff + j * pc.biasJ];
    y[pc.yOff + j * pc.yJ] = activate(s, pc.act);
}

void dot() {
    uint lid = gl_LocalInvocationID.x;
    uint j0 = gl_WorkGroupID.x * ROWS;
    uint K4 = pc.K / 4u, v0 = pc.vOff / 4u;
    uint row[ROWS];
    vec4 acc[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        row[r] = pc.wOff + min(j0 + r, pc.J - 1u) * pc.wS; // rows past J repeat the last
        acc[r] = vec4(0.0);
    }
    for (uint t = lid; t < K4; t += LOCAL) {
        vec4 x = vt(v0 + t);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r] = fma(wt(row[r] / 4u + t), x, acc[r]);
    }
    uint k = 4u * K4 + lid;
    if (k < pc.K) {
        float x = v[pc.vOff + k];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r].x = fma(w[row[r] + k], x, acc[r].x);
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) part[lid][r] = acc[r];
    barrier();
    if (lid < ROWS && j0 + lid < pc.J) {
        vec4 s = part[0][lid];
        for (uint l = 1u; l < LOCAL; ++l) s += part[l][lid];
        store(j0 + lid, (s.x + s.y) + (s.z + s.w));
    }
}

void axpy() {
    uint o = gl_GlobalInvocationID.x;
    if (o >= (pc.J + 3u) / 4u) return;
    uint K4 = pc.K / 4u, v0 = pc.vOff / 4u, s4 = pc.wS / 4u;
    uint t = pc.wOff / 4u + o;
    vec4 a = vec4(0.0), b = vec4(0.0);
    for (uint q = 0u; q < K4; ++q, t += 4u * s4) {
        vec4 x = vt(v0 + q);
        a = fma(wt(t), vec4(x.x), a);
        b = fma(wt(t + s4), vec4(x.y), b);
        a = fma(wt(t + 2u * s4), vec4(x.z), a);
        b = fma(wt(t + 3u * s4), vec4(x.w), b);
    }
    for (uint k = 4u * K4; k < pc.K; ++k, t += s4) a = fma(wt(t), vec4(v[pc.vOff + k]), a);
    a += b;
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        if (4u * o + e < pc.J) store(4u * o + e, a[e]);
    }
}

void main() {
    if (pc.mode == 0u) dot();
    else axpy();
}
