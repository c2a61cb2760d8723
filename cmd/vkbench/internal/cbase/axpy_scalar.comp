#version 450
// axpy_scalar: y[i] = a*x[i] + y[i] for i < n, one element per invocation,
// 256 invocations per workgroup: the kernel a C programmer writes first, and
// the scalar baseline of the dispatch suite's C chains (vkc's own axpy takes
// four elements per invocation; c-replay-bound-vec4 runs that one).
// Bindings: 0 x (read), 1 y (read-write). Push: a float32, n uint32.
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { float a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) y[i] = pc.a * x[i] + y[i];
}
