package main

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// A queue handed to vkc alone (QueueLock nil): the program then leaves
// the queue to vkc until Close returns. lavapipe's family has one queue,
// so the program hands over its only one instead of a second: the vkc
// side is the same.

// With no lock of the program's, vkc serialises its own use of the queue:
// streams on several goroutines compute, sync and read at once with the
// layer silent (its thread-safety checks report a queue used by two
// threads at once), the program waits on the host for a fence vkc
// signals (no queue call), and after Close the queue is the program's
// again, for a fill of its own.
func TestAQueueGivenToVkcAlone(t *testing.T) {
	r := newTestRenderer(t)
	d := handed(r)
	d.QueueLock = nil
	dev, err := vulkango.Adopt(d)
	require.NoError(t, err)
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)

	const streams = 4
	want := reference(a, xs, ys)
	got := make([][]float32, streams)
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := dev.NewStream()
			y, err := vkc.FromSlice(dev, ys)
			if err != nil {
				errs[i] = err
				return
			}
			defer y.Close()
			for range 5 {
				if err := y.WriteOn(s, ys); err != nil {
					errs[i] = err
					return
				}
				if err := ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)); err != nil {
					errs[i] = err
					return
				}
				if err := s.Sync(context.Background()); err != nil {
					errs[i] = err
					return
				}
			}
			got[i], errs[i] = y.ReadOn(context.Background(), s)
		}()
	}
	wg.Wait()
	for i := range streams {
		require.NoError(t, errs[i], "stream %d", i)
		assert.Equal(t, want, got[i], "stream %d", i)
	}

	fence := newFenceFor(t, r)
	ev, err := dev.Stream().Record()
	require.NoError(t, err)
	require.NoError(t, vulkango.SignalEvent(ev, vk.NullSemaphore, fence))
	require.NoError(t, r.wait(fence))

	require.NoError(t, dev.Close())
	assert.Empty(t, dev.LiveObjects())
	h, err := r.newHostBuffer(64)
	require.NoError(t, err)
	defer r.destroyHostBuffer(h)
	require.NoError(t, r.fill(h, 0x3f800000))
	for i, v := range h.floats() {
		assert.Equal(t, float32(1), v, "the program's fill after Close, element %d", i)
	}
}
