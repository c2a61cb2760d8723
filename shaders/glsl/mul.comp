#version 450
// mul: z[i] = x[i] * y[i] for i < n.
// Bindings: 0 x (read), 1 y (read), 2 z (write). Push: n uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) z[i] = x[i] * y[i];
}
