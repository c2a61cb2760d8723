#version 450
// accum: y[i] += x[i] for i < n, so y is read and written: a description
// that calls y write-only leaves out a read and must be refused at load.
// Bindings: 0 x (read), 1 y (read-write). Push: n uint32.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] += x[i];
}
