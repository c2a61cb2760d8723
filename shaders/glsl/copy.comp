#version 450
// copy: dst[i] = src[i] for i < n, over 32-bit words (any 32-bit element type).
// Bindings: 0 src (read), 1 dst (write). Push: n uint32.
// Built with -DWIDE as copy_wide: eight elements per invocation in 64-bit
// words, 32 invocations per group (see wide.glsl); with both, copy_wide_dyn.
// Built with -DDYNAMIC as copy_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// copy_dyn bindings: 0 src (read), 1 dst (write), 2 n (read, uint32 at index 0).
#ifdef WIDE
#extension GL_GOOGLE_include_directive : require
#include "wide.glsl"
layout(local_size_x = 32, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src8 { u64vec4 src8[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst8 { u64vec4 dst8[]; };
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
#endif
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { uvec4 dst4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint n = n_;
#else
    uint n = pc.n;
#endif
    // Four words per invocation (eight in 64-bit words with WIDE; see the catalogue): one uvec4 where the
    // whole quad is below n, word by word for the last, partial quad.
    uint q = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef WIDE
    if (q < n / 8u) {
        dst8[q] = src8[q];
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) dst[i] = src[i];
    }
#else
    if (q < n / 4u) {
        dst4[q] = src4[q];
    } else {
        for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) dst[i] = src[i];
    }
#endif
}
