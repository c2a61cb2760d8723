#version 450
// matmul_reduce: split-K's second pass. Sums the partial products
// P[batch*splits + s][M][N] over the splits s (in the accumulation type),
// adds the bias, applies the activation and stores C through its offset
// and strides. One invocation per element of C, batches included.
// Groups: x = ceil(batches*M*N / 64).
// Bindings: 0 P (read), 1 C (write), 2 bias (read).
#extension GL_GOOGLE_include_directive : require
#include "matmul_common.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer P_ { ACC p[]; };
layout(std430, set = 0, binding = 1) writeonly buffer C_ { ELEM c[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias_ { ELEM bias[]; };
layout(push_constant) uniform Push {
    uint M, N, splits, total; // total: batches * M * N
    uint cOff, cM, cN, cB;
    uint biasOff, biasN, act, flags; // flags bit 0: add the bias
} pc;

void main() {
    uint e = gl_GlobalInvocationID.x;
    if (e >= pc.total) return;
    uint mn = pc.M * pc.N;
    uint batch = e / mn, rest = e % mn;
    uint r = rest / pc.N, col = rest % pc.N;
    ACC v = ACC(0);
    for (uint s = 0u; s < pc.splits; ++s) v += p[(batch * pc.splits + s) * mn + rest];
    if ((pc.flags & 1u) != 0u) v += ACC(bias[pc.biasOff + col * pc.biasN]);
    c[pc.cOff + batch * pc.cB + r * pc.cM + col * pc.cN] = ELEM(activate(v, pc.act));
}
