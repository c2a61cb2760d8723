package shaders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

// matrixPushModule is a push-constant block { float s; M m; } whose
// matrix member m (at offset 16) is columns × vec(rows) of float, with
// the member decorations given.
func matrixPushModule(columns, rows uint32, memberDecorations ...[]uint32) []byte {
	ins := [][]uint32{
		{opTypeFloat, 20, 32},
		{opTypeVector, 21, 20, rows},
		{opTypeMatrix, 22, 21, columns},
		{opTypeStruct, 23, 20, 22},
		{opMemberDecorate, 23, 0, decorationOffset, 0},
		{opMemberDecorate, 23, 1, decorationOffset, 16},
	}
	for _, d := range memberDecorations {
		ins = append(ins, append([]uint32{opMemberDecorate, 23, 1}, d...))
	}
	return pushModule(23, ins...)
}

// A matrix spans its columns (or, row-major, its rows) MatrixStride apart
// and one packed vector, whatever its packed size: the sizes below are
// the std430, std140 and scalar-layout placements written out by hand.
func TestInspectLaysOutMatricesByTheirDecorations(t *testing.T) {
	for _, c := range []struct {
		name          string
		columns, rows uint32
		stride        uint32
		rowMajor      bool
		push          uint32 // 16 + the matrix's span
	}{
		{"mat3 std430", 3, 3, 16, false, 16 + 2*16 + 12},
		{"mat3 scalar", 3, 3, 12, false, 16 + 36},
		{"mat2 std140", 2, 2, 16, false, 16 + 16 + 8},
		{"mat2 std430", 2, 2, 8, false, 16 + 16},
		{"row_major mat3x2 std430", 3, 2, 16, true, 16 + 16 + 12},
		{"row_major mat2x3 std430", 2, 3, 8, true, 16 + 2*8 + 8},
		{"mat4x3 std430", 4, 3, 16, false, 16 + 3*16 + 12},
	} {
		major := uint32(decorationColMajor)
		if c.rowMajor {
			major = decorationRowMajor
		}
		mod, err := Inspect(matrixPushModule(c.columns, c.rows, []uint32{major}, []uint32{decorationMatrixStride, c.stride}))
		require.NoError(t, err, c.name)
		assert.Equal(t, c.push, mod.PushSize, c.name)
		m := mod.Push.Members[1]
		assert.Equal(t, uint32(16), m.Offset, c.name)
		assert.Equal(t, LayoutMatrix, m.Layout.Kind, c.name)
		assert.Equal(t, c.columns, m.Layout.Count, c.name)
		assert.Equal(t, c.stride, m.Layout.Stride, c.name)
		assert.Equal(t, c.rowMajor, m.Layout.RowMajor, c.name)
	}
}

// A block the module does not lay out is refused rather than sized by a
// guess: a matrix member without MatrixStride, a member without Offset.
func TestInspectRefusesAPushBlockWithoutLayoutDecorations(t *testing.T) {
	_, err := Inspect(matrixPushModule(3, 3, []uint32{decorationColMajor}))
	require.ErrorIs(t, err, errs.BadSPIRV)
	assert.ErrorContains(t, err, "MatrixStride")

	_, err = Inspect(pushModule(12,
		[]uint32{opTypeStruct, 12, 1, 1},
		[]uint32{opMemberDecorate, 12, 0, decorationOffset, 0},
	))
	require.ErrorIs(t, err, errs.BadSPIRV)
	assert.ErrorContains(t, err, "member 1 of struct %12 in a block has no Offset")
}

// An array spans every ArrayStride but the last and one element, and a
// runtime array nothing: a block { vec3 a[2]; float b[]; } laid out as
// std430 does (a at 0, stride 16; b at 32) spans 32 bytes.
func TestInspectLaysOutArraysByTheirStride(t *testing.T) {
	mod, err := Inspect(pushModule(16,
		[]uint32{opTypeFloat, 10, 32},
		[]uint32{opTypeVector, 11, 10, 3},
		[]uint32{opConstant, 1, 12, 2},
		[]uint32{opTypeArray, 13, 11, 12},
		[]uint32{opDecorate, 13, decorationArrayStride, 16},
		[]uint32{opTypeRuntimeArray, 14, 10},
		[]uint32{opDecorate, 14, decorationArrayStride, 4},
		[]uint32{opTypeStruct, 16, 13, 14},
		[]uint32{opMemberDecorate, 16, 0, decorationOffset, 0},
		[]uint32{opMemberDecorate, 16, 1, decorationOffset, 32},
	))
	require.NoError(t, err)
	assert.Equal(t, uint32(32), mod.PushSize)
	a, b := mod.Push.Members[0].Layout, mod.Push.Members[1].Layout
	assert.Equal(t, uint64(16+12), a.Size, "vec3 a[2], stride 16")
	assert.Equal(t, LayoutRuntimeArray, b.Kind)
	assert.Equal(t, uint32(4), b.Stride)
	assert.Zero(t, b.Size)
}
