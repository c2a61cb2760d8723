package blackbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// Promise (README "Capture: record once, replay for one submit"): the
// example as written. The window writes the first input and sums twice its
// first n elements; each replay takes a new input written in place and a
// new length set on the param, with no new capture, and the output read
// after the replay is that batch's.
func TestReadmeCaptureExample(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	in := upload(t, dev, filled(8, 0))
	out := upload(t, dev, filled(8, 0))
	total := upload(t, dev, []float32{0})
	first := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	n := newParam(t, dev, uint32(in.Len()))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := in.WriteOn(s, first); err != nil {
			return err
		}
		if err := opScaleDyn(s, ops.Const(2), in, out, n); err != nil {
			return err
		}
		return opSumDyn(s, out, total, n)
	})
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, []float32{16}, read(t, s, total), "the warmup ran the step on the first input")

	batches := []struct {
		xs []float32
		n  uint32
	}{
		{[]float32{1, 2, 3, 4, 5, 6, 7, 8}, 8},
		{[]float32{10, 20, 30, 40, 0, 0, 0, 0}, 4},
		{[]float32{5, 5, 5, 5, 5, 5, 5, 5}, 1},
	}
	for _, b := range batches {
		require.NoError(t, in.WriteOn(s, b.xs))
		require.NoError(t, n.Set(b.n))
		require.NoError(t, g.Replay())
		var want float32
		for _, x := range b.xs[:b.n] {
			want += 2 * x
		}
		assert.Equal(t, []float32{want}, read(t, s, total), "batch of %d", b.n)
	}
}
