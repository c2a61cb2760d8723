#version 450
// mat3push: y[3c+r] = m[c][r], the push-constant mat3 column by column.
// In the block { mat3 m; } the columns lie 16 bytes apart (MatrixStride
// 16), so the block spans 44 bytes: m[2][1] and m[2][2] are bytes 36..43.
// Bindings: 0 y (write). Push: mat3 m.
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { mat3 m; } pc;
void main() {
    for (int c = 0; c < 3; c++) {
        for (int r = 0; r < 3; r++) y[3 * c + r] = pc.m[c][r];
    }
}
