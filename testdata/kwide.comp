// Specialization constants of 64 and 16 bits, each stored where a test
// reads it back: out.d = D, out.l = L, out.h = float(H), out.s = int(S).
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(constant_id = 0) const double D = 1.0;
layout(constant_id = 1) const int64_t L = 1;
layout(constant_id = 2) const float16_t H = 1.0hf;
layout(constant_id = 3) const int16_t S = 1s;
layout(std430, set = 0, binding = 0) buffer Out { double d; int64_t l; float h; int s; } o;

void main() {
    o.d = D;
    o.l = L;
    o.h = float(H);
    o.s = int(S);
}
