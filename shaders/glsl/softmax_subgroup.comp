#version 450
// softmax_subgroup: the contract of softmax (row-wise, numerically stable,
// any cols; one workgroup per row, row = gl_WorkGroupID.x +
// gl_WorkGroupID.y * gl_NumWorkGroups.x, groups past rows do nothing),
// reduced with subgroup arithmetic: the row maximum with subgroupMax and
// the sum of the exponentials with subgroupAdd. The catalogue sizes the
// workgroup to one subgroup, so no barrier runs; where subgroups come out
// smaller, their results meet in shared memory between two barriers. Rows
// whose length is a multiple of 4 are read and written as vec4.
// Use it only where the device reports subgroup arithmetic in compute.
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
// Built with -DDYNAMIC as softmax_subgroup_dyn (see the catalogue): rows, cols come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// softmax_subgroup_dyn bindings: 0 src (read), 1 dst (write), 2 rows (read, uint32), 3 cols (read, uint32).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 0) readonly buffer Src4 { vec4 src4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { vec4 dst4[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarRows { uint rows_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarCols { uint cols_; };
#else
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
#endif
shared float scratch[gl_WorkGroupSize.x];

// Workgroup-wide maximum or sum of one value per invocation; every
// invocation gets the result.
float combine(float v, bool takeMax) {
    v = takeMax ? subgroupMax(v) : subgroupAdd(v);
    if (gl_NumSubgroups == 1u) return v; // uniform: one subgroup is the group
    if (subgroupElect()) scratch[gl_SubgroupID] = v;
    barrier();
    float r = scratch[0];
    for (uint i = 1u; i < gl_NumSubgroups; ++i) r = takeMax ? max(r, scratch[i]) : r + scratch[i];
    barrier();
    return r;
}

void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint rows = rows_, cols = cols_;
#else
    uint rows = pc.rows, cols = pc.cols;
#endif
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= rows) return; // uniform across the workgroup
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    float m = uintBitsToFloat(0xff800000u); // -inf
    float s = 0.0;
    if ((cols & 3u) == 0u) {
        uint base = row * (cols >> 2), quads = cols >> 2;
        for (uint c = lid; c < quads; c += size) {
            vec4 v = src4[base + c];
            m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
        }
        m = combine(m, true);
        for (uint c = lid; c < quads; c += size) {
            vec4 e = exp(src4[base + c] - m);
            s += (e.x + e.y) + (e.z + e.w);
        }
        float inv = 1.0 / combine(s, false);
        for (uint c = lid; c < quads; c += size) dst4[base + c] = exp(src4[base + c] - m) * inv;
    } else {
        uint base = row * cols;
        for (uint c = lid; c < cols; c += size) m = max(m, src[base + c]);
        m = combine(m, true);
        for (uint c = lid; c < cols; c += size) s += exp(src[base + c] - m);
        float inv = 1.0 / combine(s, false);
        for (uint c = lid; c < cols; c += size) dst[base + c] = exp(src[base + c] - m) * inv;
    }
}
