#version 450
// tile2d: out[r][c] = r*cols + c over a rows x cols grid, with the workgroup
// size specializable in x and y, so that LoadKernel's check of the whole
// workgroup (x*y against maxComputeWorkGroupInvocations) can be tested.
// Bindings: 0 out (write). Push: rows uint32, cols uint32.
layout(local_size_x = 8, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint v[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
void main() {
    uint c = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    if (r < pc.rows && c < pc.cols) v[r * pc.cols + c] = r * pc.cols + c;
}
