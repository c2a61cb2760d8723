#version 450
// sum_rows_f32: the first pass of Sum and Mean over the last axis of
// contiguous float32 rows (the whole tensor is one row), for drivers whose
// per-lane loads cost more than their arithmetic. Lavapipe turns a load
// whose address differs between the lanes of a group into a loop over
// the lanes with a bounds check each, but a load whose address is the
// same for every lane into one plain load; so a group here is a single
// invocation, whose every load is such a uniform load of a vec4 (four
// elements), into eight running sums of four.
// Row r has R elements from element off + r*R; R and off are multiples of
// 4, so the vec4 loads are aligned. Group (r, k) sums elements
// [k*SPAN, (k+1)*SPAN) of row r, clipped to R, into partials[r*splits + k];
// groups may be spread over y (group = x + y*numGroupsX).
#include "types.glsl"
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer In { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float partials[]; };
layout(push_constant) uniform Push { uint rows, R, splits, off; } pc;
const uint SPAN = 16384u; // elements per group

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint r = group / pc.splits, k = group % pc.splits;
    if (r >= pc.rows) return;
    uint base = (pc.off + r * pc.R) / 4u;                  // the row's first vec4
    uint first = k * (SPAN / 4u), last = min(pc.R / 4u, first + SPAN / 4u);
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    vec4 s4 = vec4(0.0), s5 = vec4(0.0), s6 = vec4(0.0), s7 = vec4(0.0);
    uint i = first;
    for (; i + 8u <= last; i += 8u) {
        s0 += x4[base + i];
        s1 += x4[base + i + 1u];
        s2 += x4[base + i + 2u];
        s3 += x4[base + i + 3u];
        s4 += x4[base + i + 4u];
        s5 += x4[base + i + 5u];
        s6 += x4[base + i + 6u];
        s7 += x4[base + i + 7u];
    }
    for (; i < last; ++i) s0 += x4[base + i];
    vec4 s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    partials[r * pc.splits + k] = (s.x + s.y) + (s.z + s.w);
}
