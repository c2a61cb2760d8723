#version 450
// bigshared: 256 KiB of shared memory, above any device's
// maxComputeSharedMemorySize (32 KiB on lavapipe): LoadKernel must refuse
// it. Bindings: 0 y (read-write). Push: none.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
shared float big[65536];
void main() {
    uint i = gl_GlobalInvocationID.x;
    big[i * 1000u] = y[i];
    barrier();
    y[i] = big[(i * 1000u + 7u) % 65536u];
}
