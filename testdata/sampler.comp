#version 450
// sampler: y[i] = samples of a combined image sampler (sampler2D), a
// uniform texel buffer (samplerBuffer) and a separate texture and sampler,
// none of which Launch can bind: LoadKernel must refuse the module.
// Bindings: 0 tex (combined image sampler), 1 y (write), 2 tb (uniform
// texel buffer), 3 t (sampled image), 4 s (sampler).
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 2) uniform samplerBuffer tb;
layout(set = 0, binding = 3) uniform texture2D t;
layout(set = 0, binding = 4) uniform sampler s;
void main() {
    uint i = gl_GlobalInvocationID.x;
    y[i] = textureLod(tex, vec2(0.5), 0).x + texelFetch(tb, int(i)).x + textureLod(sampler2D(t, s), vec2(0.5), 0).x;
}
