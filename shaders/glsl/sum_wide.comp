#version 450
// sum_wide: the contract of sum (partials[g] = sum of the SPAN elements
// src[g*SPAN .. g*SPAN+SPAN-1] of workgroup g, clipped to n; ceil(n/SPAN)
// groups), for CPU drivers: SPAN is 16384, and each invocation reads 64-bit
// words, four to a load (u64vec4: eight float32), so that a driver which
// turns every per-invocation load into a loop over its SIMD lanes (lavapipe)
// runs that loop once per eight elements instead of once per element. Each
// invocation adds its blocks into eight running sums, a block of BLOCK steps
// at a time into fresh sums first (so no sum chains more than
// 2*BLOCK + SPAN/(16*BLOCK*W) additions, 32 at W = 8, and up to seven more
// in a last, partial block, where one running sum would chain 256), then
// subgroupAdd reduces the group, which the
// catalogue sizes to one subgroup (no barrier). Only the last group, which
// n may cut, checks each block against n (element by element past the last
// whole block of eight); every buffer vkc binds starts at a multiple of 16
// bytes, so the 64-bit words are aligned.
// Use it only where the device reports subgroup arithmetic in compute and
// shaderInt64.
// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
// Built with -DDYNAMIC as sum_wide_dyn (see the catalogue): n come
// from device memory instead of push constants, each a read-only storage
// buffer holding its value at index 0, so a recorded launch uses the values
// current at each replay; surplus groups of an indirect dispatch do nothing.
// sum_wide_dyn bindings: 0 src (read), 1 partials (write), 2 n (read, uint32 at index 0).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 8, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 0) readonly buffer Src8 { u64vec4 src8[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
#ifdef DYNAMIC
layout(std430, set = 0, binding = 2) readonly buffer ScalarN { uint n_; };
#else
layout(push_constant) uniform Push { uint n; } pc;
#endif
const uint SPAN = 16384u;                           // elements per group
const uint W = gl_WorkGroupSize.x;                  // invocations (one subgroup)
const uint BLOCK = 8u;                              // steps summed apart first
const uint STEPS = SPAN / 16u / W;                  // steps of two loads per invocation
shared float subgroupSums[gl_WorkGroupSize.x];

vec4 lo(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y))); }
vec4 hi(u64vec4 v) { return vec4(uintBitsToFloat(unpackUint2x32(v.z)), uintBitsToFloat(unpackUint2x32(v.w))); }

// add adds block q (elements 8q .. 8q+7) into a and b, each element below n
// when checked.
void add(uint q, uint n, bool checked, inout vec4 a, inout vec4 b) {
    if (!checked || q < n / 8u) {
        u64vec4 v = src8[q];
        a += lo(v);
        b += hi(v);
    } else {
        for (uint i = q * 8u; i < n && i < q * 8u + 8u; ++i) a.x += src[i];
    }
}

// groupSum is this invocation's share of the group's sum: blocks first,
// first + W, ... (consecutive lanes, consecutive blocks).
float groupSum(uint first, uint n, bool checked) {
    vec4 acc = vec4(0.0), acc2 = vec4(0.0);
    for (uint o = 0u; o < STEPS; o += BLOCK) {
        vec4 a = vec4(0.0), b = vec4(0.0);
        for (uint j = o; j < o + BLOCK; ++j) {
            add(first + (2u * j) * W, n, checked, a, b);
            add(first + (2u * j + 1u) * W, n, checked, a, b);
        }
        acc += a;
        acc2 += b;
    }
    acc += acc2;
    return (acc.x + acc.y) + (acc.z + acc.w);
}

void main() {
#ifdef DYNAMIC
    // Each scalar is loaded once: the compiler may not assume that a buffer
    // keeps its value across the kernel's own writes to another binding.
    uint n = n_;
#else
    uint n = pc.n;
#endif
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint count = n / SPAN + (n % SPAN != 0u ? 1u : 0u);
    if (group >= count) return; // uniform across the workgroup
    uint first = group * (SPAN / 8u) + gl_LocalInvocationID.x;
    float mine;
    if (group + 1u < count || n % SPAN == 0u) {
        mine = groupSum(first, n, false);
    } else {
        mine = groupSum(first, n, true);
    }
    float total = subgroupAdd(mine);
    if (gl_NumSubgroups == 1u) {
        if (subgroupElect()) partials[group] = total;
        return;
    }
    if (subgroupElect()) subgroupSums[gl_SubgroupID] = total;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) s += subgroupSums[i];
        partials[group] = s;
    }
}
