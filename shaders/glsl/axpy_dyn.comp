#version 450
// axpy_dyn: y[i] = a*x[i] + y[i] for i < n, as axpy does, with a and n read
// from device memory instead of push constants, so that a recorded launch
// uses the values current at each replay. Each scalar is a readonly storage
// buffer of its own holding the value at index 0, bound after the kernel's
// buffers in the order of axpy's push constants. The geometry is axpy's:
// ceil(n/256) groups, spread over y past the x limit. Only n bounds the work,
// never the group count: surplus groups (an indirect dispatch sized for more)
// do nothing.
// Bindings: 0 x (read), 1 y (read-write), 2 a (read, float32), 3 n (read, uint32).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer ScalarA { float a_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarN { uint n_; };
void main() {
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    float a = a_;
    uint n = n_;
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
