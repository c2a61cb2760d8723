#version 450
// mul_dyn: z[i] = x[i] * y[i] for i < n, with n read from device memory
// instead of a push constant, so that a recorded launch uses the length
// current at each replay. The geometry is mul's: ceil(n/256) groups, spread
// over y past the x limit. Only n bounds the work, never the group count:
// surplus groups (an indirect dispatch sized for more) do nothing.
// Bindings: 0 x (read), 1 y (read), 2 z (write), 3 n (read, uint32 at index 0).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
void main() {
    uint n = n_;
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < n) z[i] = x[i] * y[i];
}
