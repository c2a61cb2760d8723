#version 450
// half: y[i] = 2 * x[i] for i < n over 16-bit floats loaded and stored in
// 16 bits and computed in 32. Its module declares StorageBuffer16BitAccess
// (and no Float16 arithmetic), so it needs storageBuffer16BitAccess.
// Bindings: 0 x (read), 1 y (write). Push: n uint32.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) y[i] = float16_t(2.0 * float(x[i]));
}
