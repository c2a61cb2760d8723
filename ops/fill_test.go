package ops

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Fill writes its value exactly into every element of a strided tensor,
// and into nothing else of its buffer, for every type it takes.
func TestFillWritesExactlyItsElements(t *testing.T) {
	dev := openTest(t)
	checkFill[float32](t, dev, 1.0/3)
	checkFill[vkc.Float16](t, dev, -0.333251953125) // a Float16 value
	checkFill[float64](t, dev, math.Pi)
	checkFill[int32](t, dev, -123456789)
	checkFill[uint32](t, dev, 0xdeadbeef)
}

// checkFill fills rows 1 and 3 of a 4 x 6 buffer's columns 1, 3, 5 with
// v as a T and checks them and the untouched rest.
func checkFill[T vkc.Element](t *testing.T, dev *vkc.Device, v float64) {
	t.Helper()
	const old = 7
	all := make([]float64, 24)
	for i := range all {
		all[i] = old
	}
	b := upload[T](t, dev, all)
	dst := Strided(b, 7, []int{2, 3}, []int{12, 2}) // elements 7, 9, 11, 19, 21, 23
	value := fromFloat[T](v)
	require.NoError(t, Fill(dev.Stream(), value, dst))
	want := append([]float64(nil), all...)
	for _, i := range []int{7, 9, 11, 19, 21, 23} {
		want[i] = toFloat(value)
	}
	require.Equal(t, want, download(t, b), "%T", *new(T))
}

// A captured graph of a dynamic Fill and a dynamic Copy writes the rows
// the param holds on each replay, and leaves the rows past them as they
// were, for a count going down and up.
func TestFillAndCopyFollowDynamicRows(t *testing.T) {
	dev := openTest(t)
	const capRows, C = 6, 3
	rows, err := vkc.NewParam[uint32](dev, capRows)
	require.NoError(t, err)
	defer rows.Close()
	src := make([]float64, capRows*C)
	for i := range src {
		src[i] = float64(i + 1)
	}
	xb := upload[float32](t, dev, src)
	yb := upload[float32](t, dev, make([]float64, capRows*C))
	zb := upload[int32](t, dev, make([]float64, capRows*C))
	s := dev.NewStream()
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := Fill(s, int32(-5), Of(zb, capRows, C).Dynamic(rows)); err != nil {
			return err
		}
		return Copy(s, Of(xb, capRows, C).Dynamic(rows), Of(yb, capRows, C).Dynamic(rows))
	})
	require.NoError(t, err)
	defer g.Close()
	for _, n := range []int{2, 5, 1, 6} {
		require.NoError(t, yb.WriteOn(s, make([]float32, capRows*C)))
		require.NoError(t, zb.WriteOn(s, make([]int32, capRows*C)))
		require.NoError(t, rows.Set(uint32(n)))
		require.NoError(t, g.Replay())
		wantY, wantZ := make([]float64, capRows*C), make([]float64, capRows*C)
		for i := range n * C {
			wantY[i], wantZ[i] = src[i], -5
		}
		require.Equal(t, wantY, download(t, yb), "Copy of %d rows", n)
		require.Equal(t, wantZ, download(t, zb), "Fill of %d rows", n)
	}
}

// Copy takes src in any layout (here transposed) into dst's, exactly.
func TestCopyOfATransposedTensor(t *testing.T) {
	dev := openTest(t)
	x := upload[uint32](t, dev, []float64{1, 2, 3, 4, 5, 0xffffffff})
	y := fresh[uint32](t, dev, 6)
	require.NoError(t, Copy(dev.Stream(), Of(x, 2, 3).T(), Of(y, 3, 2)))
	require.Equal(t, []float64{1, 4, 2, 5, 3, 0xffffffff}, download(t, y))
}

// Fill and Copy refuse a dst whose elements are not distinct, as every
// op writing a tensor does, and leave it unwritten.
func TestFillAndCopyRefuseABroadcastDst(t *testing.T) {
	dev := openTest(t)
	x := upload[float32](t, dev, []float64{1, 2, 3})
	y := fresh[float32](t, dev, 3)
	dst := Of(y, 3).Slice(0, 0, 1).BroadcastTo(2, 1)
	require.ErrorContains(t, Fill(dev.Stream(), float32(1), dst), "more than once")
	require.ErrorContains(t, Copy(dev.Stream(), Of(x, 3).Slice(0, 0, 1).BroadcastTo(2, 1), dst), "more than once")
}

// TestFillOfTransposedLongAxisWritesEveryElement fills a transposed
// [2, N], rows too long for one group's lanes to cover within a CPU
// driver's loop budget.
func TestFillOfTransposedLongAxisWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	dst := fresh[float32](t, dev, 2*N)
	require.NoError(t, Fill(dev.Stream(), 4, Of(dst, N, 2).T()))
	requireEvery(t, dst, 4)
}
