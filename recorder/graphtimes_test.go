package recorder_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// captureWith is the rig's capture with options, returning also the
// commands the recorded run recorded (the graph's buffer, from its begin
// to its end).
func (g *rig) captureWith(s recorder.StreamID, o recorder.CaptureOptions, fn func() error) (*recorder.Graph, []event, error) {
	if err := g.r.PrepareCapture(s); err != nil {
		return nil, nil, err
	}
	if err := fn(); err != nil {
		return nil, nil, errors.Join(err, g.r.AbortCapture(s))
	}
	if err := g.r.Sync(context.Background(), s); err != nil {
		return nil, nil, errors.Join(err, g.r.AbortCapture(s))
	}
	g.spy.take()
	if err := g.r.BeginCaptureWith(s, o); err != nil {
		return nil, nil, err
	}
	if err := fn(); err != nil {
		return nil, nil, errors.Join(err, g.r.AbortCapture(s))
	}
	graph, err := g.r.EndCapture(s)
	return graph, g.spy.take(), err
}

// twoCopies is the work the tests capture: a copy of one group, then one
// of three groups the same size.
func (g *rig) twoCopies(x, y alloc.Claim) func() error {
	return func() error {
		if err := g.copyK(0, x, y); err != nil {
			return err
		}
		l := recorder.Launch{Args: []capture.Binding{rd(y), wr(x)}, Groups: [3]uint32{3, 1, 1}, Push: words(n)}
		return g.r.Launch(0, g.k["copy"], &l)
	}
}

// A graph captured with profiling times each of its launches at every
// replay, its buffer resubmitted as it is: the times read after a replay
// are that replay's, per launch in recorded order with kernel and groups
// (on hostdev a launch's ticks are its invocations, so three groups take
// three times one), and the total spans them. Before any replay there are
// none; after Close, errs.Closed; the pools go with the graph.
func TestProfiledGraphTimesEachLaunchOfEveryReplay(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		graph, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
		require.NoError(t, err)
		require.True(t, graph.Profiled())
		_, _, err = graph.LastProfile(context.Background())
		require.ErrorIs(t, err, errs.ProfileState, "before any replay")
		for replay := range 3 {
			require.NoError(t, graph.Replay())
			launches, total, err := graph.LastProfile(context.Background())
			require.NoError(t, err, "replay %d", replay)
			require.Len(t, launches, 2)
			require.Equal(t, "copy", launches[0].Kernel)
			require.Equal(t, [3]uint32{1, 1, 1}, launches[0].Groups)
			require.Equal(t, [3]uint32{3, 1, 1}, launches[1].Groups)
			require.Positive(t, launches[0].Device)
			require.Equal(t, 3*launches[0].Device, launches[1].Device)
			require.GreaterOrEqual(t, total, launches[0].Device+launches[1].Device)
		}
		g.mustRead(0, x, ramp(1), "the graph ran as captured")
		require.NoError(t, graph.Close())
		_, _, err = graph.LastProfile(context.Background())
		require.ErrorIs(t, err, errs.Closed)
		require.NotContains(t, g.dev.Live(), "timestamps", "the graph's pools went with it")
		g.close()
	})
}

// A graph captured without profiling records exactly the buffer it would
// with it less the timestamps: no timestamp command and no pool, at
// capture or at replay. With it, each launch sits between two timestamps.
func TestUnprofiledGraphRecordsNoTimestamps(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	pools := g.dev.Count(hostdev.NewTimestamps)
	plain, plainCmds, err := g.captureWith(0, recorder.CaptureOptions{}, g.twoCopies(x, y))
	require.NoError(t, err)
	require.False(t, plain.Profiled())
	require.NotContains(t, kinds(plainCmds), "stamp")
	require.NoError(t, plain.Replay())
	require.NoError(t, plain.Replay())
	require.Equal(t, []string{"submit", "submit"}, kinds(g.spy.take()), "a replay submits the buffer alone")
	_, _, err = plain.LastProfile(context.Background())
	require.ErrorIs(t, err, errs.GraphUnprofiled)
	require.NoError(t, plain.Close())
	require.Equal(t, pools, g.dev.Count(hostdev.NewTimestamps), "no timestamp pool for a graph captured without profiling")

	timed, timedCmds, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
	require.NoError(t, err)
	var untimed []string
	for i, k := range kinds(timedCmds) {
		if k == "stamp" {
			continue
		}
		if timedCmds[i].kind == "dispatch" {
			require.Equal(t, "stamp", timedCmds[i-1].kind, "a timestamp before each launch")
			require.Equal(t, "stamp", timedCmds[i+1].kind, "a timestamp after each launch")
		}
		untimed = append(untimed, k)
	}
	require.Equal(t, kinds(plainCmds), untimed, "the same commands less the timestamps")
	stamps := 0
	for _, e := range timedCmds {
		if e.kind == "stamp" {
			stamps++
		}
	}
	require.Equal(t, 3, stamps, "two launches in a row share the timestamp between them")
	require.NoError(t, timed.Close())
	g.close()
}

// A copy recorded between two launches (a host write inside the window)
// takes device time of its own: the launch after it writes its own
// timestamp before it, so neither launch's time holds the copy's (on
// hostdev a copy advances the clock by its size).
func TestProfiledGraphKeepsCopiesOutOfLaunchTimes(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y, w := g.buf(), g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	var sw *recorder.Staging
	graph, cmds, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, func() error {
		if err := g.copyK(0, x, y); err != nil {
			return err
		}
		if err := g.write(0, w, &sw, ramp(7)); err != nil {
			return err
		}
		return g.copyK(0, w, x)
	})
	require.NoError(t, err)
	var order []string
	for _, k := range kinds(cmds) {
		if k == "stamp" || k == "copy" || k == "dispatch" || k == "dispatch+barrier" {
			order = append(order, k)
		}
	}
	require.Equal(t, []string{"stamp", "dispatch", "stamp", "copy", "stamp", "dispatch+barrier", "stamp"}, order)
	require.NoError(t, graph.Replay())
	launches, total, err := graph.LastProfile(context.Background())
	require.NoError(t, err)
	require.Len(t, launches, 2)
	require.Equal(t, launches[0].Device, launches[1].Device, "two copy kernels of one group each; the host write's copy is in neither")
	require.Greater(t, total, launches[0].Device+launches[1].Device, "the total spans the copy between them")
	g.mustRead(0, x, ramp(7))
	require.NoError(t, graph.Close())
	g.close()
}

// The per-launch times refuse what they cannot give rather than give
// another replay's: a replay that did not enqueue, one whose completion
// could not be waited for (each error wraps the cause), until a replay
// completes again. A pool the recording cannot have fails the capture and
// leaks nothing.
func TestGraphProfileRefusals(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	cause := errors.New("injected")

	g.dev.FailNth(hostdev.NewTimestamps, 1, cause)
	_, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
	require.ErrorIs(t, err, cause, "a profiled capture times every launch or fails")

	graph, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
	require.NoError(t, err)
	require.NoError(t, graph.Replay())
	g.dev.FailNth(hostdev.Submit, 1, cause)
	require.ErrorIs(t, graph.Replay(), cause)
	_, _, err = graph.LastProfile(context.Background())
	require.ErrorIs(t, err, errs.ProfileState, "the last replay did not enqueue")
	require.ErrorIs(t, err, cause)

	require.NoError(t, g.write(0, x, nil, ramp(1)))
	require.NoError(t, graph.Replay())
	launches, _, err := graph.LastProfile(context.Background())
	require.NoError(t, err, "a replay that completes has times again")
	require.Len(t, launches, 2)

	g.dev.FailFrom(hostdev.WaitFence, 0, cause)
	require.NoError(t, graph.Replay())
	_, _, err = graph.LastProfile(context.Background())
	require.ErrorIs(t, err, errs.ProfileState, "the replay's wait failed")
	require.ErrorIs(t, err, cause)
	_, _, err = graph.LastProfile(context.Background())
	require.ErrorIs(t, err, errs.ProfileState, "and fails again")
	g.dev.Heal(hostdev.WaitFence)
	launches, _, err = graph.LastProfile(context.Background())
	require.NoError(t, err, "a wait that succeeds at last gives the times")
	require.Len(t, launches, 2)

	g.dev.FailFrom(hostdev.WaitFence, 0, cause)
	require.NoError(t, graph.Replay())
	_, _, err = graph.LastProfile(context.Background())
	require.ErrorIs(t, err, cause)
	require.NoError(t, graph.Close(), "the buffer and its pools, maybe still pending, stay until the recorder closes")
	g.dev.Heal(hostdev.WaitFence)
	g.close()
}

// With replays in flight the times are of the latest one queued before
// the call: it waits for that one, so nothing of the graph is pending
// when it returns.
func TestGraphProfileWaitsForTheLatestReplay(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	graph, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
	require.NoError(t, err)
	g.dev.Pause()
	require.NoError(t, graph.Replay())
	require.NoError(t, graph.Replay())
	type result struct {
		launches []recorder.LaunchTime
		err      error
	}
	got := make(chan result)
	go func() {
		l, _, err := graph.LastProfile(context.Background())
		got <- result{l, err}
	}()
	g.dev.Resume()
	res := <-got
	require.NoError(t, res.err)
	require.Len(t, res.launches, 2)
	require.Zero(t, g.dev.Pending(), "both replays ran before the times were read")

	g.dev.Pause()
	require.NoError(t, graph.Replay())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = graph.LastProfile(ctx)
	require.ErrorIs(t, err, context.Canceled, "a cancelled wait leaves the replay running")
	g.dev.Resume()
	_, _, err = graph.LastProfile(context.Background())
	require.NoError(t, err)
	require.NoError(t, graph.Close())
	g.close()
}

// Reading the times races Close, the graph's and the recorder's: each
// read either completes or is refused with errs.Closed, and nothing leaks.
func TestGraphProfileRacesClose(t *testing.T) {
	for round := range 20 {
		g := newRig(t, false, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		graph, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
		require.NoError(t, err)
		require.NoError(t, graph.Replay())
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if err := graph.Replay(); err != nil && !errors.Is(err, errs.Closed) {
						t.Errorf("round %d: Replay: %v", round, err)
					}
					if _, _, err := graph.LastProfile(context.Background()); err != nil && !errors.Is(err, errs.Closed) {
						t.Errorf("round %d: LastProfile: %v", round, err)
					}
				}
			}()
		}
		if round%2 == 0 {
			require.NoError(t, graph.Close())
			wg.Wait()
			g.close()
		} else {
			g.close() // the recorder's Close destroys the open graph's pools
			wg.Wait()
			require.NoError(t, graph.Close())
		}
	}
}

// noClock is a device whose queue takes no timestamps.
type noClock struct{ recorder.Device }

func (d noClock) Info() recorder.DeviceInfo {
	info := d.Device.Info()
	info.Limits.TimestampPeriod = 0
	return info
}

// A device without timestamps refuses a profiled capture at its begin,
// leaving the window prepared: a plain begin then records as usual.
func TestProfiledCaptureWithoutTimestamps(t *testing.T) {
	dev := hostdev.New(hostdev.Options{})
	r, err := recorder.New(noClock{dev}, recorder.Options{Slots: 2, PageSize: 64 << 10})
	require.NoError(t, err)
	k, err := r.NewKernel(code, descs["fill"])
	require.NoError(t, err)
	x, err := r.Alloc(alloc.DeviceLocal, 4*n)
	require.NoError(t, err)
	fill := func() error {
		l := recorder.Launch{Args: []capture.Binding{wr(x)}, Groups: [3]uint32{1, 1, 1}, Push: words(0, n)}
		return r.Launch(0, k, &l)
	}
	require.NoError(t, r.PrepareCapture(0))
	require.NoError(t, fill())
	require.ErrorIs(t, r.BeginCaptureWith(0, recorder.CaptureOptions{Profile: true}), errs.Unsupported)
	require.NoError(t, r.BeginCapture(0), "the window is still prepared")
	require.NoError(t, fill())
	graph, err := r.EndCapture(0)
	require.NoError(t, err)
	require.False(t, graph.Profiled())
	require.NoError(t, graph.Replay())
	require.NoError(t, graph.Close())
	require.NoError(t, r.Close())
	requireClean(t, dev)
}

// Random windows of copy launches (random groups and buffers), host
// writes and same-window event waits, each captured twice, without and
// with profiling: the two recordings are the same commands less the
// timestamps; every launch lies between two; and after a replay each
// launch's time matches hostdev's clock (its invocations: groups times
// the one-group time), with the total the launches plus the host writes'
// copies between the first launch and the last (a copy advances the
// clock by its size) — so no copy's time is counted in a launch.
func TestProfiledGraphTimesMatchTheClock(t *testing.T) {
	for seed := range int64(40) {
		rng := rand.New(rand.NewSource(seed))
		g := newRig(t, false, recorder.Options{Slots: 2})
		bufs := []alloc.Claim{g.buf(), g.buf(), g.buf()}
		for i, c := range bufs {
			require.NoError(t, g.write(0, c, nil, ramp(float32(10*i))))
		}
		type op struct {
			kind     int // 0: copy launch, 1: host write, 2: event wait
			src, dst int
			groups   uint32
		}
		var prog []op
		for range 2 + rng.Intn(10) {
			o := op{kind: rng.Intn(4) % 3, src: rng.Intn(3), dst: rng.Intn(3), groups: 1 + uint32(rng.Intn(4))}
			if o.kind == 0 && o.src == o.dst {
				o.dst = (o.src + 1) % 3
			}
			prog = append(prog, o)
		}
		staging := make([]*recorder.Staging, len(bufs))
		run := func() error {
			for i, o := range prog {
				var err error
				switch o.kind {
				case 0:
					l := recorder.Launch{Args: []capture.Binding{rd(bufs[o.src]), wr(bufs[o.dst])}, Groups: [3]uint32{o.groups, 1, 1}, Push: words(n)}
					err = g.r.Launch(0, g.k["copy"], &l)
				case 1:
					err = g.write(0, bufs[o.dst], &staging[o.dst], ramp(float32(100*i)))
				default:
					var ev *recorder.Event
					if ev, err = g.r.Record(0, false); err == nil {
						err = g.r.Wait(0, ev)
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		plain, plainCmds, err := g.captureWith(0, recorder.CaptureOptions{}, run)
		require.NoError(t, err, "seed %d", seed)
		timed, timedCmds, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, run)
		require.NoError(t, err, "seed %d", seed)

		var untimed []string
		for i, e := range timedCmds {
			if e.kind == "stamp" {
				continue
			}
			if e.kind == "dispatch" {
				j := i - 1
				for timedCmds[j].kind == "barrier" {
					j-- // a barrier takes no device time: the stamp before it serves
				}
				require.Equal(t, "stamp", timedCmds[j].kind, "seed %d: a timestamp before each launch, nothing timed between", seed)
				require.Equal(t, "stamp", timedCmds[i+1].kind, "seed %d: and right after it", seed)
			}
			untimed = append(untimed, kinds(timedCmds[i:i+1])...)
		}
		require.Equal(t, kinds(plainCmds), untimed, "seed %d: the same commands less the timestamps", seed)
		require.NotContains(t, kinds(plainCmds), "stamp", "seed %d", seed)

		require.NoError(t, timed.Replay())
		launches, total, err := timed.LastProfile(context.Background())
		var copies []uint32
		first, last, between := -1, -1, time.Duration(0)
		for i, o := range prog {
			if o.kind == 0 {
				copies = append(copies, o.groups)
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if len(copies) == 0 {
			require.NoError(t, err)
			require.Empty(t, launches)
			require.Zero(t, total)
		} else {
			require.NoError(t, err, "seed %d", seed)
			require.Len(t, launches, len(copies))
			unit := launches[0].Device / time.Duration(copies[0])
			require.Positive(t, unit)
			var sum time.Duration
			for i, l := range launches {
				require.Equal(t, [3]uint32{copies[i], 1, 1}, l.Groups)
				require.Equal(t, time.Duration(copies[i])*unit, l.Device, "seed %d, launch %d: its invocations and nothing else", seed, i)
				sum += l.Device
			}
			for _, o := range prog[first:last] {
				if o.kind == 1 {
					between += time.Duration(4 * n) // the write's copy, in bytes (ticks of period 1)
				}
			}
			require.Equal(t, sum+between, total, "seed %d: the total spans the launches and the copies between them", seed)
		}
		require.NoError(t, plain.Replay())
		require.NoError(t, plain.Close())
		require.NoError(t, timed.Close())
		g.close()
	}
}

// A cancelled context stops only a wait: when the latest replay has
// already completed there is nothing to wait for, and the times are given
// (never an empty profile without an error).
func TestGraphProfileOfACompletedReplayIgnoresACancelledContext(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	graph, _, err := g.captureWith(0, recorder.CaptureOptions{Profile: true}, g.twoCopies(x, y))
	require.NoError(t, err)
	require.NoError(t, graph.Replay())
	require.NoError(t, g.r.Sync(context.Background(), 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	launches, _, err := graph.LastProfile(ctx)
	require.NoError(t, err, "the replay completed: nothing to wait for")
	require.Len(t, launches, 2)
	require.NoError(t, graph.Close())
	g.close()
}
