#version 450
// z[i] = SCALE*x[i] + y[i] + pc.b for i < pc.n, with the workgroup width and
// SCALE given as specialization constants 0 and 1: the vk package's test of
// everything a pipeline's creation marshals (three bindings, push
// constants, specialization info).
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const float SCALE = 1.0;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform PC { float b; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) z[i] = SCALE * x[i] + y[i] + pc.b;
}
