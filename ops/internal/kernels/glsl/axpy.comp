#version 450
// axpy: y = alpha*x + y; see unary.glsl.
#define AXPY 1
#include "types.glsl"
#include "unary.glsl"
