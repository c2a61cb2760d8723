#version 450
// sum_subgroup: the contract of sum (partials[g] = sum of the W elements of
// workgroup g, clipped to n; ceil(n/W) groups), reduced with subgroup
// arithmetic instead of a shared-memory tree: one barrier instead of log2(W).
// Use it only where the device reports subgroup arithmetic in compute, and
// keep the workgroup size x a multiple of the subgroup size (the default 256
// is): lavapipe sums a partial last subgroup wrongly.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { uint n; } pc;
// One slot per subgroup; the workgroup size bounds the subgroup count.
shared float subgroupSums[gl_WorkGroupSize.x];
void main() {
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + gl_LocalInvocationID.x;
    float partial = subgroupAdd(i < pc.n ? src[i] : 0.0);
    if (subgroupElect()) subgroupSums[gl_SubgroupID] = partial;
    barrier();
    if (gl_SubgroupID == 0u) {
        float total = 0.0;
        for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) total += subgroupSums[s];
        total = subgroupAdd(total);
        uint count = pc.n / size + (pc.n % size != 0u ? 1u : 0u);
        if (subgroupElect() && group < count) partials[group] = total;
    }
}
