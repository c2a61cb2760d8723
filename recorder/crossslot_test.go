package recorder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// A read on one stream of memory that another stream's pending work writes
// waits for that work: it submits the other slot's open batch and waits
// for it, and never returns the stale bytes.
func TestCrossSlotReadWaits(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.dev.Pause()
		require.NoError(t, g.fill(0, x, 3)) // open on slot 0, not submitted
		require.NoError(t, g.fill(0, y, 4))
		require.Equal(t, 0, g.dev.Pending())
		type result struct {
			v   []float32
			err error
		}
		done := make(chan result, 1)
		go func() {
			v, err := g.read(1, x)
			done <- result{v, err}
		}()
		eventually(t, "the read submits slot 0's batch", func() bool { return g.dev.Pending() == 1 })
		select {
		case r := <-done:
			t.Fatalf("the read returned %v, %v while the work writing x was pending", r.v, r.err)
		default:
		}
		g.dev.Resume()
		r := <-done
		require.NoError(t, r.err)
		require.Equal(t, splat(3), r.v)
		g.mustRead(1, y, splat(4))
		g.close()
	})
}

// A launch on one slot that reads what another slot's open batch writes
// submits that batch first, so the single queue runs the writer before the
// reader; the launch does not wait for it on the host.
func TestCrossSlotLaunchFlushesTheWriter(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, y, z := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(1, y, nil, ramp(1)))
		require.NoError(t, g.r.Sync(context.Background(), 1))
		g.dev.Pause()
		require.NoError(t, g.fill(0, x, 3))
		g.spy.take()
		require.NoError(t, g.add(1, x, y, z))
		require.Equal(t, []string{"toHost", "end", "submit", "begin", "dispatch"}, kinds(g.spy.take()),
			"slot 0's batch is closed and submitted before slot 1 records the launch")
		require.Equal(t, 1, g.dev.Pending())
		g.dev.Resume()
		g.mustRead(1, z, addf(splat(3), ramp(1)))

		// A copy and a replay follow the same rule.
		require.NoError(t, g.fill(0, x, 5))
		require.NoError(t, g.r.Copy(1, x, z, 4*n))
		g.mustRead(1, z, splat(5))
		graph, err := g.capture(1, func() error { return g.copyK(1, x, z) })
		require.NoError(t, err)
		require.NoError(t, g.fill(0, x, 6))
		require.NoError(t, graph.Replay())
		g.mustRead(1, z, splat(6))
		require.NoError(t, graph.Close())
		g.close()
	})
}

// A host write on one stream into memory another stream's pending work
// writes is ordered after that work.
func TestCrossSlotWriteOrdered(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x := g.buf()
		require.NoError(t, g.fill(0, x, 3))
		require.NoError(t, g.write(1, x, nil, ramp(1)))
		g.mustRead(0, x, ramp(1))
		g.mustRead(1, x, ramp(1))
		g.close()
	})
}

// When the other slot's batch fails to submit as the read flushes it, its
// writes are tainted: the read fails with ErrUnwritten and the cause, it
// does not return stale bytes.
func TestCrossSlotFailedWriterTaints(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.write(0, y, nil, ramp(2)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		require.NoError(t, g.fill(0, x, 3))
		cause := errors.New("queue full")
		g.dev.FailNth(hostdev.Submit, 1, cause)
		g.requireUnwritten(1, x, cause)
		g.mustRead(1, y, ramp(2))
		g.mustRead(0, y, ramp(2))
		g.close()
	})
}

// A write on one stream into a buffer whose persistent staging a replay
// pending on another slot copies from waits for that replay: the replay
// copies the bytes that were there when it was issued, and what it
// computed from them is right.
func TestCrossSlotWriteWaitsForReplayReadingStaging(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		h, c, j := g.buf(), g.buf(), g.buf()
		var sh *recorder.Staging
		require.NoError(t, g.fill(0, c, 1))
		graph, err := g.capture(0, func() error {
			if err := g.write(0, h, &sh, ramp(10)); err != nil {
				return err
			}
			return g.add(0, h, c, j)
		})
		require.NoError(t, err)
		g.dev.Pause()
		require.NoError(t, graph.Replay())
		waits, flushes := g.dev.Count(hostdev.WaitFence), g.dev.Count(hostdev.FlushMemory)
		done := make(chan error, 1)
		go func() { done <- g.write(1, h, &sh, ramp(100)) }()
		eventually(t, "the write waits for the replay or writes the staging", func() bool {
			return g.dev.Count(hostdev.WaitFence) > waits || g.dev.Count(hostdev.FlushMemory) > flushes
		})
		g.dev.Resume()
		require.NoError(t, <-done)
		g.mustRead(1, h, ramp(100))
		g.mustRead(0, j, addf(ramp(10), splat(1)), "the replay issued before the write copied the old bytes")
		require.NoError(t, graph.Close())
		g.r.ReleaseStaging(sh)
		g.close()
	})
}

// WriteFresh fills a new buffer on a slot with no window open, so no
// window records it, whichever stream opens one; with a window on every
// slot it is refused like a neighbour's write, and the buffer stays
// unwritten.
func TestWriteFreshSkipsWindows(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, fresh := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.PrepareCapture(0))
		require.NoError(t, g.fill(0, x, 2))
		require.NoError(t, g.r.BeginCapture(0))
		require.NoError(t, g.fill(0, x, 2))
		var st *recorder.Staging
		slot, err := g.r.WriteFresh(0, fresh, &st, bytesOf(ramp(7)))
		require.NoError(t, err)
		require.Equal(t, 1, slot, "slot 0 records stream 0's window; the write goes to slot 1")
		graph, err := g.r.EndCapture(0)
		require.NoError(t, err)
		g.mustRead(0, fresh, ramp(7), "the write ran, not recorded into the graph")
		require.NoError(t, graph.Close())

		other := g.buf()
		for s := range recorder.StreamID(2) {
			require.NoError(t, g.r.PrepareCapture(s))
		}
		_, err = g.r.WriteFresh(1, other, &st, bytesOf(ramp(3)))
		require.ErrorIs(t, err, errs.StreamCapturing)
		for s := range recorder.StreamID(2) {
			require.NoError(t, g.r.AbortCapture(s))
		}
		g.requireUnwritten(0, other, errFresh)
		if st != nil {
			g.r.ReleaseStaging(st)
		}
		g.close()
	})
}

// A write on one slot (a launch, a copy, a staged host write, a replay)
// of memory another slot's open batch still has to read submits that
// batch first, so the one queue runs the read before the write: the
// reader sees the old bytes, and the host waits for nothing.
func TestCrossSlotWriteAfterReadOrderedOnTheDevice(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, z, w := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(1, x, nil, ramp(1)))
		require.NoError(t, g.fill(1, w, 5))
		require.NoError(t, g.r.Sync(context.Background(), 1))
		graph, err := g.capture(1, func() error { return g.copyK(1, w, x) })
		require.NoError(t, err)
		writers := map[string]func() error{
			"launch": func() error { return g.fill(1, x, 9) },
			"copy":   func() error { return g.r.Copy(1, w, x, 4*n) },
			"replay": graph.Replay,
		}
		if !unified { // a mapped buffer's host write waits on the host instead
			writers["write"] = func() error { return g.write(1, x, nil, splat(9)) }
		}
		for name, write := range writers {
			require.NoError(t, g.write(0, x, nil, ramp(1)), name)
			require.NoError(t, g.r.Sync(context.Background(), 0), name)
			g.dev.Pause()
			require.NoError(t, g.copyK(0, x, z), name) // reads x, open on slot 0
			g.spy.take()
			require.NoError(t, write(), name) // returns with the device paused: no host wait for the reader
			require.Equal(t, []string{"toHost", "end", "submit"}, kinds(g.spy.take())[:3], "%s: slot 0's reader is submitted first", name)
			require.NoError(t, g.r.Flush(1), name)
			g.dev.Resume()
			g.mustRead(0, z, ramp(1), name+": the read ran before the write")
		}
		require.NoError(t, graph.Close())
		g.close()
	})
}
