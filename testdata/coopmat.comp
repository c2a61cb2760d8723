#version 450
// coopmat: one tile of C = A·B through GL_KHR_cooperative_matrix (a
// module declaring CooperativeMatrixKHR and, as glslang writes every such
// module, the Vulkan memory model). A is M x K and B is K x N Float16,
// row-major; C is M x N float32, row-major. The tile's sizes and the
// subgroup size are specialization constants 0 to 3, set from one of the
// device's configurations (DeviceInfo.CooperativeMatrices); the workgroup
// is one subgroup. Built by gen.sh with a glslc that knows the extension.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(constant_id = 0) const uint SG = 32u;
layout(constant_id = 1) const uint M = 16u;
layout(constant_id = 2) const uint N = 16u;
layout(constant_id = 3) const uint K = 16u;
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A_ { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B_ { float16_t b[]; };
layout(std430, binding = 2) writeonly buffer C_ { float c[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, M, K, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, K, N, gl_MatrixUseB> mb;
    coopmat<float, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator> mc =
        coopmat<float, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator>(0.0);
    coopMatLoad(ma, a, 0, K, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, b, 0, N, gl_CooperativeMatrixLayoutRowMajor);
    mc = coopMatMulAdd(ma, mb, mc);
    coopMatStore(mc, c, 0, N, gl_CooperativeMatrixLayoutRowMajor);
}
