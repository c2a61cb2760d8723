#version 450
// dot: partials[g] = sum of x[i]*y[i] over the W elements of workgroup g
// (W = workgroup size x, g = gl_WorkGroupID.x + gl_WorkGroupID.y *
// gl_NumWorkGroups.x), clipped to n. The caller dispatches ceil(n/W) groups
// and then reduces the partials with sum. Groups past ceil(n/W) write nothing.
// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { uint n; } pc;
shared float scratch[gl_WorkGroupSize.x];
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + lid;
    scratch[lid] = i < pc.n ? x[i] * y[i] : 0.0;
    barrier();
    uint p = 1u << findMSB(size);
    if (lid + p < size) scratch[lid] += scratch[lid + p];
    barrier();
    for (uint s = p >> 1; s > 0u; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier();
    }
    uint count = pc.n / size + (pc.n % size != 0u ? 1u : 0u);
    if (lid == 0u && group < count) partials[group] = scratch[0];
}
