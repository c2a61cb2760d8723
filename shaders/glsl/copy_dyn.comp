#version 450
// copy_dyn: dst[i] = src[i] for i < n over 32-bit words (any 32-bit element
// type), as copy does, with n read from device memory instead of a push
// constant, so that a recorded launch uses the length current at each
// replay. The geometry is copy's: ceil(n/256) groups, spread over y past the
// x limit. Only n bounds the work, never the group count: surplus groups (an
// indirect dispatch sized for more) do nothing.
// Bindings: 0 src (read), 1 dst (write), 2 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
void main() {
    uint n = n_;
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < n) dst[i] = src[i];
}
