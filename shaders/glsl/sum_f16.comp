#version 450
// sum_f16: the first pass of a sum: partials of x in float.
// Elements are Float16 (IEEE binary16), loaded and stored in 16 bits
// (storageBuffer16BitAccess), computed in float32; a store rounds as the
// device converts float32 to float16 (to nearest even on lavapipe).
// Built with -DDYNAMIC as sum_f16_dyn: n come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0 (uint32), so a recorded launch uses the values current at
// each replay; surplus groups of an indirect dispatch do nothing.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// partials[g] = the sum of the W = local size x elements of group g
// (g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x), clipped to
// n, accumulated in float. Groups past ceil(n/W) write nothing. With two
// inputs (DOT) the elements are the products x[i]*y[i].
// Bindings: 0 x (read), partials (write, float). Push: n uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
shared float scratch[gl_WorkGroupSize.x];
void main() {
#ifdef DYNAMIC
    uint n = n_;
#else
    uint n = pc.n;
#endif
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint i = group * size + lid;
    scratch[lid] = i < n ? float(x[i]) : float(0.0);
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
