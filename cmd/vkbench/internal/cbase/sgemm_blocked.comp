#version 450
// sgemm_blocked: C = A * B for n x n row-major float32 matrices, n a
// multiple of 4, the register-blocked kernel written out by hand with no
// specialization: each invocation keeps a 16 x 16 block of C in registers
// (16 rows by four vec4 columns), reading a row of A and four vec4 of B per
// step of k, so that each loaded value feeds 16 multiply-adds. The shape vkc
// runs on a CPU driver, so that the two compare kernel for kernel.
// Groups: ceil(n/128) x ceil(n/128) of 8 x 8. Bindings: 0 A (read),
// 1 B (read), 2 C (write). Push: n uint32.
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer MatA { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer MatB { vec4 b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer MatC { vec4 c[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint n = pc.n, n4 = n / 4u;
    uint row = gl_GlobalInvocationID.y * 16u;
    uint q0 = gl_GlobalInvocationID.x * 4u;
    if (row >= n || q0 >= n4) return;
    uint aRow[16];
    for (uint i = 0u; i < 16u; ++i) aRow[i] = min(row + i, n - 1u) * n;
    uint q[4];
    for (uint j = 0u; j < 4u; ++j) q[j] = min(q0 + j, n4 - 1u);
    vec4 acc[16][4];
    for (uint i = 0u; i < 16u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = vec4(0.0);
    for (uint k = 0u; k < n; ++k) {
        vec4 bk[4];
        for (uint j = 0u; j < 4u; ++j) bk[j] = b[k * n4 + q[j]];
        for (uint i = 0u; i < 16u; ++i) {
            float x = a[aRow[i] + k];
            for (uint j = 0u; j < 4u; ++j) acc[i][j] += x * bk[j];
        }
    }
    // Constant trip counts with a break, so that glslc unrolls the loops and
    // acc stays in registers (a dynamic index sends it to memory).
    for (uint i = 0u; i < 16u; ++i) {
        if (row + i >= n) break;
        for (uint j = 0u; j < 4u; ++j) {
            if (q0 + j >= n4) break;
            c[(row + i) * n4 + q0 + j] = acc[i][j];
        }
    }
}
