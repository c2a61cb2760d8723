#version 450
// sum: partials[g] = sum of src[g*W .. g*W+W-1] (clipped to n), where W is the
// workgroup size x and g the linear workgroup index
// (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x). The caller
// dispatches ceil(n/W) groups (spread over y if needed) and repeats on the
// partials until one value is left. Groups past ceil(n/W) write nothing.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { uint n; } pc;
shared float scratch[gl_WorkGroupSize.x];
void main() {
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + lid;
    scratch[lid] = i < pc.n ? src[i] : 0.0;
    barrier();
    // Fold a non-power-of-two size onto its largest power of two, then halve.
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
