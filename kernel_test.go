package vkc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
)

// testSPIRV reads a module built from testdata/*.comp by testdata/gen.sh.
func testSPIRV(t testing.TB, name string) []byte {
	t.Helper()
	code, err := os.ReadFile("testdata/" + name + ".spv")
	require.NoError(t, err)
	return code
}

// affineSpec describes testdata/affine.comp: y = a*x + b over n elements.
func affineSpec(t testing.TB) KernelSpec {
	return KernelSpec{Name: "affine", SPIRV: testSPIRV(t, "affine"), Bindings: []Access{ReadOnly, WriteOnly}, PushSize: 12}
}

// affinePush packs affine's push constants: a, b float32, n uint32.
func affinePush(a, b float32, n uint32) []byte {
	p := make([]byte, 12)
	binary.LittleEndian.PutUint32(p[0:], math.Float32bits(a))
	binary.LittleEndian.PutUint32(p[4:], math.Float32bits(b))
	binary.LittleEndian.PutUint32(p[8:], n)
	return p
}

// loadAffine loads the affine kernel with the given local size (zero keeps
// the module's 64) and closes it when the test ends.
func loadAffine(t testing.TB, dev *Device, local [3]uint32) *Kernel {
	t.Helper()
	spec := affineSpec(t)
	spec.LocalSize = local
	k, err := dev.LoadKernel(spec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, k.Close()) })
	return k
}

func TestUserKernelAgainstReference(t *testing.T) {
	dev := openTest(t)
	for _, local := range []uint32{0, 256} {
		k := loadAffine(t, dev, [3]uint32{local, 0, 0})
		require.Equal(t, "affine", k.Name())
		width := max(local, 64)
		for _, n := range opLengths {
			t.Run(fmt.Sprintf("local%d/%d", width, n), func(t *testing.T) {
				r := rng(9, n, int(local))
				xs := randFloats(r, n, -10, 10)
				a, b := float32(r.NormFloat64()), float32(r.NormFloat64())
				x, y := upload(t, dev, xs), scratch[float32](t, dev, n)
				groups := [3]uint32{ceilDiv(n, int(width)), 1, 1}
				require.NoError(t, k.Launch(dev.Stream(), groups, affinePush(a, b, uint32(n)), x, y))
				want := make([]float64, n)
				for i, v := range xs {
					want[i] = float64(a)*float64(v) + float64(b)
				}
				requireClose(t, want, readAll(t, y), func(i int) float64 {
					return ulps(2, math.Abs(float64(a*xs[i]))+math.Abs(float64(b)))
				})
			})
		}
	}
}

func TestUserKernelFromSPIRVAlone(t *testing.T) {
	dev := openTest(t)
	code := testSPIRV(t, "affine")
	k, err := dev.LoadKernel(KernelSpec{SPIRV: code})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	spec := k.Spec()
	t.Logf("derived: %v", spec)
	assert.Equal(t, KernelSpec{Bindings: []Access{ReadOnly, WriteOnly}, PushSize: 12, LocalSize: [3]uint32{64, 1, 1}, Entry: "main"}, spec)
	assert.Equal(t, "unnamed kernel: bindings [read write], 12 bytes of push constants, local size [64 1 1]", spec.String())

	const n = 1000
	r := rng(11, n)
	xs := randFloats(r, n, -10, 10)
	a, b := float32(r.NormFloat64()), float32(r.NormFloat64())
	x, y := upload(t, dev, xs), scratch[float32](t, dev, n)
	groups := [3]uint32{ceilDiv(n, int(spec.LocalSize[0])), 1, 1}
	require.NoError(t, k.Launch(dev.Stream(), groups, affinePush(a, b, n), x, y))
	want := make([]float64, n)
	for i, v := range xs {
		want[i] = float64(a)*float64(v) + float64(b)
	}
	requireClose(t, want, readAll(t, y), func(i int) float64 {
		return ulps(2, math.Abs(float64(a*xs[i]))+math.Abs(float64(b)))
	})

	// The derived description, given back with the module, is accepted as
	// a hand-written one and builds the same kernel.
	spec.Name, spec.SPIRV = "affine", code
	again, err := dev.LoadKernel(spec)
	require.NoError(t, err)
	defer func() { require.NoError(t, again.Close()) }()
	spec.SPIRV = nil
	assert.Equal(t, spec, again.Spec())
}

func TestLoadKernelDerivesTheCatalogue(t *testing.T) {
	dev := openTest(t)
	for _, sk := range shaders.All() {
		if sk.Needs != shaders.FeatureNone {
			continue // needs a device feature; its interface is checked in shaders/
		}
		t.Run(sk.Name, func(t *testing.T) {
			k, err := dev.LoadKernel(KernelSpec{Name: sk.Name, SPIRV: sk.SPIRV})
			require.NoError(t, err)
			defer func() { require.NoError(t, k.Close()) }()
			want := KernelSpec{Name: sk.Name, PushSize: sk.PushSize, LocalSize: sk.LocalSize, Entry: "main"}
			for _, b := range sk.Bindings {
				want.Bindings = append(want.Bindings, accessOf(b.Access))
			}
			assert.Equal(t, want, k.Spec())
		})
	}
	// axpy's y is read and written: derived as read-write, so the launch
	// reads what the previous write left.
	sk, err := shaders.Get("axpy")
	require.NoError(t, err)
	k, err := dev.LoadKernel(KernelSpec{SPIRV: sk.SPIRV})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	require.Equal(t, []Access{ReadOnly, ReadWrite}, k.Spec().Bindings)
	x, y := upload(t, dev, []float32{1, 2, 3}), upload(t, dev, []float32{10, 20, 30})
	var p [16]byte
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, pushWords(&p, math.Float32bits(2), 3), x, y))
	require.Equal(t, []float32{12, 24, 36}, readAll(t, y))
}

func TestDerivedSpecReportsTheWorkgroupSize(t *testing.T) {
	dev := openTest(t)
	code := testSPIRV(t, "tile2d")
	for _, c := range []struct{ request, want [3]uint32 }{
		{[3]uint32{}, [3]uint32{8, 8, 1}},          // the module's own
		{[3]uint32{16, 4, 1}, [3]uint32{16, 4, 1}}, // specialized in x and y
	} {
		k, err := dev.LoadKernel(KernelSpec{SPIRV: code, LocalSize: c.request})
		require.NoError(t, err)
		spec := k.Spec()
		require.NoError(t, k.Close())
		assert.Equal(t, c.want, spec.LocalSize, "requested %v", c.request)
		assert.Equal(t, []Access{WriteOnly}, spec.Bindings)
		assert.Equal(t, uint32(8), spec.PushSize)
	}
	// z is not specializable: a size asked along it is refused.
	_, err := dev.LoadKernel(KernelSpec{SPIRV: code, LocalSize: [3]uint32{16, 4, 7}})
	require.ErrorContains(t, err, "asks 7 along z, which the module fixes at 1")
	// A partial description is not derived: bindings without push constants
	// are checked, and refused, as written.
	_, err = dev.LoadKernel(KernelSpec{SPIRV: code, Bindings: []Access{WriteOnly}})
	require.ErrorContains(t, err, "description has 0 bytes of push constants, module has 8")
	_, err = dev.LoadKernel(KernelSpec{SPIRV: code, PushSize: 8})
	require.ErrorContains(t, err, "description has 0 bindings, module has 1")
}

func TestUserKernelFromCatalogue(t *testing.T) {
	dev := openTest(t)
	sk, err := shaders.Get("scale")
	require.NoError(t, err)
	access := make([]Access, len(sk.Bindings))
	for i, b := range sk.Bindings {
		access[i] = accessOf(b.Access)
	}
	k, err := dev.LoadKernel(KernelSpec{Name: "my-scale", SPIRV: sk.SPIRV, Bindings: access, PushSize: sk.PushSize, LocalSize: sk.LocalSize})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	xs := randFloats(rng(10), 1000, -5, 5)
	x, y := upload(t, dev, xs), scratch[float32](t, dev, 1000)
	var p [16]byte
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{ceilDiv(1000, int(sk.LocalSize[0])), 1, 1}, pushWords(&p, math.Float32bits(3), 1000), x, y))
	want := make([]float64, len(xs))
	for i, v := range xs {
		want[i] = 3 * float64(v)
	}
	requireClose(t, want, readAll(t, y), func(i int) float64 { return ulps(1, math.Abs(want[i])) })
}

func TestUserKernelCapturedAndReplayed(t *testing.T) {
	dev := openTest(t, WithSyncValidation(syncValidation()))
	k := loadAffine(t, dev, [3]uint32{})
	s := dev.NewStream()
	x := upload(t, dev, []float32{1, 2, 3})
	y := scratch[float32](t, dev, 3)
	g, err := s.Capture(func(s *Stream) error {
		return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 3), x, y)
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Close()) }()
	got, err := y.ReadOn(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, []float32{3, 5, 7}, got, "the warmup runs")
	require.NoError(t, x.WriteOn(s, []float32{10, 20, 30}))
	require.NoError(t, g.Replay())
	got, err = y.ReadOn(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, []float32{21, 41, 61}, got, "the replay reads the rewritten input")
}

func TestLoadKernelRejectsMismatches(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	lim := dev.Info().Limits
	live := dev.LiveObjects()
	code := testSPIRV(t, "affine")
	with := func(change func(*KernelSpec)) func() error {
		return func() error {
			spec := affineSpec(t)
			change(&spec)
			k, err := dev.LoadKernel(spec)
			if err == nil {
				_ = k.Close()
			}
			return err
		}
	}
	notSPIRV := map[string][]byte{
		"nil":               nil,
		"empty":             {},
		"text":              []byte("#version 450\nvoid main() {}\n"),
		"not whole words":   code[:len(code)-1],
		"wrong magic":       append([]byte{0, 0, 0, 0}, code[4:]...),
		"byte-swapped":      swapWords(code),
		"cut in a function": code[:len(code)-4],
	}
	for name, bad := range notSPIRV {
		refuse(t, s, "SPIR-V "+name, with(func(k *KernelSpec) { k.SPIRV = bad }), ErrBadSPIRV)
	}
	mismatches := map[string]func(*KernelSpec){
		"header only, no entry point": func(k *KernelSpec) { k.SPIRV = code[:20] },
		"one binding too few":         func(k *KernelSpec) { k.Bindings = k.Bindings[:1] },
		"one binding too many":        func(k *KernelSpec) { k.Bindings = append(k.Bindings, ReadWrite) },
		"no bindings":                 func(k *KernelSpec) { k.Bindings = nil },
		"written binding as read":     func(k *KernelSpec) { k.Bindings = []Access{ReadOnly, ReadOnly} },
		"read binding as write":       func(k *KernelSpec) { k.Bindings = []Access{WriteOnly, WriteOnly} },
		"read-write binding as write": func(k *KernelSpec) {
			*k = KernelSpec{Name: "accum", SPIRV: testSPIRV(t, "accum"), Bindings: []Access{ReadOnly, WriteOnly}, PushSize: 4}
		},
		"access 0":                 func(k *KernelSpec) { k.Bindings = []Access{0, WriteOnly} },
		"access 4":                 func(k *KernelSpec) { k.Bindings = []Access{ReadOnly, 4} },
		"access 255":               func(k *KernelSpec) { k.Bindings = []Access{255, ReadWrite} },
		"push smaller than module": func(k *KernelSpec) { k.PushSize = 8 },
		"push larger than module":  func(k *KernelSpec) { k.PushSize = 16 },
		"no push":                  func(k *KernelSpec) { k.PushSize = 0 },
		"local size x above limit": func(k *KernelSpec) { k.LocalSize = [3]uint32{lim.MaxComputeWorkGroupSize[0] + 1, 1, 1} },
		"local size y above limit": func(k *KernelSpec) {
			*k = tile2dSpec(t, [3]uint32{1, lim.MaxComputeWorkGroupSize[1] + 1, 1})
		},
		"local size above the invocation limit": func(k *KernelSpec) {
			side := uint32(math.Sqrt(float64(lim.MaxComputeWorkGroupInvocations))) + 1
			*k = tile2dSpec(t, [3]uint32{side, side, 1})
		},
		"push above the device limit": func(k *KernelSpec) {
			*k = KernelSpec{Name: "bigpush", SPIRV: testSPIRV(t, "bigpush"), Bindings: []Access{WriteOnly}, PushSize: 260}
		},
	}
	if lim.MaxComputeWorkGroupSize[0] < 4096 {
		mismatches["main's local size above the limit, another entry point's below"] = func(k *KernelSpec) {
			*k = KernelSpec{Name: "twoentry", SPIRV: testSPIRV(t, "twoentry")}
		}
	}
	if lim.MaxPushConstantsSize >= 260 {
		delete(mismatches, "push above the device limit")
		t.Logf("device allows %d bytes of push constants: bigpush fits", lim.MaxPushConstantsSize)
	}
	for name, change := range mismatches {
		refuse(t, s, name, with(change))
	}
	assert.Equal(t, live, dev.LiveObjects(), "a refused kernel left Vulkan objects behind")
	// Reading more access than the module uses is allowed: y described as
	// read-write still loads.
	require.NoError(t, with(func(k *KernelSpec) { k.Bindings = []Access{ReadWrite, ReadWrite} })())
}

// A description may not leave out a read the module makes: the refusal
// names the binding, and describing the read (read-write) loads.
func TestLoadKernelRefusesAReadDescribedAsWriteOnly(t *testing.T) {
	dev := openTest(t)
	accum := KernelSpec{Name: "accum", SPIRV: testSPIRV(t, "accum"), Bindings: []Access{ReadOnly, WriteOnly}, PushSize: 4}
	_, err := dev.LoadKernel(accum)
	require.ErrorContains(t, err, `kernel "accum": binding 1 is read by the module but described as write`)
	spec := affineSpec(t)
	spec.Bindings = []Access{WriteOnly, WriteOnly}
	_, err = dev.LoadKernel(spec)
	require.ErrorContains(t, err, `kernel "affine": binding 0 is read by the module but described as write`)
	spec.Bindings = []Access{Access(0), WriteOnly}
	_, err = dev.LoadKernel(spec)
	require.ErrorContains(t, err, `kernel "affine": binding 0 is described as Access(0)`)
	accum.Bindings = []Access{ReadWrite, ReadWrite}
	k, err := dev.LoadKernel(accum)
	require.NoError(t, err)
	require.NoError(t, k.Close())
}

// tile2dSpec describes testdata/tile2d.comp, whose workgroup size is
// specializable in x and y: out[r][c] = r*cols + c.
func tile2dSpec(t testing.TB, local [3]uint32) KernelSpec {
	return KernelSpec{Name: "tile2d", SPIRV: testSPIRV(t, "tile2d"), Bindings: []Access{WriteOnly}, PushSize: 8, LocalSize: local}
}

func TestUserKernelTwoDimensional(t *testing.T) {
	dev := openTest(t)
	const rows, cols = 37, 53
	for _, local := range [][3]uint32{{}, {16, 4, 1}, {1, 32, 1}} {
		t.Run(fmt.Sprint(local), func(t *testing.T) {
			k, err := dev.LoadKernel(tile2dSpec(t, local))
			require.NoError(t, err)
			defer func() { require.NoError(t, k.Close()) }()
			lx, ly := max(local[0], 1), max(local[1], 1)
			if local == ([3]uint32{}) {
				lx, ly = 8, 8 // the module's own size
			}
			out := scratch[uint32](t, dev, rows*cols)
			var p [16]byte
			groups := [3]uint32{ceilDiv(cols, int(lx)), ceilDiv(rows, int(ly)), 1}
			require.NoError(t, k.Launch(dev.Stream(), groups, pushWords(&p, rows, cols), out))
			want := make([]uint32, rows*cols)
			for i := range want {
				want[i] = uint32(i)
			}
			requireSame(t, want, readAll(t, out))
		})
	}
}

// swapWords returns code with every 32-bit word byte-reversed (a big-endian
// module, which Vulkan does not take).
func swapWords(code []byte) []byte {
	out := make([]byte, len(code))
	for i := 0; i+4 <= len(code); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(code[i:]))
	}
	return out
}

func TestLoadKernelRejectsEveryTruncation(t *testing.T) {
	dev := openTest(t)
	code := testSPIRV(t, "affine")
	// Drivers do not validate SPIR-V: a module cut at an instruction
	// boundary once crashed lavapipe. Every cut must be an error instead.
	for n := 0; n < len(code); n++ {
		spec := affineSpec(t)
		spec.SPIRV = code[:n]
		var err error
		require.NotPanics(t, func() { _, err = dev.LoadKernel(spec) })
		require.Error(t, err, "module cut at byte %d of %d loaded", n, len(code))
	}
}

func TestLaunchRejectsBadArguments(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	k := loadAffine(t, dev, [3]uint32{})
	lim := dev.Info().Limits.MaxComputeWorkGroupCount
	st := dev.Stream()
	x := upload(t, dev, []float32{1, 2, 3})
	y := scratch[float32](t, dev, 3)
	push := affinePush(1, 1, 3)
	one := [3]uint32{1, 1, 1}
	calls := map[string]func() error{
		"groups x above limit": func() error { return k.Launch(st, [3]uint32{lim[0] + 1, 1, 1}, push, x, y) },
		"groups y above limit": func() error { return k.Launch(st, [3]uint32{1, lim[1] + 1, 1}, push, x, y) },
		"groups z above limit": func() error { return k.Launch(st, [3]uint32{1, 1, lim[2] + 1}, push, x, y) },
		"groups at MaxUint32": func() error {
			return k.Launch(st, [3]uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}, push, x, y)
		},
		"zero groups":   func() error { return k.Launch(st, [3]uint32{0, 1, 1}, push, x, y) },
		"one buffer":    func() error { return k.Launch(st, one, push, x) },
		"three buffers": func() error { return k.Launch(st, one, push, x, y, y) },
		"no buffers":    func() error { return k.Launch(st, one, push) },
		"many buffers": func() error {
			return k.Launch(st, one, push, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y, x, y)
		},
		"nil buffer":       func() error { return k.Launch(st, one, push, x, nil) },
		"nil typed buffer": func() error { return k.Launch(st, one, push, x, (*Buffer[float32])(nil)) },
		"no push":          func() error { return k.Launch(st, one, nil, x, y) },
		"push too short":   func() error { return k.Launch(st, one, push[:8], x, y) },
		"push too long":    func() error { return k.Launch(st, one, append(push, 0, 0, 0, 0), x, y) },
		"nil stream":       func() error { return k.Launch(nil, one, push, x, y) },
	}
	for name, call := range calls {
		refuse(t, s, name, call)
	}
	_, err := y.Read(context.Background())
	require.ErrorIs(t, err, ErrNeverWritten, "a refused launch wrote its output")
	require.NoError(t, k.Launch(st, one, push, x, y))
	require.Equal(t, []float32{2, 3, 4}, readAll(t, y))
}

func TestOpsRejectGroupsBeyondLimit(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	lim := dev.Info().Limits
	// One row so long that its column groups (as wide as the tile this
	// device's matmul runs with, 16 for transpose) exceed the x limit, in
	// buffers small enough to allocate.
	mm, err := dev.builtin("matmul")
	require.NoError(t, err)
	n := int(lim.MaxComputeWorkGroupCount[0])*int(mm.tile[0]) + 1
	if n*elemSize > int(lim.MaxStorageBufferRange) {
		t.Skipf("a row of %d columns exceeds maxStorageBufferRange %d", n, lim.MaxStorageBufferRange)
	}
	a := upload(t, dev, []float32{1})
	b, c := scratch[float32](t, dev, n), scratch[float32](t, dev, n)
	refuse(t, s, "Matmul beyond the group limit", func() error { return Matmul(dev.Stream(), a, b, c, 1, n, 1) })
	m := int(lim.MaxComputeWorkGroupCount[0])*16 + 1
	src, dst := scratch[float32](t, dev, m), scratch[float32](t, dev, m)
	refuse(t, s, "Transpose beyond the group limit", func() error { return Transpose(dev.Stream(), src, dst, 1, m) })
	_, err = c.Read(context.Background())
	require.ErrorIs(t, err, ErrNeverWritten, "a refused Matmul wrote its output")
}

func TestKernelCloseThenLaunch(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	spec := affineSpec(t)
	k, err := dev.LoadKernel(spec)
	require.NoError(t, err)
	x := upload(t, dev, []float32{1})
	y := scratch[float32](t, dev, 1)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(2, 0, 1), x, y))
	require.NoError(t, k.Close())
	require.NoError(t, k.Close(), "Close twice")
	refuse(t, s, "Launch after Close", func() error {
		return k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(2, 0, 1), x, y)
	}, ErrClosed)
	require.Equal(t, []float32{2}, readAll(t, y), "the launch before Close ran")
}

// Modules that need a descriptor Launch cannot bind (anything but one
// storage, uniform or texel buffer per binding) are refused at load, with the kind named,
// before the driver builds a pipeline whose layout lacks it; Inspect
// reports each binding's kind.
func TestLoadKernelRefusesNonBufferBindings(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	live := dev.LiveObjects()
	for _, c := range []struct {
		module string
		kinds  []shaders.DescriptorKind
		err    string
	}{
		{"image", []shaders.DescriptorKind{shaders.StorageImage}, "binding 0 is set 0 binding 0 (storage image)"},
		{"sampler", []shaders.DescriptorKind{shaders.CombinedImageSampler, shaders.StorageBuffer, shaders.UniformTexelBuffer, shaders.SampledImage, shaders.Sampler}, "binding 0 is set 0 binding 0 (combined image sampler)"},
		{"arrblk", []shaders.DescriptorKind{shaders.StorageBuffer}, "binding 0 is an array of storage buffers (length 2"},
	} {
		code := testSPIRV(t, c.module)
		mod, err := shaders.Inspect(code)
		require.NoError(t, err, c.module)
		var kinds []shaders.DescriptorKind
		for _, b := range mod.Bindings {
			kinds = append(kinds, b.Kind)
		}
		assert.Equal(t, c.kinds, kinds, c.module)
		refuse(t, s, c.module, func() error {
			k, err := dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: code})
			if err == nil {
				_ = k.Close()
			}
			return err
		})
		_, err = dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: code})
		assert.ErrorContains(t, err, c.err, c.module)
	}
	mod, err := shaders.Inspect(testSPIRV(t, "arrblk"))
	require.NoError(t, err)
	require.Len(t, mod.Bindings, 1)
	block := mod.Bindings[0].Block
	require.NotNil(t, block, "each buffer of the array holds { float x[]; }")
	assert.Equal(t, shaders.LayoutRuntimeArray, block.Members[0].Layout.Kind)
	mod.Bindings[0].Block = nil
	assert.Equal(t, []shaders.ModuleBinding{{Kind: shaders.StorageBuffer, Arrayed: true, Count: 2, Access: shaders.ReadWrite, Elem: shaders.ScalarFloat, Loads: true, Stores: true, Traced: true}}, mod.Bindings)
	assert.Equal(t, live, dev.LiveObjects(), "a refused kernel left Vulkan objects behind")
}

// A requested workgroup size sets only the specialization constants that
// size the workgroup: specc's size is fixed and its constant 0 is K, which
// must stay 3; specx1's x size is constant 1, which the request's x size
// (LocalSize[0]) sets, while its constant 0 (K) stays 3.
func TestLocalSizeRequestSetsOnlyWorkgroupConstants(t *testing.T) {
	dev := openTest(t)
	const n = 64
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i + 1)
	}
	x := upload(t, dev, xs)
	push := binary.LittleEndian.AppendUint32(nil, n)
	for _, c := range []struct {
		module  string
		request [3]uint32
		local   [3]uint32
		add     float32 // the module adds its workgroup's x size (specx1)
	}{
		{"specc", [3]uint32{64, 1, 1}, [3]uint32{64, 1, 1}, 0},
		{"specc", [3]uint32{}, [3]uint32{64, 1, 1}, 0},
		{"specx1", [3]uint32{32, 1, 1}, [3]uint32{32, 1, 1}, 32},
		{"specx1", [3]uint32{}, [3]uint32{16, 1, 1}, 16},
	} {
		k, err := dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: testSPIRV(t, c.module), LocalSize: c.request})
		require.NoError(t, err, c.module)
		assert.Equal(t, c.local, k.Spec().LocalSize, "%s requested %v", c.module, c.request)
		y, err := NewBuffer[float32](dev, n)
		require.NoError(t, err)
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / c.local[0], 1, 1}, push, x, y))
		got := readAll(t, y)
		for i, v := range got {
			require.Equal(t, 3*xs[i]+c.add, v, "%s requested %v: y[%d]", c.module, c.request, i)
		}
		require.NoError(t, y.Close())
		require.NoError(t, k.Close())
	}
}

// Shared memory above the device's maxComputeSharedMemorySize is refused
// at load, counted under the requested workgroup size: sharedspec holds 64
// bytes per invocation, so it loads at limit/64 invocations (and runs
// without a word from the validation layer) and is refused at one more.
func TestLoadKernelRefusesSharedMemoryAboveTheLimit(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	lim := dev.Info().Limits
	_, err := dev.LoadKernel(KernelSpec{Name: "bigshared", SPIRV: testSPIRV(t, "bigshared")})
	require.ErrorContains(t, err, `kernel "bigshared": 262144 bytes of shared memory exceed the device limit`)
	// Lengths from comparisons, select, signed modulo and boolean logic of
	// specialization constants are sized, not refused: the module loads and
	// runs with the layer silent.
	ops, err := dev.LoadKernel(KernelSpec{Name: "sharedops", SPIRV: testSPIRV(t, "sharedops")})
	require.NoError(t, err)
	y64 := upload(t, dev, make([]float32, 64))
	require.NoError(t, ops.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y64))
	assert.Equal(t, make([]float32, 64), readAll(t, y64))
	require.NoError(t, ops.Close())
	fits := lim.MaxComputeSharedMemorySize / 64
	if fits+1 > lim.MaxComputeWorkGroupSize[0] || fits+1 > lim.MaxComputeWorkGroupInvocations {
		t.Skipf("device allows %d bytes of shared memory: %d invocations are above its workgroup limits", lim.MaxComputeSharedMemorySize, fits+1)
	}
	code := testSPIRV(t, "sharedspec")
	refuse(t, s, "shared memory above the limit through the workgroup size", func() error {
		k, err := dev.LoadKernel(KernelSpec{Name: "sharedspec", SPIRV: code, LocalSize: [3]uint32{fits + 1, 1, 1}})
		if err == nil {
			_ = k.Close()
		}
		return err
	})
	k, err := dev.LoadKernel(KernelSpec{Name: "sharedspec", SPIRV: code, LocalSize: [3]uint32{fits, 1, 1}})
	require.NoError(t, err)
	defer k.Close()
	ys := make([]float32, fits)
	for i := range ys {
		ys[i] = float32(i)
	}
	y := upload(t, dev, ys)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y))
	got := readAll(t, y)
	for i := range got {
		require.Equal(t, float32((i+1)%int(fits)), got[i], "y[%d]", i)
	}
}
