#version 450
// dot4: c[i] = the dot product of a[i]'s and b[i]'s four signed bytes,
// through SPV_KHR_integer_dot_product's OpSDot (GLSL has no built-in for
// it; GL_EXT_spirv_intrinsics emits the instruction): a module declaring
// the DotProduct capabilities, whose device feature
// (shaderIntegerDotProduct) vkc does not enable.
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A_ { uint a[]; };
layout(std430, binding = 1) readonly buffer B_ { uint b[]; };
layout(std430, binding = 2) writeonly buffer C_ { int c[]; };
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(uint x, uint y, spirv_literal int packedFormat);
void main() {
    uint i = gl_GlobalInvocationID.x;
    c[i] = sdot4(a[i], b[i], 0);
}
