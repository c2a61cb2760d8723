#version 450
// square: out[i] = kept[i]^2 for i < count, launched with as many groups
// as size computed, so its work follows the survivors, not the input.
// Bindings: 0 kept (read), 1 count (read), 2 out (write).
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Kept { float kept[]; };
layout(std430, set = 0, binding = 1) readonly buffer Count { uint count; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float outs[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < count) outs[i] = kept[i] * kept[i];
}
