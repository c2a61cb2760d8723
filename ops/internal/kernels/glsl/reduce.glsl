// reduce.glsl: reductions along one axis. The output's elements are laid
// over up to MAXR-1 axes (shape, with the input's strides sIn and the
// output's sOut per axis); each reduces R input elements sR apart. The
// input type is ST (types.glsl); the output type is OT, ST unless the
// variant says otherwise (Float16's float32 partials and back).
// Two ways to lay the work over invocations (flag 1):
//   lanes (flag set): an invocation reduces one output element alone, in
//     order, for short reductions over many outputs;
//   groups: a workgroup reduces one split of one output element: split
//     elements [k*chunk, (k+1)*chunk) of R, its lanes striding over them,
//     then a tree in shared memory, writing o[outIndex*splits + k] when
//     splits > 1 (partials, contiguous) or the output element itself.
// Either way the dispatch's groups stride over the work (output elements
// WG a group, or splits), so that a dispatch of any size covers all of it:
// a launch sized by a length param covers the work whatever its value.
// op: 0 sum (times scale after the last pass: Mean), 1 max; ARGMAX
// defined: the index (uint32) of the first largest element.
// Lengths read when the launch runs (rowsDyn, the Rows binding):
//   flag 2: axis 0 of shape is dynamic: outCount/shape[0] output elements
//     per row, over min(rowsDyn, shape[0]) rows;
//   flag 4: the reduced axis is dynamic: R is min(R, ceil(rowsDyn/rdiv))
//     (rdiv 1, or a first pass's chunk for the partials of a second);
//   flag 8: scale is 1/min(rowsDyn, scaleLo) (a Mean over a dynamic axis).
// Groups may be spread over y: group = x + y*numGroupsX.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer In { ST x[]; };
#ifdef ARGMAX
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint o[]; };
#else
layout(std430, set = 0, binding = 1) writeonly buffer Out { OT o[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer Rows { uint rowsDyn; };
layout(push_constant) uniform Push {
    uint op, rank, flags, outCount;
    uint R, sR, splits, chunk;
    uint offIn, offOut, scaleLo, scaleHi;
    uint rdiv;
    uint shape[MAXR - 1];
    uint sIn[MAXR - 1];
    uint sOut[MAXR - 1];
} pc;

shared CT partV[64];
#ifdef ARGMAX
shared uint partI[64];
#endif

// place is where output element e's inputs start (x) and where it goes (y).
uvec2 place(uint e) {
    uvec2 at = uvec2(pc.offIn, pc.offOut);
    for (uint ax = pc.rank; ax > 0u; --ax) {
        uint c = e % pc.shape[ax - 1u];
        e /= pc.shape[ax - 1u];
        at += c * uvec2(pc.sIn[ax - 1u], pc.sOut[ax - 1u]);
    }
    return at;
}

// better reports whether (v, i) beats (w, j) for Max and Argmax: larger,
// or as large and first.
bool better(CT v, uint i, CT w, uint j) { return v > w || (v == w && i < j); }

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint nGroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    uint lid = gl_LocalInvocationID.x;
    bool isMax = pc.op == 1u;
#ifdef ARGMAX
    isMax = true;
#endif
    CT scale = CT(scalarOf(pc.scaleLo, pc.scaleHi));
    uint outCount = pc.outCount, R = pc.R;
    if ((pc.flags & 2u) != 0u) outCount = pc.outCount / pc.shape[0] * min(rowsDyn, pc.shape[0]);
    if ((pc.flags & 4u) != 0u) R = min(R, (rowsDyn + pc.rdiv - 1u) / pc.rdiv);
    if ((pc.flags & 8u) != 0u) scale = CT(1) / CT(min(rowsDyn, pc.scaleLo));
    if ((pc.flags & 1u) != 0u) {
        for (uint e = group * WG + lid; e < outCount; e += nGroups * WG) {
            uvec2 at = place(e);
            CT acc = CT(x[at.x]);
            uint best = 0u;
            for (uint k = 1u; k < R; ++k) {
                CT v = CT(x[at.x + k * pc.sR]);
                if (isMax) {
                    if (v > acc) { acc = v; best = k; }
                } else {
                    acc += v;
                }
            }
#ifdef ARGMAX
            o[at.y] = best;
#else
            o[at.y] = OT(isMax ? acc : acc * scale);
#endif
        }
        return;
    }
    for (uint item = group; item < outCount * pc.splits; item += nGroups) {
        uint e = item / pc.splits, k = item % pc.splits;
        uint first = k * pc.chunk, last = min(R, first + pc.chunk);
        if (first >= R) continue; // a split past a dynamic R: the next pass reads none of it
        uvec2 at = place(e);
        CT acc = CT(0);
        uint best = 0xffffffffu;
        bool any = false;
        for (uint i = first + lid; i < last; i += WG) {
            CT v = CT(x[at.x + i * pc.sR]);
            if (isMax) {
                if (!any || v > acc) { acc = v; best = i; }
                any = true;
            } else {
                acc += v;
            }
        }
        barrier(); // the previous item's reads of the tree are done
        partV[lid] = acc;
#ifdef ARGMAX
        partI[lid] = best;
#else
        if (isMax && !any) partV[lid] = CT(x[at.x + first * pc.sR]);
#endif
        barrier();
        for (uint half_ = WG / 2u; half_ > 0u; half_ /= 2u) {
            if (lid < half_) {
#ifdef ARGMAX
                uint j = partI[lid + half_];
                if (j != 0xffffffffu && (partI[lid] == 0xffffffffu || better(partV[lid + half_], j, partV[lid], partI[lid]))) {
                    partV[lid] = partV[lid + half_];
                    partI[lid] = j;
                }
#else
                partV[lid] = isMax ? max(partV[lid], partV[lid + half_]) : partV[lid] + partV[lid + half_];
#endif
            }
            barrier();
        }
        if (lid == 0u) {
            uint dst = pc.splits > 1u ? e * pc.splits + k : at.y;
#ifdef ARGMAX
            o[dst] = partI[0];
#else
            o[dst] = OT(isMax || pc.splits > 1u ? partV[0] : partV[0] * scale);
#endif
        }
    }
}
