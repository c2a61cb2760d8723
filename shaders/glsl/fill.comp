#version 450
// fill: out[i] = value for i < n, over 32-bit words. The value travels as its
// uint bits, so one kernel fills float32, int32 and uint32 buffers alike.
// Bindings: 0 out (write). Push: value uint32, n uint32.
// One element per invocation; groups may be spread over y (see index below).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(push_constant) uniform Push { uint value; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) dst[i] = pc.value;
}
