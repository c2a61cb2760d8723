#version 450
// sum: partials[g] = sum of src[g*W .. g*W+W-1] (clipped to n), where W is the
// workgroup size x and g the linear workgroup index
// (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x). The caller
// dispatches ceil(n/W) groups (spread over y if needed) and repeats on the
// partials until one value is left. Groups past ceil(n/W) write nothing.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
// Built with -DDYNAMIC as sum_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// sum_dyn bindings: 0 src (read), 1 partials (write), 2 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
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
