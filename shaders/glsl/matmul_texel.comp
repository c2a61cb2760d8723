#version 450
// matmul_texel: matmul_wide (same contract, shape rule, geometry, block
// and arithmetic, so the same bits) reading A and B through uniform texel
// buffers of R32G32B32A32_UINT texels instead of storage buffers. On a CPU
// driver (lavapipe on Mesa 22.3) a texel fetch loads each lane's 16 bytes
// with one vector load and no branch, where a storage-buffer load is a
// loop over the SIMD lanes with a bounds check per component: with the
// loads that much cheaper the same kernel runs about 1.5x as fast. It
// needs no 64-bit integers. A launcher offers it on CPU drivers where both
// inputs may be viewed as texels (offsets a multiple of
// minTexelBufferOffsetAlignment, at most maxTexelBufferElements texels).
//
// Bindings: 0 A (read, texels), 1 B (read, texels), 2 C (write). Push: M, N, K uint32.
// Built with -DDYNAMIC as matmul_texel_dyn: M, N, K come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0; surplus groups of an indirect dispatch do nothing.
// matmul_texel_dyn bindings: 0 A, 1 B (read, texels), 2 C (write), 3 M, 4 N, 5 K (read, uint32).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) uniform usamplerBuffer A;
layout(set = 0, binding = 1) uniform usamplerBuffer B;
layout(std430, set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarM { uint M_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint N_; };
layout(std430, set = 0, binding = 5) readonly buffer ScalarK { uint K_; };
#else
layout(push_constant) uniform Push { uint M; uint N; uint K; } pc;
#endif

// The eight floats of octet i are texels 2i and 2i+1.
void loadA(uint i, out float v[8]) {
    vec4 lo = uintBitsToFloat(texelFetch(A, int(2u * i)));
    vec4 hi = uintBitsToFloat(texelFetch(A, int(2u * i + 1u)));
    v = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}

void loadB(uint i, out vec4 lo, out vec4 hi) {
    lo = uintBitsToFloat(texelFetch(B, int(2u * i)));
    hi = uintBitsToFloat(texelFetch(B, int(2u * i + 1u)));
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
