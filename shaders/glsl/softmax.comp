#version 450
// softmax: dst[r][c] = exp(src[r][c] - max_r) / sum_c exp(src[r][c] - max_r)
// over a rows x cols row-major matrix; subtracting the row maximum keeps exp
// from overflowing. One workgroup per row, any cols: row =
// gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, so the caller
// dispatches rows groups (spread over y past the x limit); groups past rows
// do nothing.
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
// Built with -DDYNAMIC as softmax_dyn (see the catalogue): rows, cols come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// softmax_dyn bindings: 0 src (read), 1 dst (write), 2 rows (read, uint32), 3 cols (read, uint32).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarRows { uint rows_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarCols { uint cols_; };
#else
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
#endif
shared float scratch[gl_WorkGroupSize.x];

// Workgroup-wide reduction (max or sum) of one value per invocation; every
// invocation gets the result.
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
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint rows = rows_, cols = cols_;
#else
    uint rows = pc.rows, cols = pc.cols;
#endif
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= rows) return; // uniform across the workgroup
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint base = row * cols;
    float m = uintBitsToFloat(0xff800000u); // -inf
    for (uint c = lid; c < cols; c += size) m = max(m, src[base + c]);
    m = reduce(m, true);
    float s = 0.0;
    for (uint c = lid; c < cols; c += size) s += exp(src[base + c] - m);
    s = reduce(s, false);
    float inv = 1.0 / s;
    for (uint c = lid; c < cols; c += size) dst[base + c] = exp(src[base + c] - m) * inv;
}
