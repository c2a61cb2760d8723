package shaders

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

// readTestdata reads a module of testdata, first checking, where spirv-as
// is installed, that it is what its .spvasm assembles to.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	path := filepath.Join("testdata", name+".spv")
	code, err := os.ReadFile(path)
	require.NoError(t, err)
	if _, err := exec.LookPath("spirv-as"); err != nil {
		return code
	}
	fresh := filepath.Join(t.TempDir(), name+".spv")
	out, err := exec.Command("spirv-as", "--target-env", "vulkan1.1", filepath.Join("testdata", name+".spvasm"), "-o", fresh).CombinedOutput()
	require.NoError(t, err, "spirv-as: %s", out)
	want, err := os.ReadFile(fresh)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, code), "%s is stale: run spirv-as --target-env vulkan1.1 testdata/%s.spvasm -o %s", path, name, path)
	return code
}

// Each binding of testdata/access.spvasm is used one way by main: its
// access comes from the code, whatever its decorations say; a
// decoration the code contradicts is reported; a pointer the tracer does
// not follow (converted to an integer) leaves the decorations' access.
func TestInspectTracesAccessFromTheCode(t *testing.T) {
	mod, err := Inspect(readTestdata(t, "access"))
	require.NoError(t, err)
	require.Equal(t, "main", mod.Entry)
	type want struct {
		loads, stores, traced bool
		access                Access
		contradiction         bool
	}
	wants := []want{
		0: {stores: true, traced: true, access: WriteOnly},                      // a store through an access chain
		1: {loads: true, traced: true, access: ReadOnly},                        // a load
		2: {stores: true, traced: true, access: WriteOnly, contradiction: true}, // NonWritable, stored to
		3: {loads: true, traced: true, access: ReadOnly, contradiction: true},   // NonReadable, OpCopyMemory's source
		4: {stores: true, traced: true, access: WriteOnly},                      // OpCopyObject, then a callee's parameter
		5: {loads: true, stores: true, traced: true, access: ReadWrite},         // an atomic
		6: {traced: false, access: ReadWrite},                                   // OpConvertPtrToU: not followed
		7: {traced: true, access: ReadOnly},                                     // only "other" stores to it
		8: {stores: true, traced: true, access: WriteOnly},                      // OpPtrAccessChain, OpCopyMemory's target
		9: {stores: true, traced: true, access: WriteOnly},                      // its pointer's id is Fma's number in an OpExtInst
	}
	require.Len(t, mod.Bindings, len(wants))
	for i, w := range wants {
		b := mod.Bindings[i]
		assert.Equal(t, w.loads, b.Loads, "binding %d loads", i)
		assert.Equal(t, w.stores, b.Stores, "binding %d stores", i)
		assert.Equal(t, w.traced, b.Traced, "binding %d traced", i)
		assert.Equal(t, w.access, b.Access, "binding %d access", i)
		assert.Equal(t, w.contradiction, b.Contradiction() != "", "binding %d contradiction %q", i, b.Contradiction())
	}
}

// InspectEntry describes the entry point asked for: "other" stores only to
// binding 7, and an entry point the module does not have is
// ErrNoEntryPoint.
func TestInspectEntryTracesTheEntryPointAskedFor(t *testing.T) {
	code := readTestdata(t, "access")
	mod, err := InspectEntry(code, "other")
	require.NoError(t, err)
	assert.Equal(t, "other", mod.Entry)
	assert.Equal(t, [3]uint32{8, 1, 1}, mod.LocalSize, "other's LocalSize")
	for i, b := range mod.Bindings {
		assert.Equal(t, i == 7, b.Stores, "binding %d stores", i)
		assert.False(t, b.Loads, "binding %d loads", i)
	}
	main, err := InspectEntry(code, "")
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{64, 1, 1}, main.LocalSize, "\"\" is main")
	_, err = InspectEntry(code, "absent")
	assert.True(t, errors.Is(err, ErrNoEntryPoint), "%v", err)
}

// A module of several entry points, none "main", chooses none when asked
// for "": access falls back on decorations, and no local size is read.
func TestInspectChoosesNoEntryAmongSeveralWithoutMain(t *testing.T) {
	code := assemble(
		append([]uint32{opEntryPoint, execModelGLCompute, 5}, 0x61, 0), // "a"
		append([]uint32{opEntryPoint, execModelGLCompute, 6}, 0x62, 0), // "b"
		typeVoid, typeVoidFn,
		function5, label, returnVoid, functionEnd,
		function6, []uint32{opLabel, 9}, returnVoid, functionEnd,
	)
	mod, err := Inspect(code)
	require.NoError(t, err)
	assert.Equal(t, "", mod.Entry)
	one, err := InspectEntry(code, "b")
	require.NoError(t, err)
	assert.Equal(t, "b", one.Entry)
}

// Every specialization constant with a SpecId is listed by id with its
// kind, width and default bits; plain constants are not.
func TestInspectListsSpecConstants(t *testing.T) {
	mod, err := Inspect(readTestdata(t, "specs"))
	require.NoError(t, err)
	minus7, big := int64(-7), int64(-5000000000)
	assert.Equal(t, []SpecConstant{
		{ID: 0, Kind: SpecBool, Bits: 32, Default: 1},
		{ID: 1, Kind: SpecInt, Bits: 32, Default: uint64(uint32(minus7))},
		{ID: 2, Kind: SpecUint, Bits: 32, Default: 300},
		{ID: 3, Kind: SpecFloat, Bits: 32, Default: uint64(math.Float32bits(1.5))},
		{ID: 4, Kind: SpecFloat, Bits: 64, Default: math.Float64bits(2.25)},
		{ID: 5, Kind: SpecInt, Bits: 64, Default: uint64(big)},
		{ID: 6, Kind: SpecUint, Bits: 16, Default: 65535},
		{ID: 7, Kind: SpecFloat, Bits: 16, Default: 0x3800},
		{ID: 8, Kind: SpecUint, Bits: 8, Default: 200},
		{ID: 9, Kind: SpecBool, Bits: 32, Default: 0},
	}, mod.SpecConstants)
	assert.Equal(t, "float64", mod.SpecConstants[4].TypeName())
	assert.Equal(t, "bool", mod.SpecConstants[0].TypeName())
}

// Two constants of different types under one SpecId cannot both take a
// value: refused. The same type twice is one constant.
func TestInspectRefusesOneSpecIDOnTwoTypes(t *testing.T) {
	const uintT, floatT = 10, 11
	base := [][]uint32{entryMain, typeVoid, typeVoidFn,
		{opTypeInt, uintT, 32, 0}, {opTypeFloat, floatT, 32},
		{opDecorate, 20, decorationSpecID, 3}, {opDecorate, 21, decorationSpecID, 3},
		{opSpecConstant, uintT, 20, 1}}
	same := append(append([][]uint32{}, base...), []uint32{opSpecConstant, uintT, 21, 2})
	mod, err := Inspect(assemble(append(same, wholeFunction...)...))
	require.NoError(t, err)
	assert.Len(t, mod.SpecConstants, 1)
	mixed := append(append([][]uint32{}, base...), []uint32{opSpecConstant, floatT, 21, 2})
	_, err = Inspect(assemble(append(mixed, wholeFunction...)...))
	assert.True(t, errors.Is(err, errs.BadSPIRV), "%v", err)
}

// A binding's minimum size is its block's fixed part: a runtime array at
// the end counts as empty.
func TestInspectGivesTheFixedPartAsMinSize(t *testing.T) {
	mod, err := Inspect(readTestdata(t, "access"))
	require.NoError(t, err)
	for _, b := range mod.Bindings {
		assert.Zero(t, b.MinSize, "binding %d: uint x[] has no fixed part", b.Binding)
	}
	k, err := Get("axpy")
	require.NoError(t, err)
	mod, err = Inspect(k.SPIRV)
	require.NoError(t, err)
	for _, b := range mod.Bindings {
		assert.Equal(t, b.Block.Size, b.MinSize, "binding %d", b.Binding)
	}
}
