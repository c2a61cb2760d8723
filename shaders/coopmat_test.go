package shaders

import (
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The root package's testdata/coopmat.spv declares A (Float16, M x K),
// B (Float16, K x N) and the accumulator (float32, M x N) on a subgroup,
// sized by specialization constants 1 to 3: their defaults, then each
// specialized, read back as the module declares them.
func TestCooperativeMatrixTypesFollowSpecialization(t *testing.T) {
	code, err := os.ReadFile("../testdata/coopmat.spv")
	require.NoError(t, err)
	sorted := func(ts []CooperativeMatrixType) []CooperativeMatrixType {
		slices.SortFunc(ts, func(a, b CooperativeMatrixType) int { return int(a.Use) - int(b.Use) })
		return ts
	}
	want := func(m, n, k uint32) []CooperativeMatrixType {
		return []CooperativeMatrixType{
			{Float: true, Bits: 16, Scope: 3, Rows: m, Columns: k, Use: UseMatrixA},
			{Float: true, Bits: 16, Scope: 3, Rows: k, Columns: n, Use: UseMatrixB},
			{Float: true, Bits: 32, Scope: 3, Rows: m, Columns: n, Use: UseAccumulator},
		}
	}
	got, err := CooperativeMatrixTypes(code, nil)
	require.NoError(t, err)
	require.Equal(t, want(16, 16, 16), sorted(got))
	got, err = CooperativeMatrixTypes(code, map[uint32]uint32{1: 8, 2: 32, 3: 4})
	require.NoError(t, err)
	require.Equal(t, want(8, 32, 4), sorted(got))
	require.Equal(t, "8x4 float16 gl_MatrixUseA (scope 3)", got[0].String())

	plain, err := os.ReadFile("../testdata/dot4.spv")
	require.NoError(t, err)
	got, err = CooperativeMatrixTypes(plain, nil)
	require.NoError(t, err)
	require.Empty(t, got, "a module without cooperative matrices")
}
