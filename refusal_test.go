package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replay refused because its slot is recording another window never
// enqueues: like a refused launch, its outputs read as ErrUnwritten
// (unwrapping to ErrStreamCapturing) rather than the last replay's values.
func TestReplayRefusedWhileSlotRecordsTaintsOutputs(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	x, err := FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	y, err := FromSlice(dev, []float32{10, 20, 30})
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{12, 24, 36}, readAll(t, y))

	neighbour := dev.StreamWithID(uint64(dev.Slots()))
	require.NoError(t, neighbour.PrepareCapture())
	require.NoError(t, neighbour.BeginCapture())
	require.ErrorIs(t, g.Replay(), ErrStreamCapturing)
	require.NoError(t, neighbour.AbortCapture())

	_, err = y.Read(context.Background())
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, ErrStreamCapturing)
	assert.Equal(t, []float32{1, 2, 3}, readAll(t, x), "the graph's inputs are untouched")

	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{13, 26, 39}, readAll(t, y), "an enqueued replay writes its outputs again")
	require.NoError(t, g.Close())
}
