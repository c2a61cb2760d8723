#version 450
// axpy_len: y[i] = a*x[i] + y[i] for i < n, vkc's axpy (shaders/glsl/axpy.comp,
// the same math and shape) with its length read from a bound buffer, a
// vkc.Param, instead of a push constant: a graph that recorded a launch of
// it follows the param's value on every replay, with the group count from
// vkc.GroupsOf. The dispatch suite's dynamic chain launches it the way a
// library on vkc would.
// Bindings: 0 x (read), 1 y (read-write), 2 n (read, uint32). Push: a float32.
// Built with -DWIDE as axpy_len_wide: eight elements per invocation in
// 64-bit words, 32 invocations per group, like axpy_wide.
#ifdef WIDE
#extension GL_GOOGLE_include_directive : require
#include "wide.glsl"
layout(local_size_x = 32, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X8 { u64vec4 x8[]; };
layout(std430, set = 0, binding = 1) buffer Y8 { u64vec4 y8[]; };
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
#endif
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) buffer Y4 { vec4 y4[]; };
layout(std430, set = 0, binding = 2) readonly buffer N { uint n_; };
layout(push_constant) uniform Push { float a; } pc;
void main() {
    // n is loaded once: the compiler may not assume that a buffer keeps
    // its value across the kernel's own writes to another binding.
    float a = pc.a;
    uint n = n_;
    uint q = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef WIDE
    if (q < n / 8u) {
        u64vec4 xw = x8[q], yw = y8[q];
        y8[q] = wideFloats(a * lowFloats(xw) + lowFloats(yw), a * highFloats(xw) + highFloats(yw));
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) y[i] = a * x[i] + y[i];
    }
#else
    if (q < n / 4u) {
        y4[q] = a * x4[q] + y4[q];
    } else {
        for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) y[i] = a * x[i] + y[i];
    }
#endif
}
