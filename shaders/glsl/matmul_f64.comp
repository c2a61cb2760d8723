#version 450
// matmul_f64: C = A * B, register-tiled.
// Elements are float64, loaded, computed and stored in float64
// (shaderFloat64).
// Built with -DDYNAMIC as matmul_f64_dyn: M, N, K come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0 (uint32), so a recorded launch uses the values current at
// each replay; surplus groups of an indirect dispatch do nothing.
// C[M x N] = A[M x K] * B[K x N], row-major, any M, N, K, accumulated in
// double. The float32 matmul's register tiling: each invocation keeps an 8 x 8
// block of C, a group of W.x x W.y invocations covers 8*W.y rows by 8*W.x
// columns (64 x 64 by default); groups x = ceil(N/64), y = ceil(M/64). When N
// is a multiple of 4, rows of B and C move as 4-vectors.
// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
// matmul_f64_dyn bindings: 0 A, 1 B (read), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer A { double a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { double b[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { dvec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { double c[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C4 { dvec4 c4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif
const uint ROWS = 8u;
const uint COLS = 8u;
void main() {
#ifdef DYNAMIC
    uint M = M_, N = N_, K = K_;
#else
    uint M = pc.M, N = pc.N, K = pc.K;
#endif
    uint row = gl_GlobalInvocationID.y * ROWS;
    uint col = gl_GlobalInvocationID.x * COLS;
    if (row >= M || col >= N) return;
    uint aRow[ROWS];
    for (uint i = 0u; i < ROWS; ++i) aRow[i] = min(row + i, M - 1u) * K;
    dvec4 lo[ROWS], hi[ROWS];
    for (uint i = 0u; i < ROWS; ++i) {
        lo[i] = dvec4(0.0lf);
        hi[i] = dvec4(0.0lf);
    }
    bool vectorRows = (N & 3u) == 0u;
    if (vectorRows) {
        uint n4 = N >> 2;
        uint q0 = col >> 2;
        uint q1 = min(q0 + 1u, n4 - 1u);
        for (uint k = 0u; k < K; ++k) {
            dvec4 b0 = dvec4(b4[k * n4 + q0]);
            dvec4 b1 = dvec4(b4[k * n4 + q1]);
            for (uint i = 0u; i < ROWS; ++i) {
                double x = double(a[aRow[i] + k]);
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
            dvec4 b0 = dvec4(double(b[bk + col]), double(b[bk + c1]), double(b[bk + c2]), double(b[bk + c3]));
            dvec4 b1 = dvec4(double(b[bk + c4i]), double(b[bk + c5]), double(b[bk + c6]), double(b[bk + c7]));
            for (uint i = 0u; i < ROWS; ++i) {
                double x = double(a[aRow[i] + k]);
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
            c4[base >> 2] = dvec4(lo[i]);
            if (col + 4u < N) c4[(base >> 2) + 1u] = dvec4(hi[i]);
        } else {
            for (uint j = 0u; j < 4u; ++j)
                if (col + j < N) c[base + j] = double(lo[i][j]);
            for (uint j = 0u; j < 4u; ++j)
                if (col + 4u + j < N) c[base + 4u + j] = double(hi[i][j]);
        }
    }
}
