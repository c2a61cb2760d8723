#version 450
// rowmajorpush: y[2c+r] = m[c][r] for a row-major mat3x2 (3 columns, 2
// rows) after a float s, and y[6] = s. Each row is 3 floats, the rows 16
// bytes apart (MatrixStride 16, RowMajor), m at offset 16: the block spans
// 16 + 16 + 12 = 44 bytes.
// Bindings: 0 y (write). Push: float s, row_major mat3x2 m.
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { float s; layout(row_major) mat3x2 m; } pc;
void main() {
    for (int c = 0; c < 3; c++) {
        for (int r = 0; r < 2; r++) y[2 * c + r] = pc.m[c][r];
    }
    y[6] = pc.s;
}
