// Bindings whose blocks declare a size: y holds 100 floats, and h a
// 16-byte header before its runtime array. y[i] = h.scale * i; h.data[0]
// counts the invocations.
#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { float y[100]; };
layout(std430, set = 0, binding = 1) buffer Head { float scale; uint pad[3]; uint data[]; } h;

void main() {
    for (uint i = 0; i < 100; i++) {
        y[i] = h.scale * float(i);
    }
    atomicAdd(h.data[0], 1);
}
