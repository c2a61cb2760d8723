#version 450
// texelsum: out[i] = the sum of texel i's four words, texels read through a
// uniform texel buffer of R32G32B32A32_UINT: what vk's texel bindings test
// runs. Bindings: 0 texels (uniform texel buffer), 1 out (uint).
// Push: n uint32.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform usamplerBuffer texels;
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint outs[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    uvec4 t = texelFetch(texels, int(i));
    outs[i] = t.x + t.y + t.z + t.w;
}
