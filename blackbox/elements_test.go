package blackbox_test

// Element types (docs/guide/buffers.md "Element types", the doc comments of
// Element, Float16, BFloat16, Features and WithoutFeatures): every type
// round-trips through buffers, fills, copies and params; a buffer of n
// elements takes n*size bytes; the 16-bit floats round to nearest even;
// types and modules the device cannot serve are refused with
// ErrUnsupported.

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// format16 is a 16-bit float format, described from IEEE's rules, not
// from the code under test: exponent and fraction bits.
type format16 struct {
	name         string
	ebits, fbits uint
	from         func(float32) uint16
	to           func(uint16) float32
}

var (
	binary16 = format16{"Float16", 5, 10,
		func(f float32) uint16 { return uint16(vkc.Float16From(f)) },
		func(b uint16) float32 { return vkc.Float16(b).Float32() }}
	bfloat16 = format16{"BFloat16", 8, 7,
		func(f float32) uint16 { return uint16(vkc.BFloat16From(f)) },
		func(b uint16) float32 { return vkc.BFloat16(b).Float32() }}
)

// value is the exact value of the positive finite pattern b, from the
// format's definition (subnormal below exponent field 1).
func (f format16) value(b uint16) float64 {
	bias := 1<<(f.ebits-1) - 1
	e := int(b>>f.fbits) & (1<<f.ebits - 1)
	frac := float64(b & (1<<f.fbits - 1))
	if e == 0 {
		return math.Ldexp(frac, 1-bias-int(f.fbits))
	}
	return math.Ldexp(frac+float64(uint(1)<<f.fbits), e-bias-int(f.fbits))
}

// infBits is the pattern of +Inf; positive finite patterns are below it.
func (f format16) infBits() uint16 { return uint16((1<<f.ebits - 1) << f.fbits) }

// nearest is the model of round-to-nearest-even of a finite float32 into
// the format: the two neighbours of |x| among the finite values (past the
// largest, +Inf stands at the next power of two, where IEEE's rounding
// puts it), the closer one, on a tie the one with an even pattern.
func (f format16) nearest(x float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	ax := math.Abs(float64(x))
	inf := f.infBits()
	// The largest pattern whose value is <= ax (values grow with patterns).
	lo := sort16(inf, func(b uint16) bool { return f.value(b) > ax }) - 1
	lov := f.value(uint16(lo))
	if lov == ax {
		return sign | uint16(lo)
	}
	hi := uint16(lo + 1)
	hiv := math.Ldexp(1, 1<<(f.ebits-1)) // +Inf's stand-in: 2^(emax+1)
	if hi < inf {
		hiv = f.value(hi)
	}
	dlo := new(big.Float).SetPrec(200).Sub(big.NewFloat(ax).SetPrec(200), big.NewFloat(lov).SetPrec(200))
	dhi := new(big.Float).SetPrec(200).Sub(big.NewFloat(hiv).SetPrec(200), big.NewFloat(ax).SetPrec(200))
	switch c := dlo.Cmp(dhi); {
	case c < 0:
		return sign | uint16(lo)
	case c > 0:
		return sign | hi
	case lo%2 == 0:
		return sign | uint16(lo)
	}
	return sign | hi
}

// sort16 is the smallest pattern in [0, n) for which above holds (n if
// none), for a predicate monotone in the pattern.
func sort16(n uint16, above func(uint16) bool) int {
	lo, hi := 0, int(n)
	for lo < hi {
		mid := (lo + hi) / 2
		if above(uint16(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Every pattern of the two 16-bit formats decodes to its IEEE value, and
// rounding into them is to nearest, ties to even: checked at every
// pattern's value, at the midpoint to the next pattern (a tie), one
// float32 step either side of it, and at a million random float32s.
// NaN stays NaN with its sign.
func TestSixteenBitFloatsRoundToNearestEven(t *testing.T) {
	for _, f := range []format16{binary16, bfloat16} {
		t.Run(f.name, func(t *testing.T) {
			inf := f.infBits()
			fails := 0
			check := func(x float32, what string) {
				want, got := f.nearest(x), f.from(x)
				if want != got && fails < 10 {
					fails++
					t.Errorf("%s: %s(%g = %#08x) = %#04x, want %#04x", what, f.name, x, math.Float32bits(x), got, want)
				}
			}
			for b := uint16(0); b < inf; b++ {
				v := f.value(b)
				for _, sign := range []float32{1, -1} {
					got := f.to(b | map[float32]uint16{1: 0, -1: 0x8000}[sign])
					require.Equal(t, float64(sign)*v, float64(got), "%s pattern %#04x decodes to its IEEE value", f.name, b)
					check(sign*float32(v), "a pattern's own value")
					next := math.Ldexp(1, 1<<(f.ebits-1))
					if b+1 < inf {
						next = f.value(b + 1)
					}
					mid := float32((v + next) / 2) // exact: one more bit than the format
					if float64(mid) != (v+next)/2 {
						continue // the midpoint past float32's range (bfloat16's largest)
					}
					check(sign*mid, "a midpoint")
					check(sign*math.Nextafter32(mid, 0), "below a midpoint")
					check(sign*math.Nextafter32(mid, float32(math.Inf(1))), "above a midpoint")
				}
			}
			rng := rand.New(rand.NewPCG(16, uint64(f.ebits)))
			for range 1 << 20 {
				x := math.Float32frombits(rng.Uint32())
				if x != x {
					continue
				}
				check(x, "a random float32")
			}
			for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1))} {
				assert.Equal(t, f.to(f.from(x)), x, "±Inf round-trips")
			}
			// Every NaN pattern of the format, and float32 NaNs, stay NaN with their sign.
			for frac := uint16(1); frac < 1<<f.fbits; frac++ {
				for _, sign := range []uint16{0, 0x8000} {
					x := f.to(inf | frac | sign)
					require.True(t, x != x, "pattern %#04x is NaN", inf|frac|sign)
					back := f.to(f.from(x))
					require.True(t, back != back, "NaN %#04x stays NaN", inf|frac|sign)
					require.Equal(t, sign != 0, math.Signbit(float64(back)), "NaN %#04x keeps its sign", inf|frac|sign)
				}
			}
		})
	}
}

// typeCase exercises one element type through the public API.
type typeCase interface {
	name() string
	run(t *testing.T, dev *vkc.Device)
	size() uint64
	needs() vkc.Features
	newBuffer(dev *vkc.Device, n int) error
}

type elemCase[T vkc.Element] struct {
	label string
	bytes uint64
	need  vkc.Features
	// gen makes element i; special values (NaN, ±Inf, extremes) included.
	gen func(i int) T
}

func (c elemCase[T]) name() string        { return c.label }
func (c elemCase[T]) size() uint64        { return c.bytes }
func (c elemCase[T]) needs() vkc.Features { return c.need }
func (c elemCase[T]) newBuffer(dev *vkc.Device, n int) error {
	b, err := vkc.NewBuffer[T](dev, n)
	if err == nil {
		_ = b.Close()
	}
	return err
}

// bitsOf is xs's memory, so values compare bit for bit (NaN payloads too).
func bitsOf[T any](xs []T) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
}

func (c elemCase[T]) values(n, offset int) []T {
	xs := make([]T, n)
	for i := range xs {
		xs[i] = c.gen(i + offset)
	}
	return xs
}

// run: FromSlice, Read, Write, ReadInto, Fill, Copy and Param at lengths
// that leave a partial 32-bit word (1, 3, 5) and a multi-group one.
func (c elemCase[T]) run(t *testing.T, dev *vkc.Device) {
	s := dev.Stream()
	ctx := testCtx(t)
	for _, n := range []int{1, 2, 3, 5, 1027} {
		xs := c.values(n, 0)
		b := upload(t, dev, xs)
		require.Equal(t, n, b.Len())
		got := read(t, s, b)
		require.Equal(t, bitsOf(xs), bitsOf(got), "%s: FromSlice then Read, n=%d", c.label, n)

		ys := c.values(n, 7)
		require.NoError(t, b.Write(ys))
		into := make([]T, n)
		require.NoError(t, b.ReadInto(ctx, s, into))
		require.Equal(t, bitsOf(ys), bitsOf(into), "%s: Write then ReadInto, n=%d", c.label, n)

		dst := newBuffer[T](t, dev, n)
		require.NoError(t, vkc.Copy(s, b, dst))
		require.Equal(t, bitsOf(ys), bitsOf(read(t, s, dst)), "%s: Copy, n=%d", c.label, n)

		for _, v := range []T{c.gen(3), c.gen(4), c.gen(5)} {
			require.NoError(t, vkc.Fill(s, dst, v))
			want := make([]T, n)
			for i := range want {
				want[i] = v
			}
			require.Equal(t, bitsOf(want), bitsOf(read(t, s, dst)), "%s: Fill(%v), n=%d", c.label, v, n)
		}
		require.Equal(t, bitsOf(ys), bitsOf(read(t, s, b)), "%s: the source is untouched by the destination's fills, n=%d", c.label, n)
	}
	for i := range 6 {
		v := c.gen(i)
		p := newParam(t, dev, v)
		require.Equal(t, bitsOf([]T{v}), bitsOf([]T{p.Value()}), "%s: NewParam(%v).Value", c.label, v)
		w := c.gen(i + 1)
		require.NoError(t, p.Set(w))
		require.Equal(t, bitsOf([]T{w}), bitsOf([]T{p.Value()}), "%s: Set(%v).Value", c.label, w)
	}
}

// everyType lists a case per element type, with the features it needs
// (the doc comment of Element) and values that reach its extremes.
func everyType() []typeCase {
	f64 := []float64{0, math.Copysign(0, -1), 1, -2.5, math.MaxFloat64, -math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 1e-310}
	f32 := []float32{0, -1, 3.25, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1)), float32(math.NaN())}
	return []typeCase{
		elemCase[float32]{"float32", 4, 0, func(i int) float32 { return f32[i%len(f32)] * float32(1+i/len(f32)) }},
		elemCase[int32]{"int32", 4, 0, func(i int) int32 { return int32([]int64{0, -1, math.MaxInt32, math.MinInt32, 7}[i%5]) + int32(i/5) }},
		elemCase[uint32]{"uint32", 4, 0, func(i int) uint32 { return []uint32{0, 1, math.MaxUint32, 0x80000000}[i%4] + uint32(i/4) }},
		elemCase[float64]{"float64", 8, vkc.FeatureFloat64, func(i int) float64 { return f64[i%len(f64)] * float64(1+i/len(f64)) }},
		elemCase[int8]{"int8", 1, vkc.FeatureStorage8 | vkc.FeatureInt8, func(i int) int8 { return int8(i*37 - 128) }},
		elemCase[uint8]{"uint8", 1, vkc.FeatureStorage8 | vkc.FeatureInt8, func(i int) uint8 { return uint8(i*53 + 255) }},
		elemCase[int16]{"int16", 2, vkc.FeatureStorage16 | vkc.FeatureInt16, func(i int) int16 { return int16(i*7919 - 32768) }},
		elemCase[uint16]{"uint16", 2, vkc.FeatureStorage16 | vkc.FeatureInt16, func(i int) uint16 { return uint16(i*7919 + 65535) }},
		elemCase[int64]{"int64", 8, vkc.FeatureInt64, func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, -1, 0}[i%4] + int64(i/4)*0x100000001 }},
		elemCase[uint64]{"uint64", 8, vkc.FeatureInt64, func(i int) uint64 { return []uint64{math.MaxUint64, 0, 1 << 63}[i%3] + uint64(i/3)*0x100000001 }},
		elemCase[vkc.Float16]{"Float16", 2, vkc.FeatureStorage16 | vkc.FeatureFloat16, func(i int) vkc.Float16 {
			return vkc.Float16([]uint16{0x7c00, 0xfc00, 0x7e01, 0x0001, 0x7bff, 0x8000, 0x3c00}[i%7] + uint16(i/7))
		}},
		elemCase[vkc.BFloat16]{"BFloat16", 2, vkc.FeatureStorage16 | vkc.FeatureInt16, func(i int) vkc.BFloat16 {
			return vkc.BFloat16([]uint16{0x7f80, 0xff80, 0x7fc1, 0x0001, 0x7f7f, 0x8000, 0x3f80}[i%7] + uint16(i/7))
		}},
	}
}

// Buffer, FromSlice, Read, Write, ReadInto, Fill, Copy and Param work for
// every element type, bit for bit, at lengths that end inside a 32-bit
// word (Element's doc comment: the padding is never exposed).
func TestEveryElementTypeRoundTrips(t *testing.T) {
	dev := openDevice(t)
	for _, c := range everyType() {
		t.Run(c.name(), func(t *testing.T) {
			if !dev.Info().Features.Has(c.needs()) {
				t.Skipf("the device lacks %v", c.needs()&^dev.Info().Features)
			}
			c.run(t, dev)
		})
	}
}

// A buffer of n elements uses n*size bytes of device memory (Element's
// doc comment), as MemoryStats reports.
func TestBufferTakesItsElementsBytes(t *testing.T) {
	dev := openDevice(t)
	const n = 1 << 12 // a multiple of every alignment, so no rounding shows
	for _, c := range everyType() {
		if !dev.Info().Features.Has(c.needs()) {
			continue
		}
		before := dev.MemoryStats().Used
		require.NoError(t, withBuffer(c, dev, n, func() {
			assert.Equal(t, n*c.size(), dev.MemoryStats().Used-before, "%s: %d elements use %d bytes", c.name(), n, n*c.size())
		}))
	}
}

// withBuffer runs f while a buffer of n elements of c's type is open.
func withBuffer(c typeCase, dev *vkc.Device, n int, f func()) error {
	type opener interface {
		open(dev *vkc.Device, n int) (func() error, error)
	}
	closeFn, err := c.(opener).open(dev, n)
	if err != nil {
		return err
	}
	f()
	return closeFn()
}

func (c elemCase[T]) open(dev *vkc.Device, n int) (func() error, error) {
	b, err := vkc.NewBuffer[T](dev, n)
	if err != nil {
		return nil, err
	}
	return b.Close, nil
}

// Open enables every optional feature the device offers, and Info reports
// them (DeviceInfo.Features); WithoutFeatures leaves the ones named out.
func TestOpenEnablesEveryOfferedFeature(t *testing.T) {
	dev := openDevice(t)
	infos, err := vkc.Devices()
	require.NoError(t, err)
	offered := infos[dev.Info().Index].Features
	t.Logf("%s offers: %v", dev.Info().Name, offered)
	assert.Equal(t, offered, dev.Info().Features, "every offered feature is enabled")

	off := vkc.FeatureFloat64 | vkc.FeatureStorage16
	less := openDevice(t, vkc.WithoutFeatures(off))
	assert.Equal(t, offered&^off, less.Info().Features, "WithoutFeatures leaves exactly those out")
}

// A buffer of a type whose features the device lacks is refused with
// ErrUnsupported naming the missing feature, by every constructor, and
// leaves no memory behind.
func TestBufferOfUnsupportedTypeRefused(t *testing.T) {
	for _, c := range everyType() {
		if c.needs() == 0 {
			continue
		}
		t.Run(c.name(), func(t *testing.T) {
			dev := openDevice(t, vkc.WithoutFeatures(c.needs()))
			before := dev.MemoryStats()
			err := c.newBuffer(dev, 16)
			require.ErrorIs(t, err, vkc.ErrUnsupported)
			for f := vkc.Features(1); f <= c.needs(); f <<= 1 {
				if c.needs().Has(f) {
					assert.Contains(t, err.Error(), f.String(), "the error names the missing feature")
				}
			}
			assert.Equal(t, before.LiveClaims, dev.MemoryStats().LiveClaims, "nothing allocated")
		})
	}
	dev := openDevice(t, vkc.WithoutFeatures(vkc.FeatureFloat64))
	_, err := vkc.FromSlice(dev, []float64{1})
	require.ErrorIs(t, err, vkc.ErrUnsupported, "FromSlice")
	_, err = vkc.NewParam(dev, 1.5)
	require.ErrorIs(t, err, vkc.ErrUnsupported, "NewParam")
}

// A module whose capabilities need a feature the device does not have
// enabled fails at LoadKernel with ErrUnsupported naming the capability,
// before the driver sees it: the validation layer reports nothing
// (VUID-VkShaderModuleCreateInfo-pCode-08740 would). With the feature the
// same module loads and runs.
func TestModuleNeedingMissingFeatureRefusedAtLoad(t *testing.T) {
	cases := []struct {
		file, capability string
		off              vkc.Features
	}{
		{"../testdata/double.spv", "Float64", vkc.FeatureFloat64},
		{"../testdata/half.spv", "StorageBuffer16BitAccess", vkc.FeatureStorage16},
		{"../testdata/dot4.spv", "DotProductInput4x8BitPacked", vkc.FeatureIntegerDotProduct},
	}
	for _, c := range cases {
		t.Run(c.capability, func(t *testing.T) {
			code, err := os.ReadFile(c.file)
			require.NoError(t, err)
			dev := openDevice(t, vkc.WithoutFeatures(c.off))
			_, err = dev.LoadKernel(vkc.KernelSpec{Name: c.capability, SPIRV: code})
			require.ErrorIs(t, err, vkc.ErrUnsupported)
			assert.Contains(t, err.Error(), c.capability, "the error names the capability")
			assert.Contains(t, err.Error(), c.off.String(), "the error names the feature")
			errs, warns, recent := dev.ValidationMessages()
			require.Zero(t, errs+warns, "the layer saw nothing: %q", recent)

			full := openDevice(t)
			if !full.Info().Features.Has(c.off) {
				t.Skipf("the device lacks %v", c.off)
			}
			k, err := full.LoadKernel(vkc.KernelSpec{Name: c.capability, SPIRV: code})
			require.NoError(t, err, "the same module loads where the feature is enabled")
			require.NoError(t, k.Close())
		})
	}
}

// A module declaring a capability whose device feature vkc never enables
// (float atomics) fails at LoadKernel with ErrUnsupported naming the
// capability, before the driver sees it: the validation layer reports
// nothing. (lavapipe offers the feature; a module that declared it
// without it enabled reached the driver and the layer,
// VUID-VkShaderModuleCreateInfo-pCode-01091.)
func TestModuleNeedingAFeatureVkcNeverEnablesRefusedAtLoad(t *testing.T) {
	for _, c := range []struct{ file, capability string }{
		{"../testdata/float_atomic.spv", "AtomicFloat32MinMaxEXT"},
	} {
		t.Run(c.capability, func(t *testing.T) {
			code, err := os.ReadFile(c.file)
			require.NoError(t, err)
			dev := openDevice(t)
			_, err = dev.LoadKernel(vkc.KernelSpec{Name: c.capability, SPIRV: code})
			require.ErrorIs(t, err, vkc.ErrUnsupported)
			assert.Contains(t, err.Error(), c.capability, "the error names the capability")
			errs, warns, recent := dev.ValidationMessages()
			require.Zero(t, errs+warns, "the layer saw nothing: %q", recent)
		})
	}
}

// A kernel multiplying cooperative matrices (GL_KHR_cooperative_matrix)
// runs where the device lists a Float16 configuration summed in float32,
// specialized with its sizes and the subgroup size: one tile, against the
// same sums in Go (small integers, exact). Where this build's SPIR-V
// validator is older than the extension, LoadKernel says so with
// ErrUnsupported, and the test stops there.
func TestCooperativeMatrixKernelRuns(t *testing.T) {
	dev := openDevice(t)
	info := dev.Info()
	var cfg *vkc.CooperativeMatrix
	for i, m := range info.CooperativeMatrices {
		if m.A == vkc.ComponentFloat16 && m.B == vkc.ComponentFloat16 && m.C == vkc.ComponentFloat32 &&
			m.Result == vkc.ComponentFloat32 && m.Scope == vkc.ScopeSubgroup {
			cfg = &info.CooperativeMatrices[i]
			break
		}
	}
	if cfg == nil {
		t.Skipf("%s lists no Float16 cooperative matrix summed in float32 (features %v, configurations %v)", info.Name, info.Features, info.CooperativeMatrices)
	}
	code, err := os.ReadFile("../testdata/coopmat.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "coopmat", SPIRV: code, Constants: map[uint32]float64{
		0: float64(info.Subgroup.Size), 1: float64(cfg.M), 2: float64(cfg.N), 3: float64(cfg.K)}})
	if err != nil && strings.Contains(err.Error(), "does not know capability") {
		require.ErrorIs(t, err, vkc.ErrUnsupported)
		t.Skipf("this build's SPIR-V validator cannot check the module: %v", err)
	}
	require.NoError(t, err, "configuration %v", *cfg)
	defer k.Close()
	m, n, kk := int(cfg.M), int(cfg.N), int(cfg.K)
	as, bs := make([]vkc.Float16, m*kk), make([]vkc.Float16, kk*n)
	for i := range as {
		as[i] = vkc.Float16From(float32(i%7 - 3))
	}
	for i := range bs {
		bs[i] = vkc.Float16From(float32(i%5 - 2))
	}
	want := make([]float32, m*n)
	for i := range m {
		for j := range n {
			for l := range kk {
				want[i*n+j] += as[i*kk+l].Float32() * bs[l*n+j].Float32()
			}
		}
	}
	c := newBuffer[float32](t, dev, m*n)
	s := dev.Stream()
	require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, nil, upload(t, dev, as), upload(t, dev, bs), c))
	require.Equal(t, want, read(t, s, c), "configuration %v", *cfg)

	// Tiles of a size the device does not list are refused at LoadKernel,
	// before the driver sees them (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-08974).
	_, err = dev.LoadKernel(vkc.KernelSpec{Name: "coopmat-unlisted", SPIRV: code, Constants: map[uint32]float64{
		0: float64(info.Subgroup.Size), 1: float64(cfg.M + 1), 2: float64(cfg.N), 3: float64(cfg.K)}})
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	assert.ErrorContains(t, err, "none of device")
	errs, warns, recent := dev.ValidationMessages()
	require.Zero(t, errs+warns, "%q", recent)
}

// A device without cooperative matrices (or opened without them) refuses
// the module at LoadKernel, naming the capability and the feature, before
// any driver or validator sees it.
func TestCooperativeMatrixKernelRefusedWithoutTheFeature(t *testing.T) {
	code, err := os.ReadFile("../testdata/coopmat.spv")
	require.NoError(t, err)
	dev := openDevice(t, vkc.WithoutFeatures(vkc.FeatureCooperativeMatrix))
	require.False(t, dev.Info().Features.Has(vkc.FeatureCooperativeMatrix))
	require.Empty(t, dev.Info().CooperativeMatrices, "no configurations without the feature")
	_, err = dev.LoadKernel(vkc.KernelSpec{Name: "coopmat", SPIRV: code})
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	assert.ErrorContains(t, err, "CooperativeMatrixKHR")
	assert.ErrorContains(t, err, "cooperativeMatrix")
	errs, warns, recent := dev.ValidationMessages()
	require.Zero(t, errs+warns, "the layer saw nothing: %q", recent)
}

// A kernel using SPV_KHR_integer_dot_product's OpSDot runs where the
// device offers shaderIntegerDotProduct (vkc enables it): the dot product
// of two words' four signed bytes, checked against the same sum in Go.
func TestIntegerDotProductKernelRuns(t *testing.T) {
	dev := openDevice(t)
	if !dev.Info().Features.Has(vkc.FeatureIntegerDotProduct) {
		t.Skip("the device lacks shaderIntegerDotProduct")
	}
	code, err := os.ReadFile("../testdata/dot4.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "dot4", SPIRV: code})
	require.NoError(t, err)
	defer k.Close()
	as := []uint32{0x01020304, 0xff7f8001, 0x80808080, 0}
	bs := []uint32{0x01010101, 0x02fe0103, 0x80808080, 0x12345678}
	want := make([]int32, len(as))
	for i := range as {
		for sh := 0; sh < 32; sh += 8 {
			want[i] += int32(int8(as[i]>>sh)) * int32(int8(bs[i]>>sh))
		}
	}
	n := 64 // the kernel's workgroup
	a := upload(t, dev, append(as, make([]uint32, n-len(as))...))
	b := upload(t, dev, append(bs, make([]uint32, n-len(bs))...))
	c := newBuffer[int32](t, dev, n)
	s := dev.Stream()
	require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, nil, a, b, c))
	got := read(t, s, c)
	require.Equal(t, want, got[:len(want)])
	errs, warns, recent := dev.ValidationMessages()
	require.Zero(t, errs+warns, "%q", recent)
}
