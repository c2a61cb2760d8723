package openblas

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where the library is installed, Sgemm agrees with a float64 reference
// within the rounding of a K-term sum; where it is not, every call says so
// with ErrMissing.
func TestSgemmMatchesReferenceOrSaysMissing(t *testing.T) {
	const n = 67
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i] = float32(math.Sin(float64(i)))
		b[i] = float32(math.Cos(float64(3 * i)))
	}
	err := Sgemm(n, a, b, c)
	if errors.Is(err, ErrMissing) {
		assert.ErrorIs(t, Open(), ErrMissing, "the same answer again")
		t.Skipf("%s is not installed: %v", Library, err)
	}
	require.NoError(t, err)
	u := math.Pow(2, -24)
	for i := range n {
		for j := range n {
			var want, mag float64
			for k := range n {
				p := float64(a[i*n+k]) * float64(b[k*n+j])
				want += p
				mag += math.Abs(p)
			}
			require.InDelta(t, want, float64(c[i*n+j]), (n+1)*u*mag, "C[%d,%d]", i, j)
		}
	}
}

func TestSgemmRefusesBadShapes(t *testing.T) {
	if errors.Is(Open(), ErrMissing) {
		t.Skipf("%s is not installed", Library)
	}
	for _, n := range []int{0, -1} {
		assert.Error(t, Sgemm(n, nil, nil, nil))
	}
	assert.Error(t, Sgemm(2, make([]float32, 4), make([]float32, 3), make([]float32, 4)))
}

// A library that is not there, or has no cblas_sgemm, is ErrMissing with
// the loader's reason, never a crash.
func TestMissingLibraryIsErrMissing(t *testing.T) {
	err := load("libvkbench-no-such-blas.so.0")
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), "libvkbench-no-such-blas.so.0")
	err = load("libm.so.6") // loads, but has no cblas_sgemm
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), "cblas_sgemm")
}

// SgemmShape computes non-square products (a matrix-vector product among
// them) as the float64 reference does, and refuses slices that do not fit.
func TestSgemmShapeMatchesReference(t *testing.T) {
	if errors.Is(Open(), ErrMissing) {
		t.Skipf("%s is not installed", Library)
	}
	for _, sh := range []struct{ m, n, k int }{{1, 37, 50}, {23, 1, 41}, {5, 9, 300}} {
		a, b, c := make([]float32, sh.m*sh.k), make([]float32, sh.k*sh.n), make([]float32, sh.m*sh.n)
		for i := range a {
			a[i] = float32(math.Sin(float64(i)))
		}
		for i := range b {
			b[i] = float32(math.Cos(float64(5 * i)))
		}
		require.NoError(t, SgemmShape(sh.m, sh.n, sh.k, a, b, c))
		u := math.Pow(2, -24)
		for i := range sh.m {
			for j := range sh.n {
				var want, mag float64
				for k := range sh.k {
					p := float64(a[i*sh.k+k]) * float64(b[k*sh.n+j])
					want += p
					mag += math.Abs(p)
				}
				require.InDelta(t, want, float64(c[i*sh.n+j]), float64(sh.k+1)*u*mag, "%v C[%d,%d]", sh, i, j)
			}
		}
	}
	assert.Error(t, SgemmShape(2, 3, 4, make([]float32, 8), make([]float32, 11), make([]float32, 6)))
}
