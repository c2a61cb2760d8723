package blackbox_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// eventOrderedRun drives random producers and consumers on several
// streams (each on its own slot) that are ordered against each other only
// by events: before a stream touches a buffer another stream used last, it
// waits on an event that stream recorded. Nothing syncs between streams;
// every read (on a random stream) is checked against a model, so a
// consumer that ran before its producer, or a producer that overwrote a
// buffer a pending consumer on another stream still had to read, shows
// as a wrong value. Eager host writes and replays of a graph are mixed in.
// With useEvents false no event is recorded: vkc then orders every
// cross-stream hazard on the device by itself.
func eventOrderedRun(t *testing.T, dev *vkc.Device, seed uint64, steps int, useEvents bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const nbuf, n = 5, 96
	streams := []*vkc.Stream{dev.NewStream(), dev.NewStream(), dev.NewStream()}
	bufs := make([]*vkc.Buffer[float32], nbuf)
	model := make([][]float32, nbuf)
	for i := range bufs {
		model[i] = seq(n, func(j int) float32 { return float32((i*n + j) % 7) })
		bufs[i] = upload(t, dev, model[i])
	}
	// The graph adds buffer 1 into buffer 0, on stream 0.
	g, err := streams[0].Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, bufs[1], bufs[0]) })
	require.NoError(t, err, "Capture")
	t.Cleanup(func() { _ = g.Close() })
	for j := range model[0] {
		model[0][j] += model[1][j] // the warmup ran once
	}
	last := make([]int, nbuf) // the stream that used each buffer last
	var events []*vkc.Event
	t.Cleanup(func() {
		for _, ev := range events {
			assert.NoError(t, ev.Close(), "Event.Close")
		}
	})
	// order makes stream si's later work run after everything the streams
	// that used the buffers last have queued, through events only.
	order := func(si int, touched ...int) {
		for _, bi := range touched {
			if o := last[bi]; o != si && useEvents {
				ev, err := streams[o].Record()
				require.NoError(t, err, "Record on stream %d", o)
				events = append(events, ev)
				require.NoError(t, streams[si].Wait(ev), "Wait on stream %d", si)
			}
			last[bi] = si
		}
	}
	ctx := testCtx(t)
	for step := range steps {
		si := rng.IntN(len(streams))
		s := streams[si]
		x, y := rng.IntN(nbuf), rng.IntN(nbuf)
		for y == x {
			y = rng.IntN(nbuf)
		}
		switch op := rng.IntN(10); {
		case op < 4: // y = a*x + y
			a := float32(rng.IntN(3) - 1)
			order(si, x, y)
			require.NoError(t, opAxpy(s, a, bufs[x], bufs[y]), "step %d: Axpy", step)
			for j := range model[y] {
				model[y][j] += a * model[x][j]
			}
		case op < 6: // y = x
			order(si, x, y)
			require.NoError(t, vkc.Copy(s, bufs[x], bufs[y]), "step %d: Copy", step)
			copy(model[y], model[x])
		case op < 7: // a host write
			order(si, y)
			v := float32(rng.IntN(5))
			require.NoError(t, bufs[y].WriteOn(s, filled(n, v)), "step %d: WriteOn", step)
			model[y] = filled(n, v)
		case op < 8: // a replay of the graph, on stream 0
			order(0, 0, 1)
			require.NoError(t, g.Replay(), "step %d: Replay", step)
			for j := range model[0] {
				model[0][j] += model[1][j]
			}
		default: // a read, checked against the model
			order(si, y)
			got, err := bufs[y].ReadOn(ctx, s)
			require.NoError(t, err, "step %d: ReadOn", step)
			require.Equal(t, model[y], got, "step %d (seed %d): buffer %d read on stream %d", step, seed, y, si)
		}
		// Values stay small integers: exact in float32 whatever the order
		// of operations, so a mismatch is an ordering fault.
		for bi := range model {
			for _, v := range model[bi] {
				if v > 1000 || v < -1000 {
					order(si, bi)
					require.NoError(t, vkc.Fill(s, bufs[bi], 1), "Fill")
					model[bi] = filled(n, 1)
					break
				}
			}
		}
	}
	for bi, b := range bufs {
		order(0, bi)
		got, err := b.ReadOn(ctx, streams[0])
		require.NoError(t, err)
		require.Equal(t, model[bi], got, "seed %d: buffer %d at the end", seed, bi)
	}
}

// TestEventsOrderStreamsLikeTheModel is the property test of events: many
// random runs, with the validation layer's synchronization validation on
// and no message allowed.
func TestEventsOrderStreamsLikeTheModel(t *testing.T) {
	for seed := range uint64(6) {
		dev := openDevice(t, vkc.WithSyncValidation(true), vkc.WithStreams(4))
		eventOrderedRun(t, dev, seed, 120, true)
	}
}

// Without events, every hazard between streams is ordered on the device
// all the same: a producer's pending write before another stream's
// consumer (submitted first), and a consumer's pending read before
// another stream's write of the same memory (submitted first too), so
// no read of the model's run ever sees a stale or early byte.
func TestStreamsOrderEveryHazardWithoutEvents(t *testing.T) {
	for seed := range uint64(6) {
		dev := openDevice(t, vkc.WithSyncValidation(true), vkc.WithStreams(4))
		eventOrderedRun(t, dev, 100+seed, 120, false)
	}
}

// TestEventHostSideAndErrors checks Sync and Done on the host and every
// refusal: nil and zero events, another device's, a closed one, and an
// event recorded inside a window used outside it.
func TestEventHostSideAndErrors(t *testing.T) {
	dev := openDevice(t, vkc.WithStreams(2))
	other := openDevice(t)
	s := dev.NewStream()
	x := upload(t, dev, filled(256, 1))
	y := upload(t, dev, filled(256, 2))
	require.NoError(t, opAxpy(s, 3, x, y))
	ev, err := s.Record()
	require.NoError(t, err)
	done, err := ev.Done()
	require.NoError(t, err)
	assert.False(t, done, "an event whose work is only queued on the host is not done")
	require.NoError(t, ev.Sync(testCtx(t)))
	done, err = ev.Done()
	require.NoError(t, err)
	assert.True(t, done, "done after Sync")

	var zero vkc.Event
	for name, bad := range map[string]*vkc.Event{"nil": nil, "zero": &zero} {
		assert.ErrorIs(t, s.Wait(bad), vkc.ErrEventUnrecorded, "Wait on a %s event", name)
		assert.ErrorIs(t, bad.Sync(context.Background()), vkc.ErrEventUnrecorded, "Sync of a %s event", name)
		_, err := bad.Done()
		assert.ErrorIs(t, err, vkc.ErrEventUnrecorded, "Done of a %s event", name)
		assert.NoError(t, bad.Close(), "Close of a %s event", name)
	}
	assert.ErrorIs(t, other.Stream().Wait(ev), vkc.ErrEventForeign, "Wait on another device's event")
	evOther, err := other.Stream().Record()
	require.NoError(t, err)
	_, err = ev.Since(evOther)
	assert.ErrorIs(t, err, vkc.ErrEventForeign, "Since across devices")
	_, err = ev.Since(ev)
	assert.ErrorIs(t, err, vkc.ErrEventUntimed, "Since of untimed events")

	require.NoError(t, ev.Close())
	require.NoError(t, ev.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Wait(ev), vkc.ErrClosed, "Wait on a closed event")
	assert.ErrorIs(t, ev.Sync(context.Background()), vkc.ErrClosed, "Sync of a closed event")

	var inWindow *vkc.Event
	runs := 0
	g, err := s.Capture(func(cs *vkc.Stream) error {
		runs++ // 1: the warmup, which runs eagerly; 2: the recorded run
		if err := opAxpy(cs, 1, x, y); err != nil {
			return err
		}
		e, err := cs.Record()
		if err != nil {
			return err
		}
		inWindow = e
		if err := cs.Wait(e); err != nil {
			return err // the same window: ordering inside the graph
		}
		if timed, err := cs.RecordTimed(); runs == 2 {
			assert.ErrorIs(t, err, vkc.ErrEventInCapture, "a timed event inside a window")
		} else if assert.NoError(t, err, "a timed event in the warmup") {
			assert.NoError(t, timed.Close())
		}
		return opAxpy(cs, 1, y, x)
	})
	require.NoError(t, err, "Capture with an event inside")
	defer g.Close()
	require.NoError(t, g.Replay())
	assert.ErrorIs(t, dev.NewStream().Wait(inWindow), vkc.ErrEventInCapture, "another stream's wait on a window's event")
	assert.ErrorIs(t, inWindow.Sync(context.Background()), vkc.ErrEventInCapture, "a host wait on a window's event")
}

// Events and profiles race Device.Close: every call completes or fails
// with ErrClosed, and the close leaves no Vulkan object alive, timed
// events' queries and a profile's pools included.
func TestEventsAndProfilesRaceClose(t *testing.T) {
	for round := range 4 {
		dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(3))
		require.NoError(t, err)
		x, err := vkc.FromSlice(dev, filled(512, 1))
		require.NoError(t, err)
		y, err := vkc.FromSlice(dev, filled(512, 0))
		require.NoError(t, err)
		var events []*vkc.Event
		for range 6 {
			s := dev.NewStream()
			require.NoError(t, opAxpy(s, 1, x, y))
			ev, err := s.RecordTimed()
			require.NoError(t, err)
			events = append(events, ev)
		}
		var wg sync.WaitGroup
		ok := func(what string, err error) {
			if err != nil && !errors.Is(err, vkc.ErrClosed) {
				t.Errorf("round %d: %s: %v", round, what, err)
			}
		}
		for i, ev := range events {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch i % 4 {
				case 0:
					ok("Sync", ev.Sync(context.Background()))
				case 1:
					ok("Close", ev.Close())
				case 2:
					ok("Wait", dev.NewStream().Wait(ev))
				default:
					_, err := ev.Since(events[0])
					ok("Since", err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := dev.NewStream().Profile(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
			ok("Profile", err)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, dev.Close())
		}()
		wg.Wait()
		assertClosedClean(t, dev)
	}
}

// Two Opens of one GPU are two devices: Wait and Since refuse each
// other's events with ErrEventForeign, both ways, and a refused Wait
// leaves the stream as it was; each device's own events work.
func TestEventsOfTwoOpensOfOneGPUAreForeign(t *testing.T) {
	first := openDevice(t)
	second := openDevice(t, vkc.WithDevice(first.Info().Name))
	require.Equal(t, first.Info().Name, second.Info().Name, "one GPU opened twice")
	timed := func(dev *vkc.Device) *vkc.Event {
		ev, err := dev.Stream().RecordTimed()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, ev.Close()) })
		return ev
	}
	a0, b0 := timed(first), timed(second)
	x := upload(t, second, filled(64, 1))
	y := upload(t, second, filled(64, 2))
	a1, b1 := timed(first), timed(second)
	for _, c := range []struct {
		name string
		s    *vkc.Stream
		ev   *vkc.Event
	}{{"second waits on first's", second.Stream(), a1}, {"first waits on second's", first.Stream(), b1}} {
		assert.ErrorIs(t, c.s.Wait(c.ev), vkc.ErrEventForeign, c.name)
	}
	_, err := a1.Since(b0)
	assert.ErrorIs(t, err, vkc.ErrEventForeign, "Since from the other Open's event")
	_, err = b1.Since(a0)
	assert.ErrorIs(t, err, vkc.ErrEventForeign, "Since from the other Open's event")

	require.NoError(t, opAxpy(second.Stream(), 3, x, y), "the refused Wait left the stream usable")
	assert.Equal(t, filled(64, 5), read(t, second.Stream(), y))
	for _, pair := range [][2]*vkc.Event{{a1, a0}, {b1, b0}} {
		d, err := pair[0].Since(pair[1])
		require.NoError(t, err, "Since within one device")
		assert.GreaterOrEqual(t, d, time.Duration(0))
	}
}
