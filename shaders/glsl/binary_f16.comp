#version 450
// binary_f16: z[i] = x[i] op y[i] for i < n, op one of add, sub, mul, div.
// Elements are Float16 (IEEE binary16), loaded and stored in 16 bits
// (storageBuffer16BitAccess), computed in float32; a store rounds as the
// device converts float32 to float16 (to nearest even on lavapipe).
// Built with -DDYNAMIC as binary_f16_dyn: op, n come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0 (uint32), so a recorded launch uses the values current at
// each replay; surplus groups of an indirect dispatch do nothing.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// op: 0 add, 1 sub, 2 mul, 3 div (IEEE: x/0 is ±Inf or NaN).
// Bindings: 0 x (read), 1 y (read), 2 z (write). Push: op uint32, n uint32.
// binary_f16_dyn bindings: 0 x, 1 y (read), 2 z (write), 3 op, 4 n (read, uint32).
// One element per invocation; groups: ceil(n/256), spread over y past the x limit.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float16_t y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float16_t z[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 3) readonly buffer ScalarOp { uint op_; };
layout(std430, set = 0, binding = 4) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint op; uint n; } pc;
#endif
void main() {
#ifdef DYNAMIC
    uint op = op_, n = n_;
#else
    uint op = pc.op, n = pc.n;
#endif
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= n) return;
    float a = float(x[i]), b = float(y[i]), r;
    if (op == 0u) r = a + b;
    else if (op == 1u) r = a - b;
    else if (op == 2u) r = a * b;
    else r = a / b;
    z[i] = float16_t(r);
}
