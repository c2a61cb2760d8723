package vkc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// opLengths are the vector lengths every elementwise kernel is checked at:
// one element, lengths that are not a multiple of the 256-element group
// with every remainder modulo the 4 elements an invocation takes (the vec4
// path and the element-by-element tail: 1000, 1001, 1002, 1003), and a
// million (4096 groups).
var opLengths = []int{1, 1000, 1001, 1002, 1003, 1 << 20}

// f32eps is float32's machine epsilon (the gap between 1 and the next float).
const f32eps = 1.0 / (1 << 23)

// rng returns a generator seeded by the test's shape, so every run sees the
// same data and a failure reproduces.
func rng(seed ...int) *rand.Rand {
	var a, b uint64 = 0x9e3779b97f4a7c15, 0
	for _, s := range seed {
		b = b*1000003 + uint64(s)
	}
	return rand.New(rand.NewPCG(a, b))
}

// randFloats returns n values uniform in [lo, hi).
func randFloats(r *rand.Rand, n int, lo, hi float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = lo + (hi-lo)*r.Float32()
	}
	return xs
}

// upload puts xs on dev and closes the buffer when the test ends.
func upload[T Element](t testing.TB, dev *Device, xs []T) *Buffer[T] {
	t.Helper()
	b, err := FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// scratch allocates an unwritten buffer of n elements, closed when the test ends.
func scratch[T Element](t testing.TB, dev *Device, n int) *Buffer[T] {
	t.Helper()
	b, err := NewBuffer[T](dev, n)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// requireClose fails unless every got[i] is within tol[i] of want[i]
// (want computed in float64); it reports the first offender only, so a
// million-element mismatch stays readable.
func requireClose(t testing.TB, want []float64, got []float32, tol func(i int) float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol(i)) {
			require.Failf(t, "value out of tolerance", "element %d of %d: got %g, want %g (|diff| %g > tol %g)",
				i, len(want), got[i], want[i], d, tol(i))
		}
	}
}

// requireSame fails unless got equals want element for element (bit for
// bit for floats: NaN payloads included); it names the first difference
// instead of diffing a million elements.
func requireSame[T Element](t testing.TB, want, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if bitsOf(want[i]) != bitsOf(got[i]) {
			require.Failf(t, "values differ", "element %d of %d: got %v, want %v", i, len(want), got[i], want[i])
		}
	}
}

// ulps is a tolerance of k float32 rounding steps relative to the magnitude m.
func ulps(k, m float64) float64 { return k * f32eps * m }

func TestFillAndCopyAllTypes(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, n := range opLengths {
		t.Run(fmt.Sprint("float32/", n), func(t *testing.T) {
			r := rng(1, n)
			checkFillCopy(t, dev, s, randFloats(r, n, -1e6, 1e6), float32(r.NormFloat64()))
		})
		t.Run(fmt.Sprint("int32/", n), func(t *testing.T) {
			r := rng(2, n)
			xs := make([]int32, n)
			for i := range xs {
				xs[i] = r.Int32() - 1<<30
			}
			checkFillCopy(t, dev, s, xs, -r.Int32())
		})
		t.Run(fmt.Sprint("uint32/", n), func(t *testing.T) {
			r := rng(3, n)
			xs := make([]uint32, n)
			for i := range xs {
				xs[i] = r.Uint32()
			}
			checkFillCopy(t, dev, s, xs, r.Uint32()|1<<31)
		})
	}
}

// checkFillCopy fills one buffer with v and copies src into another; both
// must match bit for bit, since neither kernel does arithmetic.
func checkFillCopy[T Element](t *testing.T, dev *Device, s *Stream, src []T, v T) {
	filled := scratch[T](t, dev, len(src))
	require.NoError(t, Fill(s, filled, v))
	want := make([]T, len(src))
	for i := range want {
		want[i] = v
	}
	requireSame(t, want, readAll(t, filled))

	in := upload(t, dev, src)
	out := scratch[T](t, dev, len(src))
	require.NoError(t, Copy(s, in, out))
	requireSame(t, src, readAll(t, out))
}
