// Uniform texel buffers viewed four elements per texel
// (KernelSpec.Vec4Texels): y[i] = x.x + 2x.y + 4x.z + 8x.w + u.x + u.y +
// u.z + u.w for x texel i of xs and u texel i of us, y[n+0..2] the texel
// counts of xs, us and ys (ys, isamplerBuffer, viewed one element per
// texel), and y[n+3] is ys's first element.
#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) uniform samplerBuffer xs;
layout(set = 0, binding = 1) uniform usamplerBuffer us;
layout(set = 0, binding = 2) uniform isamplerBuffer ys;
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; };

void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i < n) {
        vec4 x = texelFetch(xs, i);
        uvec4 u = texelFetch(us, i);
        y[i] = x.x + 2.0 * x.y + 4.0 * x.z + 8.0 * x.w + float(u.x + u.y + u.z + u.w);
    }
    if (i == 0) {
        y[n] = float(textureSize(xs));
        y[n + 1] = float(textureSize(us));
        y[n + 2] = float(textureSize(ys));
        y[n + 3] = float(texelFetch(ys, 0).x);
    }
}
