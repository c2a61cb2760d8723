// A push-constant block of mixed types: y[i] = scale*x[i] + offset + shift.x
// - shift.y + m[1][0] for i < n.
#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform P {
    float scale;
    int offset;
    uint n;
    vec2 shift;
    mat2 m;
} p;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = p.scale * x[i] + float(p.offset) + p.shift.x - p.shift.y + p.m[1][0];
    }
}
