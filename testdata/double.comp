#version 450
// double: y[i] = 2 * x[i] in float64 for i < n. Its module declares the
// Float64 capability, so it needs shaderFloat64.
// Bindings: 0 x (read), 1 y (write). Push: n uint32.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { double x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { double y[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = 2.0lf * x[i];
}
