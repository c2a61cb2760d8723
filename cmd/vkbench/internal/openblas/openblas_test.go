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
