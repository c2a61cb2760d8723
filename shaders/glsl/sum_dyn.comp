#version 450
// sum_dyn: sum with n read from device memory instead of a push constant, so
// that a recorded launch uses the length current at each replay.
// partials[g] = sum of src[g*W .. g*W+W-1] (clipped to n), where W is the
// workgroup size x and g the linear workgroup index
// (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x). The geometry
// and the partials are sum's: ceil(n/W) groups (spread over y if needed),
// repeated on the partials until one value is left. Only n bounds the work,
// never the group count: groups past ceil(n/W) (an indirect dispatch sized
// for more) write nothing.
// Bindings: 0 src (read), 1 partials (write), 2 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
shared float scratch[gl_WorkGroupSize.x];
void main() {
    uint n = n_;
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + lid;
    scratch[lid] = i < n ? src[i] : 0.0;
    barrier();
    // Fold a non-power-of-two size onto its largest power of two, then halve.
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
