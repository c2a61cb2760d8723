package hostdev

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/x448/float16"
)

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
	typedOps(m)
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

// elements reads and writes one element type of the typed ops, computing
// in F: Float16 in float32, float64 in float64. Partials (the reductions'
// first pass) hold F.
type elements[F float32 | float64] struct {
	get             func(b []byte, i uint32) F
	put, putPartial func(b []byte, i uint32, v F)
}

var (
	halves = elements[float32]{
		get: func(b []byte, i uint32) float32 {
			return float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
		},
		put: func(b []byte, i uint32, v float32) {
			binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(v).Bits())
		},
		putPartial: putFloat,
	}
	doubles = elements[float64]{
		get:        getDouble,
		put:        putDouble,
		putPartial: putDouble,
	}
)

func getDouble(b []byte, i uint32) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
}
func putDouble(b []byte, i uint32, v float64) {
	binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
}

// typedOps registers the Float16 (_f16) and float64 (_f64) ops.
func typedOps(m map[string]Kernel) {
	registerTyped(m, "_f16", halves, func(push []byte) float32 { return math.Float32frombits(word(push, 0)) }, 1)
	registerTyped(m, "_f64", doubles, func(push []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(push)) }, 2)
}

func registerTyped[F float32 | float64](m map[string]Kernel, suffix string, e elements[F], scalar func([]byte) F, scalarWords int) {
	local1D, local2D := [3]uint32{256, 1, 1}, [3]uint32{8, 8, 1}
	withVariant(m, "binary"+suffix, local1D, 2, func(in *Invocation, s scalars) {
		x, y, z := in.Buffers[0], in.Buffers[1], in.Buffers[2]
		op := s[0]
		forEach(in, s[1], func(i uint32) {
			a, b := e.get(x, i), e.get(y, i)
			var r F
			switch op {
			case 0:
				r = a + b
			case 1:
				r = a - b
			case 2:
				r = a * b
			default:
				r = a / b
			}
			e.put(z, i, r)
		})
	})
	m["axpy"+suffix] = Kernel{Local: local1D, Run: func(in *Invocation) {
		a, n := scalar(in.Push), word(in.Push, scalarWords)
		x, y := in.Buffers[0], in.Buffers[1]
		forEach(in, n, func(i uint32) { e.put(y, i, a*e.get(x, i)+e.get(y, i)) })
	}}
	m["scale"+suffix] = Kernel{Local: local1D, Run: func(in *Invocation) {
		a, n := scalar(in.Push), word(in.Push, scalarWords)
		x, y := in.Buffers[0], in.Buffers[1]
		forEach(in, n, func(i uint32) { e.put(y, i, a*e.get(x, i)) })
	}}
	withVariant(m, "sum"+suffix, local1D, 1, func(in *Invocation, s scalars) {
		typedPartials(in, s[0], e, func(i uint32) F { return e.get(in.Buffers[0], i) }, in.Buffers[1])
	})
	withVariant(m, "dot"+suffix, local1D, 1, func(in *Invocation, s scalars) {
		x, y := in.Buffers[0], in.Buffers[1]
		typedPartials(in, s[0], e, func(i uint32) F { return e.get(x, i) * e.get(y, i) }, in.Buffers[2])
	})
	withVariant(m, "softmax"+suffix, local1D, 2, func(in *Invocation, s scalars) {
		rows, cols := uint64(s[0]), uint64(s[1])
		src, dst := in.Buffers[0], in.Buffers[1]
		for r := uint64(0); r < min(rows, uint64(in.Groups[0])*uint64(in.Groups[1])); r++ {
			base := r * cols
			mx := F(math.Inf(-1))
			for c := uint64(0); c < cols; c++ {
				mx = max(mx, e.get(src, uint32(base+c)))
			}
			var sum F
			for c := uint64(0); c < cols; c++ {
				sum += F(math.Exp(float64(e.get(src, uint32(base+c)) - mx)))
			}
			inv := 1 / sum
			for c := uint64(0); c < cols; c++ {
				e.put(dst, uint32(base+c), F(math.Exp(float64(e.get(src, uint32(base+c))-mx)))*inv)
			}
		}
	})
	withVariant(m, "matmul"+suffix, local2D, 3, typedMatmul(e, 8, 8))
	if suffix == "_f16" {
		withVariant(m, "matmul_wide"+suffix, local2D, 3, typedMatmul(e, wideRows, wideCols))
		withVariant(m, "matmul_texel"+suffix, local2D, 3, typedMatmul(e, wideRows, wideCols))
	}
}

// typedMatmul is the typed matmul over the rows and columns its groups
// cover, each invocation covering rowsPer x colsPer elements of C.
func typedMatmul[F float32 | float64](e elements[F], rowsPer, colsPer uint64) func(*Invocation, scalars) {
	return func(in *Invocation, s scalars) {
		mr, n, k := uint64(s[0]), uint64(s[1]), uint64(s[2])
		a, b, c := in.Buffers[0], in.Buffers[1], in.Buffers[2]
		rows := min(mr, uint64(in.Groups[1])*uint64(in.Local[1])*rowsPer)
		cols := min(n, uint64(in.Groups[0])*uint64(in.Local[0])*colsPer)
		for r := uint64(0); r < rows; r++ {
			for col := uint64(0); col < cols; col++ {
				var acc F
				for x := uint64(0); x < k; x++ {
					acc += e.get(a, uint32(r*k+x)) * e.get(b, uint32(x*n+col))
				}
				e.put(c, uint32(r*n+col), acc)
			}
		}
	}
}

// typedPartials is partials for the typed reductions: sums in F.
func typedPartials[F float32 | float64](in *Invocation, n32 uint32, e elements[F], value func(uint32) F, out []byte) {
	n := uint64(n32)
	w := uint64(in.Local[0])
	groups := uint64(in.Groups[0]) * uint64(in.Groups[1])
	for g := uint64(0); g < groups && g*w < n; g++ {
		var s F
		for i := g * w; i < min((g+1)*w, n); i++ {
			s += value(uint32(i))
		}
		e.putPartial(out, uint32(g), s)
	}
}
