#version 450
// One step of Gray-Scott reaction-diffusion on a w x h torus: two
// chemicals u and v per cell (src[i] = (u, v)), explicit Euler with the
// 5-point Laplacian. The parameters live in a buffer, so changing them
// between replays of a captured graph is a plain write: du, dv (diffusion
// rates in cells^2 per step), feed, kill, dt, and a brush (centre x, y and
// radius in cells; radius 0: none) that seeds v where it touches.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { vec2 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { vec2 dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Params {
    float du, dv, feed, kill, dt, brush_x, brush_y, brush_r;
} p;
layout(push_constant) uniform Push { uint w; uint h; } pc;

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.w || y >= pc.h) return;
    uint left = (x + pc.w - 1) % pc.w, right = (x + 1) % pc.w;
    uint up = (y + pc.h - 1) % pc.h, down = (y + 1) % pc.h;
    vec2 c = src[y * pc.w + x];
    vec2 lap = src[y * pc.w + left] + src[y * pc.w + right] + src[up * pc.w + x] + src[down * pc.w + x] - 4.0 * c;
    float uvv = c.x * c.y * c.y;
    vec2 n = c + p.dt * vec2(p.du * lap.x - uvv + p.feed * (1.0 - c.x),
                             p.dv * lap.y + uvv - (p.feed + p.kill) * c.y);
    if (p.brush_r > 0.0 && distance(vec2(x, y), vec2(p.brush_x, p.brush_y)) < p.brush_r) n = vec2(0.5, 0.25);
    dst[y * pc.w + x] = n;
}
