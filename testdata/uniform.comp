#version 450
// uniform: y[i] = a from a uniform block (std140: 4 bytes its
// binding's buffer must hold at least).
// Bindings: 0 u (uniform buffer), 1 y (write).
layout(local_size_x = 64) in;
layout(std140, set = 0, binding = 0) uniform U { float a; } u;
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() { y[gl_GlobalInvocationID.x] = u.a; }
