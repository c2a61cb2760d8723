#version 450
// sum_rows_wide_f32: sum_rows_f32's contract (the same push constants,
// bindings and partials, with R and off multiples of 8) for CPU drivers with 64-bit integers: a group is
// eight invocations, and each load reads a u64vec4 (eight float32) at an
// address that differs per invocation, so a driver that turns such a load
// into a loop over its SIMD lanes (lavapipe) runs that loop once per eight
// elements. Each invocation makes two loads a step, into four running sums of four.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "types.glsl"
layout(local_size_x = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer In { u64vec4 x8[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float partials[]; };
layout(push_constant) uniform Push { uint rows, R, splits, off; } pc;
const uint SPAN = 16384u; // elements per group
shared float part[8];

vec4 lo(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y))); }
vec4 hi(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.z)), uintBitsToFloat(unpackUint2x32(v.w))); }

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint r = group / pc.splits, k = group % pc.splits;
    uint lid = gl_LocalInvocationID.x;
    if (r >= pc.rows) return;
    // The row's first element, in eights (R and off are multiples of 8).
    uint base = (pc.off + r * pc.R) / 8u;
    uint first = k * (SPAN / 8u), last = min(pc.R / 8u, first + SPAN / 8u);
    vec4 a = vec4(0.0), b = vec4(0.0), c = vec4(0.0), d = vec4(0.0);
    uint i = first + lid;
    for (; i + 8u < last; i += 16u) {
        u64vec4 v = x8[base + i], w = x8[base + i + 8u];
        a += lo(v);
        b += hi(v);
        c += lo(w);
        d += hi(w);
    }
    if (i < last) {
        u64vec4 v = x8[base + i];
        a += lo(v);
        b += hi(v);
    }
    a = (a + b) + (c + d);
    part[lid] = (a.x + a.y) + (a.z + a.w);
    barrier();
    if (lid == 0u) {
        float s = 0.0;
        for (uint j = 0u; j < 8u; ++j) s += part[j];
        partials[r * pc.splits + k] = s;
    }
}
