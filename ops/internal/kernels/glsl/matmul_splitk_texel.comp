#version 450
// matmul_splitk_texel (float32): split-K's first pass for few rows (M up
// to MAXM), A and B read as rgba32f storage texels, for CPU drivers (see
// matmul_gemv_texel). Group (o, s) forms the partial products of C's
// columns 4o .. 4o+3, every row, over K's texel steps s * sliceQ ..
// (s + 1) * sliceQ (four k a step); invocation l takes steps l, l + 8, ...
// and LOCAL partials per row are then added in a fixed order. The last
// slice also takes the K % 4 tail. Partials go to P[s][M][N] for
// matmul_reduce.
// A: row-major (k stride 1), B: row-major (n stride 1), offsets and row
// strides multiples of 4; the host checks that the last row's texel past N
// lies inside B's buffer.
// Groups: x = ceil(N / 4), y = splits.
// Bindings: 0 A (texels), 1 A (elements, for the tail), 2 B (texels),
// 3 P (write).
#extension GL_EXT_control_flow_attributes : require
#define LOCAL 8
#define MAXM 4
layout(local_size_x = LOCAL) in;
layout(set = 0, binding = 0, rgba32f) readonly uniform imageBuffer a4;
layout(std430, set = 0, binding = 1) readonly buffer A_ { float a[]; };
layout(set = 0, binding = 2, rgba32f) readonly uniform imageBuffer b4;
layout(std430, set = 0, binding = 3) writeonly buffer P_ { float p[]; };
layout(push_constant) uniform Push {
    uint M, N, K, sliceQ;
    uint aOff, aRow, bOff, bRow;
} pc;
shared vec4 part[LOCAL][MAXM];

vec4 at(uint t) { return imageLoad(a4, int(t)); }
vec4 bt(uint t) { return imageLoad(b4, int(t)); }

void main() {
    uint o = gl_WorkGroupID.x, sp = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    uint K4 = pc.K / 4u, s4 = pc.bRow / 4u, b0 = pc.bOff / 4u + o;
    uint q0 = sp * pc.sliceQ, q1 = min(K4, q0 + pc.sliceQ);
    uint arow[MAXM];
    vec4 acc[MAXM];
    [[unroll]] for (uint i = 0u; i < MAXM; ++i) {
        arow[i] = pc.aOff + min(i, pc.M - 1u) * pc.aRow; // rows past M repeat the last
        acc[i] = vec4(0.0);
    }
    for (uint q = q0 + lid; q < q1; q += LOCAL) {
        uint t = b0 + 4u * q * s4;
        vec4 w0 = bt(t), w1 = bt(t + s4), w2 = bt(t + 2u * s4), w3 = bt(t + 3u * s4);
        [[unroll]] for (uint i = 0u; i < MAXM; ++i) {
            vec4 x = at(arow[i] / 4u + q);
            acc[i] = fma(w0, vec4(x.x), acc[i]);
            acc[i] = fma(w1, vec4(x.y), acc[i]);
            acc[i] = fma(w2, vec4(x.z), acc[i]);
            acc[i] = fma(w3, vec4(x.w), acc[i]);
        }
    }
    uint k = 4u * K4 + lid;
    if (sp + 1u == gl_NumWorkGroups.y && k < pc.K) {
        vec4 w = bt(b0 + k * s4);
        [[unroll]] for (uint i = 0u; i < MAXM; ++i) acc[i] = fma(w, vec4(a[arow[i] + k]), acc[i]);
    }
    [[unroll]] for (uint i = 0u; i < MAXM; ++i) part[lid][i] = acc[i];
    barrier();
    if (lid < pc.M) {
        vec4 s = part[0][lid];
        for (uint l = 1u; l < LOCAL; ++l) s += part[l][lid];
        uint base = (sp * pc.M + lid) * pc.N;
        [[unroll]] for (uint e = 0u; e < 4u; ++e) {
            if (4u * o + e < pc.N) p[base + 4u * o + e] = s[e];
        }
    }
}
