#version 450
// transpose: dst[c*rows + r] = src[r*cols + c], src rows x cols, row-major.
// Each workgroup moves one W.x x W.y tile (W = workgroup size) through shared
// memory so that both the reads and the writes run along rows.
// Groups: x = ceil(cols / W.x), y = ceil(rows / W.y).
// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
layout(local_size_x = 16, local_size_y = 16, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
shared float tile[gl_WorkGroupSize.y][gl_WorkGroupSize.x + 1u];
void main() {
    uint wx = gl_WorkGroupSize.x, wy = gl_WorkGroupSize.y;
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint c0 = gl_WorkGroupID.x * wx, r0 = gl_WorkGroupID.y * wy;
    uint r = r0 + ly, c = c0 + lx;
    tile[ly][lx] = (r < pc.rows && c < pc.cols) ? src[r * pc.cols + c] : 0.0;
    barrier();
    // Renumber the invocations over the output tile (wx rows of wy columns).
    uint l = ly * wx + lx;
    uint outRow = l / wy, outCol = l % wy;
    uint dr = c0 + outRow, dc = r0 + outCol;
    if (dr < pc.cols && dc < pc.rows) dst[dr * pc.rows + dc] = tile[outCol][outRow];
}
