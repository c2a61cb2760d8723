// Attacks on promises kept below the root package that need fault
// injection or the recorder itself: taint after failed submissions and
// fence waits, reads of another slot's pending work on a staged device,
// window calls after the recorder closed. Each failed on the code it was
// written against; the attacks made through the public API alone are in
// blackbox/capture_edges_test.go.

package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// A replay whose input a failed submission tainted after the capture
// leaves its outputs tainted with that failure, as the eager launch would.
func TestAttackReplayOfTaintedInputTaintsOutputs(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.NewStream()
	x := capBuffer(t, dev, capRamp(16, 1, 1))
	y := capBuffer(t, dev, capRamp(16, 0, 0))
	src := capBuffer(t, dev, capRamp(16, 7, 0))
	g, err := s.Capture(func(s *Stream) error { return Scale(s, 2, x, y) })
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(16, 2, 2), capReadOn(t, s, y))

	cause := submitFailure()
	require.NoError(t, Copy(s, src, x))
	fd.failNext(callSubmit, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	capRequireUnwritten(t, s, x, cause)

	require.NoError(t, g.Replay())
	capRequireUnwritten(t, s, y, cause)
	require.NoError(t, g.Close())
}

// A read on stream B of a buffer that work recorded on stream A (another
// slot) will write either waits for that work or fails with ErrUnwritten;
// it never returns the bytes from before that work.
func TestAttackCrossStreamReadOfPendingWork(t *testing.T) {
	for _, staged := range []bool{false, true} {
		name := map[bool]string{false: "mapped", true: "staged"}[staged]
		t.Run(name, func(t *testing.T) {
			var dev *Device
			if staged {
				dev, _ = openStagedFaulty(t)
			} else {
				dev = openTest(t)
			}
			a, b := dev.NewStream(), dev.NewStream()
			require.NotEqual(t, a.ID()%uint64(dev.Slots()), b.ID()%uint64(dev.Slots()))
			xs, ys := capRamp(64, 1, 1), capRamp(64, 1000, 1)
			x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
			require.NoError(t, dev.Stream().Sync(context.Background()))
			want := capAxpy(1, xs, ys)

			require.NoError(t, Axpy(a, 1, x, y)) // recorded on A, not submitted
			requireNotStale(t, b, y, want, ys, "the bytes from before the pending launch")

			g, err := a.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
			require.NoError(t, err)
			require.NoError(t, a.Sync(context.Background()))
			before := capAxpy(2, xs, ys)
			require.Equal(t, before, capReadOn(t, a, y))
			require.NoError(t, g.Replay()) // submitted on A, not waited for
			requireNotStale(t, b, y, capAxpy(3, xs, ys), before, "the bytes from before the pending replay")
			require.NoError(t, g.Close())
		})
	}
}

// requireNotStale reads buf on s: the read returns want or fails with
// ErrUnwritten; never the stale bytes, which staleWhat describes.
func requireNotStale(t *testing.T, s *Stream, buf *Buffer[float32], want, stale []float32, staleWhat string) {
	t.Helper()
	got, err := buf.ReadOn(context.Background(), s)
	if err != nil {
		require.ErrorIs(t, err, ErrUnwritten)
		return
	}
	require.NotEqual(t, stale, got, "the read returned %s", staleWhat)
	require.Equal(t, want, got)
}

// While one slot records, stream work on another slot that needs a new
// page gets it and leaves the window intact (streams on other slots run
// normally, like CUDA's thread-local capture mode): on a staged device the
// other stream's first read needs a readback page. A buffer belongs to no
// stream, so NewBuffer needing a page during a window is refused with an
// error that says so (like cudaMalloc in CUDA's global mode);
// TestCaptureAllocNeedingPageFails shows it dooms the window.
func TestAttackAllocationOnOtherSlotDuringWindow(t *testing.T) {
	const page = 64 << 10
	dev, _ := openStagedFaulty(t, WithPageSize(page))
	owner, other := dev.NewStream(), dev.NewStream()
	require.NotEqual(t, owner.ID()%uint64(dev.Slots()), other.ID()%uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 0, 3)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	big := scratch[float32](t, dev, page/elemSize) // a page of its own, before the window
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	capWarmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	pages := dev.MemoryStats().Pages
	require.NoError(t, Fill(other, big, 3))
	got, err := big.ReadOn(context.Background(), other)
	require.NoError(t, err, "another slot's read gets its readback page during the window")
	require.Equal(t, float32(3), got[page/elemSize-1])
	require.Greater(t, dev.MemoryStats().Pages, pages, "the read needed a page of its own")

	g, err := owner.EndCapture()
	require.NoError(t, err, "the other slot's allocation did not doom the window")
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, xs, ys), capReadOn(t, owner, y))

	require.NoError(t, owner.PrepareCapture())
	require.NoError(t, step(owner))
	require.NoError(t, owner.Sync(context.Background()))
	require.NoError(t, owner.BeginCapture())
	born, err := NewBuffer[float32](dev, page/elemSize)
	require.NoError(t, err, "a buffer made while a window records is served")
	err = Fill(owner, born, 1)
	require.ErrorIs(t, err, ErrAllocInCapture, "the window refuses work on it")
	require.ErrorContains(t, err, "allocate buffers before Capture", "the error states the rule")
	require.NoError(t, Fill(other, born, 2), "another slot works on it")
	require.NoError(t, owner.AbortCapture())
	got, err = born.ReadOn(context.Background(), other)
	require.NoError(t, err)
	require.Equal(t, float32(2), got[0])
	require.NoError(t, g.Close())
}

// The property test without its restrictions: reads of buffers that work
// pending on another slot writes, replays whose inputs are unwritten, and
// no wait for the device after a fence wait failed. Every read must still
// return exactly what completed work wrote (the pending work's bytes, if
// the read waits for it) or fail with ErrUnwritten.
func TestAttackPropertyCrossSlotReadsAndTaintedReplays(t *testing.T) {
	seeds, steps := gcpressure.Scaled(20, 200), gcpressure.Scaled(800, 2000)
	var total propTest
	for seed := range seeds {
		total.add(runProperty(t, seed, steps, propOptions{crossSlotReads: true, taintedReplays: true, lateFailedWork: true}))
	}
	total.log(t, seeds)
}

// A submission whose fence wait failed (without device loss) may still
// run: the recorder keeps it until Close and taints what it writes. A host
// write of that buffer afterwards, and a read once the queue has moved on,
// must return what the write wrote (the write waited for the failed work)
// or fail with ErrUnwritten; the late work's bytes must not come back as
// valid. Here a large fill ahead of it in the same submission keeps the
// failed work pending while the host writes.
func TestAttackLateWorkOfFailedFenceWait(t *testing.T) {
	dev, fd := openFaulty(t)
	s, other := dev.NewStream(), dev.NewStream()
	const n = 64
	big := scratch[float32](t, dev, 16<<20)
	y := capBuffer(t, dev, capRamp(n, 0, 0))
	require.NoError(t, Fill(s, big, 1))
	require.NoError(t, Fill(s, y, 66))
	cause := fenceFailure()
	fd.failNext(callWaitFence, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	capRequireUnwritten(t, s, y, cause)

	want := capRamp(n, 1, 1)
	require.NoError(t, y.WriteOn(s, want))
	// Work submitted after the failed submission completes after it too.
	z := capBuffer(t, dev, capRamp(n, 0, 0))
	require.NoError(t, Fill(other, z, 2))
	require.NoError(t, other.Sync(context.Background()))
	requireNotStale(t, s, y, want, capRamp(n, 66, 0), "the bytes of the failed submission, which ran after the write")
}

// Device.Close can run between EndCapture's (or AbortCapture's) closed
// check and its slot lock: the recorder's Close has then destroyed the slot
// and freed the window's command buffer, and the call, which does not check
// the recorder again, dereferences it (a nil *vk.CommandBuffer). Calling
// the recorder's Close directly stands for that interleaving; both calls
// must return ErrClosed.
func TestAttackWindowCallsAfterRecorderClose(t *testing.T) {
	for _, call := range []string{"EndCapture", "AbortCapture"} {
		t.Run(call, func(t *testing.T) {
			dev := openTest(t)
			s := dev.NewStream()
			x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 0))
			step := func(s *Stream) error { return Axpy(s, 1, x, y) }
			capWarmAndBegin(t, s, step)
			require.NoError(t, step(s))
			require.NoError(t, dev.rec.Close())
			var err error
			require.NotPanics(t, func() {
				if call == "EndCapture" {
					_, err = s.EndCapture()
				} else {
					err = s.AbortCapture()
				}
			})
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}
