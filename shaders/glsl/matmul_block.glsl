// matmul_block.glsl: the body of matmul for one block shape, included by
// matmul.comp once per shape with BLOCK_FN (the function's name),
// BLOCK_ROWS (rows of C per invocation) and BLOCK_QUADS (groups of 4
// columns per invocation) defined. The sizes are compile-time constants so
// that glslc unrolls every loop over the block and the accumulators stay
// in registers (sized by specialization constants, the loops stay rolled
// and the accumulators go to memory, 2-4x slower on lavapipe).
//
// Loads past M or N are clamped to the last row or column and dropped at
// the store, so no access leaves the buffers; K == 0 stores zeros.
void BLOCK_FN(uint M, uint N, uint K) {
    uint row = gl_GlobalInvocationID.y * BLOCK_ROWS;
    uint q0 = gl_GlobalInvocationID.x * BLOCK_QUADS; // first group of 4 columns
    if (row >= M || q0 * 4u >= N) return;

    uint aRow[BLOCK_ROWS];
    for (uint i = 0u; i < BLOCK_ROWS; ++i) aRow[i] = min(row + i, M - 1u) * K;
    vec4 acc[BLOCK_ROWS][BLOCK_QUADS];
    for (uint i = 0u; i < BLOCK_ROWS; ++i)
        for (uint j = 0u; j < BLOCK_QUADS; ++j) acc[i][j] = vec4(0.0);

    bool vectorRows = (N & 3u) == 0u;
    if (vectorRows) {
        // Rows of B and C as vec4: one load brings four columns.
        uint n4 = N >> 2;
        uint q[BLOCK_QUADS];
        for (uint j = 0u; j < BLOCK_QUADS; ++j) q[j] = min(q0 + j, n4 - 1u);
        for (uint k = 0u; k < K; ++k) {
            vec4 bk[BLOCK_QUADS];
            for (uint j = 0u; j < BLOCK_QUADS; ++j) bk[j] = b4[k * n4 + q[j]];
            for (uint i = 0u; i < BLOCK_ROWS; ++i) {
                float x = a[aRow[i] + k];
                for (uint j = 0u; j < BLOCK_QUADS; ++j) acc[i][j] += x * bk[j];
            }
        }
    } else {
        uint last = N - 1u;
        uint col[BLOCK_QUADS * 4u];
        for (uint j = 0u; j < BLOCK_QUADS * 4u; ++j) col[j] = min(q0 * 4u + j, last);
        for (uint k = 0u; k < K; ++k) {
            uint bk = k * N;
            vec4 bv[BLOCK_QUADS];
            for (uint j = 0u; j < BLOCK_QUADS; ++j)
                bv[j] = vec4(b[bk + col[4u * j]], b[bk + col[4u * j + 1u]], b[bk + col[4u * j + 2u]], b[bk + col[4u * j + 3u]]);
            for (uint i = 0u; i < BLOCK_ROWS; ++i) {
                float x = a[aRow[i] + k];
                for (uint j = 0u; j < BLOCK_QUADS; ++j) acc[i][j] += x * bv[j];
            }
        }
    }

    for (uint i = 0u; i < BLOCK_ROWS; ++i) {
        uint r = row + i;
        if (r >= M) break;
        uint base = r * N + q0 * 4u;
        for (uint j = 0u; j < BLOCK_QUADS; ++j) {
            uint c0 = (q0 + j) * 4u;
            if (c0 >= N) break;
            if (vectorRows) {
                c4[(base >> 2) + j] = acc[i][j];
            } else {
                for (uint t = 0u; t < 4u; ++t)
                    if (c0 + t < N) c[base + 4u * j + t] = acc[i][j][t];
            }
        }
    }
}
