#version 450
// bigpush: 260 bytes of push constants, above the 128 or 256 bytes most
// devices allow, so LoadKernel must refuse it before the driver sees it.
// Bindings: 0 y (write). Push: v float32[65].
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { float v[65]; } pc;
void main() { y[gl_GlobalInvocationID.x] = pc.v[64]; }
