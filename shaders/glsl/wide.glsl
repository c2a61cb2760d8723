// wide.glsl: what the -DWIDE builds of the element-wise kernels share.
// They take eight 32-bit elements per invocation as four 64-bit words
// (one u64vec4 load or store), 32 invocations per group (the same 256
// elements per group as the vec4 build's 64 invocations of four), for CPU
// drivers: lavapipe turns every load or store of a lane-varying address
// into a loop over its SIMD lanes, once per component, and a 64-bit
// component moves two elements. Every buffer vkc binds starts at a
// multiple of 16 bytes, so the words are aligned. The words only carry
// bits: floats are unpacked, computed on as float32, and packed back.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

// lowWords and highWords are the eight 32-bit words of w, first four and
// last four.
uvec4 lowWords(u64vec4 w) { return uvec4(unpackUint2x32(w.x), unpackUint2x32(w.y)); }
uvec4 highWords(u64vec4 w) { return uvec4(unpackUint2x32(w.z), unpackUint2x32(w.w)); }

// lowFloats and highFloats are the same words as float32.
vec4 lowFloats(u64vec4 w) { return uintBitsToFloat(lowWords(w)); }
vec4 highFloats(u64vec4 w) { return uintBitsToFloat(highWords(w)); }

// wideWords packs eight 32-bit words back, lo first.
u64vec4 wideWords(uvec4 lo, uvec4 hi) {
    return u64vec4(packUint2x32(lo.xy), packUint2x32(lo.zw), packUint2x32(hi.xy), packUint2x32(hi.zw));
}
u64vec4 wideFloats(vec4 lo, vec4 hi) { return wideWords(floatBitsToUint(lo), floatBitsToUint(hi)); }
