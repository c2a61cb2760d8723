// linear.glsl: the fast path of the element-wise kernels (unary.glsl with
// or without AXPY, binary.comp), built with LINEAR defined, for operands
// that are all contiguous with one shape: every operand is addressed as
// its offset plus the element index, V elements an invocation at a time
// through a vector view of its buffer (a vec4 of ST; with WIDE, float32
// only, a u64vec4 of eight, so that a driver which turns each load into a
// loop over its SIMD lanes, lavapipe, runs that loop once per eight
// elements). Every offset must be a multiple of V (the host checks); the
// last partial block goes element by element. The WIDE build runs 32
// invocations a group, as a CPU driver runs a group's invocations a SIMD
// vector at a time and a short op leaves the rest of 64 idle.
// The includer defines ELEM(a, b, alpha), an element's result from the
// first input a, the second b (y for axpy; unused by a unary op) and the
// scalar alpha.
// The rows: shape[0] is pc.rows (or, with flag 1, min(rows, pc.rows) read
// when the launch runs) of pc.inner elements each; group g covers rows
// [g*perGroup, (g+1)*perGroup), perGroup*inner a multiple of V.
// flags: 1 dynamic rows, 16 alpha param.
#ifdef WIDE
#define V 8u
#define VT u64vec4
#define LWG 32u
#else
#define LWG WG
#define V 4u
#if defined(T_F16)
#define VT f16vec4
#define CT4 vec4
#elif defined(T_F64)
#define VT dvec4
#define CT4 dvec4
#elif defined(T_I32)
#define VT ivec4
#define CT4 ivec4
#elif defined(T_U32)
#define VT uvec4
#define CT4 uvec4
#else
#define VT vec4
#define CT4 vec4
#endif
#endif

layout(local_size_x = LWG) in;
#ifdef BINARY
layout(std430, set = 0, binding = 0) readonly buffer A { ST a[]; };
layout(std430, set = 0, binding = 0) readonly buffer AV { VT av[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { ST b[]; };
layout(std430, set = 0, binding = 1) readonly buffer BV { VT bv[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { ST o[]; };
layout(std430, set = 0, binding = 2) writeonly buffer OV { VT ov[]; };
layout(std430, set = 0, binding = 3) readonly buffer Rows { uint rowsDyn; };
#define IN0 a
#define IN0V av
#define IN1 b
#define IN1V bv
#define OUT o
#define OUTV ov
#else
layout(std430, set = 0, binding = 0) readonly buffer X { ST x[]; };
layout(std430, set = 0, binding = 0) readonly buffer XV { VT xv[]; };
#ifdef AXPY
layout(std430, set = 0, binding = 1) buffer Y { ST y[]; };
layout(std430, set = 0, binding = 1) buffer YV { VT yv[]; };
#else
layout(std430, set = 0, binding = 1) writeonly buffer Y { ST y[]; };
layout(std430, set = 0, binding = 1) writeonly buffer YV { VT yv[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer Rows { uint rowsDyn; };
layout(std430, set = 0, binding = 3) readonly buffer Alpha { PT alphaDyn; };
#define IN0 x
#define IN0V xv
#define IN1 y
#define IN1V yv
#define OUT y
#define OUTV yv
#endif
layout(push_constant) uniform Push {
    uint op, flags, perGroup, inner;
    uint rows, off0, off1, offOut;
    uint alphaLo, alphaHi;
} pc;

#ifdef WIDE
vec4 lo(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y))); }
vec4 hi(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.z)), uintBitsToFloat(unpackUint2x32(v.w))); }
u64vec4 pack(vec4 l, vec4 h) {
    return u64vec4(packUint2x32(floatBitsToUint(l.xy)), packUint2x32(floatBitsToUint(l.zw)),
                   packUint2x32(floatBitsToUint(h.xy)), packUint2x32(floatBitsToUint(h.zw)));
}
#define CT4 vec4
#endif

// elem4 is ELEM on four elements.
CT4 elem4(CT4 u, CT4 v, CT alpha) {
    return CT4(ELEM(u.x, v.x, alpha), ELEM(u.y, v.y, alpha), ELEM(u.z, v.z, alpha), ELEM(u.w, v.w, alpha));
}

void main() {
    uint rows = (pc.flags & 1u) != 0u ? min(rowsDyn, pc.rows) : pc.rows;
#ifdef BINARY
    CT alpha = CT(0);
#else
    CT alpha = CT((pc.flags & 16u) != 0u ? alphaDyn : scalarOf(pc.alphaLo, pc.alphaHi));
#endif
    uint r0 = gl_WorkGroupID.x * pc.perGroup;
    if (r0 >= rows) return;
    uint end = min(rows, r0 + pc.perGroup) * pc.inner;
    for (uint e = r0 * pc.inner + gl_LocalInvocationID.x * V; e < end; e += LWG * V) {
        if (e + V <= end) {
            uint i0 = (pc.off0 + e) / V, i1 = (pc.off1 + e) / V, io = (pc.offOut + e) / V;
#ifdef WIDE
            u64vec4 u = IN0V[i0];
#if defined(BINARY) || defined(AXPY)
            u64vec4 v = IN1V[i1];
#else
            u64vec4 v = u;
#endif
            OUTV[io] = pack(elem4(lo(u), lo(v), alpha), elem4(hi(u), hi(v), alpha));
#else
            CT4 u = CT4(IN0V[i0]);
#if defined(BINARY) || defined(AXPY)
            CT4 v = CT4(IN1V[i1]);
#else
            CT4 v = u;
#endif
            OUTV[io] = VT(elem4(u, v, alpha));
#endif
        } else {
            for (uint i = e; i < end; ++i) {
                CT u = CT(IN0[pc.off0 + i]);
#if defined(BINARY) || defined(AXPY)
                CT v = CT(IN1[pc.off1 + i]);
#else
                CT v = u;
#endif
                OUT[pc.offOut + i] = ST(ELEM(u, v, alpha));
            }
        }
    }
}
