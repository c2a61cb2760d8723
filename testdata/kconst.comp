// Specialization constants of several types and a binding the code only
// stores to, with no writeonly: y[i] = ±(i*SCALE + OFFSET) for i < COUNT.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NEGATE = false;
layout(constant_id = 2) const int OFFSET = 0;
layout(constant_id = 3) const float SCALE = 1.0;
layout(constant_id = 4) const uint COUNT = 4;
layout(std430, set = 0, binding = 0) buffer Out { float y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= COUNT) {
        return;
    }
    float v = float(i) * SCALE + float(OFFSET);
    y[i] = NEGATE ? -v : v;
}
