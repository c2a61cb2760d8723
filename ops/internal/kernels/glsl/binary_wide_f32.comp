#version 450
// binary_wide_f32: binary.comp's ops on contiguous float32 operands, eight
// elements a load: each operand is read and written as 64-bit words (a
// u64vec4, eight float32), so a driver that turns every load whose
// address differs per invocation into a loop over its SIMD lanes
// (lavapipe) runs that loop once per eight elements. It covers blocks
// [0, blocks) of eight elements from each operand's offset (in blocks);
// the host runs binary_f32 on the elements past the last whole block.
// Group g covers blocks [g*perGroup, (g+1)*perGroup).
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer A { u64vec4 a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { u64vec4 b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { u64vec4 o[]; };
layout(push_constant) uniform Push { uint op, blocks, perGroup, offA, offB, offO; } pc;

vec4 lo(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y))); }
vec4 hi(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.z)), uintBitsToFloat(unpackUint2x32(v.w))); }
u64vec4 pack(vec4 l, vec4 h) {
    return u64vec4(packUint2x32(floatBitsToUint(l.xy)), packUint2x32(floatBitsToUint(l.zw)),
                   packUint2x32(floatBitsToUint(h.xy)), packUint2x32(floatBitsToUint(h.zw)));
}

vec4 apply(uint op, vec4 x, vec4 y) {
    switch (op) {
    case 0u: return x + y;
    case 1u: return x - y;
    case 2u: return x * y;
    case 3u: return x / y;
    case 4u: return max(x, y);
    default: return min(x, y);
    }
}

void main() {
    uint first = gl_WorkGroupID.x * pc.perGroup;
    uint last = min(pc.blocks, first + pc.perGroup);
    for (uint i = first + gl_LocalInvocationID.x; i < last; i += 64u) {
        u64vec4 va = a[pc.offA + i], vb = b[pc.offB + i];
        o[pc.offO + i] = pack(apply(pc.op, lo(va), lo(vb)), apply(pc.op, hi(va), hi(vb)));
    }
}
