package recorder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// A wait on another slot's event orders on the device, not the host: the
// producer's open batch is submitted at once (so the one queue runs it
// before anything the waiting slot submits later) and no fence is waited
// for. A write after a pending read on another stream, ordered by an
// event, then runs after that read: the reader sees the old bytes.
func TestEventWaitOrdersOnTheDevice(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, z := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.dev.Pause()
		require.NoError(t, g.copyK(0, x, z)) // reads x, open on slot 0
		ev, err := g.r.Record(0, false)
		require.NoError(t, err)
		g.spy.take()
		waits := g.dev.Count(hostdev.WaitFence)
		require.NoError(t, g.r.Wait(1, ev))
		require.Equal(t, []string{"toHost", "end", "submit"}, kinds(g.spy.take()), "the producer's batch is submitted")
		require.Equal(t, waits, g.dev.Count(hostdev.WaitFence), "the host waited for no fence")
		done, err := g.r.EventDone(ev)
		require.NoError(t, err)
		require.False(t, done, "the device is paused: the point has not run")
		require.NoError(t, g.fill(1, x, 9)) // writes what slot 0's pending copy reads
		require.NoError(t, g.r.Flush(1))
		g.dev.Resume()
		require.NoError(t, g.r.SyncEvent(context.Background(), ev))
		done, err = g.r.EventDone(ev)
		require.NoError(t, err)
		require.True(t, done)
		g.mustRead(1, z, ramp(1), "the copy ran before the later write")
		g.mustRead(1, x, splat(9))
		g.close()
	})
}

// A wait on an event of the same slot whose point is in the open batch
// puts a barrier in that batch; on an event already submitted it records
// nothing (every batch ends with one).
func TestEventWaitOnTheSameSlotIsABarrier(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x := g.buf()
	require.NoError(t, g.fill(0, x, 1))
	ev, err := g.r.Record(0, false)
	require.NoError(t, err)
	g.spy.take()
	require.NoError(t, g.r.Wait(2, ev)) // stream 2 shares slot 0
	require.Equal(t, []string{"between"}, kinds(g.spy.take()))
	require.NoError(t, g.r.Sync(context.Background(), 0))
	require.NoError(t, g.fill(0, x, 2))
	g.spy.take()
	require.NoError(t, g.r.Wait(2, ev))
	require.Empty(t, g.spy.take())
	g.close()
}

// An event whose batch failed to submit does not name later work: its
// host wait returns instead of waiting for a submission that never comes,
// and reports why, every time; a timed one's Since does too, instead of
// waiting for a timestamp nothing writes. What the batch was to write
// reads as unwritten with the cause.
func TestEventOfAFailedSubmission(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x := g.buf()
	start, err := g.r.Record(0, true)
	require.NoError(t, err)
	require.NoError(t, g.r.SyncEvent(context.Background(), start))
	require.NoError(t, g.fill(0, x, 1))
	ev, err := g.r.Record(0, true)
	require.NoError(t, err)
	cause := errors.New("queue full")
	g.dev.FailNth(hostdev.Submit, 1, cause)
	require.ErrorIs(t, g.r.SyncEvent(context.Background(), ev), cause)
	done, err := g.r.EventDone(ev)
	require.NoError(t, err)
	require.True(t, done, "nothing of it will run")
	require.NoError(t, g.fill(0, x, 2)) // later work takes the next serial
	require.ErrorIs(t, g.r.SyncEvent(context.Background(), ev), cause, "reported again")
	_, err = g.r.Since(context.Background(), ev, start)
	require.ErrorIs(t, err, cause)
	g.mustRead(0, x, splat(2))
	g.close() // hostdev reports a read of a timestamp never written as misuse
}

// Timed events read the device clock: on hostdev it advances by the
// invocations each dispatch runs, so the time between two events around a
// fill of n elements is at least n ticks (a period of 1 ns). Events left
// open are released by the recorder's Close; none leaks.
func TestTimedEventsMeasureTheWorkBetween(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x := g.buf()
	start, err := g.r.Record(0, true)
	require.NoError(t, err)
	require.NoError(t, g.fill(0, x, 1))
	mid, err := g.r.Record(0, true)
	require.NoError(t, err)
	require.NoError(t, g.fill(0, x, 2))
	require.NoError(t, g.fill(0, x, 3))
	end, err := g.r.Record(0, true)
	require.NoError(t, err)
	one, err := g.r.Since(context.Background(), mid, start)
	require.NoError(t, err)
	two, err := g.r.Since(context.Background(), end, mid)
	require.NoError(t, err)
	require.GreaterOrEqual(t, int64(one), int64(n))
	require.Equal(t, 2*one, two, "two fills take twice one on an in-order device")
	untimed, err := g.r.Record(0, false)
	require.NoError(t, err)
	_, err = g.r.Since(context.Background(), untimed, start)
	require.ErrorIs(t, err, errs.EventUntimed)
	require.NoError(t, mid.Close())
	_, err = g.r.Since(context.Background(), end, mid)
	require.ErrorIs(t, err, errs.Closed)
	g.close() // start and end still open: Close destroys their queries
}

// A profile times each launch of its stream between two timestamps: on
// hostdev a launch's ticks are its invocations, so three groups take
// three times one; a neighbour's launches are not in it, a nested profile is
// refused, and the pools are gone after it.
func TestProfileTimesEachLaunchOfItsStream(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.r.BeginProfile(0))
	require.ErrorIs(t, g.r.BeginProfile(0), errs.ProfileState, "nested")
	require.NoError(t, g.fill(0, x, 1))
	require.NoError(t, g.fill(2, y, 2)) // stream 2 shares slot 0: not profiled
	l := recorder.Launch{Args: []capture.Binding{rd(x), wr(y)}, Groups: [3]uint32{3, 1, 1}, Push: words(n)}
	require.NoError(t, g.r.Launch(0, g.k["copy"], &l))
	launches, total, err := g.r.EndProfile(context.Background(), 0)
	require.NoError(t, err)
	require.Len(t, launches, 2)
	require.Equal(t, "fill", launches[0].Kernel)
	require.Equal(t, "copy", launches[1].Kernel)
	require.Equal(t, [3]uint32{3, 1, 1}, launches[1].Groups)
	require.Positive(t, launches[0].Device)
	require.Equal(t, 3*launches[0].Device, launches[1].Device, "three groups of the same size run three times the invocations of one")
	require.GreaterOrEqual(t, total, launches[0].Device+launches[1].Device)
	_, _, err = g.r.EndProfile(context.Background(), 0)
	require.ErrorIs(t, err, errs.ProfileState, "ended twice")
	g.close()
}

// A replay on a profiling slot is one entry of the profile, timed by
// timestamps in the eager batches around it: the graph's own buffer holds
// none. On hostdev its ticks are the invocations of its launches.
func TestProfileTimesAReplayAsOneEntry(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.fill(0, x, 1))
	graph, err := g.capture(0, func() error {
		if err := g.copyK(0, x, y); err != nil {
			return err
		}
		return g.copyK(0, y, x)
	})
	require.NoError(t, err)
	require.NoError(t, g.r.BeginProfile(0))
	require.NoError(t, g.copyK(0, x, y))
	require.NoError(t, graph.Replay())
	launches, _, err := g.r.EndProfile(context.Background(), 0)
	require.NoError(t, err)
	require.Len(t, launches, 2)
	require.Equal(t, "replay of 2 launches", launches[1].Kernel)
	require.Equal(t, 2*launches[0].Device, launches[1].Device, "two copies of the same size")
	require.NoError(t, graph.Replay())
	require.NoError(t, g.r.Sync(context.Background(), 0))
	require.NoError(t, graph.Close())
	g.close()
}
