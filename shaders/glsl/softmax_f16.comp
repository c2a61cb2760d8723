#version 450
// softmax_f16: row-wise softmax, numerically stable.
// Elements are Float16 (IEEE binary16), loaded and stored in 16 bits
// (storageBuffer16BitAccess), computed in float32; a store rounds as the
// device converts float32 to float16 (to nearest even on lavapipe).
// Built with -DDYNAMIC as softmax_f16_dyn: rows, cols come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0 (uint32), so a recorded launch uses the values current at
// each replay; surplus groups of an indirect dispatch do nothing.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// dst[r][c] = exp(src[r][c] - max_r) / sum_c exp(src[r][c] - max_r) over a
// rows x cols row-major matrix, computed in float. One workgroup per row:
// row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x.
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
// softmax_f16_dyn bindings: 0 src (read), 1 dst (write), 2 rows, 3 cols (read, uint32).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float16_t src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float16_t dst[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarRows { uint rows_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarCols { uint cols_; };
#else
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
#endif
shared float scratch[gl_WorkGroupSize.x];
float reduce(float v, bool takeMax) {
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    scratch[lid] = v;
    barrier();
    uint p = 1u << findMSB(size);
    if (lid + p < size) scratch[lid] = takeMax ? max(scratch[lid], scratch[lid + p]) : scratch[lid] + scratch[lid + p];
    barrier();
    for (uint s = p >> 1; s > 0u; s >>= 1) {
        if (lid < s) scratch[lid] = takeMax ? max(scratch[lid], scratch[lid + s]) : scratch[lid] + scratch[lid + s];
        barrier();
    }
    float result = scratch[0];
    barrier();
    return result;
}
void main() {
#ifdef DYNAMIC
    uint rows = rows_, cols = cols_;
#else
    uint rows = pc.rows, cols = pc.cols;
#endif
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= rows) return;
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint base = row * cols;
    float m = uintBitsToFloat(0xff800000u);
    for (uint c = lid; c < cols; c += size) m = max(m, float(src[base + c]));
    m = reduce(m, true);
    float s = float(0.0);
    for (uint c = lid; c < cols; c += size) s += exp(float(src[base + c]) - m);
    s = reduce(s, false);
    float inv = float(1.0) / s;
    for (uint c = lid; c < cols; c += size) dst[base + c] = float16_t(exp(float(src[base + c]) - m) * inv);
}
