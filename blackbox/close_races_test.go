package blackbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// A replay refused because its slot is recording another window never
// enqueues: like a refused launch, its outputs read as ErrUnwritten
// (unwrapping to ErrStreamCapturing) rather than the last replay's values.
func TestReplayRefusedWhileSlotRecordsTaintsOutputs(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	x, err := vkc.FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, []float32{10, 20, 30})
	require.NoError(t, err)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{12, 24, 36}, read(t, dev.Stream(), y))

	neighbour := dev.StreamWithID(uint64(dev.Slots()))
	require.NoError(t, neighbour.PrepareCapture())
	require.NoError(t, neighbour.BeginCapture())
	require.ErrorIs(t, g.Replay(), vkc.ErrStreamCapturing)
	require.NoError(t, neighbour.AbortCapture())

	_, err = y.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	require.ErrorIs(t, err, vkc.ErrStreamCapturing)
	assert.Equal(t, []float32{1, 2, 3}, read(t, dev.Stream(), x), "the graph's inputs are untouched")

	require.NoError(t, g.Replay())
	_, err = y.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrStreamCapturing, "y is an input of the graph (read-write): as an eager Axpy on it would be skipped, the replay leaves it unwritten")
	require.NoError(t, y.WriteOn(s, []float32{10, 20, 30}))
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{11, 22, 33}, read(t, dev.Stream(), y), "an enqueued replay with written inputs writes its outputs again")
	require.NoError(t, g.Close())
}

// Closing a buffer while another goroutine launches on it: every launch
// either runs before the memory is freed or is refused with ErrClosed, so
// a buffer that reuses the memory afterwards keeps exactly what it was
// given. (A launch that had passed the buffer's checks used to be recorded
// after Close freed its memory, and wrote into the next buffer there.)
func TestBufferCloseWaitsForRacingLaunch(t *testing.T) {
	dev := openDevice(t)
	const n = 64
	for i := 0; i < 20; i++ {
		s := dev.NewStream()
		x, err := vkc.FromSlice(dev, ramp(n, 1, 1))
		require.NoError(t, err)
		y, err := vkc.FromSlice(dev, ramp(n, 1, 0))
		require.NoError(t, err)
		started := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			first := true
			for {
				err := opAxpy(s, 1, x, y)
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
		require.ErrorIs(t, <-stopped, vkc.ErrClosed)

		want := ramp(n, 1, 1000)
		z, err := vkc.FromSlice(dev, want)
		require.NoError(t, err)
		require.NoError(t, s.Sync(context.Background()))
		require.Equal(t, want, read(t, dev.Stream(), z), "round %d", i)
		require.NoError(t, x.Close())
		require.NoError(t, z.Close())
	}
}

// Closing a user kernel while another goroutine launches it: every launch
// is recorded before the pipeline is destroyed or refused with ErrClosed,
// never recorded with a destroyed pipeline (the validation layer checks).
func TestKernelCloseWaitsForRacingLaunch(t *testing.T) {
	dev := openDevice(t)
	const n = 64
	x, err := vkc.FromSlice(dev, ramp(n, 1, 1))
	require.NoError(t, err)
	y, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	spec := vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t)}
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
		require.ErrorIs(t, <-stopped, vkc.ErrClosed)
		require.NoError(t, s.Sync(context.Background()))
	}
	errs, warns, recent := dev.ValidationMessages()
	require.Zero(t, errs+warns, "validation messages: %q", recent)
}
