#version 450
// fill_dyn: out[i] = value for i < n over 32-bit words, as fill does, with
// value and n read from device memory instead of push constants, so that a
// recorded launch uses the values current at each replay. Each scalar is a
// readonly storage buffer of its own holding the value at index 0, bound
// after the kernel's buffer in the order of fill's push constants; value is
// the element's uint bits, so one kernel fills float32, int32 and uint32.
// The geometry is fill's: ceil(n/256) groups, spread over y past the x limit.
// Only n bounds the work, never the group count: surplus groups (an indirect
// dispatch sized for more) do nothing.
// Bindings: 0 out (write), 1 value (read, uint32), 2 n (read, uint32).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer ScalarValue { uint value_; };
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
void main() {
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint value = value_, n = n_;
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < n) dst[i] = value;
}
