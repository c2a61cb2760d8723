#version 450
// matmul_texel (float32): C = act(A·B + bias) shaped for CPU drivers,
// reading A and B as rgba32f storage texels: lavapipe compiles a
// storage-buffer load whose address differs per lane into a loop over the
// lanes with a bounds check per component, a texel load into one gather
// of each lane's 16 bytes, so with the same block this runs about 1.5x
// matmul_wide's speed there. Each invocation keeps a ROWS x 8*OCTS block
// of C and reads eight k at a time (two texels of each row of A, two per
// octet of B); it forms each accumulator's eight products in temporaries
// before adding them, so an accumulator is written once per eight steps
// of k. A K % 8 of 4 is one more step of four.
//
// Needs: A's k stride and B's n stride 1; A's and B's offsets, row and
// batch strides multiples of 4 (texel-aligned); K a multiple of 4; and the
// texel that holds B's last column inside B's buffer (the host checks it;
// columns past N are not stored). C has any layout and M
// any size (rows past M are clamped for loads, not stored).
//
// Geometry: the workgroup, W.x x W.y, is set by specialization constants 0
// and 1; each invocation keeps ROWS x 8*OCTS (16 x 32; narrow 16 x 16). A group covers ROWS*W.y rows and
// 8*OCTS*W.x columns; invocation x takes the column octets x, x + W.x, ...
// Groups: x = ceil(ceil(N/8) / (OCTS*W.x)), y = ceil(M / (ROWS*W.y)),
// z = batches. With -DDYNAMIC (matmul_texel_dyn) M is min(rows, M), rows
// read from binding 4 when the launch runs; group x then takes ROWS*W.y
// rows and every column block of them in turn (an indirect launch sizes x
// alone), one batch.
//
// Bindings: 0 A, 1 B (read, rgba32f texels), 2 C (write), 3 bias (read);
// 4 rows (read) with -DDYNAMIC.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "matmul_common.glsl"
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0, rgba32f) readonly uniform imageBuffer A4;
layout(set = 0, binding = 1, rgba32f) readonly uniform imageBuffer B4;
layout(std430, set = 0, binding = 2) writeonly buffer C_ { float c[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C4_ { vec4 c4[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias_ { float bias[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 4) readonly buffer Rows_ { uint rowsDyn; };
#endif
layout(push_constant) uniform Push {
    uint M, N, K, unused;
    uint aOff, aM, aK, aB; // in elements, as matmul_generic's (aK is 1)
    uint bOff, bK, bN, bB; // (bN is 1)
    uint cOff, cM, cN, cB;
    uint biasOff, biasN, act, splits;
    uint flags; // bit 1: C's rows are unit-stride and start on multiples of 4 (bit 0, the bias, is BIAS here)
} pc;

// The block is compiled in: with ROWS and OCTS specialization constants
// lavapipe ran the kernel 10-30% slower (its loops over them unrolled
// only after specialization). -DNARROW (matmul_texel_narrow) keeps 16 x 16
// per invocation, for N of at most 128 (batches of small products).
const uint ROWS = 16u;
#ifdef NARROW
const uint OCTS = 2u;
#else
const uint OCTS = 4u;
#endif

// The epilogue and the store path are compiled in too, as specialization
// constants: ACT (2) is the activation code (matmul_common.glsl's), BIAS
// (3) 1 to add the bias, WHOLE (4) 1 where the host promises flag 2 and N
// a multiple of 8, so that every octet is two vec4 stores. A CPU driver
// runs every side of a branch it cannot prove uniform, masked: with these
// as push constants each store paid for every activation and for the
// element-by-element path (a third of a 1024 square's time, two thirds
// of a K of 64), and each pipeline compiled every activation 512 times
// (about a minute on lavapipe).
layout(constant_id = 2) const uint ACT = 0u;
layout(constant_id = 3) const uint BIAS = 0u;
layout(constant_id = 4) const uint WHOLE = 0u;

vec4 at(uint t) { return imageLoad(A4, int(t)); }
vec4 bt(uint t) { return imageLoad(B4, int(t)); }

// epilogue is one element of C: its product plus the bias, activated.
float epilogue(float v, uint col) {
    if (BIAS == 1u) v += bias[pc.biasOff + col * pc.biasN];
    return ACT == 0u ? v : activate(v, ACT);
}

// store writes the octet of row r at column col (its two quads lo, hi).
void store(uint cRow, uint col, vec4 q[2]) {
    if (WHOLE == 1u || ((pc.flags & 2u) != 0u && col + 8u <= pc.N)) {
        // A whole octet of an aligned row: two vec4 stores.
        [[unroll]] for (uint h = 0u; h < 2u; ++h) {
            vec4 v = q[h];
            if (BIAS == 1u || ACT != 0u) {
                uint cc = col + 4u * h;
                v = vec4(epilogue(v.x, cc), epilogue(v.y, cc + 1u), epilogue(v.z, cc + 2u), epilogue(v.w, cc + 3u));
            }
            c4[(cRow + col) / 4u + h] = v;
        }
        return;
    }
    [[unroll]] for (uint h = 0u; h < 2u; ++h)
        [[unroll]] for (uint e = 0u; e < 4u; ++e) {
            uint cc = col + 4u * h + e;
            if (cc < pc.N) c[cRow + cc * pc.cN] = epilogue(q[h][e], cc);
        }
}

// block computes the ROWS x 8*OCTS block of C whose first row is row0 and
// whose octets are first, first + W.x, ..., of batch, M rows in all.
void block(uint M, uint row0, uint first, uint batch) {
    uint n8 = (pc.N + 7u) >> 3, k8 = pc.K >> 3;
    uint lanes = gl_WorkGroupSize.x;
    uint bBase = (pc.bOff + batch * pc.bB) >> 2, bRow = pc.bK >> 2;
    uint oct[OCTS], hi[OCTS]; // an octet's texels: oct[j] and oct[j] + hi[j]
    [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
        uint o = min(first + lanes * j, n8 - 1u);
        oct[j] = bBase + 2u * o;
        hi[j] = 8u * o + 4u < pc.N ? 1u : 0u; // the last octet of an N % 8 of 4 rereads its first texel
    }
    uint aRow[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) aRow[i] = (pc.aOff + batch * pc.aB + min(row0 + i, M - 1u) * pc.aM) >> 2;
    vec4 acc[ROWS][2u * OCTS];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i)
        [[unroll]] for (uint j = 0u; j < 2u * OCTS; ++j) acc[i][j] = vec4(0.0);

    for (uint kq = 0u; kq < k8; ++kq) {
        vec4 av[ROWS][2];
        [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
            av[i][0] = at(aRow[i] + 2u * kq);
            av[i][1] = at(aRow[i] + 2u * kq + 1u);
        }
        vec4 bk[8][2u * OCTS];
        [[unroll]] for (uint s = 0u; s < 8u; ++s)
            [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
                uint t = (kq * 8u + s) * bRow + oct[j];
                bk[s][2u * j] = bt(t);
                bk[s][2u * j + 1u] = bt(t + hi[j]);
            }
        [[unroll]] for (uint i = 0u; i < ROWS; ++i)
            [[unroll]] for (uint j = 0u; j < 2u * OCTS; ++j) {
                vec4 t = av[i][0].x * bk[0][j];
                [[unroll]] for (uint s = 1u; s < 8u; ++s) t = fma(vec4(av[i][s >> 2][s & 3u]), bk[s][j], t);
                acc[i][j] += t;
            }
    }
    if ((pc.K & 4u) != 0u) {
        // K % 8 is 4: one step of four k.
        vec4 av[ROWS];
        [[unroll]] for (uint i = 0u; i < ROWS; ++i) av[i] = at(aRow[i] + 2u * k8);
        vec4 bk[4][2u * OCTS];
        [[unroll]] for (uint s = 0u; s < 4u; ++s)
            [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
                uint t = (k8 * 8u + s) * bRow + oct[j];
                bk[s][2u * j] = bt(t);
                bk[s][2u * j + 1u] = bt(t + hi[j]);
            }
        [[unroll]] for (uint i = 0u; i < ROWS; ++i)
            [[unroll]] for (uint j = 0u; j < 2u * OCTS; ++j) {
                vec4 t = av[i].x * bk[0][j];
                [[unroll]] for (uint s = 1u; s < 4u; ++s) t = fma(vec4(av[i][s]), bk[s][j], t);
                acc[i][j] += t;
            }
    }

    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
        uint r = row0 + i;
        if (r >= M) break;
        uint cRow = pc.cOff + batch * pc.cB + r * pc.cM;
        [[unroll]] for (uint j = 0u; j < OCTS; ++j) {
            uint o = first + lanes * j;
            if (o < n8) store(cRow, o * 8u, vec4[2](acc[i][2u * j], acc[i][2u * j + 1u]));
        }
    }
}

void main() {
#ifdef DYNAMIC
    uint M = min(rowsDyn, pc.M);
    uint row0 = (gl_WorkGroupID.x * gl_WorkGroupSize.y + gl_LocalInvocationID.y) * ROWS;
    if (row0 >= M) return;
    uint span = gl_WorkGroupSize.x * OCTS, n8 = (pc.N + 7u) >> 3;
    for (uint first = gl_LocalInvocationID.x; first < n8; first += span) block(M, row0, first, 0u);
#else
    uint row0 = gl_GlobalInvocationID.y * ROWS;
    if (row0 >= pc.M) return;
    block(pc.M, row0, gl_WorkGroupID.x * gl_WorkGroupSize.x * OCTS + gl_LocalInvocationID.x, gl_WorkGroupID.z);
#endif
}
