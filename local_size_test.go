package vkc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// One constant may size two axes, and any ID may size an axis: a request
// sets the constant once, and one that asks two sizes of it is refused.
func TestLocalSizeRequestOfASharedConstant(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 8, 1}, LocalSizeSpecIDs: [3]int64{7, 7, -1},
		SpecConstants: []shaders.SpecConstant{{ID: 7, Kind: shaders.SpecUint, Bits: 32, Default: 8}}}
	sp, err := specialize(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 16, 1}}, mod)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{16, 16, 1}, sp.local)
	assert.Equal(t, []recorder.SpecConstant{{ID: 7, Size: 4, Bits: 16}}, sp.constants)

	_, err = specialize(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 8, 1}}, mod)
	assert.ErrorContains(t, err, "specialization constant 7, which sizes axes x and y")
}

// A size asked along an axis the module fixes is refused, naming the
// axis; the size the module fixes there may be asked (so Kernel.Spec's
// LocalSize, passed back, builds the same kernel).
func TestLocalSizeRequestOnAFixedAxisIsRefused(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 8, 1}, LocalSizeSpecIDs: [3]int64{7, 7, -1},
		SpecConstants: []shaders.SpecConstant{{ID: 7, Kind: shaders.SpecUint, Bits: 32, Default: 8}}}
	_, err := specialize(KernelSpec{Name: "fixed", LocalSize: [3]uint32{16, 16, 4}}, mod)
	assert.ErrorContains(t, err, `kernel "fixed": local size [16 16 4] asks 4 along z, which the module fixes at 1`)
	sp, err := specialize(KernelSpec{Name: "fixed", LocalSize: [3]uint32{16, 16, 1}}, mod)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{16, 16, 1}, sp.local)
}

// Constants may size the workgroup too: the constant's value is the
// axis's size, and a LocalSize request disagreeing with it is refused.
func TestConstantsSizeTheWorkgroup(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 1, 1}, LocalSizeSpecIDs: [3]int64{0, -1, -1},
		SpecConstants: []shaders.SpecConstant{{ID: 0, Kind: shaders.SpecUint, Bits: 32, Default: 8}}}
	sp, err := specialize(KernelSpec{Name: "k", Constants: map[uint32]float64{0: 32}}, mod)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{32, 1, 1}, sp.local)
	assert.Equal(t, map[uint32]uint32{0: 32}, sp.ints)
	_, err = specialize(KernelSpec{Name: "k", Constants: map[uint32]float64{0: 32}, LocalSize: [3]uint32{16, 1, 1}}, mod)
	assert.ErrorContains(t, err, "Constants sets its specialization constant 0 to 32")
	_, err = specialize(KernelSpec{Name: "k", Constants: map[uint32]float64{0: 0}}, mod)
	assert.ErrorContains(t, err, "0 is not a size")
}

// Each value is checked against its constant's type: what the type cannot
// hold is refused, naming the kernel, the id and the type.
func TestConstantValuesMustFitTheirType(t *testing.T) {
	mod := shaders.Module{LocalSizeSpecIDs: [3]int64{-1, -1, -1}, SpecConstants: []shaders.SpecConstant{
		{ID: 0, Kind: shaders.SpecBool, Bits: 32},
		{ID: 1, Kind: shaders.SpecInt, Bits: 32},
		{ID: 2, Kind: shaders.SpecUint, Bits: 32},
		{ID: 3, Kind: shaders.SpecFloat, Bits: 32},
		{ID: 4, Kind: shaders.SpecFloat, Bits: 64},
		{ID: 5, Kind: shaders.SpecUint, Bits: 8},
		{ID: 6, Kind: shaders.SpecInt, Bits: 64},
		{ID: 7, Kind: shaders.SpecFloat, Bits: 16},
		{ID: 8, Kind: shaders.SpecInt, Bits: 16},
	}}
	for _, c := range []struct {
		id   uint32
		v    float64
		want uint64
		err  string
	}{
		{0, 1, 1, ""},
		{0, 2, 0, "(bool): 2 is not a bool"},
		{1, -7, uint64(uint32(0xfffffff9)), ""},
		{1, 3.5, 0, "(int32): 3.5 is not a whole number"},
		{1, math.Ldexp(1, 31), 0, "outside int32's range"},
		{2, -1, 0, "(uint32): -1 is outside uint32's range"},
		{2, math.MaxUint32, math.MaxUint32, ""},
		{3, 1.5, uint64(math.Float32bits(1.5)), ""},
		{3, 1e39, 0, "overflows float32"},
		{3, math.Inf(-1), uint64(math.Float32bits(float32(math.Inf(-1)))), ""},
		{4, 0.1, math.Float64bits(0.1), ""},
		{5, 300, 0, "(uint8): 300 is outside uint8's range"},
		{5, 255, 255, ""},
		{6, -1, math.MaxUint64, ""},
		{7, 0.5, 0x3800, ""},
		{7, 70000, 0, "overflows float16"},
		{8, -1, 0xffff, ""},
		{2, math.NaN(), 0, "not a whole number"},
	} {
		sp, err := specialize(KernelSpec{Name: "typed", Constants: map[uint32]float64{c.id: c.v}}, mod)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "constant %d = %v", c.id, c.v)
			assert.ErrorContains(t, err, `kernel "typed": specialization constant`, "constant %d = %v", c.id, c.v)
			continue
		}
		if assert.NoError(t, err, "constant %d = %v", c.id, c.v) && assert.Len(t, sp.constants, 1) {
			assert.Equal(t, c.want, sp.constants[0].Bits, "constant %d = %v", c.id, c.v)
		}
	}
	_, err := specialize(KernelSpec{Name: "typed", Constants: map[uint32]float64{99: 1}}, mod)
	assert.ErrorContains(t, err, `kernel "typed": Constants sets SpecId 99, which the module does not declare (it has 0 bool, 1 int32`)
}

// FuzzConstantBits: whatever the value, constantBits never panics; what it
// accepts fits the constant's width, and an integer's bits give the value
// back exactly.
func FuzzConstantBits(f *testing.F) {
	f.Add(uint8(1), uint8(2), 3.5)
	f.Add(uint8(2), uint8(0), -1.0)
	f.Add(uint8(3), uint8(3), 1e300)
	f.Add(uint8(0), uint8(1), math.NaN())
	f.Fuzz(func(t *testing.T, kind, width uint8, v float64) {
		c := shaders.SpecConstant{ID: 1, Kind: shaders.SpecKind(kind%5 + 0), Bits: []uint32{8, 16, 32, 64}[width%4]}
		if c.Kind == shaders.SpecBool {
			c.Bits = 32
		}
		bits, err := constantBits(c, v)
		if err != nil {
			return
		}
		if c.Bits < 64 {
			assert.Zero(t, bits>>c.Bits, "%v = %v: bits %#x wider than the type", c, v, bits)
		}
		switch c.Kind {
		case shaders.SpecUint:
			assert.Equal(t, v, float64(bits), "%v", c)
		case shaders.SpecInt:
			shift := 64 - c.Bits
			assert.Equal(t, v, float64(int64(bits<<shift)>>shift), "%v", c)
		case shaders.SpecBool:
			assert.Equal(t, v, float64(bits))
		}
	})
}

// A module of more bindings than a launch takes is refused before any
// per-binding table is filled.
func TestMatchModuleRefusesTooManyBindings(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{1, 1, 1}}
	for i := range recorder.MaxBindings + 1 {
		mod.Bindings = append(mod.Bindings, shaders.ModuleBinding{Binding: uint32(i), Kind: shaders.StorageTexelBuffer, Access: shaders.ReadOnly})
	}
	spec := KernelSpec{Name: "wide", Bindings: make([]Access, len(mod.Bindings))}
	for i := range spec.Bindings {
		spec.Bindings[i] = ReadOnly
	}
	err := matchModule(spec, mod, mod.LocalSize, Limits{MaxComputeWorkGroupSize: [3]uint32{1, 1, 1}, MaxComputeWorkGroupInvocations: 1})
	assert.ErrorContains(t, err, `kernel "wide": module has 17 bindings (at most 16)`)
}

// A requested size must fit the constant that sizes the axis: 70000 does
// not fit a uint16 constant.
func TestLocalSizeRequestMustFitItsConstant(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 1, 1}, LocalSizeSpecIDs: [3]int64{3, -1, -1},
		SpecConstants: []shaders.SpecConstant{{ID: 3, Kind: shaders.SpecUint, Bits: 16, Default: 8}}}
	_, err := specialize(KernelSpec{Name: "narrow", LocalSize: [3]uint32{70000, 1, 1}}, mod)
	assert.ErrorContains(t, err, "specialization constant 3 (uint16): 70000 is outside uint16's range")
	sp, err := specialize(KernelSpec{Name: "narrow", LocalSize: [3]uint32{64, 1, 1}}, mod)
	require.NoError(t, err)
	assert.Equal(t, []recorder.SpecConstant{{ID: 3, Size: 2, Bits: 64}}, sp.constants)
}
