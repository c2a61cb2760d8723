#version 450
// scale_f16: y[i] = a*x[i] for i < n.
// Elements are Float16 (IEEE binary16), loaded and stored in 16 bits
// (storageBuffer16BitAccess), computed in float32; a store rounds as the
// device converts float32 to float16 (to nearest even on lavapipe).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// y is write-only: what it held before does not matter, so a launcher
// need not order it after y's earlier writes or inherit their failure.
// x may be y (in place: each invocation reads its element before writing it).
// Bindings: 0 x (read), 1 y (write). Push: a float32, n uint32.
// One element per invocation; groups: ceil(n/256), spread over y past the x limit.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform Push { float a; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n) return;
    y[i] = float16_t(pc.a * float(x[i]));
}
