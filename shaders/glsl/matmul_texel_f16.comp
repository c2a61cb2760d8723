#version 450
// matmul_texel_f16: matmul_wide_f16 (Float16 elements widened to float32,
// sums in float32, C stored in 16 bits; same geometry and shape rule)
// reading A and B through uniform texel buffers of R32G32B32A32_UINT
// texels, each holding one octet of eight Float16 elements (see
// matmul_texel for why). Needs storageBuffer16BitAccess for C, and no
// 64-bit integers.
//
// Bindings: 0 A (read, texels), 1 B (read, texels), 2 C (write). Push: M, N, K uint32.
// Built with -DDYNAMIC as matmul_texel_f16_dyn: M, N, K come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0; surplus groups of an indirect dispatch do nothing.
// matmul_texel_f16_dyn bindings: 0 A, 1 B (read, texels), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) uniform usamplerBuffer A;
layout(set = 0, binding = 1) uniform usamplerBuffer B;
layout(std430, set = 0, binding = 2) writeonly buffer C { f16vec4 c[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif

// octet widens the eight Float16 elements of texel i to float32.
void octet(usamplerBuffer t, uint i, out vec4 lo, out vec4 hi) {
    uvec4 w = texelFetch(t, int(i));
    lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
    hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
}

void loadA(uint i, out float v[8]) {
    vec4 lo, hi;
    octet(A, i, lo, hi);
    v = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}

void loadB(uint i, out vec4 lo, out vec4 hi) {
    octet(B, i, lo, hi);
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
