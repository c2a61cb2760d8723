#version 450
// matmul_wide: matmul's contract (C[M x N] = A[M x K] * B[K x N], row-major
// float32) for N and K multiples of 8, shaped for CPU drivers: each
// invocation keeps a 16 x 32 block of C and reads A and B eight elements
// at a time as 64-bit lanes (see matmul_wide.glsl for why). It needs
// shaderInt64; the launcher offers it on CPU drivers that have it and
// runs matmul otherwise. A group of W.x x W.y invocations covers 16*W.y
// rows by 32*W.x columns (128 x 256 with the default 8 x 8).
// Groups: x = ceil(N / (32*W.x)), y = ceil(M / (16*W.y)).
//
// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
// Built with -DDYNAMIC as matmul_wide_dyn: M, N, K come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0; surplus groups of an indirect dispatch do nothing.
// matmul_wide_dyn bindings: 0 A (read), 1 B (read), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer A { u64vec4 a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { u64vec4 b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif

vec2 floats(uint64_t w) { return uintBitsToFloat(unpackUint2x32(w)); }

void loadA(uint i, out float v[8]) {
    u64vec4 w = a[i];
    vec2 p0 = floats(w.x), p1 = floats(w.y), p2 = floats(w.z), p3 = floats(w.w);
    v = float[8](p0.x, p0.y, p1.x, p1.y, p2.x, p2.y, p3.x, p3.y);
}

void loadB(uint i, out vec4 lo, out vec4 hi) {
    u64vec4 w = b[i];
    lo = vec4(floats(w.x), floats(w.y));
    hi = vec4(floats(w.z), floats(w.w));
}

void storeC(uint i, vec4 lo, vec4 hi) {
    c[2u * i] = lo;
    c[2u * i + 1u] = hi;
}

#include "matmul_wide.glsl"

void main() {
#ifdef DYNAMIC
    uint M = M_, N = N_, K = K_;
#else
    uint M = pc.M, N = pc.N, K = pc.K;
#endif
    wideMatmul(M, N, K);
}
