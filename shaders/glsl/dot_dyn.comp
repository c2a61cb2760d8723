#version 450
// dot_dyn: dot with n read from device memory instead of a push constant, so
// that a recorded launch uses the length current at each replay.
// partials[g] = sum of x[i]*y[i] over the W elements of workgroup g
// (W = workgroup size x, g = gl_WorkGroupID.x + gl_WorkGroupID.y *
// gl_NumWorkGroups.x), clipped to n. The geometry and the partials are dot's:
// ceil(n/W) groups, whose partials the caller then reduces with sum. Only n
// bounds the work, never the group count: groups past ceil(n/W) (an indirect
// dispatch sized for more) write nothing.
// Bindings: 0 x (read), 1 y (read), 2 partials (write), 3 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Partials { float partials[]; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
shared float scratch[gl_WorkGroupSize.x];
void main() {
    uint n = n_;
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
