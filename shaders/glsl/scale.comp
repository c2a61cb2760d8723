#version 450
// scale: y[i] = a*x[i] for i < n.
// Bindings: 0 x (read), 1 y (write). Push: a float32, n uint32.
// Built with -DWIDE as scale_wide: eight elements per invocation in 64-bit
// words, 32 invocations per group (see wide.glsl); with both, scale_wide_dyn.
// Built with -DDYNAMIC as scale_dyn (see the catalogue): a, n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// scale_dyn bindings: 0 x (read), 1 y (write), 2 a (read, float32), 3 n (read, uint32).
#ifdef WIDE
#extension GL_GOOGLE_include_directive : require
#include "wide.glsl"
layout(local_size_x = 32, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X8 { u64vec4 x8[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y8 { u64vec4 y8[]; };
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
#endif
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y4 { vec4 y4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarA { float a_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { float a; uint n; } pc;
#endif
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    float a = a_;
    uint n = n_;
#else
    float a = pc.a;
    uint n = pc.n;
#endif
    // Four elements per invocation (eight in 64-bit words with WIDE; see the catalogue): a vec4 load and
    // store where the whole quad is below n, element by element for the
    // last, partial quad.
    uint q = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef WIDE
    if (q < n / 8u) {
        u64vec4 xw = x8[q];
        y8[q] = wideFloats(a * lowFloats(xw), a * highFloats(xw));
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) y[i] = a * x[i];
    }
#else
    if (q < n / 4u) {
        y4[q] = a * x4[q];
    } else {
        for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) y[i] = a * x[i];
    }
#endif
}
