#version 450
// scatter_add: o[v, :] += the sum of src[i, :] over every i < N with
// idx[i] == v, for rows v < V of o; indices V or more (a negative int32
// is) add nowhere. Deterministic: workgroup v scans idx in order and adds
// the matching rows in that order (in CT), then adds the sum to o[v, :]
// once, so the result does not depend on scheduling. Its cost is V*N index
// reads plus the rows added. Groups may be spread over y, and stride over
// the rows v, so that a dispatch of any size covers them all. With flag 1
// N is min(rows, N) read when the launch runs.
#include "types.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { ST src[]; };
layout(std430, set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 2) buffer O { ST o[]; };
layout(std430, set = 0, binding = 3) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint flags, N, V, D;
    uint offS, sSr, sSc, offI, sI, offO, sOr, sOc;
} pc;

void main() {
    uint N = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.N) : pc.N;
    uint nGroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint v = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; v < pc.V; v += nGroups) {
        for (uint c = gl_LocalInvocationID.x; c < pc.D; c += WG) {
            CT acc = CT(0);
            bool any = false;
            for (uint i = 0u; i < N; ++i) {
                if (idx[pc.offI + i * pc.sI] == v) {
                    acc += CT(src[pc.offS + i * pc.sSr + c * pc.sSc]);
                    any = true;
                }
            }
            uint at = pc.offO + v * pc.sOr + c * pc.sOc;
            if (any) o[at] = ST(CT(o[at]) + acc);
        }
    }
}
