#version 450
// argmax: the index of the first largest element along an axis (uint32);
// see reduce.glsl. Work is laid out in groups with one split, or in lanes.
#define ARGMAX 1
#include "types.glsl"
#include "reduce.glsl"
