#version 450
// softmax: dst[r][c] = exp(src[r][c] - max_r) / sum_c exp(src[r][c] - max_r)
// over a rows x cols row-major matrix; subtracting the row maximum keeps exp
// from overflowing. One workgroup per row, any cols: row =
// gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, so the caller
// dispatches rows groups (spread over y past the x limit); groups past rows
// do nothing.
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
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
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.rows) return; // uniform across the workgroup
    uint lid = gl_LocalInvocationID.x;
    uint size = gl_WorkGroupSize.x;
    uint base = row * pc.cols;
    float m = uintBitsToFloat(0xff800000u); // -inf
    for (uint c = lid; c < pc.cols; c += size) m = max(m, src[base + c]);
    m = reduce(m, true);
    float s = 0.0;
    for (uint c = lid; c < pc.cols; c += size) s += exp(src[base + c] - m);
    s = reduce(s, false);
    float inv = 1.0 / s;
    for (uint c = lid; c < pc.cols; c += size) dst[base + c] = exp(src[base + c] - m) * inv;
}
