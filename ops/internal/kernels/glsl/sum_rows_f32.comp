#version 450
// sum_rows_f32: the first pass of Sum and Mean over the last axis of
// contiguous float32 rows (the whole tensor is one row), for drivers whose
// per-invocation loads cost more than their arithmetic (lavapipe turns
// each into a loop over its SIMD lanes): every load reads a vec4, four
// elements, and each invocation keeps four running sums of four.
// Row r has R elements from element off + r*R; R and off are multiples of
// 4, so the vec4 loads are aligned. Group (r, k) sums elements
// [k*SPAN, (k+1)*SPAN) of row r, clipped to R, into partials[r*splits + k];
// groups may be spread over y (group = x + y*numGroupsX).
#include "types.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer In { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float partials[]; };
layout(push_constant) uniform Push { uint rows, R, splits, off; } pc;
const uint SPAN = 16384u; // elements per group: 64 steps of 64 vec4s
shared float part[64];

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint r = group / pc.splits, k = group % pc.splits;
    if (r >= pc.rows) return;
    uint lid = gl_LocalInvocationID.x;
    uint base = (pc.off + r * pc.R) / 4u;                  // the row's first vec4
    uint first = k * (SPAN / 4u), last = min(pc.R / 4u, first + SPAN / 4u);
    vec4 a = vec4(0.0), b = vec4(0.0), c = vec4(0.0), d = vec4(0.0);
    uint i = first + lid;
    if (last - first == SPAN / 4u) {                         // a whole span: no checks
        for (; i < last; i += 4u * WG) {
            a += x4[base + i];
            b += x4[base + i + WG];
            c += x4[base + i + 2u * WG];
            d += x4[base + i + 3u * WG];
        }
    } else {
        for (; i < last; i += WG) a += x4[base + i];
    }
    a = (a + b) + (c + d);
    part[lid] = (a.x + a.y) + (a.z + a.w);
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
        if (lid < half_) part[lid] += part[lid + half_];
        barrier();
    }
    if (lid == 0u) partials[r * pc.splits + k] = part[0];
}
