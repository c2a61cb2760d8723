package blackbox_test

// Convert (package ops, its doc comment): between float32, Float16,
// float64, int32 and uint32, on the device; into floats to nearest even
// from the exact value (float64 into Float16 through float32), overflow to
// ±Inf, NaN to NaN; floats into integers truncated toward zero and
// saturated, NaN to 0; integers into integers keeping their 32 bits; same
// type an exact copy; other element types and different shapes refused.

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// exact is a number as the model holds it: NaN, or an exact value (±Inf
// included, and the sign of zero).
type exact struct {
	nan bool
	neg bool // NaN's sign
	v   *big.Float
}

func fromFloat64(f float64) exact {
	if f != f {
		return exact{nan: true, neg: math.Signbit(f)}
	}
	return exact{v: new(big.Float).SetPrec(256).SetFloat64(f)}
}

// decodeModel is x's exact value.
func decodeModel[T vkc.Element](x T) exact {
	switch v := any(x).(type) {
	case float32:
		return fromFloat64(float64(v))
	case float64:
		return fromFloat64(v)
	case vkc.Float16:
		return fromFloat64(float64(v.Float32()))
	case vkc.BFloat16:
		return fromFloat64(float64(v.Float32()))
	case int8, int16, int32, int64:
		return exact{v: new(big.Float).SetPrec(256).SetInt64(toInt64(v))}
	}
	return exact{v: new(big.Float).SetPrec(256).SetUint64(toUint64(any(x)))}
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	}
	return v.(int64)
}

func toUint64(v any) uint64 {
	switch v := v.(type) {
	case uint8:
		return uint64(v)
	case uint16:
		return uint64(v)
	case uint32:
		return uint64(v)
	}
	return v.(uint64)
}

// saturated is v truncated toward zero and clamped to [lo, hi]; NaN is 0.
func saturated(e exact, lo, hi *big.Int) *big.Int {
	if e.nan {
		return new(big.Int)
	}
	if e.v.IsInf() {
		if e.v.Signbit() {
			return lo
		}
		return hi
	}
	i, _ := e.v.Int(nil) // truncates toward zero
	if i.Cmp(lo) < 0 {
		return lo
	}
	if i.Cmp(hi) > 0 {
		return hi
	}
	return i
}

// nearestBig is round-to-nearest-even of a non-NaN exact value into a
// 16-bit format (see format16.nearest).
func (f format16) nearestBig(e exact) uint16 {
	sign := uint16(0)
	if e.v.Signbit() {
		sign = 0x8000
	}
	inf := f.infBits()
	if e.v.IsInf() {
		return sign | inf
	}
	ax := new(big.Float).SetPrec(256).Abs(e.v)
	big64 := func(x float64) *big.Float { return new(big.Float).SetPrec(256).SetFloat64(x) }
	lo := sort16(inf, func(b uint16) bool { return big64(f.value(b)).Cmp(ax) > 0 }) - 1
	lov := big64(f.value(uint16(lo)))
	if lov.Cmp(ax) == 0 {
		return sign | uint16(lo)
	}
	hi := uint16(lo + 1)
	hiv := big64(math.Ldexp(1, 1<<(f.ebits-1)))
	if hi < inf {
		hiv = big64(f.value(hi))
	}
	dlo := new(big.Float).SetPrec(256).Sub(ax, lov)
	dhi := new(big.Float).SetPrec(256).Sub(hiv, ax)
	switch c := dlo.Cmp(dhi); {
	case c < 0, c == 0 && lo%2 == 0:
		return sign | uint16(lo)
	}
	return sign | hi
}

// encodeModel is e converted to T as Convert documents it.
func encodeModel[T vkc.Element](e exact) T {
	var out T
	set := func(v any) { out = v.(T) }
	nan := func(f float64) float64 {
		if e.neg {
			return -f
		}
		return f
	}
	intRange := func(bits uint, signed bool) (*big.Int, *big.Int) {
		one := big.NewInt(1)
		if signed {
			lim := new(big.Int).Lsh(one, bits-1)
			return new(big.Int).Neg(lim), new(big.Int).Sub(lim, one)
		}
		return new(big.Int), new(big.Int).Sub(new(big.Int).Lsh(one, bits), one)
	}
	sat := func(bits uint, signed bool) *big.Int {
		lo, hi := intRange(bits, signed)
		return saturated(e, lo, hi)
	}
	switch any(out).(type) {
	case float32:
		if e.nan {
			set(float32(nan(math.NaN())))
		} else {
			f, _ := e.v.Float32()
			set(f)
		}
	case float64:
		if e.nan {
			set(nan(math.NaN()))
		} else {
			f, _ := e.v.Float64()
			set(f)
		}
	case vkc.Float16:
		if e.nan {
			set(vkc.Float16From(float32(nan(math.NaN()))))
		} else {
			set(vkc.Float16(binary16.nearestBig(e)))
		}
	case vkc.BFloat16:
		if e.nan {
			set(vkc.BFloat16From(float32(nan(math.NaN()))))
		} else {
			set(vkc.BFloat16(bfloat16.nearestBig(e)))
		}
	case int8:
		set(int8(sat(8, true).Int64()))
	case int16:
		set(int16(sat(16, true).Int64()))
	case int32:
		set(int32(sat(32, true).Int64()))
	case int64:
		set(sat(64, true).Int64())
	case uint8:
		set(uint8(sat(8, false).Uint64()))
	case uint16:
		set(uint16(sat(16, false).Uint64()))
	case uint32:
		set(uint32(sat(32, false).Uint64()))
	case uint64:
		set(sat(64, false).Uint64())
	}
	return out
}

// fromBits is the element whose bits are the low bits of b.
func fromBits[T vkc.Element](b uint64) T {
	var v T
	switch unsafe.Sizeof(v) {
	case 1:
		*(*uint8)(unsafe.Pointer(&v)) = uint8(b)
	case 2:
		*(*uint16)(unsafe.Pointer(&v)) = uint16(b)
	case 4:
		*(*uint32)(unsafe.Pointer(&v)) = uint32(b)
	default:
		*(*uint64)(unsafe.Pointer(&v)) = b
	}
	return v
}

// edgeValues are the values where conversions go wrong: zeros, ties
// between integers and between 16-bit floats, every integer type's limits
// and just past them, the 16-bit floats' largest values and the rounding
// edge to Inf, subnormals of each float type, ±Inf and NaN.
var edgeValues = []float64{
	0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -2.5, 2.5, 0.49999999, 1, -1,
	127, 127.5, 128, -128, -128.5, -129, 255, 255.99, 256, -1.5,
	32767, 32767.9, 32768, -32768, -32769, 65535, 65535.5, 65536,
	2147483647, 2147483648, -2147483648, -2147483649, 4294967295, 4294967296,
	9223372036854775807, -9223372036854775808, 18446744073709551615, 1.8446744073709552e19 * 2, -1e30,
	2049, 2051, 4097, 65504, 65519.99, 65520, 65536 * 2, -65520,
	math.Ldexp(1, -24), math.Ldexp(1, -25), math.Ldexp(3, -26), math.Ldexp(1, -14), math.Ldexp(1023, -24),
	math.Ldexp(1, -126), math.Ldexp(1, -133), math.Ldexp(1, -149), math.Ldexp(1, -150), math.Ldexp(3, -151),
	math.MaxFloat32, 3.4028235677973366e38 * 1.0000001, math.Ldexp(1, 128), math.Ldexp(0x1ff, 119), // bfloat16's and float32's edge
	math.Ldexp(1, -1074), math.SmallestNonzeroFloat64 * 3, math.MaxFloat64, -math.MaxFloat64,
	1 + math.Ldexp(1, -24), 1 + math.Ldexp(3, -24), 1 + math.Ldexp(1, -11), 1 + math.Ldexp(3, -11), 1 + math.Ldexp(1, -8), 1 + math.Ldexp(3, -8),
	math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(),
}

// sample is values of T: the edge values converted by the model, every
// width's extreme bit patterns, and random bit patterns.
func sample[T vkc.Element](seed uint64) []T {
	var xs []T
	for _, f := range edgeValues {
		xs = append(xs, encodeModel[T](fromFloat64(f)))
	}
	var z T
	w := uint(unsafe.Sizeof(z)) * 8
	top := uint64(1) << (w - 1)
	for _, b := range []uint64{0, 1, top - 1, top, top + 1, 2*top - 1, 2*top - 2, top - 2, top >> 1, top | top>>1} {
		xs = append(xs, fromBits[T](b))
	}
	rng := rand.New(rand.NewPCG(seed, uint64(w)))
	for range 300 {
		xs = append(xs, fromBits[T](rng.Uint64()))
	}
	return xs
}

// sameResult compares a converted value with the model's, NaN by NaN-ness
// and sign (Convert does not keep payloads).
func sameResult[T vkc.Element](got, want T) bool {
	isNaN := func(v T) (bool, bool) {
		switch f := any(v).(type) {
		case float32:
			return f != f, math.Signbit(float64(f))
		case float64:
			return f != f, math.Signbit(f)
		case vkc.Float16:
			x := f.Float32()
			return x != x, math.Signbit(float64(x))
		case vkc.BFloat16:
			x := f.Float32()
			return x != x, math.Signbit(float64(x))
		}
		return false, false
	}
	gn, gs := isNaN(got)
	wn, ws := isNaN(want)
	if gn || wn {
		return gn && wn && gs == ws
	}
	return string(bitsOf([]T{got})) == string(bitsOf([]T{want}))
}

// convertTakes reports whether Convert takes elements of T.
func convertTakes[T vkc.Element]() bool {
	switch any(*new(T)).(type) {
	case float32, vkc.Float16, float64, int32, uint32:
		return true
	}
	return false
}

// convertModel is x converted to D as Convert documents it: integers into
// integers keep their 32 bits, float64 into Float16 rounds through
// float32, everything else is the exact value rounded or saturated once.
func convertModel[S, D vkc.Element](x S) D {
	var zd D
	switch any(x).(type) {
	case int32, uint32:
		switch any(zd).(type) {
		case int32, uint32:
			return fromBits[D](uint64(*(*uint32)(unsafe.Pointer(&x))))
		}
	case float64:
		if _, ok := any(zd).(vkc.Float16); ok {
			return encodeModel[D](decodeModel(float32(any(x).(float64))))
		}
	}
	return encodeModel[D](decodeModel(x))
}

// convertPair converts a sample of S into D on the device and checks every
// element against the model; a pair with a type Convert does not take is
// refused with ErrUnsupported, the destination untouched.
func convertPair[S, D vkc.Element](t *testing.T, dev *vkc.Device) {
	var zs S
	var zd D
	xs := sample[S](uint64(unsafe.Sizeof(zs)) + 7)
	src := upload(t, dev, xs)
	s := dev.Stream()
	if !convertTakes[S]() || !convertTakes[D]() {
		before := make([]D, len(xs))
		dst := upload(t, dev, before)
		require.ErrorIs(t, opConvert(s, src, dst), vkc.ErrUnsupported)
		require.Equal(t, bitsOf(before), bitsOf(read(t, s, dst)), "a refused Convert changed its destination")
		return
	}
	dst := newBuffer[D](t, dev, len(xs))
	require.NoError(t, opConvert(s, src, dst))
	got := read(t, s, dst)
	fails := 0
	for i, x := range xs {
		want := convertModel[S, D](x)
		if !sameResult(got[i], want) {
			t.Errorf("%T(%v) -> %T: got %v (bits %x), want %v (bits %x)", zs, x, zd, got[i], bitsOf([]D{got[i]}), want, bitsOf([]D{want}))
			if fails++; fails > 8 {
				t.FailNow()
			}
		}
	}
	// Every odd length ends inside a 32-bit word of either buffer: the
	// elements before it convert the same, the source is untouched.
	for _, n := range []int{1, 3} {
		src := upload(t, dev, xs[:n])
		dst := newBuffer[D](t, dev, n)
		require.NoError(t, opConvert(s, src, dst))
		for i, g := range read(t, s, dst) {
			require.True(t, sameResult(g, convertModel[S, D](xs[i])), "n=%d [%d]", n, i)
		}
		require.Equal(t, bitsOf(xs[:n]), bitsOf(read(t, s, src)))
	}
}

// into lists convertPair from S into every element type.
func into[S vkc.Element]() []func(*testing.T, *vkc.Device) {
	return []func(*testing.T, *vkc.Device){
		convertPair[S, float32], convertPair[S, int32], convertPair[S, uint32], convertPair[S, float64],
		convertPair[S, int8], convertPair[S, uint8], convertPair[S, int16], convertPair[S, uint16],
		convertPair[S, int64], convertPair[S, uint64], convertPair[S, vkc.Float16], convertPair[S, vkc.BFloat16],
	}
}

// Convert between every ordered pair of the element types it takes agrees
// with the model on edge values (ties, limits, subnormals, ±Inf, NaN) and
// random bit patterns; same-type conversions are exact copies; every pair
// with another type is refused.
func TestConvertEveryPairAgreesWithModel(t *testing.T) {
	dev := openDevice(t)
	names := []string{"float32", "int32", "uint32", "float64", "int8", "uint8", "int16", "uint16", "int64", "uint64", "Float16", "BFloat16"}
	rows := [][]func(*testing.T, *vkc.Device){
		into[float32](), into[int32](), into[uint32](), into[float64](), into[int8](), into[uint8](),
		into[int16](), into[uint16](), into[int64](), into[uint64](), into[vkc.Float16](), into[vkc.BFloat16](),
	}
	for i, row := range rows {
		for j, pair := range row {
			t.Run(names[i]+"->"+names[j], func(t *testing.T) { pair(t, dev) })
		}
	}
}

// Convert refuses buffers of different shapes and a buffer into itself,
// changing nothing.
func TestConvertBadInput(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	src := upload(t, dev, []float32{1, 2, 3})
	short := upload(t, dev, []vkc.Float16{5, 6})
	err := opConvert(s, src, short)
	require.Error(t, err)
	require.Contains(t, err.Error(), "shape", "the error names the shapes that differ")
	require.Equal(t, []vkc.Float16{5, 6}, read(t, s, short), "the destination is untouched")
	require.Error(t, opConvert(s, src, src), "a buffer into itself")
	require.Error(t, opConvert[float32, int8](s, nil, nil))
}

// Convert of buffers on two devices is refused (the conversion runs on one
// device's queue, which cannot bind the other's memory), whichever side
// the stream belongs to, and the destination is left as it was.
func TestConvertAcrossDevicesRefused(t *testing.T) {
	a, b := openDevice(t), openDevice(t)
	src := upload(t, a, []float32{1, 2, 3})
	dst := upload(t, b, []vkc.Float16{7, 8, 9})
	for _, s := range []*vkc.Stream{a.Stream(), b.Stream()} {
		require.Error(t, opConvert(s, src, dst))
	}
	onA := upload(t, a, []vkc.Float16{4, 5, 6})
	require.Error(t, opConvert(b.Stream(), src, onA), "both buffers of a, the stream of b")
	require.Equal(t, []vkc.Float16{7, 8, 9}, read(t, b.Stream(), dst), "the destination is untouched")
	require.Equal(t, []vkc.Float16{4, 5, 6}, read(t, a.Stream(), onA), "the destination is untouched")
}
