#version 450
// fill: out[i] = value for i < n, over 32-bit words. The value travels as its
// uint bits, so one kernel fills float32, int32 and uint32 buffers alike.
// Bindings: 0 out (write). Push: value uint32, n uint32.
// Four elements per invocation; groups may be spread over y (see index below).
// Built with -DWIDE as fill_wide: eight elements per invocation in 64-bit
// words, 32 invocations per group (see wide.glsl); with both, fill_wide_dyn.
// Built with -DDYNAMIC as fill_dyn (see the catalogue): value, n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// fill_dyn bindings: 0 out (write), 1 value (read, uint32), 2 n (read, uint32).
#ifdef WIDE
#extension GL_GOOGLE_include_directive : require
#include "wide.glsl"
layout(local_size_x = 32, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out8 { u64vec4 dst8[]; };
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
#endif
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 0) writeonly buffer Out4 { uvec4 dst4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 1) readonly buffer ScalarValue { uint value_; };
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint value; uint n; } pc;
#endif
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint value = value_, n = n_;
#else
    uint value = pc.value, n = pc.n;
#endif
    // Four words per invocation (eight in 64-bit words with WIDE; see the catalogue): one uvec4 store where
    // the whole quad is below n, word by word for the last, partial quad.
    uint q = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef WIDE
    if (q < n / 8u) {
        dst8[q] = u64vec4(packUint2x32(uvec2(value)));
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) dst[i] = value;
    }
#else
    if (q < n / 4u) {
        dst4[q] = uvec4(value);
    } else {
        for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) dst[i] = value;
    }
#endif
}
