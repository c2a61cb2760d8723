#version 450
// sum_texel_f32 (and max_texel_f32, built with -DMAX): the first pass of
// Sum, Mean and Max over contiguous float32 rows with sum_rows_f32's
// contract (the same push constants and partials; R and off multiples of
// 4), x bound as rgba32f texels, for CPU drivers. Lavapipe compiles a
// storage-buffer load whose address differs per lane into a loop over
// the lanes with a bounds check each, but a texel load into one gather of
// each lane's 16-byte texel with one vector load and no branch. A group is
// LOCAL (8, lavapipe's SIMD lanes) invocations, each reducing its share
// of the group's span into four running vec4s; invocation 0 combines the
// group's LOCAL results in a fixed order, so the order of the additions
// depends on the shape only.
#include "types.glsl"
#define LOCAL 8
#ifdef MAX
#define ACC(a, v) a = max(a, v)
#define COMBINE(a, b) max(a, b)
#else
#define ACC(a, v) a += v
#define COMBINE(a, b) ((a) + (b))
#endif
layout(local_size_x = LOCAL) in;
layout(set = 0, binding = 0, rgba32f) readonly uniform imageBuffer x4;
layout(std430, set = 0, binding = 1) writeonly buffer Out { float partials[]; };
layout(push_constant) uniform Push { uint rows, R, splits, off; } pc;
const uint SPAN = 16384u; // elements per group
shared float part[LOCAL];

vec4 texel(uint t) { return imageLoad(x4, int(t)); }

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint r = group / pc.splits, k = group % pc.splits;
    uint lid = gl_LocalInvocationID.x;
    if (r >= pc.rows) return;
    uint base = (pc.off + r * pc.R) / 4u; // the row's first texel
    uint first = k * (SPAN / 4u), last = min(pc.R / 4u, first + SPAN / 4u);
#ifdef MAX
    // Every group's span holds at least one texel: start from its first.
    vec4 a = texel(base + first), b = a, c = a, d = a;
#else
    vec4 a = vec4(0.0), b = vec4(0.0), c = vec4(0.0), d = vec4(0.0);
#endif
    // Invocation l takes texel pairs l, l+8, l+16, ... of the span (texels
    // 2p and 2p+1 of pair p), two pairs a step: sum_rows_wide_f32's
    // eight-element loads and its order of additions, so the same bits
    // where both apply (R and off multiples of 8).
    uint i = first / 2u + lid;
    for (; 2u * i + 17u < last; i += 16u) {
        ACC(a, texel(base + 2u * i));
        ACC(b, texel(base + 2u * i + 1u));
        ACC(c, texel(base + 2u * i + 16u));
        ACC(d, texel(base + 2u * i + 17u));
    }
    // What is left of the lane's texels: at most those of two pairs, the
    // second cut short (a span of an odd number of texels).
    if (2u * i < last) ACC(a, texel(base + 2u * i));
    if (2u * i + 1u < last) ACC(b, texel(base + 2u * i + 1u));
    if (2u * i + 16u < last) ACC(c, texel(base + 2u * i + 16u));
    a = COMBINE(COMBINE(a, b), COMBINE(c, d));
    part[lid] = COMBINE(COMBINE(a.x, a.y), COMBINE(a.z, a.w));
    barrier();
    if (lid == 0u) {
        float s = part[0];
        for (uint j = 1u; j < LOCAL; ++j) s = COMBINE(s, part[j]);
        partials[r * pc.splits + k] = s;
    }
}
