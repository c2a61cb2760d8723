#version 450
// Shared arrays sized by specialization-constant expressions of the
// operations Vulkan allows in OpSpecConstantOp beyond arithmetic: a
// comparison and a select (?:), a signed modulo of a negative value,
// negation and division, boolean logic and a bitwise not. Defaults give
// 16 + 123 + 10 + 4 + 8 = 161 floats (644 bytes).
layout(local_size_x = 64) in;
layout(constant_id = 3) const uint N = 16u;
layout(constant_id = 4) const int M = -70;
layout(constant_id = 5) const bool B = true;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
shared float a[N > 8u ? N : 8u];
shared float b[M % 64 + 65];
shared float c[-M / 7];
shared float d[B && (N != 3u) ? 4 : 2];
shared float e[(~N & 7u) + 1u];
void main() {
    uint i = gl_LocalInvocationID.x;
    a[i % 8u] = y[i];
    b[i % 64u] = y[i];
    c[i % 10u] = y[i];
    d[i % 2u] = y[i];
    e[i % 8u] = y[i];
    barrier();
    y[i] = a[i % 8u] + b[i % 64u] + c[i % 10u] + d[i % 2u] + e[i % 8u];
}
