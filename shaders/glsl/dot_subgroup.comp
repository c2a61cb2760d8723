#version 450
// dot_subgroup: the contract of dot (partials[g] = sum of x[i]*y[i] over the
// 256 elements of workgroup g, clipped to n; ceil(n/256) groups; the caller
// reduces the partials with sum), reduced as sum_subgroup reduces: 256/W
// consecutive products per invocation from vec4 loads (element by element
// past the last whole quad), subgroupAdd, and, only where a group holds
// more than one subgroup, shared memory after one barrier.
// Use it only where the device reports subgroup arithmetic in compute.
// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
// Built with -DDYNAMIC as dot_subgroup_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// dot_subgroup_dyn bindings: 0 x (read), 1 y (read), 2 partials (write), 3 n (read, uint32 at index 0).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y4 { vec4 y4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
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
            acc += x4[q] * y4[q];
        } else {
            for (uint i = q * 4u; i < n && i < q * 4u + 4u; ++i) acc.x += x[i] * y[i];
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
