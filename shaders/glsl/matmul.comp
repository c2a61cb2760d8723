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
#extension GL_GOOGLE_include_directive : require
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

// BLOCK (specialization constant 3) picks the block each invocation
// computes, per device (see the catalogue): 0, 8 x 8, suits a GPU, whose
// registers hold a small block per invocation; 1, 16 x 16, suits a CPU
// driver, where every load an invocation makes is a scalar loop over the
// SIMD lanes, so a block that uses each loaded value for more
// multiply-adds pays. The driver drops the path not taken.
layout(constant_id = 3) const uint BLOCK = 0u;

#define BLOCK_FN block8x8
#define BLOCK_ROWS 8u
#define BLOCK_QUADS 2u
#include "matmul_block.glsl"
#undef BLOCK_FN
#undef BLOCK_ROWS
#undef BLOCK_QUADS

#define BLOCK_FN block16x16
#define BLOCK_ROWS 16u
#define BLOCK_QUADS 4u
#include "matmul_block.glsl"

void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint M = M_, N = N_, K = K_;
#else
    uint M = pc.M, N = pc.N, K = pc.K;
#endif
    if (BLOCK == 1u)
        block16x16(M, N, K);
    else
        block8x8(M, N, K);
}
