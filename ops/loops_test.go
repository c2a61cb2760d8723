package ops

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// overBudget is a length whose loop, 64 lanes a group, runs past the CPU
// driver's loop budget in one invocation: 64 lanes times the budget and
// some.
const overBudget = 64*loopBudget + 64*1024

// ones is a buffer of n float32 ones.
func ones(t *testing.T, dev *vkc.Device, n int) *vkc.Buffer[float32] {
	t.Helper()
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = 1
	}
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// readF32 reads b.
func readF32(t *testing.T, b *vkc.Buffer[float32]) []float32 {
	t.Helper()
	xs, err := b.Read(t.Context())
	require.NoError(t, err)
	return xs
}

// countNot is how many of xs differ from want, and the first index that does.
func countNot(xs []float32, want float32) (n, first int) {
	first = -1
	for i, x := range xs {
		if x != want {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// refusedOnCPU passes where err wraps vkc.ErrUnsupported on a CPU driver
// (which then need not have written anything); elsewhere err must be nil.
func refusedOnCPU(t *testing.T, dev *vkc.Device, err error) bool {
	t.Helper()
	if dev.Info().Type == vkc.TypeCPU && err != nil {
		require.True(t, errors.Is(err, vkc.ErrUnsupported), "%v", err)
		return true
	}
	require.NoError(t, err)
	return false
}

func TestScatterAddOfManyRowsIntoOneAddsEveryRow(t *testing.T) {
	dev := openTest(t)
	const N = 70000
	src := ones(t, dev, N)
	idx, err := vkc.NewBuffer[uint32](dev, N) // zeros: every row into row 0
	require.NoError(t, err)
	t.Cleanup(func() { _ = idx.Close() })
	require.NoError(t, Fill(dev.Stream(), 0, Of(idx, N)))
	out := ones(t, dev, 2)
	require.NoError(t, ScatterAdd(dev.Stream(), Of(src, N, 1), Of(idx, N), Of(out, 2, 1)))
	require.Equal(t, []float32{N + 1, 1}, readF32(t, out))
}

func TestArgmaxAlongLongRowFindsTheLastElement(t *testing.T) {
	dev := openTest(t)
	const R = overBudget
	xs := make([]float32, R)
	xs[R-1] = 1
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	out := fresh[uint32](t, dev, 1)
	if refusedOnCPU(t, dev, Argmax(dev.Stream(), Of(x, 1, R), 1, Of(out, 1))) {
		return
	}
	got, err := out.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, []uint32{R - 1}, got)
}

func TestAddBroadcastOverLongRowsWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	a := ones(t, dev, 2*N)
	b := ones(t, dev, N)
	out := fresh[float32](t, dev, 2*N)
	require.NoError(t, Add(dev.Stream(), Of(a, 2, N), Of(b, N), Of(out, 2, N)))
	n, first := countNot(readF32(t, out), 2)
	require.Zero(t, n, "elements not 2, the first at %d", first)
}

func TestCopyOfTransposedLongAxisWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	src := ones(t, dev, 2*N)
	dst := fresh[float32](t, dev, 2*N)
	require.NoError(t, Copy(dev.Stream(), Of(src, N, 2).T(), Of(dst, 2, N)))
	n, first := countNot(readF32(t, dst), 1)
	require.Zero(t, n, "elements not 1, the first at %d", first)
}

func TestGatherOfWideRowsWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const D = overBudget
	table := ones(t, dev, D)
	idx := fresh[uint32](t, dev, 1)
	require.NoError(t, Fill(dev.Stream(), 0, Of(idx, 1)))
	out := fresh[float32](t, dev, D)
	require.NoError(t, Gather(dev.Stream(), Of(table, 1, D), Of(idx, 1), Of(out, 1, D)))
	n, first := countNot(readF32(t, out), 1)
	require.Zero(t, n, "elements not 1, the first at %d", first)
}
