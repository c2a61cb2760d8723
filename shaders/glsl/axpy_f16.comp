#version 450
// axpy_f16: y[i] = a*x[i] + y[i] for i < n.
// Elements are Float16 (IEEE binary16), loaded and stored in 16 bits
// (storageBuffer16BitAccess), computed in float32; a store rounds as the
// device converts float32 to float16 (to nearest even on lavapipe).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// x may be y (in place).
// Bindings: 0 x (read), 1 y (read-write). Push: a float32, n uint32.
// One element per invocation; groups: ceil(n/256), spread over y past the x limit.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float16_t y[]; };
layout(push_constant) uniform Push { float a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n) return;
    y[i] = float16_t(pc.a * float(x[i]) + float(y[i]));
}
