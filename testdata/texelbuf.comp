#version 450
// texelbuf: img[i] = x[i] through a storage texel buffer (imageBuffer,
// viewed as R32_SFLOAT, the format it declares).
// Bindings: 0 x (read storage buffer), 1 img (storage texel buffer).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1, r32f) uniform writeonly imageBuffer img;
void main() {
    uint i = gl_GlobalInvocationID.x;
    imageStore(img, int(i), vec4(x[i]));
}
