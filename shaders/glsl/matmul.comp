#version 450
// matmul: C[M x N] = A[M x K] * B[K x N], all row-major float32, any M, N, K.
//
// Register-tiled: each invocation keeps an 8 x 8 block of C in registers
// (16 vec4 accumulators) and, per step of k, loads 8 values of A and 8 of B,
// so every loaded value feeds 8 multiply-adds instead of one. A workgroup of
// W.x x W.y invocations covers 8*W.y rows by 8*W.x columns of C (64 x 64 with
// the default 8 x 8). Groups: x = ceil(N / (8*W.x)), y = ceil(M / (8*W.y)).
//
// The tiles are read straight from the storage buffers rather than staged in
// shared memory: on lavapipe (the CPU driver every test runs on) the caches
// already play that role, and shared-memory staging measured 2-3x slower
// there because of its barriers and per-lane gathers.
//
// When N is a multiple of 4 the rows of B and C are read and written as vec4
// (B and C are also declared as vec4 arrays at the same bindings); otherwise a
// scalar path with clamped indices runs. Indices past M or N are clamped for
// the loads and dropped at the store, so no access leaves the buffers.
//
// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
// Built with -DDYNAMIC as matmul_dyn (see the catalogue): M, N, K come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// matmul_dyn bindings: 0 A (read), 1 B (read), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C4 { vec4 c4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif

const uint ROWS = 8u; // rows of C per invocation
const uint COLS = 8u; // columns of C per invocation, two vec4

void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint M = M_, N = N_, K = K_;
#else
    uint M = pc.M, N = pc.N, K = pc.K;
#endif
    uint row = gl_GlobalInvocationID.y * ROWS;
    uint col = gl_GlobalInvocationID.x * COLS;
    if (row >= M || col >= N) return; // K == 0 falls through and stores zeros

    uint aRow[ROWS];
    for (uint i = 0u; i < ROWS; ++i) aRow[i] = min(row + i, M - 1u) * K;
    vec4 lo[ROWS], hi[ROWS];
    for (uint i = 0u; i < ROWS; ++i) {
        lo[i] = vec4(0.0);
        hi[i] = vec4(0.0);
    }

    bool vectorRows = (N & 3u) == 0u;
    if (vectorRows) {
        uint n4 = N >> 2;
        uint q0 = col >> 2;
        uint q1 = min(q0 + 1u, n4 - 1u);
        for (uint k = 0u; k < K; ++k) {
            vec4 b0 = b4[k * n4 + q0];
            vec4 b1 = b4[k * n4 + q1];
            for (uint i = 0u; i < ROWS; ++i) {
                float x = a[aRow[i] + k];
                lo[i] += x * b0;
                hi[i] += x * b1;
            }
        }
    } else {
        uint last = N - 1u;
        uint c1 = min(col + 1u, last), c2 = min(col + 2u, last), c3 = min(col + 3u, last);
        uint c4i = min(col + 4u, last), c5 = min(col + 5u, last), c6 = min(col + 6u, last), c7 = min(col + 7u, last);
        for (uint k = 0u; k < K; ++k) {
            uint bk = k * N;
            vec4 b0 = vec4(b[bk + col], b[bk + c1], b[bk + c2], b[bk + c3]);
            vec4 b1 = vec4(b[bk + c4i], b[bk + c5], b[bk + c6], b[bk + c7]);
            for (uint i = 0u; i < ROWS; ++i) {
                float x = a[aRow[i] + k];
                lo[i] += x * b0;
                hi[i] += x * b1;
            }
        }
    }

    for (uint i = 0u; i < ROWS; ++i) {
        uint r = row + i;
        if (r >= M) break;
        uint base = r * N + col;
        if (vectorRows) {
            c4[base >> 2] = lo[i];
            if (col + 4u < N) c4[(base >> 2) + 1u] = hi[i];
        } else {
            for (uint j = 0u; j < 4u; ++j)
                if (col + j < N) c[base + j] = lo[i][j];
            for (uint j = 0u; j < 4u; ++j)
                if (col + 4u + j < N) c[base + 4u + j] = hi[i][j];
        }
    }
}
