#version 450
// sgemm_naive: C = A * B for n x n row-major float32 matrices, the kernel a
// C programmer writes first: one invocation per element of C, each walking a
// row of A and a column of B straight from the storage buffers, no tiling.
// Groups: ceil(n/16) x ceil(n/16). Bindings: 0 A (read), 1 B (read),
// 2 C (write). Push: n uint32.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer MatA { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer MatB { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer MatC { float c[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint n = pc.n;
    uint row = gl_GlobalInvocationID.y;
    uint col = gl_GlobalInvocationID.x;
    if (row >= n || col >= n) return;
    float sum = 0.0;
    for (uint i = 0u; i < n; ++i) sum += a[row * n + i] * b[i * n + col];
    c[row * n + col] = sum;
}
