package ops

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// int8Operand is an m x n int8 tensor of random values over the whole
// range, stored transposed (n x m, viewed through T) when transposed, and
// its values row-major for the reference.
func int8Operand(t *testing.T, dev *vkc.Device, rng *rand.Rand, m, n int, transposed bool) (Tensor[int8], []int64) {
	t.Helper()
	vals := make([]int64, m*n)
	stored := make([]int8, m*n)
	for i := range vals {
		v := int8(rng.IntN(256) - 128)
		vals[i] = int64(v)
		r, c := i/n, i%n
		if transposed {
			stored[c*m+r] = v
		} else {
			stored[i] = v
		}
	}
	buf, err := vkc.FromSlice(dev, stored)
	require.NoError(t, err)
	t.Cleanup(func() { _ = buf.Close() })
	if transposed {
		return Of(buf, n, m).T(), vals
	}
	return Of(buf, m, n), vals
}

// TestMatmulInt8MatchesExactReference runs every kernel that applies, and
// MatmulInt8 itself, on products of random int8 matrices over the whole
// range in several layouts, against the exact sums in Go.
func TestMatmulInt8MatchesExactReference(t *testing.T) {
	dev := openTest(t)
	if !dev.Info().Features.Has(vkc.FeatureStorage8 | vkc.FeatureInt8) {
		t.Skip("no 8-bit storage")
	}
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		name       string
		m, n, k    int
		aT, bT, cT bool
		want       []variant
	}{
		{"row-major, K%4=1", 7, 9, 13, false, false, false, []variant{variantI8Generic}},
		{"B transposed", 33, 20, 64, false, true, false, []variant{variantI8Generic, variantI8Dot4}},
		{"B transposed, C transposed", 40, 36, 100, false, true, true, []variant{variantI8Generic, variantI8Dot4}},
		{"A transposed", 17, 18, 32, true, true, false, []variant{variantI8Generic}},
		{"B transposed, K%4=2", 5, 6, 30, false, true, false, []variant{variantI8Generic}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, av := int8Operand(t, dev, rng, tc.m, tc.k, tc.aT)
			b, bv := int8Operand(t, dev, rng, tc.k, tc.n, tc.bT)
			cBuf := fresh[int32](t, dev, tc.m*tc.n)
			c := Of(cBuf, tc.m, tc.n)
			if tc.cT {
				c = Of(cBuf, tc.n, tc.m).T()
			}
			want := make([]int32, tc.m*tc.n) // as C stores it
			for i := range tc.m {
				for j := range tc.n {
					var sum int64
					for q := range tc.k {
						sum += av[i*tc.k+q] * bv[q*tc.n+j]
					}
					at := i*tc.n + j
					if tc.cT {
						at = j*tc.m + i
					}
					want[at] = int32(sum)
				}
			}
			p, err := planInt8(s, a, b, c)
			require.NoError(t, err)
			cands := p.candidates()
			if !dev.Info().Features.Has(vkc.FeatureIntegerDotProduct) {
				tc.want = []variant{variantI8Generic}
			}
			if p.coop.ok {
				tc.want = append(tc.want, variantI8CoopMat) // any layout
			}
			require.Equal(t, tc.want, cands)
			for _, v := range append(cands, numVariants) {
				require.NoError(t, vkc.Fill(s, cBuf, -7))
				if v == numVariants {
					require.NoError(t, MatmulInt8(s, a, b, c, MatmulInt8Options{}), "MatmulInt8")
				} else {
					require.NoError(t, p.runVariant(s, v), "%v", v)
				}
				got, err := cBuf.Read(context.Background())
				require.NoError(t, err)
				require.Equal(t, want, got, "%v", v)
			}
		})
	}
}

// TestMatmulInt8LongKWithinTheLoopBudget: on a CPU driver a K of 70000
// takes more loop iterations than the byte kernel may run in one
// invocation, but a quarter of them in the packed kernel: with B
// K-contiguous the product runs there (every element of A and B 1, so C
// is exactly K), with B row-major it is refused.
func TestMatmulInt8LongKWithinTheLoopBudget(t *testing.T) {
	dev := openTest(t)
	if dev.Info().Type != vkc.TypeCPU || !dev.Info().Features.Has(vkc.FeatureIntegerDotProduct|vkc.FeatureStorage8) {
		t.Skip("a CPU driver with integer dot products")
	}
	s := dev.Stream()
	const m, n, k = 2, 3, 70000
	ones := func(count int) *vkc.Buffer[int8] {
		xs := make([]int8, count)
		for i := range xs {
			xs[i] = 1
		}
		b, err := vkc.FromSlice(dev, xs)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a, b := ones(m*k), ones(k*n)
	c := fresh[int32](t, dev, m*n)
	require.NoError(t, MatmulInt8(s, Of(a, m, k), Of(b, n, k).T(), Of(c, m, n), MatmulInt8Options{}))
	requireEvery(t, c, int32(k))
	err := MatmulInt8(s, Of(a, m, k), Of(b, k, n), Of(c, m, n), MatmulInt8Options{})
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	require.ErrorContains(t, err, "vkc: MatmulInt8: A [2 70000] · B [70000 3] → C [2 3]")
}

// TestMatmulInt8Refusals: shapes that do not multiply, a dynamic operand
// and a C that writes an element twice are refused, naming the shapes.
func TestMatmulInt8Refusals(t *testing.T) {
	dev := openTest(t)
	if !dev.Info().Features.Has(vkc.FeatureStorage8 | vkc.FeatureInt8) {
		t.Skip("no 8-bit storage")
	}
	s := dev.Stream()
	a, b, c12, c := fresh[int8](t, dev, 12), fresh[int8](t, dev, 12), fresh[int32](t, dev, 12), fresh[int32](t, dev, 9)
	err := MatmulInt8(s, Of(a, 3, 4), Of(b, 3, 4), Of(c12, 3, 4), MatmulInt8Options{})
	require.ErrorContains(t, err, "vkc: MatmulInt8: A [3 4] · B [3 4] → C [3 4]: A's 4 columns are not B's 3 rows")
	rows, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	defer rows.Close()
	err = MatmulInt8(s, Of(a, 3, 4).Dynamic(rows), Of(b, 4, 3), Of(c, 3, 3).Dynamic(rows), MatmulInt8Options{})
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	err = MatmulInt8(s, Of(a, 3, 4), Of(b, 4, 3), Strided(c, 0, []int{3, 3}, []int{0, 1}), MatmulInt8Options{})
	require.ErrorContains(t, err, "vkc: MatmulInt8")
	require.ErrorContains(t, err, "more than once")
	require.ErrorContains(t, MatmulInt8(nil, Of(a, 3, 4), Of(b, 4, 3), Of(c, 3, 3), MatmulInt8Options{}), "nil stream")
}

// TestMatmulInt8RefusesCSharingMemoryWithAnInput: one buffer viewed as
// int8 for A and as int32 for C is refused with ErrOverlap (invocations
// would write C while others read A), and nothing is written.
func TestMatmulInt8RefusesCSharingMemoryWithAnInput(t *testing.T) {
	dev := openTest(t)
	if !dev.Info().Features.Has(vkc.FeatureStorage8 | vkc.FeatureInt8) {
		t.Skip("no 8-bit storage")
	}
	s := dev.Stream()
	buf := fresh[int32](t, dev, 16)
	require.NoError(t, vkc.Fill(s, buf, 5))
	a, err := vkc.ViewAs[int8](buf, 0, 64)
	require.NoError(t, err)
	defer a.Close()
	b := fresh[int8](t, dev, 64)
	require.NoError(t, vkc.Fill(s, b, 1))
	err = MatmulInt8(s, Of(a, 4, 16), Of(b, 16, 4), Of(buf, 4, 4), MatmulInt8Options{})
	require.ErrorIs(t, err, vkc.ErrOverlap)
	require.ErrorContains(t, err, "vkc: MatmulInt8: A [4 16] · B [16 4] → C [4 4]: C shares memory with A")
	requireEvery(t, buf, 5)
}
