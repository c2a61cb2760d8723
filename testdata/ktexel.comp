// Texel buffers of two formats: y[i] = 2 * xs[i] read through a uniform
// texel buffer (R32_SFLOAT), and out4[i] = (i, 2i, 3i, 4i) written
// through a storage texel buffer declared rgba32f.
#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) uniform samplerBuffer xs;
layout(set = 0, binding = 1, rgba32f) uniform writeonly imageBuffer out4;
layout(std430, set = 0, binding = 2) buffer Y { float y[]; };

void main() {
    int i = int(gl_GlobalInvocationID.x);
    y[i] = 2.0 * texelFetch(xs, i).x;
    imageStore(out4, i, vec4(i, 2 * i, 3 * i, 4 * i));
}
