#version 450
// arrblk: bufs[1].v[i] = bufs[0].v[i] through an array of two storage
// buffers at one binding; Launch binds one buffer per binding, so
// LoadKernel must refuse the module. Bindings: 0 bufs (two storage buffers).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer B { float v[]; } bufs[2];
void main() {
    uint i = gl_GlobalInvocationID.x;
    bufs[1].v[i] = bufs[0].v[i];
}
