package vkc

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// The modules of these tests are what testdata/gen.sh builds from their
// sources: glslc for the GLSL, and for twoentries two HLSL compiles linked.
func TestKernelSurfaceModulesAreFresh(t *testing.T) {
	for _, tool := range []string{"glslc", "spirv-link"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH; cannot check the test modules are fresh", tool)
		}
	}
	dir := t.TempDir()
	run := func(name string, args ...string) {
		out, err := exec.Command(name, args...).CombinedOutput()
		require.NoError(t, err, "%s %v: %s", name, args, out)
	}
	fresh := func(module, built string) {
		want, err := os.ReadFile(built)
		require.NoError(t, err)
		have, err := os.ReadFile(filepath.Join("testdata", module+".spv"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, have), "testdata/%s.spv is stale: run sh testdata/gen.sh", module)
	}
	for _, m := range []string{"kconst", "kfixed", "kpush", "ktexel", "kvec4", "kwide", "texelbuf", "uniform"} {
		out := filepath.Join(dir, m+".spv")
		run("glslc", "-O", "--target-env=vulkan1.1", filepath.Join("testdata", m+".comp"), "-o", out)
		fresh(m, out)
	}
	for _, entry := range []string{"twice", "negate"} {
		run("glslc", "-x", "hlsl", "-fshader-stage=compute", "-fentry-point="+entry, "--target-env=vulkan1.1", "-O",
			filepath.Join("testdata", "twoentries.hlsl"), "-o", filepath.Join(dir, entry+".spv"))
	}
	run("spirv-link", "--target-env", "vulkan1.1", filepath.Join(dir, "twice.spv"), filepath.Join(dir, "negate.spv"), "-o", filepath.Join(dir, "two.spv"))
	fresh("twoentries", filepath.Join(dir, "two.spv"))
	if _, err := exec.LookPath("spirv-as"); err == nil {
		for _, m := range []string{"kcontra_ro", "kcontra_wo"} {
			out := filepath.Join(dir, m+".spv")
			run("spirv-as", "--target-env", "vulkan1.1", filepath.Join("testdata", m+".spvasm"), "-o", out)
			fresh(m, out)
		}
	}
}

// A decoration the entry point's code contradicts is refused at load,
// naming the kernel and the binding: NonWritable on a binding it stores
// to, NonReadable on one it loads.
func TestLoadKernelRefusesDecorationsTheCodeContradicts(t *testing.T) {
	dev := openTest(t)
	live := dev.LiveObjects()
	_, err := dev.LoadKernel(KernelSpec{Name: "contra", SPIRV: testSPIRV(t, "kcontra_ro")})
	assert.ErrorContains(t, err, `kernel "contra": binding 1 (set 0) is declared NonWritable (readonly) but the entry point stores to it`)
	_, err = dev.LoadKernel(KernelSpec{Name: "contra", SPIRV: testSPIRV(t, "kcontra_wo")})
	assert.ErrorContains(t, err, `kernel "contra": binding 1 (set 0) is declared NonReadable (writeonly) but the entry point loads from it`)
	// A description cannot talk the check away.
	_, err = dev.LoadKernel(KernelSpec{Name: "contra", SPIRV: testSPIRV(t, "kcontra_ro"), Bindings: []Access{ReadWrite, ReadWrite}})
	assert.ErrorContains(t, err, "NonWritable (readonly) but the entry point stores to it")
	assert.Equal(t, live, dev.LiveObjects(), "a refused kernel left Vulkan objects behind")
}

// Entry picks the kernel among a module's entry points, with its own
// workgroup size; "" in a module with several and no "main" is refused, as
// is a name the module lacks.
func TestEntryPointChoosesTheKernel(t *testing.T) {
	dev := openTest(t)
	code := testSPIRV(t, "twoentries")
	const n = 64
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i) - 20
	}
	x := upload(t, dev, xs)
	for _, c := range []struct {
		entry string
		local uint32
		f     func(float32) float32
	}{
		{"twice", 64, func(v float32) float32 { return 2 * v }},
		{"negate", 32, func(v float32) float32 { return -v }},
	} {
		k, err := dev.LoadKernel(KernelSpec{Name: "two", SPIRV: code, Entry: c.entry})
		require.NoError(t, err, c.entry)
		spec := k.Spec()
		assert.Equal(t, c.entry, spec.Entry)
		assert.Equal(t, [3]uint32{c.local, 1, 1}, spec.LocalSize, c.entry)
		assert.Equal(t, []Access{ReadOnly, WriteOnly}, spec.Bindings, "%s: y is only stored to", c.entry)
		y, err := NewBuffer[float32](dev, n)
		require.NoError(t, err)
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / c.local, 1, 1}, nil, x, y))
		got := readAll(t, y)
		for i, v := range got {
			require.Equal(t, c.f(xs[i]), v, "%s: y[%d]", c.entry, i)
		}
		require.NoError(t, y.Close())
		require.NoError(t, k.Close())
	}
	_, err := dev.LoadKernel(KernelSpec{Name: "two", SPIRV: code})
	assert.ErrorContains(t, err, `kernel "two": no compute entry point "main" and several others`)
	_, err = dev.LoadKernel(KernelSpec{Name: "two", SPIRV: code, Entry: "absent"})
	assert.ErrorContains(t, err, `kernel "two": no such compute entry point: "absent"`)
}

// Constants set specialization constants of several types, the workgroup
// size among them; the binding the code only stores to is write-only
// though not declared writeonly, so a never-written buffer needs no Fill.
func TestConstantsSpecializeTheKernel(t *testing.T) {
	dev := openTest(t)
	code := testSPIRV(t, "kconst")
	const count = 20
	constants := map[uint32]float64{0: 16, 1: 1, 2: -3, 3: 0.5, 4: count}
	k, err := dev.LoadKernel(KernelSpec{Name: "kconst", SPIRV: code, Constants: constants})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	spec := k.Spec()
	assert.Equal(t, [3]uint32{16, 1, 1}, spec.LocalSize, "constant 0 sizes x")
	assert.Equal(t, constants, spec.Constants)
	assert.Equal(t, []Access{WriteOnly}, spec.Bindings)
	y, err := NewBuffer[float32](dev, count) // never written
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{2, 1, 1}, nil, y))
	got := readAll(t, y)
	for i, v := range got {
		require.Equal(t, -(float32(i)*0.5 - 3), v, "y[%d]", i)
	}

	for _, c := range []struct {
		constants map[uint32]float64
		err       string
	}{
		{map[uint32]float64{2: 3.5}, "specialization constant 2 (int32): 3.5 is not a whole number"},
		{map[uint32]float64{4: -1}, "specialization constant 4 (uint32): -1 is outside uint32's range"},
		{map[uint32]float64{1: 2}, "specialization constant 1 (bool): 2 is not a bool"},
		{map[uint32]float64{3: 1e39}, "specialization constant 3 (float32): 1e+39 overflows float32"},
		{map[uint32]float64{9: 1}, "Constants sets SpecId 9, which the module does not declare (it has 0 uint32, 1 bool, 2 int32, 3 float32, 4 uint32)"},
		{map[uint32]float64{0: 16}, ""},
	} {
		k, err := dev.LoadKernel(KernelSpec{Name: "kconst", SPIRV: code, Constants: c.constants, LocalSize: [3]uint32{32, 1, 1}})
		if c.err == "" {
			assert.ErrorContains(t, err, "local size [32 1 1] asks 32 along x, but Constants sets its specialization constant 0 to 16")
			continue
		}
		assert.ErrorContains(t, err, c.err)
		assert.ErrorContains(t, err, `kernel "kconst"`)
		assert.Nil(t, k)
	}
}

// A buffer smaller than what its binding's block declares is refused at
// Launch, naming the binding and both sizes: y is float[100]; h a 16-byte
// header before a runtime array (the fixed part is the minimum).
func TestLaunchRefusesABufferBelowTheBlocksSize(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "kfixed", SPIRV: testSPIRV(t, "kfixed")})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []Access{WriteOnly, ReadWrite}, k.Spec().Bindings)
	head := upload(t, dev, []uint32{math.Float32bits(2), 0, 0, 0, 0})
	short := upload(t, dev, []uint32{math.Float32bits(2), 0, 0})
	small, err := NewBuffer[float32](dev, 10)
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, 100)
	require.NoError(t, err)
	one := [3]uint32{1, 1, 1}
	err = k.Launch(dev.Stream(), one, nil, small, head)
	assert.ErrorContains(t, err, `kernel "kfixed": binding 0 needs at least 400 bytes (what its block declares), buffer holds 40`)
	err = k.Launch(dev.Stream(), one, nil, y, short)
	assert.ErrorContains(t, err, `kernel "kfixed": binding 1 needs at least 16 bytes (what its block declares), buffer holds 12`)
	require.NoError(t, k.Launch(dev.Stream(), one, nil, y, head))
	got := readAll(t, y)
	for i, v := range got {
		require.Equal(t, 2*float32(i), v, "y[%d]", i)
	}
	assert.Equal(t, uint32(1), readAll(t, head)[4], "the one invocation counted itself")
}

// pushParams is kpush.comp's push-constant block in Go.
type pushParams struct {
	Scale  float32
	Offset int32
	N      uint32
	Shift  [2]float32
	M      [2][2]float32 // two columns of two rows
}

// Push lays a Go struct out by the module's offsets (std430: shift at 16,
// m's columns at 24 and 32), and the kernel reads every member where it
// was put; a member of another type, a wrong number of fields, nil and
// non-structs are refused.
func TestPushLaysOutAGoStruct(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "kpush", SPIRV: testSPIRV(t, "kpush")})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	const n = 50
	p := pushParams{Scale: 3, Offset: -2, N: n, Shift: [2]float32{10, 4}, M: [2][2]float32{{100, 200}, {7, 300}}}
	push, err := k.Push(&p)
	require.NoError(t, err)
	want := make([]byte, 40)
	binary.LittleEndian.PutUint32(want[0:], math.Float32bits(3))
	binary.LittleEndian.PutUint32(want[4:], uint32(0xfffffffe))
	binary.LittleEndian.PutUint32(want[8:], n)
	for i, f := range []float32{10, 4, 100, 200, 7, 300} {
		binary.LittleEndian.PutUint32(want[16+4*i:], math.Float32bits(f))
	}
	assert.Equal(t, want, push)
	byValue, err := k.Push(p)
	require.NoError(t, err)
	assert.Equal(t, push, byValue)

	xs := make([]float32, 64)
	for i := range xs {
		xs[i] = float32(i)
	}
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, 64))
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, x, y))
	got := readAll(t, y)
	for i, v := range got {
		w := float32(0)
		if i < n {
			w = 3*xs[i] - 2 + 10 - 4 + 7
		}
		require.Equal(t, w, v, "y[%d]", i)
	}

	type wrongType struct {
		Scale  float32
		Offset float32
		N      uint32
		Shift  [2]float32
		M      [2][2]float32
	}
	_, err = k.Push(wrongType{})
	assert.ErrorContains(t, err, `kernel "kpush": push constants: member wrongType.Offset is float32 in Go, int32 in the module`)
	type shortVector struct {
		Scale  float32
		Offset int32
		N      uint32
		Shift  [3]float32
		M      [2][2]float32
	}
	_, err = k.Push(shortVector{})
	assert.ErrorContains(t, err, "member shortVector.Shift is [3]float32 in Go, a vector of 2 float32")
	type tooFew struct {
		Scale  float32
		Offset int32
	}
	_, err = k.Push(tooFew{})
	assert.ErrorContains(t, err, "has 2 fields (besides _), the module's block 5 members")
	_, err = k.Push((*pushParams)(nil))
	assert.ErrorContains(t, err, "push constants from a nil *vkc.pushParams")
	_, err = k.Push(42)
	assert.ErrorContains(t, err, "push constants from int; want a struct")
	_, err = k.Push(nil)
	assert.ErrorContains(t, err, "push constants from <nil>")
	var nilKernel *Kernel
	_, err = nilKernel.Push(p)
	assert.ErrorIs(t, err, errNilKernel)
}

// A uniform block binds like a storage buffer: the module's std140 block
// is read from a buffer of at least its size, the binding is read-only.
func TestUniformBufferBinding(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "uniform", SPIRV: testSPIRV(t, "uniform")})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []Access{ReadOnly, WriteOnly}, k.Spec().Bindings)
	u := upload(t, dev, []float32{2.5, 0, 0, 0})
	y, err := NewBuffer[float32](dev, 64)
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, u, y))
	for i, v := range readAll(t, y) {
		require.Equal(t, float32(2.5), v, "y[%d]", i)
	}
	lim := dev.Info().Limits
	if lim.MinUniformBufferOffsetAlignment > 4 {
		view, err := u.View(1, 3)
		require.NoError(t, err)
		err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, view, y)
		assert.ErrorContains(t, err, `kernel "uniform": binding 0 is a uniform buffer; a view at byte`)
		assert.ErrorContains(t, err, "minUniformBufferOffsetAlignment")
	}
	if lim.MaxUniformBufferRange < 1<<22 {
		big, err := NewBuffer[float32](dev, int(lim.MaxUniformBufferRange/4)+1)
		require.NoError(t, err)
		err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, big, y)
		assert.ErrorContains(t, err, "exceed maxUniformBufferRange")
		require.NoError(t, big.Close())
	}
}

// A storage texel buffer is viewed in the format it declares (r32f: a
// float32 buffer, one element per texel); a buffer of another element
// type is refused, naming the format.
func TestStorageTexelBufferBinding(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "texelbuf", SPIRV: testSPIRV(t, "texelbuf")})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []Access{ReadOnly, WriteOnly}, k.Spec().Bindings)
	const n = 64
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i)*1.5 - 7
	}
	x := upload(t, dev, xs)
	img, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, x, img))
	assert.Equal(t, xs, readAll(t, img))
	words, err := NewBuffer[uint32](dev, n)
	require.NoError(t, err)
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, x, words)
	assert.ErrorContains(t, err, `kernel "texelbuf": binding 1 is a storage texel buffer viewed as R32_SFLOAT, which takes float32 elements; given uint32`)
	if align := dev.Info().Limits.MinTexelBufferOffsetAlignment; align > 4 {
		view, err := img.View(1, n-1)
		require.NoError(t, err)
		err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, x, view)
		assert.ErrorContains(t, err, `kernel "texelbuf": binding 1 (storage texel buffer of R32_SFLOAT)`)
		assert.ErrorContains(t, err, "minTexelBufferOffsetAlignment")
	}
}

// A uniform texel buffer (samplerBuffer) views float32 buffers as
// R32_SFLOAT and Float16 buffers as R16_SFLOAT; a storage texel buffer
// declared rgba32f views four float32 elements per texel.
func TestTexelBuffersOfTwoFormats(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "ktexel", SPIRV: testSPIRV(t, "ktexel")})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []Access{ReadOnly, WriteOnly, WriteOnly}, k.Spec().Bindings)
	const n = 32
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i) + 0.25
	}
	x := upload(t, dev, xs)
	out4, err := NewBuffer[float32](dev, 4*n)
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / 16, 1, 1}, nil, x, out4, y))
	for i, v := range readAll(t, y) {
		require.Equal(t, 2*xs[i], v, "y[%d]", i)
	}
	got := readAll(t, out4)
	for i := 0; i < n; i++ {
		require.Equal(t, []float32{float32(i), float32(2 * i), float32(3 * i), float32(4 * i)}, got[4*i:4*i+4], "texel %d", i)
	}
	// The same binding views a Float16 buffer as R16_SFLOAT: the element
	// type picks the format, launch by launch.
	halves := make([]Float16, n)
	for i := range halves {
		halves[i] = Float16From(float32(i) - 0.5)
	}
	h := upload(t, dev, halves)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / 16, 1, 1}, nil, h, out4, y))
	for i, v := range readAll(t, y) {
		require.Equal(t, 2*(float32(i)-0.5), v, "y[%d] from Float16", i)
	}
	ints := upload(t, dev, make([]int32, n))
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, ints, out4, y)
	assert.ErrorContains(t, err, "binding 0 is a uniform texel buffer of float texels, which takes float32 or Float16 elements; given int32")
}

// KernelSpec.Vec4Texels views a uniform texel buffer four elements per
// texel: texelFetch reads four consecutive elements, a trailing part of a
// texel is not seen, and a binding not listed keeps one element per texel.
func TestVec4UniformTexelsReadFourElements(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "kvec4", SPIRV: testSPIRV(t, "kvec4"), Vec4Texels: []int{1, 0}})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []int{0, 1}, k.Spec().Vec4Texels)
	assert.Contains(t, k.Spec().String(), "vec4 texels [0 1]")
	const n = 16
	xs := make([]float32, 4*n+3) // three trailing elements: no whole texel
	for i := range xs {
		xs[i] = float32(i%7) + 0.5
	}
	us := make([]uint32, 4*n)
	for i := range us {
		us[i] = uint32(3 * i)
	}
	x, u, ys := upload(t, dev, xs), upload(t, dev, us), upload(t, dev, []int32{-5, 6, 7})
	y, err := NewBuffer[float32](dev, n+4)
	require.NoError(t, err)
	push, err := k.Push(struct{ N int32 }{n})
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{n / 8, 1, 1}, push, x, u, ys, y))
	got := readAll(t, y)
	for i := 0; i < n; i++ {
		want := xs[4*i] + 2*xs[4*i+1] + 4*xs[4*i+2] + 8*xs[4*i+3] + float32(us[4*i]+us[4*i+1]+us[4*i+2]+us[4*i+3])
		require.Equal(t, want, got[i], "y[%d]", i)
	}
	assert.Equal(t, []float32{n, n, 3, -5}, got[n:], "texel counts of xs, us, ys and ys[0]")

	halves := upload(t, dev, make([]Float16, 4*n))
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, halves, u, ys, y)
	assert.ErrorContains(t, err, `vkc: kernel "kvec4": binding 0 is a uniform texel buffer viewed as R32G32B32A32_SFLOAT, which takes float32 elements; given Float16`)
	ints := upload(t, dev, make([]int32, 4*n))
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, x, ints, ys, y)
	assert.ErrorContains(t, err, `binding 1 is a uniform texel buffer viewed as R32G32B32A32_UINT, which takes uint32 elements; given int32`)
	short := upload(t, dev, []float32{1, 2, 3})
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, short, u, ys, y)
	assert.ErrorContains(t, err, `binding 0 (uniform texel buffer of R32G32B32A32_SFLOAT): buffer of 12 bytes`)
}

// Vec4Texels naming a binding the module lacks, one twice, or a binding
// that is not a uniform texel buffer is refused at load.
func TestVec4TexelsRefusedAtLoad(t *testing.T) {
	dev := openTest(t)
	for _, c := range []struct {
		module string
		list   []int
		want   string
	}{
		{"kvec4", []int{4}, `vkc: kernel "kvec4": Vec4Texels lists binding 4; the module has bindings 0..3`},
		{"kvec4", []int{-1}, `vkc: kernel "kvec4": Vec4Texels lists binding -1; the module has bindings 0..3`},
		{"kvec4", []int{2, 0, 2}, `vkc: kernel "kvec4": Vec4Texels lists binding 2 twice`},
		{"kvec4", []int{3}, `vkc: kernel "kvec4": Vec4Texels lists binding 3, a storage buffer; only a uniform texel buffer`},
		{"ktexel", []int{1}, `vkc: kernel "ktexel": Vec4Texels lists binding 1, a storage texel buffer; only a uniform texel buffer`},
	} {
		k, err := dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: testSPIRV(t, c.module), Vec4Texels: c.list})
		assert.Nil(t, k, "%v", c.list)
		assert.ErrorContains(t, err, c.want)
	}
}

// Constants of 64 and 16 bits reach the kernel with every bit: the driver
// takes each at its own width.
func TestWideAndNarrowConstantsReachTheKernel(t *testing.T) {
	dev := openTest(t)
	need := FeatureFloat64 | FeatureInt64 | FeatureFloat16 | FeatureInt16
	if !dev.Info().Features.Has(need) {
		t.Skipf("device lacks %v", need&^dev.Info().Features)
	}
	k, err := dev.LoadKernel(KernelSpec{Name: "kwide", SPIRV: testSPIRV(t, "kwide"),
		Constants: map[uint32]float64{0: 0.1, 1: -5000000000, 2: -0.75, 3: -300}})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	out, err := NewBuffer[uint32](dev, 6)
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, out))
	got := readAll(t, out)
	word64 := func(i int) uint64 { return uint64(got[i]) | uint64(got[i+1])<<32 }
	assert.Equal(t, math.Float64bits(0.1), word64(0), "double D")
	assert.Equal(t, int64(-5000000000), int64(word64(2)), "int64 L")
	assert.Equal(t, float32(-0.75), math.Float32frombits(got[4]), "float16 H")
	assert.Equal(t, int32(-300), int32(got[5]), "int16 S")
	_, err = dev.LoadKernel(KernelSpec{Name: "kwide", SPIRV: testSPIRV(t, "kwide"), Constants: map[uint32]float64{3: 40000}})
	assert.ErrorContains(t, err, "specialization constant 3 (int16): 40000 is outside int16's range")
}

// A uniform buffer described read-write runs read-only: the launch never
// marks it written, so a never-written one stays unwritten.
func TestUniformBufferDescribedReadWriteStaysReadOnly(t *testing.T) {
	dev := openTest(t)
	k, err := dev.LoadKernel(KernelSpec{Name: "uniform", SPIRV: testSPIRV(t, "uniform"), Bindings: []Access{ReadWrite, WriteOnly}})
	require.NoError(t, err)
	defer func() { require.NoError(t, k.Close()) }()
	assert.Equal(t, []Access{ReadOnly, WriteOnly}, k.Spec().Bindings)
	u, err := NewBuffer[float32](dev, 4) // never written
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, 64)
	require.NoError(t, err)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, u, y))
	_, err = u.Read(context.Background())
	assert.ErrorIs(t, err, ErrUnwritten, "the uniform buffer was not written")
	_, err = y.Read(context.Background())
	assert.ErrorIs(t, err, ErrUnwritten, "y inherits the unwritten uniform input")
}

// Push places matrices as the module decorates them: a row-major mat3x2
// (rows 16 bytes apart) and a column-major mat3 (columns 16 bytes apart,
// padding after each vec3), read back element by element by the kernel.
func TestPushPlacesMatricesByTheirDecorations(t *testing.T) {
	dev := openTest(t)
	for _, c := range []struct {
		module string
		value  any
		want   []float32
	}{
		{"rowmajorpush", struct {
			S float32
			M [3][2]float32
		}{S: 9, M: [3][2]float32{{1, 2}, {3, 4}, {5, 6}}}, []float32{1, 2, 3, 4, 5, 6, 9}},
		{"mat3push", struct{ M [3][3]float32 }{M: [3][3]float32{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
	} {
		k, err := dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: testSPIRV(t, c.module)})
		require.NoError(t, err, c.module)
		push, err := k.Push(c.value)
		require.NoError(t, err, c.module)
		y, err := NewBuffer[float32](dev, len(c.want))
		require.NoError(t, err)
		require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, y), c.module)
		assert.Equal(t, c.want, readAll(t, y), c.module)
		require.NoError(t, y.Close())
		require.NoError(t, k.Close())
	}
}

// FuzzPush: whatever the values, Push of kpush.comp's block puts each
// member's bits at its std430 offset and nothing elsewhere.
func FuzzPush(f *testing.F) {
	code, err := os.ReadFile("testdata/kpush.spv")
	if err != nil {
		f.Fatal(err)
	}
	mod, err := shaders.Inspect(code)
	if err != nil {
		f.Fatal(err)
	}
	k := &Kernel{name: "kpush", rk: &recorder.Kernel{}, user: true, push: mod.PushSize, pushLayout: mod.Push}
	f.Add(float32(1), int32(-2), uint32(3), float32(4), float32(5), float32(6), float32(7), float32(8), float32(9))
	f.Fuzz(func(t *testing.T, scale float32, offset int32, n uint32, s0, s1, m0, m1, m2, m3 float32) {
		p := pushParams{Scale: scale, Offset: offset, N: n, Shift: [2]float32{s0, s1}, M: [2][2]float32{{m0, m1}, {m2, m3}}}
		got, err := k.Push(&p)
		require.NoError(t, err)
		want := make([]byte, 40)
		binary.LittleEndian.PutUint32(want[0:], math.Float32bits(scale))
		binary.LittleEndian.PutUint32(want[4:], uint32(offset))
		binary.LittleEndian.PutUint32(want[8:], n)
		for i, v := range []float32{s0, s1, m0, m1, m2, m3} {
			binary.LittleEndian.PutUint32(want[16+4*i:], math.Float32bits(v))
		}
		require.Equal(t, want, got)
	})
}
