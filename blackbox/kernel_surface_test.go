package blackbox_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Promise (docs/guide/kernels.md, "Access, from the code": "a binding the
// code only stores to is write-only, whatever its decorations say: no
// Fill is needed before the launch"): kconst's y is a plain `buffer` the
// code only stores to; a never-written buffer launched into (eight
// invocations, set through constant 0) reads back what the kernel wrote.
func TestKernelStoredOnlyBindingNeedsNoFill(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "kconst", SPIRV: testdataModule(t, "kconst"), Constants: map[uint32]float64{0: 8, 4: 8}})
	require.NoError(t, err)
	defer k.Close()
	require.Equal(t, []vkc.Access{vkc.WriteOnly}, k.Spec().Bindings)
	y := newBuffer[float32](t, dev, 8)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y))
	got, err := y.Read(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 1, 2, 3, 4, 5, 6, 7}, got)
}

// Promise (docs/guide/kernels.md, "What is checked": "each buffer is at
// least its binding's minimum size: a smaller one is refused, naming the
// binding and both sizes"): kfixed's y is float[100].
func TestKernelBufferBelowItsBlockIsRefused(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "kfixed", SPIRV: testdataModule(t, "kfixed")})
	require.NoError(t, err)
	defer k.Close()
	head := upload(t, dev, []uint32{0, 0, 0, 0, 0})
	y := newBuffer[float32](t, dev, 99)
	err = k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, y, head)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "binding 0")
	assert.Contains(t, err.Error(), "400 bytes")
	assert.Contains(t, err.Error(), "396")
}

// Promise (docs/guide/kernels.md, "Setting constants": "3.5 for an int,
// 300 for a uint8, -1 for a uint" and an undeclared id are refused, the
// error naming the kernel, the id and the type), and nothing is left
// behind by a refusal.
func TestKernelConstantsThatDoNotFitAreRefused(t *testing.T) {
	dev := openDevice(t)
	live := dev.LiveObjects()
	for _, c := range []struct {
		constants map[uint32]float64
		names     []string
	}{
		{map[uint32]float64{2: 3.5}, []string{`"kconst"`, "constant 2", "int32"}},
		{map[uint32]float64{4: -1}, []string{`"kconst"`, "constant 4", "uint32"}},
		{map[uint32]float64{1: 0.5}, []string{`"kconst"`, "constant 1", "bool"}},
		{map[uint32]float64{77: 1}, []string{`"kconst"`, "SpecId 77"}},
	} {
		k, err := dev.LoadKernel(vkc.KernelSpec{Name: "kconst", SPIRV: testdataModule(t, "kconst"), Constants: c.constants})
		if !assert.Error(t, err, "%v", c.constants) {
			k.Close()
			continue
		}
		for _, name := range c.names {
			assert.Contains(t, err.Error(), name, "%v", c.constants)
		}
		assert.False(t, errors.Is(err, vkc.ErrBadSPIRV), "a valid module: %v", err)
	}
	assert.Equal(t, live, dev.LiveObjects(), "refusals left Vulkan objects behind")
}

// Promise (Kernel.Push: a Go struct "laid out by the module's offsets",
// and a member of another type is refused naming the member and both
// types): kpush reads every member where Push put it.
func TestKernelPushFromAStruct(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "kpush", SPIRV: testdataModule(t, "kpush")})
	require.NoError(t, err)
	defer k.Close()
	type params struct {
		Scale  float32
		Offset int32
		N      uint32
		Shift  [2]float32
		M      [2][2]float32
	}
	push, err := k.Push(params{Scale: 2, Offset: 1, N: 4, Shift: [2]float32{0.5, 0.25}, M: [2][2]float32{{0, 0}, {3, 0}}})
	require.NoError(t, err)
	x := upload(t, dev, []float32{1, 2, 3, 4})
	y := upload(t, dev, []float32{0, 0, 0, 0})
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, x, y))
	got, err := y.Read(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []float32{6.25, 8.25, 10.25, 12.25}, got)
	_, err = k.Push(struct {
		Scale  float64
		Offset int32
		N      uint32
		Shift  [2]float32
		M      [2][2]float32
	}{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Scale is float64 in Go, float32 in the module")
}
