#version 450
// float_atomic: float32 atomic add and max on a storage buffer, a module
// declaring AtomicFloat32AddEXT and AtomicFloat32MinMaxEXT, whose device
// features (shaderBufferFloat32AtomicAdd, ...MinMax) vkc does not enable.
#extension GL_EXT_shader_atomic_float : require
#extension GL_EXT_shader_atomic_float2 : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer A_ { float a[]; };
void main() {
    atomicAdd(a[0], 1.0);
    atomicMax(a[1], float(gl_GlobalInvocationID.x));
}
