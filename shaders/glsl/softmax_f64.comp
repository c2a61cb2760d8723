#version 450
// softmax_f64: row-wise softmax, numerically stable.
// Elements are float64, loaded, computed and stored in float64
// (shaderFloat64).
// Built with -DDYNAMIC as softmax_f64_dyn: rows, cols come from device memory
// instead of push constants, each a read-only storage buffer holding its
// value at index 0 (uint32), so a recorded launch uses the values current at
// each replay; surplus groups of an indirect dispatch do nothing.
// dst[r][c] = exp(src[r][c] - max_r) / sum_c exp(src[r][c] - max_r) over a
// rows x cols row-major matrix, computed in double. One workgroup per row:
// row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x.
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
// softmax_f64_dyn bindings: 0 src (read), 1 dst (write), 2 rows, 3 cols (read, uint32).
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { double src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { double dst[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarRows { uint rows_; };
layout(std430, set = 0, binding = 3) readonly buffer ScalarCols { uint cols_; };
#else
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
#endif
shared double scratch[gl_WorkGroupSize.x];

// exp64 is exp in float64 (GLSL's exp takes 32-bit floats only): x = k ln2 + r
// with |r| <= ln2/2, exp(r) by its Taylor series to r^14/14! (below 1e-17
// relative there), scaled by 2^k. Below -745 it is 0, as float64's exp.
double exp64(double x) {
    if (x < -745.0lf) return 0.0lf;
    if (x > 709.8lf) return double(uintBitsToFloat(0x7f800000u));
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    double r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;
    double term = 1.0lf, sum = 1.0lf;
    for (int i = 1; i <= 14; i++) {
        term *= r / double(i);
        sum += term;
    }
    return ldexp(sum, int(k));
}

double reduce(double v, bool takeMax) {
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
    double result = scratch[0];
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
    double m = double(uintBitsToFloat(0xff800000u));
    for (uint c = lid; c < cols; c += size) m = max(m, double(src[base + c]));
    m = reduce(m, true);
    double s = double(0.0lf);
    for (uint c = lid; c < cols; c += size) s += exp64(double(src[base + c]) - m);
    s = reduce(s, false);
    double inv = double(1.0) / s;
    for (uint c = lid; c < cols; c += size) dst[base + c] = double(exp64(double(src[base + c]) - m) * inv);
}
