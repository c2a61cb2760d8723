package blackbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// matmulReference is C = A·B in float64, rounded to float32.
func matmulReference(as, bs []float32, m, n, k int) []float32 {
	c := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var sum float64
			for p := range k {
				sum += float64(as[i*k+p]) * float64(bs[p*n+j])
			}
			c[i*n+j] = float32(sum)
		}
	}
	return c
}

// A Matmul with N and K multiples of 8 on inputs that are views 16 bytes
// into their buffers (the shape the root package once ran on texels),
// captured into a graph: every replay computes from the inputs' values at
// that replay, the graph keeps what it reads through after the inputs
// close, and everything is gone after Close, the layer silent.
func TestTexelMatmulInAGraphFollowsItsInputs(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	const m, n, k = 24, 16, 40
	whole := func(size int) *vkc.Buffer[float32] {
		b, err := vkc.NewBuffer[float32](dev, size)
		require.NoError(t, err)
		return b
	}
	abuf, bbuf := whole(4+m*k), whole(4+k*n)
	a, err := abuf.View(4, m*k)
	require.NoError(t, err)
	b, err := bbuf.View(4, k*n)
	require.NoError(t, err)
	c := newBuffer[float32](t, dev, m*n)
	r := rng(71)
	as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
	require.NoError(t, a.Write(as))
	require.NoError(t, b.Write(bs))
	g, err := s.Capture(func(s *vkc.Stream) error { return opMatmul(s, a, b, c, m, n, k) })
	require.NoError(t, err)
	for round := range 3 {
		as, bs = randFloats(r, m*k, -2, 2), randFloats(r, k*n, -2, 2)
		require.NoError(t, a.Write(as))
		require.NoError(t, b.Write(bs))
		require.NoError(t, g.Replay())
		requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-4, "round %d", round)
	}
	for _, x := range []*vkc.Buffer[float32]{a, b, abuf, bbuf} {
		require.NoError(t, x.Close())
	}
	require.NoError(t, g.Replay(), "the graph holds its inputs' memory and views")
	requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-4, "after the inputs closed")
	require.NoError(t, g.Close())
	require.NoError(t, s.Sync(ctx))
}
