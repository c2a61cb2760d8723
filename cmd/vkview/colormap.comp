#version 450
// Colour-maps a Gray-Scott state (src[i] = (u, v)) into RGBA8 pixels packed
// as R | G<<8 | B<<16 | A<<24, the layout vkc.Swapchain.Present takes:
// v scaled by 2.5 runs through five colour stops, linearly between them.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { vec2 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Pixels { uint px[]; };
layout(push_constant) uniform Push { uint w; uint h; } pc;

const vec3 stops[5] = vec3[5](
    vec3(0.02, 0.02, 0.08),
    vec3(0.05, 0.25, 0.45),
    vec3(0.10, 0.65, 0.60),
    vec3(0.95, 0.85, 0.35),
    vec3(1.00, 1.00, 1.00));

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.w || y >= pc.h) return;
    float t = clamp(src[y * pc.w + x].y * 2.5, 0.0, 1.0) * 4.0;
    int i = min(int(t), 3);
    vec3 c = mix(stops[i], stops[i + 1], t - float(i));
    px[y * pc.w + x] = packUnorm4x8(vec4(c, 1.0));
}
