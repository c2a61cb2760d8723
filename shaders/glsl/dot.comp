#version 450
// dot: partials[g] = sum of x[i]*y[i] over the W elements of workgroup g
// (W = workgroup size x, g = gl_WorkGroupID.x + gl_WorkGroupID.y *
// gl_NumWorkGroups.x), clipped to n. The caller dispatches ceil(n/W) groups
// and then reduces the partials with sum. Groups past ceil(n/W) write nothing.
// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
// Built with -DDYNAMIC as dot_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// dot_dyn bindings: 0 x (read), 1 y (read), 2 partials (write), 3 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
shared float scratch[gl_WorkGroupSize.x];
void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint n = n_;
#else
    uint n = pc.n;
#endif
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + lid;
    scratch[lid] = i < n ? x[i] * y[i] : 0.0;
    barrier();
    uint p = 1u << findMSB(size);
    if (lid + p < size) scratch[lid] += scratch[lid + p];
    barrier();
    for (uint s = p >> 1; s > 0u; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier();
    }
    uint count = n / size + (n % size != 0u ? 1u : 0u);
    if (lid == 0u && group < count) partials[group] = scratch[0];
}
