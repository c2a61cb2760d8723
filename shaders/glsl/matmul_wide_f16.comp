#version 450
// matmul_wide_f16: matmul_wide for Float16 (IEEE binary16) elements: A and
// B are read eight elements at a time as two 64-bit lanes and widened to
// float32, the sums are formed in float32, and C is stored in 16 bits
// (rounded as the device converts float32 to float16, to nearest even on
// lavapipe). Needs shaderInt64 and storageBuffer16BitAccess; the same
// geometry, groups and shape rule (N and K multiples of 8) as matmul_wide.
//
// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
// matmul_wide_f16_dyn bindings: 0 A (read), 1 B (read), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer A { u64vec2 a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { u64vec2 b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { f16vec4 c[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif

// halves widens the four Float16 elements of w to float32.
vec4 halves(uint64_t w) {
    uvec2 u = unpackUint2x32(w);
    return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
}

void loadA(uint i, out float v[8]) {
    u64vec2 w = a[i];
    vec4 lo = halves(w.x), hi = halves(w.y);
    v = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}

void loadB(uint i, out vec4 lo, out vec4 hi) {
    u64vec2 w = b[i];
    lo = halves(w.x);
    hi = halves(w.y);
}

void storeC(uint i, vec4 lo, vec4 hi) {
    c[2u * i] = f16vec4(lo);
    c[2u * i + 1u] = f16vec4(hi);
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
