#version 450
// select: stream compaction's first pass. Every x above the threshold is
// appended to kept (in no particular order), and count[0] ends as the
// number kept; count[0] must be zero before the launch.
// Bindings: 0 xs (read), 1 kept (write), 2 count (read-write).
// Push: n uint32, threshold float32.
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Xs { float xs[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Kept { float kept[]; };
layout(std430, set = 0, binding = 2) buffer Count { uint count; };
layout(push_constant) uniform Push { uint n; float threshold; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n && xs[i] > pc.threshold) {
        kept[atomicAdd(count, 1u)] = xs[i];
    }
}
