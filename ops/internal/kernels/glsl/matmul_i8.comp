#version 450
// matmul_i8: C = A·B for int8 A and B, int32 sums (exact while no sum
// passes 2^31: K up to 131071 with any values). One element of C per
// invocation, any layout of the three (strides in elements); the
// reference the packed kernel is tuned against.
//
// Bindings: 0 A, 1 B (read, int8), 2 C (write, int32).
// Groups: x = ceil(N/16), y = ceil(M/16).
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A_ { int8_t a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B_ { int8_t b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C_ { int c[]; };
layout(push_constant) uniform Push {
    uint M, N, K, unused;
    uint aOff, aM, aK, bOff;
    uint bK, bN, cOff, cM;
    uint cN;
} pc;

void main() {
    uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
    if (row >= pc.M || col >= pc.N) return;
    uint ai = pc.aOff + row * pc.aM, bi = pc.bOff + col * pc.bN;
    int acc = 0;
    for (uint k = 0u; k < pc.K; ++k) acc += int(a[ai + k * pc.aK]) * int(b[bi + k * pc.bK]);
    c[pc.cOff + row * pc.cM + col * pc.cN] = acc;
}
