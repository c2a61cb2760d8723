#version 450
// image: writes ones into a storage image (image2D), which Launch cannot
// bind: LoadKernel must refuse the module. Bindings: 0 img (storage image).
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, r32f) uniform writeonly image2D img;
void main() { imageStore(img, ivec2(gl_GlobalInvocationID.xy), vec4(1)); }
