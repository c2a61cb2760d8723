#version 450
// sum_subgroup: the contract of sum (partials[g] = sum of the W elements of
// workgroup g, clipped to n; ceil(n/W) groups), reduced with subgroup
// arithmetic instead of a shared-memory tree: one barrier instead of log2(W).
// Use it only where the device reports subgroup arithmetic in compute, and
// keep the workgroup size x a multiple of the subgroup size (the default 256
// is): lavapipe sums a partial last subgroup wrongly.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
// Built with -DDYNAMIC as sum_subgroup_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// sum_subgroup_dyn bindings: 0 src (read), 1 partials (write), 2 n (read, uint32 at index 0).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
// One slot per subgroup; the workgroup size bounds the subgroup count.
shared float subgroupSums[gl_WorkGroupSize.x];
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint n = n_;
#else
    uint n = pc.n;
#endif
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + gl_LocalInvocationID.x;
    float partial = subgroupAdd(i < n ? src[i] : 0.0);
    if (subgroupElect()) subgroupSums[gl_SubgroupID] = partial;
    barrier();
    if (gl_SubgroupID == 0u) {
        float total = 0.0;
        for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) total += subgroupSums[s];
        total = subgroupAdd(total);
        uint count = n / size + (n % size != 0u ? 1u : 0u);
        if (subgroupElect() && group < count) partials[group] = total;
    }
}
