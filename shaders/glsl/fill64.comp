#version 450
// fill64: every 64-bit element i < n of out set to value, held as its low
// and high 32-bit words (little-endian), so one kernel fills float64, int64
// and uint64 buffers alike without 64-bit arithmetic.
// Bindings: 0 out (write). Push: lo uint32, hi uint32, n uint32 (elements).
// One element per invocation; groups may be spread over y (see index below).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(push_constant) uniform Push { uint lo; uint hi; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        dst[2u * i] = pc.lo;
        dst[2u * i + 1u] = pc.hi;
    }
}
