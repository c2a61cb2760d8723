#version 450
// mul: z[i] = x[i] * y[i] for i < n.
// Bindings: 0 x (read), 1 y (read), 2 z (write). Push: n uint32.
// Built with -DWIDE as mul_wide: eight elements per invocation in 64-bit
// words, 32 invocations per group (see wide.glsl); with both, mul_wide_dyn.
// Built with -DDYNAMIC as mul_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// mul_dyn bindings: 0 x (read), 1 y (read), 2 z (write), 3 n (read, uint32 at index 0).
#ifdef WIDE
#extension GL_GOOGLE_include_directive : require
#include "wide.glsl"
layout(local_size_x = 32, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X8 { u64vec4 x8[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y8 { u64vec4 y8[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z8 { u64vec4 z8[]; };
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
#endif
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y4 { vec4 y4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z4 { vec4 z4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
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
    // Four elements per invocation (eight in 64-bit words with WIDE; see the catalogue): one vec4 load of
    // each input and one store where the whole quad is below n, element by
    // element for the last, partial quad.
    uint q = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef WIDE
    if (q < n / 8u) {
        u64vec4 xw = x8[q], yw = y8[q];
        z8[q] = wideFloats(lowFloats(xw) * lowFloats(yw), highFloats(xw) * highFloats(yw));
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) z[i] = x[i] * y[i];
    }
#else
    if (q < n / 4u) {
        z4[q] = x4[q] * y4[q];
    } else {
        for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) z[i] = x[i] * y[i];
    }
#endif
}
