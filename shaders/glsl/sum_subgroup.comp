#version 450
// sum_subgroup: the contract of sum (partials[g] = sum of the 256 elements
// src[g*256 .. g*256+255] of workgroup g, clipped to n; ceil(n/256) groups),
// reduced with subgroup arithmetic. Each invocation adds 256/W consecutive
// elements of its group (W = workgroup size x, which must divide 64) as
// vec4 loads, where a whole quad is below n, element by element past it;
// then subgroupAdd. The catalogue sizes the workgroup to one subgroup, so
// the group's total is that subgroupAdd's and no barrier runs; a device
// whose subgroups come out smaller (a varying subgroup size) adds the
// subgroups' totals through shared memory after one barrier.
// Use it only where the device reports subgroup arithmetic in compute.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
// Built with -DDYNAMIC as sum_subgroup_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// sum_subgroup_dyn bindings: 0 src (read), 1 partials (write), 2 n (read, uint32 at index 0).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 0) readonly buffer Src4 { vec4 src4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
const uint SPAN = 256u;                         // elements per group
const uint QUADS = SPAN / 4u / gl_WorkGroupSize.x; // vec4 per invocation
shared float subgroupSums[gl_WorkGroupSize.x];
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint n = n_;
#else
    uint n = pc.n;
#endif
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint count = n / SPAN + (n % SPAN != 0u ? 1u : 0u);
    if (group >= count) return; // uniform across the workgroup
    uint full = n / 4u;         // quads wholly below n
    uint first = group * (SPAN / 4u) + gl_LocalInvocationID.x;
    vec4 acc = vec4(0.0);
    for (uint j = 0u; j < QUADS; ++j) {
        uint q = first + j * gl_WorkGroupSize.x; // consecutive lanes, consecutive quads
        if (q < full) {
            acc += src4[q];
        } else {
            for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) acc.x += src[i];
        }
    }
    float total = subgroupAdd((acc.x + acc.y) + (acc.z + acc.w));
    if (gl_NumSubgroups == 1u) {
        if (subgroupElect()) partials[group] = total;
        return;
    }
    if (subgroupElect()) subgroupSums[gl_SubgroupID] = total;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) s += subgroupSums[i];
        partials[group] = s;
    }
}
