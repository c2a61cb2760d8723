// A kernel with one binding of each kind no shader can write, beside a
// storage buffer it writes: what Inspect must report as read-only.
//   glslc -O --target-env=vulkan1.1 readonly_kinds.comp -o readonly_kinds.spv
#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { float outs[]; };
layout(std140, set = 0, binding = 1) uniform U { float scale; };
layout(set = 0, binding = 2) uniform samplerBuffer texels;
layout(set = 0, binding = 3) uniform sampler2D combined;
layout(set = 0, binding = 4) uniform texture2D image;
layout(set = 0, binding = 5) uniform sampler samp;

void main() {
    uint i = gl_GlobalInvocationID.x;
    outs[i] = scale * texelFetch(texels, int(i)).x + texelFetch(combined, ivec2(i, 0), 0).x
        + texelFetch(sampler2D(image, samp), ivec2(i, 0), 0).x;
}
