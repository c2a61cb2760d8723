#version 450
// reduce: Sum, Mean and Max along an axis; see reduce.glsl. With
// PARTIAL_F32 (Float16 input) the output is float32 partials; with
// FROM_F32_TO_F16 the input is float32 partials and the output Float16.
#if defined(FROM_F32_TO_F16)
#include "types.glsl"
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define OT float16_t
#elif defined(PARTIAL_F32)
#include "types.glsl"
#define OT float
#else
#include "types.glsl"
#define OT ST
#endif
#include "reduce.glsl"
