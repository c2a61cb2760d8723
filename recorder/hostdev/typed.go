package hostdev

import "math/bits"

// typedBuiltins adds the references of the kernels for element types other
// than 32 bits (shaders/typed.go).
func typedBuiltins(m map[string]Kernel) {
	local1D := [3]uint32{256, 1, 1}
	m["fill64"] = Kernel{Local: local1D, Run: func(in *Invocation) {
		lo, hi := word(in.Push, 0), word(in.Push, 1)
		forEach(in, word(in.Push, 2), func(i uint32) {
			putWord(in.Buffers[0], 2*i, lo)
			putWord(in.Buffers[0], 2*i+1, hi)
		})
	}}
	m["convert"] = Kernel{Local: local1D, Run: func(in *Invocation) {
		convert(in, word(in.Push, 0), word(in.Push, 1), word(in.Push, 2))
	}}
}

// The element type codes of convert.comp.
const (
	tF32 = iota + 1
	tI32
	tU32
	tF64
	tI8
	tU8
	tI16
	tU16
	tI64
	tU64
	tF16
	tBF16
)

func typeSize(t uint32) uint32 {
	switch t {
	case tI8, tU8:
		return 1
	case tI16, tU16, tF16, tBF16:
		return 2
	case tF64, tI64, tU64:
		return 8
	}
	return 4
}

// number is convert's exact intermediate: a class, a sign and, when
// finite, m * 2^(e-63) with m's top bit set.
type number struct {
	class int // 0 zero, 1 finite, 2 Inf, 3 NaN
	neg   bool
	e     int
	m     uint64
}

func scaledNumber(neg bool, mag uint64, offset int) number {
	if mag == 0 {
		return number{neg: neg}
	}
	lz := bits.LeadingZeros64(mag)
	return number{class: 1, neg: neg, m: mag << lz, e: 63 - lz + offset}
}

func decodeFloat(neg bool, e, f uint64, ebits, fbits uint) number {
	top := uint64(1)<<ebits - 1
	bias := 1<<(ebits-1) - 1
	switch {
	case e == top && f == 0:
		return number{class: 2, neg: neg}
	case e == top:
		return number{class: 3, neg: neg}
	case e == 0:
		return scaledNumber(neg, f, 1-bias-int(fbits))
	}
	return scaledNumber(neg, f|1<<fbits, int(e)-bias-int(fbits))
}

func loadElement(b []byte, t, i uint32) number {
	size := typeSize(t)
	var v uint64
	for k := uint32(0); k < size; k++ {
		v |= uint64(b[i*size+k]) << (8 * k)
	}
	signBit := uint64(1) << (8*size - 1)
	neg := v&signBit != 0
	switch t {
	case tF32:
		return decodeFloat(neg, v>>23&0xff, v&0x7fffff, 8, 23)
	case tF64:
		return decodeFloat(neg, v>>52&0x7ff, v&(1<<52-1), 11, 52)
	case tF16:
		return decodeFloat(neg, v>>10&0x1f, v&0x3ff, 5, 10)
	case tBF16:
		return decodeFloat(neg, v>>7&0xff, v&0x7f, 8, 7)
	case tI8, tI16, tI32, tI64:
		if neg {
			return scaledNumber(true, (^v+1)&(signBit<<1-1), 0)
		}
	}
	return scaledNumber(false, v, 0)
}

func encodeFloat(x number, ebits, fbits uint) uint64 {
	top := uint64(1)<<ebits - 1
	bias := 1<<(ebits-1) - 1
	var sign uint64
	if x.neg {
		sign = 1 << (ebits + fbits)
	}
	inf := top << fbits
	switch {
	case x.class == 3:
		return sign | inf | 1<<(fbits-1)
	case x.class == 2 || x.class == 1 && x.e > bias:
		return sign | inf
	case x.class == 0:
		return sign
	}
	emin := 1 - bias
	drop := 64 - int(fbits+1) + max(emin-x.e, 0)
	if drop > 64 {
		return sign
	}
	var sig uint64
	if drop < 64 {
		sig = x.m >> uint(drop)
	}
	halfway := x.m>>uint(drop-1)&1 != 0
	below := x.m<<uint(65-drop) != 0
	if halfway && (below || sig&1 != 0) {
		sig++
	}
	var exponent uint64
	if x.e >= emin {
		exponent = uint64(x.e+bias-1) << fbits
	}
	return sign | (exponent + sig)
}

func encodeInt(x number, w uint, signed bool) uint64 {
	if x.class == 3 || x.class == 0 {
		return 0
	}
	var lim uint64
	switch {
	case signed && x.neg:
		lim = 1 << (w - 1)
	case signed:
		lim = 1<<(w-1) - 1
	case x.neg:
		lim = 0
	default:
		lim = 1<<w - 1 // w = 64 wraps to all ones, as it should
	}
	var mag uint64
	switch {
	case x.class == 2 || x.e > 63:
		mag = lim
	case x.e >= 0:
		mag = x.m >> uint(63-x.e)
	}
	mag = min(mag, lim)
	r := mag
	if x.neg {
		r = -mag
	}
	if w < 64 {
		r &= 1<<w - 1
	}
	return r
}

func encodeElement(x number, t uint32) uint64 {
	switch t {
	case tF32:
		return encodeFloat(x, 8, 23)
	case tF64:
		return encodeFloat(x, 11, 52)
	case tF16:
		return encodeFloat(x, 5, 10)
	case tBF16:
		return encodeFloat(x, 8, 7)
	case tI8, tI16, tI32, tI64:
		return encodeInt(x, uint(8*typeSize(t)), true)
	}
	return encodeInt(x, uint(8*typeSize(t)), false)
}

// convert: dst[i] = src[i] converted from type from to type to for i < n,
// one invocation per 32-bit word of dst (or 64-bit element), the bytes of
// the last word past n written as zero, as convert.comp does.
func convert(in *Invocation, n, from, to uint32) {
	src, dst := in.Buffers[0], in.Buffers[1]
	size := typeSize(to)
	units := n
	if size < 8 {
		units = (n*size + 3) / 4
	}
	per := max(4/size, 1)
	forEach(in, units, func(u uint32) {
		if size == 8 {
			v := encodeElement(loadElement(src, from, u), to)
			putWord(dst, 2*u, uint32(v))
			putWord(dst, 2*u+1, uint32(v>>32))
			return
		}
		var w uint32
		for k := uint32(0); k < per; k++ {
			if i := u*per + k; i < n {
				w |= uint32(encodeElement(loadElement(src, from, i), to)) & (1<<(8*size) - 1) << (8 * size * k)
			}
		}
		putWord(dst, u, w)
	})
}
