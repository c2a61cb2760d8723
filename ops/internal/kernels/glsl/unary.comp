#version 450
// unary: see unary.glsl.
#include "types.glsl"
#include "unary.glsl"
