#version 450
// convert: dst[i] = src[i] converted from element type srcType to dstType,
// for i < n, between any two of vkc's element types. Both buffers are read
// and written as 32-bit words and every conversion is done in integer
// arithmetic on the bit patterns, so the kernel needs no optional device
// feature and its rounding is exact on every device (no float operation,
// so no denormal flushing):
//   - into a float type: round to nearest, ties to even; past the largest
//     finite value by half a unit or more: ±Inf; NaN: the type's quiet NaN
//     with the sign kept; -0 stays -0;
//   - into an integer type: the value truncated toward zero, saturated to
//     the type's range (±Inf to its ends, NaN to 0).
// Type codes (vkc's elemKind): 1 float32, 2 int32, 3 uint32, 4 float64,
// 5 int8, 6 uint8, 7 int16, 8 uint16, 9 int64, 10 uint64, 11 float16,
// 12 bfloat16.
// One invocation writes one 32-bit word of dst (4 elements of 8 bits, 2 of
// 16, 1 of 32) or one 64-bit element; the bytes of a last word past n (the
// padding of a buffer of odd length) are written as zero.
// Groups: ceil(units/256), units = n for 64-bit dst, else ceil(n*size/4).
// Bindings: 0 src (read), 1 dst (write). Push: n uint32, srcType uint32,
// dstType uint32.
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; uint srcType; uint dstType; } pc;

const uint F32 = 1u, I32 = 2u, U32 = 3u, F64 = 4u, I8 = 5u, U8 = 6u, I16 = 7u, U16 = 8u, I64 = 9u, U64 = 10u,
           F16 = 11u, BF16 = 12u;

// A number: its class, sign, and when finite m * 2^(e-63) with bit 63 of m
// set. 64-bit integers are uvec2(high word, low word).
const uint ZERO = 0u, FINITE = 1u, INF = 2u, NAN = 3u;
struct Num {
    uint cls;
    bool neg;
    int e;
    uvec2 m;
};

uvec2 shl64(uvec2 v, uint s) {
    if (s == 0u) return v;
    if (s >= 64u) return uvec2(0u);
    if (s >= 32u) return uvec2(v.y << (s - 32u), 0u);
    return uvec2((v.x << s) | (v.y >> (32u - s)), v.y << s);
}

uvec2 shr64(uvec2 v, uint s) {
    if (s == 0u) return v;
    if (s >= 64u) return uvec2(0u);
    if (s >= 32u) return uvec2(0u, v.x >> (s - 32u));
    return uvec2(v.x >> s, (v.y >> s) | (v.x << (32u - s)));
}

uvec2 add64(uvec2 a, uvec2 b) {
    uint carry;
    uint lo = uaddCarry(a.y, b.y, carry);
    return uvec2(a.x + b.x + carry, lo);
}

uvec2 dec64(uvec2 v) { return uvec2(v.y == 0u ? v.x - 1u : v.x, v.y - 1u); }

uvec2 neg64(uvec2 v) { return add64(~v, uvec2(0u, 1u)); }

bool greater64(uvec2 a, uvec2 b) { return a.x > b.x || (a.x == b.x && a.y > b.y); }

bool isZero64(uvec2 v) { return (v.x | v.y) == 0u; }

Num special(bool neg, uint cls) {
    Num r;
    r.cls = cls;
    r.neg = neg;
    r.e = 0;
    r.m = uvec2(0u);
    return r;
}

// scaled is ±mag * 2^offset.
Num scaled(bool neg, uvec2 mag, int offset) {
    if (isZero64(mag)) return special(neg, ZERO);
    uint lz = mag.x != 0u ? 31u - uint(findMSB(mag.x)) : 63u - uint(findMSB(mag.y));
    Num r;
    r.cls = FINITE;
    r.neg = neg;
    r.m = shl64(mag, lz);
    r.e = 63 - int(lz) + offset;
    return r;
}

// decodeFloat reads an IEEE float of ebits exponent and fbits fraction
// bits from its fields.
Num decodeFloat(bool neg, uint e, uvec2 f, uint ebits, uint fbits) {
    uint top = (1u << ebits) - 1u;
    int bias = int((1u << (ebits - 1u)) - 1u);
    if (e == top) return special(neg, isZero64(f) ? INF : NAN);
    if (e == 0u) return scaled(neg, f, 1 - bias - int(fbits));
    return scaled(neg, f | shl64(uvec2(0u, 1u), fbits), int(e) - bias - int(fbits));
}

Num load(uint t, uint i) {
    if (t == I8 || t == U8) {
        uint b = (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
        if (t == I8 && b >= 0x80u) return scaled(true, uvec2(0u, 0x100u - b), 0);
        return scaled(false, uvec2(0u, b), 0);
    }
    if (t == I16 || t == U16 || t == F16 || t == BF16) {
        uint h = (src[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
        bool neg = (h & 0x8000u) != 0u;
        if (t == F16) return decodeFloat(neg, (h >> 10u) & 0x1fu, uvec2(0u, h & 0x3ffu), 5u, 10u);
        if (t == BF16) return decodeFloat(neg, (h >> 7u) & 0xffu, uvec2(0u, h & 0x7fu), 8u, 7u);
        if (t == I16 && neg) return scaled(true, uvec2(0u, 0x10000u - h), 0);
        return scaled(false, uvec2(0u, h), 0);
    }
    if (t == F64 || t == I64 || t == U64) {
        uvec2 v = uvec2(src[2u * i + 1u], src[2u * i]);
        bool neg = (v.x & 0x80000000u) != 0u;
        if (t == F64) return decodeFloat(neg, (v.x >> 20u) & 0x7ffu, uvec2(v.x & 0xfffffu, v.y), 11u, 52u);
        if (t == I64 && neg) return scaled(true, neg64(v), 0);
        return scaled(false, v, 0);
    }
    uint w = src[i];
    bool neg = (w & 0x80000000u) != 0u;
    if (t == F32) return decodeFloat(neg, (w >> 23u) & 0xffu, uvec2(0u, w & 0x7fffffu), 8u, 23u);
    if (t == I32 && neg) return scaled(true, uvec2(0u, 0u - w), 0);
    return scaled(false, uvec2(0u, w), 0);
}

// encodeFloat rounds x to the nearest float of ebits exponent and fbits
// fraction bits, ties to even, and returns its bits.
uvec2 encodeFloat(Num x, uint ebits, uint fbits) {
    uint top = (1u << ebits) - 1u;
    int bias = int((1u << (ebits - 1u)) - 1u);
    uvec2 sign = x.neg ? shl64(uvec2(0u, 1u), ebits + fbits) : uvec2(0u);
    uvec2 inf = shl64(uvec2(0u, top), fbits);
    if (x.cls == NAN) return sign | inf | shl64(uvec2(0u, 1u), fbits - 1u);
    if (x.cls == INF || (x.cls == FINITE && x.e > bias)) return sign | inf;
    if (x.cls == ZERO) return sign;
    int emin = 1 - bias;
    // Bits of m below the last one kept: a normal number keeps fbits+1,
    // a subnormal one fewer for every binade below emin.
    int drop = 64 - int(fbits + 1u) + max(emin - x.e, 0);
    if (drop > 64) return sign; // below half the smallest subnormal
    uvec2 sig = shr64(x.m, uint(drop));
    bool halfway = (shr64(x.m, uint(drop - 1)).y & 1u) != 0u;
    bool below = drop > 1 && !isZero64(shl64(x.m, uint(65 - drop)));
    if (halfway && (below || (sig.y & 1u) != 0u)) sig = add64(sig, uvec2(0u, 1u));
    // The significand's leading bit adds one to the exponent field; a
    // carry out of the fraction adds it again, up to Inf, as it should.
    uvec2 exponent = x.e >= emin ? shl64(uvec2(0u, uint(x.e + bias - 1)), fbits) : uvec2(0u);
    return sign | add64(exponent, sig);
}

// encodeInt truncates x toward zero to an integer of w bits, saturating.
uvec2 encodeInt(Num x, uint w, bool signed) {
    if (x.cls == NAN || x.cls == ZERO) return uvec2(0u);
    uvec2 lim;
    if (signed) {
        lim = shl64(uvec2(0u, 1u), w - 1u);
        if (!x.neg) lim = dec64(lim);
    } else {
        lim = x.neg ? uvec2(0u) : (w == 64u ? uvec2(0xffffffffu) : dec64(shl64(uvec2(0u, 1u), w)));
    }
    uvec2 mag;
    if (x.cls == INF || x.e > 63) mag = lim;
    else if (x.e < 0) mag = uvec2(0u);
    else mag = shr64(x.m, uint(63 - x.e));
    if (greater64(mag, lim)) mag = lim;
    uvec2 r = x.neg ? neg64(mag) : mag;
    if (w < 64u) r &= dec64(shl64(uvec2(0u, 1u), w));
    return r;
}

uvec2 encode(Num x, uint t) {
    if (t == F32) return encodeFloat(x, 8u, 23u);
    if (t == F64) return encodeFloat(x, 11u, 52u);
    if (t == F16) return encodeFloat(x, 5u, 10u);
    if (t == BF16) return encodeFloat(x, 8u, 7u);
    if (t == I8) return encodeInt(x, 8u, true);
    if (t == U8) return encodeInt(x, 8u, false);
    if (t == I16) return encodeInt(x, 16u, true);
    if (t == U16) return encodeInt(x, 16u, false);
    if (t == I32) return encodeInt(x, 32u, true);
    if (t == U32) return encodeInt(x, 32u, false);
    if (t == I64) return encodeInt(x, 64u, true);
    return encodeInt(x, 64u, false);
}

uint sizeOf(uint t) {
    if (t == I8 || t == U8) return 1u;
    if (t == I16 || t == U16 || t == F16 || t == BF16) return 2u;
    if (t == F64 || t == I64 || t == U64) return 8u;
    return 4u;
}

void main() {
    uint u = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint n = pc.n, from = pc.srcType, to = pc.dstType;
    uint size = sizeOf(to);
    if (size == 8u) {
        if (u < n) {
            uvec2 b = encode(load(from, u), to);
            dst[2u * u] = b.y;
            dst[2u * u + 1u] = b.x;
        }
        return;
    }
    uint per = 4u / size;
    uint first = u * per;
    if (first >= n) return;
    uint bits = size * 8u;
    uint mask = size == 4u ? 0xffffffffu : (1u << bits) - 1u;
    uint word = 0u;
    for (uint k = 0u; k < per; k++) {
        uint i = first + k;
        if (i < n) word |= (encode(load(from, i), to).y & mask) << (k * bits);
    }
    dst[u] = word;
}
