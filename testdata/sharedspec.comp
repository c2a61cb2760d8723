#version 450
// sharedspec: 16 floats of shared memory per invocation (4 KiB at the
// default 64-wide workgroup), sized by gl_WorkGroupSize.x with x
// specializable: a wide enough requested workgroup takes more shared
// memory than the device allows, which LoadKernel must refuse.
// Bindings: 0 y (read-write). Push: none.
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
shared float s[gl_WorkGroupSize.x * 16u];
void main() {
    uint i = gl_LocalInvocationID.x;
    s[i * 16u] = y[gl_GlobalInvocationID.x];
    barrier();
    y[gl_GlobalInvocationID.x] = s[((i + 1u) % gl_WorkGroupSize.x) * 16u];
}
