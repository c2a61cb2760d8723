package recorder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// A fence wait that fails without a device loss leaves its batch possibly
// still pending. Its writes read as unwritten with the cause, and nothing
// the batch uses (its descriptor sets, the kernel's pipeline) is freed
// under it: the next drain waits for it again.
func TestFailedFenceWaitKeepsWhatTheBatchUses(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1, CacheSize: 1})
		x, y, z := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		cause := errors.New("fence wait interrupted")
		k, err := g.r.NewKernel(code, descs["copy"])
		require.NoError(t, err)
		launch := func(dst alloc.Claim) error {
			l := recorder.Launch{Args: []capture.Binding{rd(x), wr(dst)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}
			return g.r.Launch(0, k, &l)
		}
		require.NoError(t, launch(y))
		g.dev.FailNth(hostdev.WaitFence, 1, cause)
		require.NoError(t, g.r.Flush(0))
		require.NoError(t, g.fill(0, z, 2)) // a later batch that completes
		err = g.r.Sync(context.Background(), 0)
		require.ErrorIs(t, err, cause)
		g.requireUnwritten(0, y, cause)
		require.NoError(t, launch(z)) // a cache miss at capacity: must not evict y's set
		require.NoError(t, k.Release())
		g.mustRead(0, z, ramp(1))
		g.mustRead(0, x, ramp(1))
		g.close()
	})
}

// After a fence wait failed, a host write must not land under the batch
// that may still be pending and write the same memory: it waits for it
// once the device answers, or fails while it does not.
func TestFailedFenceWaitThenHostWrite(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x := g.buf()
		cause := errors.New("fence wait interrupted")
		g.dev.Pause()
		require.NoError(t, g.fill(0, x, 3))
		require.NoError(t, g.r.Flush(0))
		g.dev.FailFrom(hostdev.WaitFence, 0, cause)
		require.ErrorIs(t, g.r.Sync(context.Background(), 0), cause)
		require.ErrorIs(t, g.write(0, x, nil, ramp(1)), cause, "the fill may still be pending")
		g.requireUnwritten(0, x, cause)
		g.dev.Heal(hostdev.WaitFence)
		done := make(chan error, 1)
		go func() { done <- g.write(0, x, nil, ramp(1)) }()
		g.dev.Resume()
		require.NoError(t, <-done)
		g.mustRead(0, x, ramp(1))
		g.close()
	})
}

// A kernel released while a batch using it failed its fence wait for good
// is kept until Close, which waits for the device.
func TestFailedFenceWaitDefersKernelDestruction(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 1})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	k, err := g.r.NewKernel(code, descs["copy"])
	require.NoError(t, err)
	l := recorder.Launch{Args: []capture.Binding{rd(x), wr(y)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}
	pipes := g.dev.Live()["pipeline"]
	require.NoError(t, g.r.Launch(0, k, &l))
	cause := errors.New("fence wait interrupted")
	g.dev.FailFrom(hostdev.WaitFence, 0, cause)
	require.ErrorIs(t, g.r.Sync(context.Background(), 0), cause)
	require.ErrorIs(t, k.Release(), cause)
	require.Equal(t, pipes, g.dev.Live()["pipeline"], "kept while its batch may be pending")
	g.dev.Heal(hostdev.WaitFence)
	g.requireUnwritten(0, y, cause)
	g.close()
}

// A recorded launch's output, when a later failure in the window makes the
// caller abort it, reads as unwritten with that failure as its cause.
func TestAbortOfDoomedWindowKeepsTheCause(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y, h := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		var sh *recorder.Staging
		require.NoError(t, g.r.PrepareCapture(0))
		require.NoError(t, g.write(0, h, &sh, ramp(2)))
		require.NoError(t, g.r.BeginCapture(0))
		require.NoError(t, g.copyK(0, x, y))
		cause := errors.New("flush refused")
		g.dev.FailNth(hostdev.FlushMemory, 1, cause)
		require.ErrorIs(t, g.write(0, h, &sh, ramp(3)), cause)
		require.NoError(t, g.r.AbortCapture(0))
		g.requireUnwritten(0, y, cause)
		g.requireUnwritten(0, h, cause)
		g.r.ReleaseStaging(sh)
		g.close()
	})
}

// A host write on one stream into memory another slot's batch writes, when
// the wait for that batch fails, waits for it again rather than land under
// it; while the device does not answer, the write fails.
func TestCrossSlotWriteAfterFailedFenceWait(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 2})
	x := g.buf()
	cause := errors.New("fence wait interrupted")
	g.dev.Pause()
	require.NoError(t, g.fill(0, x, 3))
	g.dev.FailNth(hostdev.WaitFence, 1, cause)
	waits, flushes := g.dev.Count(hostdev.WaitFence), g.dev.Count(hostdev.FlushMemory)
	done := make(chan error, 1)
	go func() { done <- g.write(1, x, nil, ramp(1)) }()
	eventually(t, "the write waits again or writes", func() bool {
		return g.dev.Count(hostdev.WaitFence) >= waits+2 || g.dev.Count(hostdev.FlushMemory) > flushes
	})
	g.dev.Resume()
	require.NoError(t, <-done)
	g.mustRead(1, x, ramp(1))
	g.mustRead(0, x, ramp(1))

	g.dev.Pause()
	require.NoError(t, g.fill(0, x, 4))
	g.dev.FailFrom(hostdev.WaitFence, 0, cause)
	require.ErrorIs(t, g.write(1, x, nil, ramp(2)), cause, "the fill may still be pending")
	g.dev.Heal(hostdev.WaitFence)
	g.dev.Resume()
	g.requireUnwritten(1, x, cause)
	require.NoError(t, g.write(1, x, nil, ramp(2)))
	g.mustRead(0, x, ramp(2))
	g.close()
}

// A wait given a context that ends gives up without failing the work: the
// batch stays in flight, a read's readback goes back with it, and a later
// wait completes it.
func TestContextEndsAWait(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x := g.buf()
		require.NoError(t, g.fill(0, x, 3))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.dev.Pause()
		require.NoError(t, g.fill(0, x, 4))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 2)
		go func() { done <- g.r.Sync(ctx, 0) }()
		eventually(t, "the sync waits", func() bool { return g.dev.Pending() == 1 })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		ctx, cancel = context.WithCancel(context.Background())
		go func() { done <- g.r.Read(ctx, 0, x, make([]byte, 4*n)) }()
		waits := g.dev.Count(hostdev.WaitFence)
		eventually(t, "the read waits", func() bool { return g.dev.Count(hostdev.WaitFence) > waits })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		g.dev.Resume()
		g.mustRead(0, x, splat(4))
		g.close()
	})
}

// A graph closed while its last replay's fence wait failed keeps its
// command buffer until Close has waited for the device.
func TestGraphCloseAfterFailedWait(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	graph, err := g.capture(0, func() error { return g.copyK(0, x, y) })
	require.NoError(t, err)
	g.dev.Pause()
	require.NoError(t, graph.Replay())
	cause := errors.New("fence wait interrupted")
	g.dev.FailFrom(hostdev.WaitFence, 0, cause)
	require.ErrorIs(t, graph.Close(), cause)
	g.dev.Heal(hostdev.WaitFence)
	g.dev.Resume()
	g.requireUnwritten(0, y, cause)
	g.close()
}

// What a warmup frees is parked until the window begins; a window that
// ends before it begins releases it, after the eager work still using it.
func TestAbortedWarmupReleasesWhatItParked(t *testing.T) {
	for _, submitted := range []bool{false, true} {
		g := newRig(t, true, recorder.Options{Slots: 1})
		x := g.buf()
		require.NoError(t, g.r.PrepareCapture(0))
		t1, err := g.r.AllocOn(0, alloc.DeviceLocal, 4*n)
		require.NoError(t, err)
		require.NoError(t, g.fill(0, t1, 1))
		require.NoError(t, g.copyK(0, t1, x))
		require.NoError(t, g.r.Free(t1))
		claims := g.r.Stats().LiveClaims
		require.Equal(t, 2, claims, "parked, not freed")
		if submitted {
			require.NoError(t, g.r.Flush(0))
		}
		require.NoError(t, g.r.AbortCapture(0))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		require.Equal(t, 1, g.r.Stats().LiveClaims, "released after the work using it")
		g.mustRead(0, x, splat(1))
		g.close()
	}
}
