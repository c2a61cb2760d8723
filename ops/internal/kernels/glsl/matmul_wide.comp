#version 450
// matmul_wide (float32): C = act(A·B + bias) shaped for CPU drivers, where
// a storage-buffer load whose address differs per invocation is a loop
// over the SIMD lanes (lavapipe on Mesa 22.3): it loads A and B eight
// floats at a time as four 64-bit lanes, so it has 1/8 of the loads of
// matmul_generic. Each invocation keeps a 16 x 32 block of C; it forms
// each accumulator's eight products in temporaries before adding them, so
// an accumulator is written once per eight steps of k.
//
// Needs: A's k stride 1, and its offset, row and batch strides multiples
// of 8; K a multiple of 8; B's n stride 1, and its offset, k and batch
// strides multiples of 8; and the octet past N that the last column block
// reads must lie inside B's buffer (the host checks it; those columns are
// not stored). C has any layout and M any size (rows past M are clamped
// for loads, not stored).
//
// Geometry: a group of W.x x W.y invocations covers 16*W.y rows and
// 32*W.x columns; invocation x takes the column octets x, x + W.x, ...
// Groups: x = ceil(ceil(N/8) / (4*W.x)), y = ceil(M / (16*W.y)), z = batches.
//
// Bindings: 0 A, 1 B (read, as u64vec4), 2 C (write), 3 bias (read).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "matmul_common.glsl"
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer A_ { u64vec4 a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B_ { u64vec4 b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C_ { float c[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C4_ { vec4 c4[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias_ { float bias[]; };
layout(push_constant) uniform Push {
    uint M, N, K, unused;
    uint aOff, aM, aK, aB; // in elements, as matmul_generic's (aK is 1)
    uint bOff, bK, bN, bB; // (bN is 1)
    uint cOff, cM, cN, cB;
    uint biasOff, biasN, act, splits;
    uint flags; // bit 1: C's rows are unit-stride and start on multiples of 4 (bit 0, the bias, is BIAS here)
} pc;

const uint ROWS = 16u;
const uint OCTS = 4u;

// The epilogue and the store path are specialization constants, as in
// matmul_texel (which says why): ACT (2) the activation code, BIAS (3) 1
// to add the bias, WHOLE (4) 1 where every octet is two aligned vec4
// stores (flag 2 set and N a multiple of 8).
layout(constant_id = 2) const uint ACT = 0u;
layout(constant_id = 3) const uint BIAS = 0u;
layout(constant_id = 4) const uint WHOLE = 0u;

// epilogue is one element of C: its product plus the bias, activated.
float epilogue(float v, uint col) {
    if (BIAS == 1u) v += bias[pc.biasOff + col * pc.biasN];
    return ACT == 0u ? v : activate(v, ACT);
}

vec2 floats(uint64_t w) { return uintBitsToFloat(unpackUint2x32(w)); }

void main() {
    uint M = pc.M;
    uint row0 = gl_GlobalInvocationID.y * ROWS;
    if (row0 >= M) return;
    uint batch = gl_WorkGroupID.z;
    uint n8 = (pc.N + 7u) >> 3, k8 = pc.K >> 3;
    uint lanes = gl_WorkGroupSize.x;
    uint first = gl_WorkGroupID.x * lanes * OCTS + gl_LocalInvocationID.x;
    uint bBase = (pc.bOff + batch * pc.bB) >> 3, bRow = pc.bK >> 3;
    uint oct[OCTS];
    [[unroll]] for (uint j = 0u; j < OCTS; ++j) oct[j] = bBase + min(first + lanes * j, n8 - 1u);
    uint aRow[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) aRow[i] = (pc.aOff + batch * pc.aB + min(row0 + i, M - 1u) * pc.aM) >> 3;
    vec4 acc[ROWS][2u * OCTS];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i)
        [[unroll]] for (uint j = 0u; j < 2u * OCTS; ++j) acc[i][j] = vec4(0.0);

    for (uint kq = 0u; kq < k8; ++kq) {
        float av[ROWS][8];
        [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
            u64vec4 w = a[aRow[i] + kq];
            vec2 p0 = floats(w.x), p1 = floats(w.y), p2 = floats(w.z), p3 = floats(w.w);
            av[i] = float[8](p0.x, p0.y, p1.x, p1.y, p2.x, p2.y, p3.x, p3.y);
        }
        vec4 bk[8][2u * OCTS];
        [[unroll]] for (uint s = 0u; s < 8u; ++s)
            [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
                u64vec4 w = b[(kq * 8u + s) * bRow + oct[j]];
                bk[s][2u * j] = vec4(floats(w.x), floats(w.y));
                bk[s][2u * j + 1u] = vec4(floats(w.z), floats(w.w));
            }
        [[unroll]] for (uint i = 0u; i < ROWS; ++i)
            [[unroll]] for (uint j = 0u; j < 2u * OCTS; ++j) {
                vec4 t = av[i][0] * bk[0][j];
                [[unroll]] for (uint s = 1u; s < 8u; ++s) t = fma(vec4(av[i][s]), bk[s][j], t);
                acc[i][j] += t;
            }
    }

    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
        uint r = row0 + i;
        if (r >= M) break;
        uint cRow = pc.cOff + batch * pc.cB + r * pc.cM;
        [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
            if (first + lanes * j >= n8) continue; // an octet past N: the lane's clamped copy
            uint col = (first + lanes * j) * 8u;
            if (WHOLE == 1u || ((pc.flags & 2u) != 0u && col + 8u <= pc.N)) {
                // A whole octet of an aligned row: two vec4 stores.
                [[unroll]] for (uint h = 0u; h < 2u; ++h) {
                    vec4 v = acc[i][2u * j + h];
                    if (BIAS == 1u || ACT != 0u) {
                        uint cc = col + 4u * h;
                        v = vec4(epilogue(v.x, cc), epilogue(v.y, cc + 1u), epilogue(v.z, cc + 2u), epilogue(v.w, cc + 3u));
                    }
                    c4[(cRow + col) / 4u + h] = v;
                }
                continue;
            }
            [[unroll]] for (uint h = 0u; h < 2u; ++h)
                [[unroll]] for (uint e = 0u; e < 4u; ++e) {
                    uint cc = col + 4u * h + e;
                    if (cc < pc.N) c[cRow + cc * pc.cN] = epilogue(acc[i][2u * j + h][e], cc);
                }
        }
    }
}
