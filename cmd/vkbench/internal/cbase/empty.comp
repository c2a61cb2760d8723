#version 450
// empty: axpy's bindings, push constants and workgroup size with a body
// that does nothing. A chain of it costs what the driver charges per
// launch for a dispatch and a barrier, with no kernel work: the part of a
// launch that recording can save, and the floor under any library's replay
// of the same chain. Bindings: 0 x, 1 y. Push: a float32, n uint32.
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { float a; uint n; } pc;
void main() {}
