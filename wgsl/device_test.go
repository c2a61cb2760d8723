package wgsl

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// openDevice opens the default device with the validation layer on and, at
// cleanup, fails the test on any validation message or leaked object.
func openDevice(t *testing.T) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		assert.Empty(t, dev.LiveObjects(), "Vulkan objects alive after Close")
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "validation messages: %q", recent)
	})
	return dev
}

// load compiles src and loads it on dev, closing the kernel at cleanup.
func load(t *testing.T, dev *vkc.Device, src string, opts Options) *vkc.Kernel {
	t.Helper()
	spec, err := Compile(src, opts)
	require.NoError(t, err)
	k, err := dev.LoadKernel(spec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, k.Close()) })
	return k
}

// newBuffer makes a buffer closed at cleanup: from xs, or of n unwritten
// elements when xs is nil.
func newBuffer[T vkc.Element](t *testing.T, dev *vkc.Device, xs []T, n int) *vkc.Buffer[T] {
	t.Helper()
	var b *vkc.Buffer[T]
	var err error
	if xs != nil {
		b, err = vkc.FromSlice(dev, xs)
	} else {
		b, err = vkc.NewBuffer[T](dev, n)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	return b
}

func read[T vkc.Element](t *testing.T, b *vkc.Buffer[T]) []T {
	t.Helper()
	out, err := b.Read(context.Background())
	require.NoError(t, err)
	return out
}

// Outputs the code only stores to run on buffers no work wrote before:
// vkc takes them as write-only, from the decorations the repair set.
func TestStoreOnlyOutputsRunOnFreshBuffers(t *testing.T) {
	dev := openDevice(t)
	const n = 128
	x, both, loaded := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], both[i], loaded[i] = float32(i)-40, float32(3*i), float32(i%7)
	}
	xb, bothb, loadedb := newBuffer(t, dev, x, 0), newBuffer(t, dev, both, 0), newBuffer(t, dev, loaded, 0)
	w, stored := newBuffer[float32](t, dev, nil, n), newBuffer[float32](t, dev, nil, n)

	k := load(t, dev, accessSrc, Options{Name: "access"})
	assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.WriteOnly, vkc.WriteOnly, vkc.ReadWrite, vkc.ReadOnly}, k.Spec().Bindings)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / 64, 1, 1}, nil, xb, w, stored, bothb, loadedb))
	gotW, gotStored, gotBoth := read(t, w), read(t, stored), read(t, bothb)
	for i := range x {
		assert.Equal(t, x[i], gotW[i], "w[%d]", i)
		assert.Equal(t, 2*x[i], gotStored[i], "stored[%d]", i)
		assert.Equal(t, both[i]+loaded[i], gotBoth[i], "both[%d]", i)
	}
}

const storeOnlySrc = `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = -x[gid.x]; }
`

// What the repairs are for, on a device: vkc refuses the translator's own
// module for var<storage, write> (a NonWritable binding the code stores
// to), and takes a buffer the code only stores to as read-write (the
// translator loads it before storing), so a launch on a fresh output
// buffer is refused as reading memory nothing wrote.
func TestTranslatorsModulesAreRefusedOrMisread(t *testing.T) {
	dev := openDevice(t)
	_, err := dev.LoadKernel(vkc.KernelSpec{Name: "raw", SPIRV: raw(t, accessSrc)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NonWritable")

	rawKernel, err := dev.LoadKernel(vkc.KernelSpec{Name: "raw", SPIRV: raw(t, storeOnlySrc)})
	require.NoError(t, err)
	defer func() { assert.NoError(t, rawKernel.Close()) }()
	assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.ReadWrite}, rawKernel.Spec().Bindings)
	x := make([]float32, 64) // one workgroup, one element per invocation
	want := make([]float32, len(x))
	for i := range x {
		x[i], want[i] = float32(i)/4, -float32(i)/4
	}
	xb := newBuffer(t, dev, x, 0)
	fresh := newBuffer[float32](t, dev, nil, len(x))
	err = rawKernel.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, xb, fresh)
	if err == nil {
		_, err = fresh.Read(context.Background())
	}
	assert.ErrorIs(t, err, vkc.ErrUnwritten, "the translator's own module ran on a buffer nothing wrote")

	k := load(t, dev, storeOnlySrc, Options{Name: "repaired"})
	assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, k.Spec().Bindings)
	out := newBuffer[float32](t, dev, nil, len(x))
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, xb, out))
	assert.Equal(t, want, read(t, out))
}

// An override-sized workgroup runs with the override's size: each
// invocation writes its index in the group where the group's size says.
func TestOverrideSizedWorkgroupOnDevice(t *testing.T) {
	dev := openDevice(t)
	for _, c := range []struct{ wg, rows uint32 }{{64, 2}, {32, 3}} {
		k := load(t, dev, overrideSrc, Options{Name: "ov", Constants: map[string]float64{"WG": float64(c.wg), "ROWS": float64(c.rows)}})
		size := c.wg * (c.rows*2 + 1)
		const groups = 3
		y := newBuffer[uint32](t, dev, nil, int(groups*size))
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{groups, 1, 1}, nil, y))
		got := read(t, y)
		for i := range got {
			require.Equal(t, uint32(i)%size, got[i], "WG %d ROWS %d: y[%d]", c.wg, c.rows, i)
		}
	}
}

// The entry point asked for is the one that runs, under its own name.
func TestChosenEntryPointRuns(t *testing.T) {
	dev := openDevice(t)
	ys := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, c := range []struct {
		entry string
		f     func(float32) float32
	}{{"scale", func(v float32) float32 { return 2 * v }}, {"shift", func(v float32) float32 { return v + 1 }}} {
		k := load(t, dev, namedEntrySrc, Options{Name: "two", Entry: c.entry})
		y := newBuffer(t, dev, ys, 0)
		groups := uint32(len(ys)) / k.Spec().LocalSize[0]
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{groups, 1, 1}, nil, y))
		got := read(t, y)
		for i, v := range ys {
			assert.Equal(t, c.f(v), got[i], "%s: y[%d]", c.entry, i)
		}
	}
}

// The SPIR-V 1.4 module of a nested workgroup array loads on a Vulkan 1.2+
// device and transposes a 4x4 tile through it.
func TestNestedWorkgroupArrayOnDevice(t *testing.T) {
	dev := openDevice(t)
	if v := dev.Info().APIVersion; strings.HasPrefix(v, "1.0") || strings.HasPrefix(v, "1.1") {
		t.Skipf("device runs Vulkan %v; SPIR-V 1.4 needs 1.2", v)
	}
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i*i) - 7
	}
	k := load(t, dev, nestedSrc, Options{Name: "nested"})
	xb, y := newBuffer(t, dev, x, 0), newBuffer[float32](t, dev, nil, 16)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, xb, y))
	got := read(t, y)
	for li := range 16 {
		assert.Equal(t, x[(li%4)*4+li/4], got[li], "y[%d]", li)
	}
}

// Without the zeroing stores the kernel still computes what it did: it
// writes the workgroup memory it reads.
func TestKernelWithoutZeroingOnDevice(t *testing.T) {
	dev := openDevice(t)
	for _, keep := range []bool{false, true} {
		k := load(t, dev, zeroingSrc, Options{Name: "zero", ZeroWorkgroupMemory: keep})
		y := newBuffer[float32](t, dev, nil, 256)
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y))
		got := read(t, y)
		for li := range got {
			require.Equal(t, float32(255-li)+1, got[li], "keep %v: y[%d]", keep, li)
		}
	}
}

// Overrides used in code hold their values on the device: the default,
// and what Options.Constants gives.
func TestOverrideValuesOnDevice(t *testing.T) {
	dev := openDevice(t)
	for _, c := range []struct {
		constants map[string]float64
		want      float32
	}{{nil, 2.5}, {map[string]float64{"SCALE": -0.75}, -0.75}, {map[string]float64{"SCALE": 4, "NEG": 1}, -4}} {
		k := load(t, dev, scaleSrc, Options{Name: "scale", Constants: c.constants})
		y := newBuffer[float32](t, dev, nil, 1)
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y))
		assert.Equal(t, []float32{c.want}, read(t, y), "%v", c.constants)
	}
}

// A kernel reading its parameters from a var<uniform> block loads and runs,
// the parameters bound as a buffer laid out as the block is.
func TestUniformParametersOnDevice(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, uniformSrc, Options{Name: "uniform"})
	assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.ReadOnly, vkc.WriteOnly}, k.Spec().Bindings)
	const n = 100
	x := make([]float32, 128)
	for i := range x {
		x[i] = float32(i) - 50
	}
	scale, offset := float32(-1.5), float32(0.25)
	params := newBuffer(t, dev, []uint32{math.Float32bits(scale), math.Float32bits(offset), n, 0}, 0)
	xb := newBuffer(t, dev, x, 0)
	y := newBuffer(t, dev, make([]float32, len(x)), 0)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{2, 1, 1}, nil, params, xb, y))
	got := read(t, y)
	for i := range got {
		want := float32(0)
		if i < n {
			want = scale*x[i] + offset
		}
		assert.Equal(t, want, got[i], "y[%d]", i)
	}
}

const pushSrc = `
struct Params { scale: f32, n: u32 }
var<push_constant> params: Params;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < params.n) { y[g.x] = y[g.x] * params.scale; }
}
`

// var<push_constant> (the translator's extension of WGSL) is the kernel's
// push-constant block, which Kernel.Push lays out from a Go struct.
func TestPushConstantsOnDevice(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, pushSrc, Options{Name: "push"})
	assert.Equal(t, uint32(4+4), k.Spec().PushSize, "f32, u32")
	push, err := k.Push(struct {
		Scale float32
		N     uint32
	}{Scale: -2.5, N: 50})
	require.NoError(t, err)
	ys := make([]float32, 64)
	for i := range ys {
		ys[i] = float32(i)
	}
	y := newBuffer(t, dev, ys, 0)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, y))
	got := read(t, y)
	for i, v := range ys {
		want := v
		if i < 50 {
			want = -2.5 * v
		}
		assert.Equal(t, want, got[i], "y[%d]", i)
	}
}

// The source's own zero store reaches the device: total is 7 before it
// and 0 after.
func TestSourceNullStoreOnDevice(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, userNullStoreSrc, Options{Name: "u"})
	y := newBuffer[float32](t, dev, nil, 64)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y))
	got := read(t, y)
	for li := range got {
		require.Equal(t, float32(63-li), got[li], "y[%d]", li)
	}
}
