#version 450
// matmul_i8_dot4: C = A·B for int8 A and B, int32 sums, four products of
// signed bytes per instruction: SPV_KHR_integer_dot_product's OpSDot on
// 32-bit words of four packed bytes (GLSL has no built-in for it;
// GL_EXT_spirv_intrinsics emits it), so it needs shaderIntegerDotProduct.
// A and B are read as words: A's rows and B's columns must run along K
// contiguously (B stored as the transpose of an N x K row-major matrix),
// starting on a word, K a multiple of 4. One element of C per invocation.
//
// Bindings: 0 A, 1 B (read, int8 read as uint words), 2 C (write, int32).
// Groups: x = ceil(N/16), y = ceil(M/16).
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C_ { int c[]; };
layout(push_constant) uniform Push {
    uint M, N, K4, unused; // K4: K / 4, the words of a row of A
    uint aOff4, aM4, bOff4, bN4; // in words: A's rows, B's columns
    uint cOff, cM, cN, unused2; // in elements
} pc;

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(uint x, uint y, spirv_literal int packedVectorFormat);

void main() {
    uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
    if (row >= pc.M || col >= pc.N) return;
    uint ai = pc.aOff4 + row * pc.aM4, bi = pc.bOff4 + col * pc.bN4;
    int acc = 0;
    for (uint q = 0u; q < pc.K4; ++q) acc += sdot4(a[ai + q], b[bi + q], 0);
    c[pc.cOff + row * pc.cM + col * pc.cN] = acc;
}
