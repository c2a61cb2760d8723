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
	_, err = y.Read(context.Background())
	require.ErrorIs(t, err, ErrStreamCapturing, "y is an input of the graph (read-write): as an eager Axpy on it would be skipped, the replay leaves it unwritten")
	require.NoError(t, y.WriteOn(s, []float32{10, 20, 30}))
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{11, 22, 33}, readAll(t, y), "an enqueued replay with written inputs writes its outputs again")
	require.NoError(t, g.Close())
}

// Closing a buffer while another goroutine launches on it: every launch
// either runs before the memory is freed or is refused with ErrClosed, so
// a buffer that reuses the memory afterwards keeps exactly what it was
// given. (A launch that had passed the buffer's checks used to be recorded
// after Close freed its memory, and wrote into the next buffer there.)
func TestBufferCloseWaitsForRacingLaunch(t *testing.T) {
	dev := openTest(t)
	const n = 64
	for i := 0; i < 20; i++ {
		s := dev.NewStream()
		x, err := FromSlice(dev, ramp(n, 1))
		require.NoError(t, err)
		y, err := FromSlice(dev, ramp(n, 0))
		require.NoError(t, err)
		started := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			first := true
			for {
				err := Axpy(s, 1, x, y)
				if first {
					close(started)
					first = false
				}
				if err != nil {
					stopped <- err
					return
				}
			}
		}()
		<-started
		require.NoError(t, y.Close())
		require.ErrorIs(t, <-stopped, ErrClosed)

		want := ramp(n, 1000)
		z, err := FromSlice(dev, want)
		require.NoError(t, err)
		require.NoError(t, s.Sync(context.Background()))
		require.Equal(t, want, readAll(t, z), "round %d", i)
		require.NoError(t, x.Close())
		require.NoError(t, z.Close())
	}
}

// Closing a user kernel while another goroutine launches it: every launch
// is recorded before the pipeline is destroyed or refused with ErrClosed,
// never recorded with a destroyed pipeline (the validation layer checks).
func TestKernelCloseWaitsForRacingLaunch(t *testing.T) {
	dev := openTest(t)
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	spec := affineSpec(t)
	push := affinePush(2, 1, n)
	for i := 0; i < 10; i++ {
		k, err := dev.LoadKernel(spec)
		require.NoError(t, err)
		s := dev.NewStream()
		started := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			first := true
			for {
				err := k.Launch(s, [3]uint32{1, 1, 1}, push, x, y)
				if first {
					close(started)
					first = false
				}
				if err != nil {
					stopped <- err
					return
				}
			}
		}()
		<-started
		require.NoError(t, k.Close())
		require.ErrorIs(t, <-stopped, ErrClosed)
		require.NoError(t, s.Sync(context.Background()))
	}
	errs, warns, recent := dev.ValidationMessages()
	require.Zero(t, errs+warns, "validation messages: %q", recent)
}
