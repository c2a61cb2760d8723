// A kernel whose main calls a function defined after it, as glslang lays
// such modules out. Built without optimization, which would inline twice:
//   glslc -O0 --target-env=vulkan1.1 two_functions.comp -o two_functions.spv
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B { float x[]; };

float twice(float v) { return v * 2.0; }

void main() {
    uint i = gl_GlobalInvocationID.x;
    x[i] = twice(x[i]);
}
