#version 450
// clamp_groups: dst[i] = min(src[offset + i], limit[i]) for i = 0, 1, 2:
// group counts that earlier device work wrote, bounded before an indirect
// dispatch reads them, so the driver never sees a count above the device's
// maxComputeWorkGroupCount (or the caller's maximum). One invocation.
// Bindings: 0 src (read), 1 dst (write, 3 words).
// Push: offset uint32 (in words), limit_x, limit_y, limit_z uint32.
layout(local_size_x = 1, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[3]; };
layout(push_constant) uniform Push { uint offset; uint limit_x; uint limit_y; uint limit_z; } pc;
void main() {
    dst[0] = min(src[pc.offset], pc.limit_x);
    dst[1] = min(src[pc.offset + 1], pc.limit_y);
    dst[2] = min(src[pc.offset + 2], pc.limit_z);
}
