// matmul_wide.glsl: the body of matmul_wide, matmul_wide_f16, matmul_texel
// and matmul_texel_f16, included by each after it declares its buffers and
// defines
//   void loadA(uint i, out float v[8])        A's elements 8i .. 8i+7
//   void loadB(uint i, out vec4 lo, out vec4 hi)  B's elements 8i .. 8i+7
//   void storeC(uint i, vec4 lo, vec4 hi)     C's elements 8i .. 8i+7
// so that every load brings eight elements in one wide access: 64-bit
// lanes in the _wide kernels, 16-byte texels in the _texel ones.
//
// Why this shape: on a CPU driver (lavapipe on Mesa 22.3) every storage
// buffer load whose address differs per invocation compiles to a loop over
// the SIMD lanes with a bounds check per component, and every write of a
// value carried around a loop to a blend with the loop's mask. So the
// kernel makes few, wide loads (64-bit components: twice the bytes per
// lane iteration of a vec4) and writes each accumulator once per eight
// steps of k: it forms the eight products' sum with fma in temporaries and
// adds that to the accumulator. Each invocation keeps WIDE_ROWS x 8*WIDE_OCTS
// outputs of C; one row block of A is shared by the lanes of a SIMD batch
// through the cache, and each B load feeds WIDE_ROWS rows.
//
// Geometry: a workgroup of W.x x W.y invocations covers WIDE_ROWS*W.y rows
// and 8*WIDE_OCTS*W.x columns; invocation x of the group takes the column
// octets x, x + W.x, ... (consecutive lanes read consecutive octets).
// Requires N and K to be multiples of 8 (the launcher picks matmul for
// other shapes); any M. Rows past M are clamped for the loads and not
// stored; octets past N likewise.
#extension GL_EXT_control_flow_attributes : require

const uint WIDE_ROWS = 16u;
const uint WIDE_OCTS = 4u;

void wideMatmul(uint M, uint N, uint K) {
    uint row0 = gl_GlobalInvocationID.y * WIDE_ROWS;
    if (row0 >= M) return; // surplus rows of a dynamic launch, or M = 0
    uint n8 = N >> 3, k8 = K >> 3;
    uint lanes = gl_WorkGroupSize.x;
    uint first = gl_WorkGroupID.x * lanes * WIDE_OCTS + gl_LocalInvocationID.x;
    uint oct[WIDE_OCTS];
    [[unroll]] for (uint j = 0u; j < WIDE_OCTS; ++j) oct[j] = min(first + lanes * j, n8 - 1u);
    uint aRow[WIDE_ROWS];
    [[unroll]] for (uint i = 0u; i < WIDE_ROWS; ++i) aRow[i] = min(row0 + i, M - 1u) * k8;
    vec4 acc[WIDE_ROWS][2u * WIDE_OCTS];
    [[unroll]] for (uint i = 0u; i < WIDE_ROWS; ++i)
        [[unroll]] for (uint j = 0u; j < 2u * WIDE_OCTS; ++j) acc[i][j] = vec4(0.0);

    for (uint kq = 0u; kq < k8; ++kq) {
        float av[WIDE_ROWS][8];
        [[unroll]] for (uint i = 0u; i < WIDE_ROWS; ++i) loadA(aRow[i] + kq, av[i]);
        vec4 bk[8][2u * WIDE_OCTS];
        [[unroll]] for (uint s = 0u; s < 8u; ++s)
            [[unroll]] for (uint j = 0u; j < WIDE_OCTS; ++j)
                loadB((kq * 8u + s) * n8 + oct[j], bk[s][2u * j], bk[s][2u * j + 1u]);
        [[unroll]] for (uint i = 0u; i < WIDE_ROWS; ++i)
            [[unroll]] for (uint j = 0u; j < 2u * WIDE_OCTS; ++j) {
                vec4 t = av[i][0] * bk[0][j];
                [[unroll]] for (uint s = 1u; s < 8u; ++s) t = fma(vec4(av[i][s]), bk[s][j], t);
                acc[i][j] += t;
            }
    }

    [[unroll]] for (uint i = 0u; i < WIDE_ROWS; ++i) {
        uint r = row0 + i;
        if (r >= M) break;
        [[unroll]] for (uint j = 0u; j < WIDE_OCTS; ++j) {
            uint o = first + lanes * j;
            if (o < n8) storeC(r * n8 + o, acc[i][2u * j], acc[i][2u * j + 1u]);
        }
    }
}
