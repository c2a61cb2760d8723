package blackbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// The capture-window scenarios (docs/guide/capture.md "The contract"), numbered as the
// project has always numbered them, with the validation layer on
// (openDevice fails a test on any message or leaked object). Values are
// small integers so every float32 result is exact and the expected numbers
// come from a host model of the same arithmetic. Scenario 19 inspects
// where buffers are placed and stays in the root package.

// Scenario 1: the warmup executes once, the recorded run executes nothing,
// and each replay advances the outputs exactly once.
func TestCaptureReplayAdvancesOncePerReplay(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	xs, ys := ramp(64, 1, 1), ramp(64, 3, 100)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	require.NoError(t, s.Sync(context.Background()))

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, opAxpy(s, 2, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, opAxpy(s, 2, x, y))
	g, err := s.EndCapture()
	require.NoError(t, err)

	want := axpyRef(2, xs, ys)
	require.Equal(t, want, read(t, s, y), "the warmup runs once and the recorded run runs nothing")
	for replay := 1; replay <= 2; replay++ {
		require.NoError(t, g.Replay())
		want = axpyRef(2, xs, want)
		require.Equal(t, want, read(t, s, y), "after replay %d", replay)
	}
	require.Equal(t, xs, read(t, s, x), "the input is never written")
	require.NoError(t, g.Close())
}

// Scenario 2: a 150-launch dependent chain; warmup plus N replays equal
// N+1 passes of the chain.
func TestCaptureLongChainEqualsPasses(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const n, pairs, replays = 32, 75, 4
	as, cs := ramp(n, 1, 0), ramp(n, 0, 1)
	a := upload(t, dev, as)
	b, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	c := upload(t, dev, cs)
	g, err := s.Capture(func(s *vkc.Stream) error {
		for range pairs { // b = a + c; a = b + c: every launch reads the previous one's output
			if err := opAdd(s, a, c, b); err != nil {
				return err
			}
			if err := opAdd(s, b, c, a); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	for range replays {
		require.NoError(t, g.Replay())
	}
	wantA, wantB := append([]float32(nil), as...), make([]float32, n)
	for range (replays + 1) * pairs {
		for i := range wantA {
			wantB[i] = wantA[i] + cs[i]
			wantA[i] = wantB[i] + cs[i]
		}
	}
	require.Equal(t, wantA, read(t, s, a))
	require.Equal(t, wantB, read(t, s, b))
	require.NoError(t, g.Close())
}

// Scenario 3: an input rewritten in place between replays (a plain WriteOn
// outside the window) feeds the next replay.
func TestCaptureInputRewrittenBetweenReplays(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n = 48
	ws := ramp(n, 2, 5)
	x, w := upload(t, dev, ramp(n, 1, 1)), upload(t, dev, ws)
	z, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAdd(s, x, w, z) })
	require.NoError(t, err)
	for round := range 3 {
		xs := ramp(n, float32(round+1), float32(10*round))
		require.NoError(t, x.WriteOn(s, xs))
		require.NoError(t, g.Replay())
		require.Equal(t, axpyRef(1, xs, ws), read(t, s, z), "round %d", round)
	}
	require.NoError(t, g.Close())
}

// Scenario 4: an intermediate freed inside the captured function keeps its
// range for the graph; buffers allocated and filled after the seal are never
// clobbered by a replay.
func TestCaptureFreedIntermediateNotClobbered(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const n = 64
	xs, ws := ramp(n, 1, 1), ramp(n, 0, 3)
	x, w := upload(t, dev, xs), upload(t, dev, ws)
	out, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *vkc.Stream) error {
		tmp, err := vkc.NewBuffer[float32](dev, n)
		if err != nil {
			return err
		}
		if err := opScale(s, 2, x, tmp); err != nil {
			return err
		}
		if err := opAdd(s, tmp, w, out); err != nil {
			return err
		}
		return tmp.Close()
	})
	require.NoError(t, err)
	require.NotZero(t, dev.MemoryStats().Guarded, "the intermediate freed in the window stays guarded")

	fresh := make([]*vkc.Buffer[float32], 8)
	for i := range fresh {
		fresh[i] = upload(t, dev, ramp(n, 1, float32(1000*(i+1))))
	}
	want := axpyRef(2, xs, ws)
	for replay := range 3 {
		require.NoError(t, g.Replay())
		require.Equal(t, want, read(t, s, out), "replay %d", replay)
		for i, f := range fresh {
			require.Equal(t, ramp(n, 1, float32(1000*(i+1))), read(t, s, f), "buffer %d after replay %d", i, replay)
		}
	}
	require.NoError(t, g.Close())
	require.Zero(t, dev.MemoryStats().Guarded, "closing the graph releases the guarded intermediate")
}

// Scenario 5: work inside the window on a buffer allocated there that the
// warmup did not prepare (here one needing a new page) fails with
// ErrAllocInCapture and dooms the window; the stream can prepare again.
func TestCaptureAllocNeedingPageFails(t *testing.T) {
	const page = 64 << 10
	dev := openDevice(t, vkc.WithPageSize(page))
	s := dev.NewStream()
	x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 0, 0))
	warmOps(t, dev)
	pages := dev.MemoryStats().Pages

	t.Run("manual window", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, opAxpy(s, 1, x, y))
		require.NoError(t, s.Sync(context.Background()))
		require.NoError(t, s.BeginCapture())
		require.NoError(t, opAxpy(s, 1, x, y))
		born, err := vkc.NewBuffer[float32](dev, page/f32Size) // a whole page: never fits the free rest
		require.NoError(t, err, "allocating is not refused")
		require.ErrorIs(t, vkc.Fill(s, born, 1), vkc.ErrAllocInCapture, "work on it is")
		g, err := s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrAllocInCapture)
		require.Nil(t, g)
		requireUnwritten(t, s, y, vkc.ErrAllocInCapture)
		require.Equal(t, pages+1, dev.MemoryStats().Pages, "the buffer's page")
		require.NoError(t, born.Close())
	})

	t.Run("Capture", func(t *testing.T) {
		calls := 0
		g, err := s.Capture(func(s *vkc.Stream) error {
			calls++
			if calls == 2 { // only the recorded run asks for a new buffer
				b, err := vkc.NewBuffer[float32](dev, page/f32Size)
				if err != nil {
					return err
				}
				defer b.Close()
				if err := vkc.Fill(s, b, 7); err != nil {
					return err
				}
			}
			return vkc.Fill(s, y, 7)
		})
		require.ErrorIs(t, err, vkc.ErrAllocInCapture)
		require.Nil(t, g)
	})

	t.Run("prepare again", func(t *testing.T) {
		require.NoError(t, y.WriteOn(s, ramp(16, 0, 0)))
		g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
		require.NoError(t, err)
		require.NoError(t, g.Replay())
		require.Equal(t, axpyRef(2, ramp(16, 1, 1), ramp(16, 0, 0)), read(t, s, y))
		require.NoError(t, g.Close())
	})
}

// Scenario 6: the owner's read or sync inside its window fails with
// ErrSyncInCapture and dooms it: nothing seals and the recorded outputs
// read as ErrUnwritten.
func TestCaptureOwnerReadDoomsWindow(t *testing.T) {
	for _, wait := range []string{"read", "sync"} {
		t.Run(wait, func(t *testing.T) {
			dev := openDevice(t)
			s := dev.NewStream()
			x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 2, 2))
			step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
			warmAndBegin(t, s, step)
			require.NoError(t, step(s))
			var err error
			if wait == "read" {
				_, err = y.ReadOn(context.Background(), s)
			} else {
				err = s.Sync(context.Background())
			}
			require.ErrorIs(t, err, vkc.ErrSyncInCapture)
			require.NoError(t, step(s), "the doomed window still accepts launches until it ends")
			g, err := s.EndCapture()
			require.ErrorIs(t, err, vkc.ErrSyncInCapture)
			require.Nil(t, g)
			requireUnwritten(t, s, y, vkc.ErrSyncInCapture)
			require.Equal(t, ramp(16, 1, 1), read(t, s, x), "what the window only read stays readable")
			axpyRuns(t, s)
		})
	}
}

// Scenario 7: a neighbour on the owner's slot is refused with
// ErrStreamCapturing for launches, reads and syncs, without dooming the
// owner's window; its refused outputs read as ErrUnwritten.
func TestCaptureNeighbourRefused(t *testing.T) {
	dev := openDevice(t)
	owner := dev.NewStream()
	neighbour := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	xs, ys := ramp(16, 1, 1), ramp(16, 5, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	a, b := upload(t, dev, ramp(16, 0, 3)), upload(t, dev, ramp(16, 0, 4))
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
	warmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	require.ErrorIs(t, opAxpy(neighbour, 1, a, b), vkc.ErrStreamCapturing)
	_, err := a.ReadOn(context.Background(), neighbour)
	require.ErrorIs(t, err, vkc.ErrStreamCapturing)
	require.ErrorIs(t, neighbour.Sync(context.Background()), vkc.ErrStreamCapturing)

	g, err := owner.EndCapture()
	require.NoError(t, err, "the neighbour's refusals do not doom the owner's window")
	require.NoError(t, g.Replay())
	require.Equal(t, axpyRef(2, xs, ys), read(t, owner, y))
	requireUnwritten(t, neighbour, b, vkc.ErrStreamCapturing)
	require.Equal(t, ramp(16, 0, 3), read(t, neighbour, a), "the refused launch only read a")
	require.NoError(t, g.Close())
	axpyRuns(t, neighbour)
}

// Scenario 8: a stream on another slot runs eager work during the window,
// unaffected, and the window still seals.
func TestCaptureOtherSlotUnaffected(t *testing.T) {
	dev := openDevice(t)
	owner := dev.NewStream()
	other := dev.NewStream()
	require.NotEqual(t, owner.ID()%uint64(dev.Slots()), other.ID()%uint64(dev.Slots()))
	xs, ys := ramp(16, 1, 1), ramp(16, 5, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	ps, qs := ramp(32, 1, 2), ramp(32, 0, 7)
	p, q := upload(t, dev, ps), upload(t, dev, qs)
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
	warmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	want := qs
	for i := range 3 {
		require.NoError(t, opAxpy(other, 3, p, q))
		want = axpyRef(3, ps, want)
		require.Equal(t, want, read(t, other, q), "eager step %d", i)
	}
	require.NoError(t, other.Sync(context.Background()))

	g, err := owner.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, axpyRef(2, xs, ys), read(t, owner, y))
	require.NoError(t, g.Close())
}

// Scenario 9: an end from a non-owner closes the window with an error
// naming both streams; the owner's later end finds nothing recording and
// the slot is usable again.
func TestCaptureEndFromNonOwner(t *testing.T) {
	dev := openDevice(t)
	owner := dev.NewStream()
	intruder := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 5, 0))
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
	warmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	g, err := intruder.EndCapture()
	require.ErrorIs(t, err, vkc.ErrCaptureState)
	require.Nil(t, g)
	require.Contains(t, err.Error(), fmt.Sprintf("stream %d", owner.ID()))
	require.Contains(t, err.Error(), fmt.Sprintf("stream %d", intruder.ID()))
	requireUnwritten(t, owner, y, vkc.ErrCaptureState)

	g, err = owner.EndCapture()
	require.ErrorIs(t, err, vkc.ErrCaptureState)
	require.Nil(t, g)

	axpyRuns(t, owner)
	axpyRuns(t, intruder)
	require.NoError(t, y.WriteOn(owner, ramp(16, 5, 0)))
	g, err = owner.Capture(step)
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, axpyRef(2, ramp(16, 1, 1), ramp(16, 5, 0)), read(t, owner, y))
	require.NoError(t, g.Close())
}

// Scenario 10: every wrong transition fails with ErrCaptureState and leaves
// the window as it was; the slot works normally after each.
func TestCaptureWrongTransitionsChangeNothing(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	neighbour := dev.StreamWithID(s.ID() + uint64(dev.Slots()))
	xs, ys := ramp(16, 1, 1), ramp(16, 5, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }

	// sealsAfter finishes a window left Recording and checks the graph it
	// seals replays exactly the recorded step.
	sealsAfter := func(t *testing.T) {
		t.Helper()
		require.NoError(t, step(s))
		g, err := s.EndCapture()
		require.NoError(t, err, "the misuse left the window intact")
		before := read(t, s, y)
		require.NoError(t, g.Replay())
		require.Equal(t, axpyRef(1, xs, before), read(t, s, y))
		require.NoError(t, g.Close())
	}

	t.Run("from Idle", func(t *testing.T) {
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState)
		g, err := s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		require.ErrorIs(t, s.AbortCapture(), vkc.ErrCaptureState)
		axpyRuns(t, s)
		axpyRuns(t, neighbour)
	})

	t.Run("from Prepared", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		require.ErrorIs(t, s.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.AbortCapture(), vkc.ErrCaptureState)
		axpyRuns(t, s) // the warmup executes
		require.NoError(t, s.BeginCapture(), "still Prepared for its owner")
		sealsAfter(t)
		axpyRuns(t, s)
	})

	t.Run("from Recording", func(t *testing.T) {
		warmAndBegin(t, s, step)
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, s.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, neighbour.AbortCapture(), vkc.ErrCaptureState)
		sealsAfter(t)
		axpyRuns(t, s)
		axpyRuns(t, neighbour)
	})

	t.Run("End from Prepared aborts", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		g, err := s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState, "the failed warmup's window is gone")
		axpyRuns(t, neighbour)
	})
}

// Scenario 11: AbortCapture after PrepareCapture frees the stream, and
// nothing the warmup grew leaks.
func TestCaptureAbortAfterPrepare(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	neighbour := dev.StreamWithID(s.ID() + uint64(dev.Slots()))
	warmOps(t, dev)
	baseline := dev.MemoryStats().LiveClaims
	x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 5, 0))

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, x.WriteOn(s, ramp(16, 2, 2)))
	require.Equal(t, 1, dev.LiveStaging(), "a warmup write gives x its host staging")
	require.NoError(t, opAxpy(s, 1, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.AbortCapture())
	require.Equal(t, axpyRef(1, ramp(16, 2, 2), ramp(16, 5, 0)), read(t, s, y), "the warmup's work is real")

	axpyRuns(t, neighbour)
	axpyRuns(t, s)
	require.NoError(t, s.PrepareCapture(), "the stream can prepare again")
	require.NoError(t, s.AbortCapture())

	require.Equal(t, 1, dev.LiveStaging(), "x keeps its staging for its lifetime")
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
	require.Zero(t, dev.LiveStaging())
	require.Equal(t, baseline, dev.MemoryStats().LiveClaims)
	require.Zero(t, dev.MemoryStats().Guarded)
}

// Scenario 12: a host write inside the window is recorded as a copy from
// the buffer's own host staging. Every replay copies what the staging holds;
// a WriteOn between replays refreshes it (no re-capture); the staging lives
// until the buffer and every graph copying from it are closed.
func TestCaptureHostWriteUsesRetainedStaging(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const n = 32
	x, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	y, err := vkc.NewBuffer[float32](dev, n)
	require.NoError(t, err)
	first, zero := ramp(n, 1, 1), ramp(n, 0, 0)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, first); err != nil {
			return err
		}
		return opScale(s, 2, x, y)
	})
	require.NoError(t, err)
	require.Equal(t, 1, dev.LiveStaging(), "x's staging, shared by x and the graph")
	require.Equal(t, axpyRef(2, first, zero), read(t, s, y))

	second := ramp(n, -1, 50)
	require.NoError(t, x.WriteOn(s, second))
	require.NoError(t, g.Replay())
	require.Equal(t, axpyRef(2, second, zero), read(t, s, y), "the write between replays fed the replay")

	require.NoError(t, vkc.Fill(s, x, 100)) // device copy only: the staging still holds second
	require.Equal(t, ramp(n, 0, 100), read(t, s, x))
	require.NoError(t, g.Replay())
	require.Equal(t, second, read(t, s, x), "the replay copied what the staging holds")
	require.Equal(t, axpyRef(2, second, zero), read(t, s, y))
	require.Equal(t, 1, dev.LiveStaging())

	t.Run("buffer closed first", func(t *testing.T) {
		require.NoError(t, x.Close())
		require.Equal(t, 1, dev.LiveStaging(), "the graph still copies from it")
		require.NoError(t, vkc.Fill(s, y, 0))
		require.NoError(t, g.Replay())
		require.Equal(t, axpyRef(2, second, zero), read(t, s, y))
		require.NoError(t, g.Close())
		require.Zero(t, dev.LiveStaging())
	})

	t.Run("graph closed first", func(t *testing.T) {
		u, err := vkc.NewBuffer[float32](dev, n)
		require.NoError(t, err)
		g2, err := s.Capture(func(s *vkc.Stream) error { return u.WriteOn(s, first) })
		require.NoError(t, err)
		require.Equal(t, 1, dev.LiveStaging())
		require.NoError(t, g2.Close())
		require.Equal(t, 1, dev.LiveStaging(), "the buffer keeps its staging for its lifetime")
		require.NoError(t, u.Close())
		require.Zero(t, dev.LiveStaging())
	})
}

// Scenario 15: Close while a replay is in flight waits for it and keeps its
// results; a second Close is harmless; Replay after Close is ErrClosed.
func TestCaptureCloseWaitsForReplay(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n = 1 << 12
	xs, ys := ramp(n, 0, 1), ramp(n, 1, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	g, err := s.Capture(func(s *vkc.Stream) error {
		for range 8 {
			if err := opAxpy(s, 1, x, y); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)

	type outcome struct {
		replays int
		last    error
	}
	racer := make(chan outcome)
	go func() { // replays until the Close below lands between two of them
		var o outcome
		for o.last = g.Replay(); o.last == nil; o.last = g.Replay() {
			o.replays++
		}
		racer <- o
	}()
	for range 3 {
		require.NoError(t, g.Replay())
	}
	require.NoError(t, g.Close())
	raced := <-racer
	require.ErrorIs(t, raced.last, vkc.ErrClosed)
	total := 3 + raced.replays
	require.NoError(t, g.Close(), "a second Close is harmless")
	require.ErrorIs(t, g.Replay(), vkc.ErrClosed)

	want := ys
	for range (1 + total) * 8 {
		want = axpyRef(1, xs, want)
	}
	require.Equal(t, want, read(t, s, y), "every replay enqueued before Close completed")
}

// Scenario 16: two graphs sharing buffers; closing one keeps the other's
// guards, so its buffers survive reuse and it still replays.
func TestCaptureTwoGraphsShareBuffers(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const n = 64
	xs, ys := ramp(n, 1, 1), ramp(n, 2, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	g1, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)
	g2, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 2, x, y) })
	require.NoError(t, err)
	want := axpyRef(3, xs, ys)
	require.NoError(t, g1.Replay())
	require.NoError(t, g2.Replay())
	want = axpyRef(3, xs, want)
	require.Equal(t, want, read(t, s, y))

	require.NoError(t, g1.Close())
	require.NoError(t, x.Close()) // g2 still guards x's range
	require.NotZero(t, dev.MemoryStats().Guarded)
	fresh := make([]*vkc.Buffer[float32], 8)
	for i := range fresh {
		fresh[i] = upload(t, dev, ramp(n, 0, float32(-100*(i+1))))
	}
	for range 2 {
		require.NoError(t, g2.Replay())
		want = axpyRef(2, xs, want)
	}
	require.Equal(t, want, read(t, s, y))
	for i, f := range fresh {
		require.Equal(t, ramp(n, 0, float32(-100*(i+1))), read(t, s, f), "buffer %d", i)
	}
	require.NoError(t, g2.Close())
	require.Zero(t, dev.MemoryStats().Guarded)
}

// Scenario 17: eager work between replays that cycles far more distinct
// descriptor sets through the graph's slot than its cache holds (512) never
// invalidates the graph's pinned sets. Small batches let submissions
// complete, so the cache really evicts (and frees and rewrites sets) while
// the graph lives.
func TestCaptureSurvivesDescriptorCacheChurn(t *testing.T) {
	const cacheSize = 512
	dev := openDevice(t, vkc.WithBatchSize(16))
	s := dev.Stream() // the churn below runs on the graph's own slot
	const n, pool = 8, 24
	xs, ys := ramp(n, 1, 1), ramp(n, 0, 0)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)

	ones := []*vkc.Buffer[float32]{upload(t, dev, ramp(n, 0, 1)), upload(t, dev, ramp(n, 0, 1))}
	bufs := make([]*vkc.Buffer[float32], pool)
	model := make([]float32, pool) // every buffer holds one value in all its elements
	for i := range bufs {
		model[i] = float32(i)
		bufs[i] = upload(t, dev, ramp(n, 0, model[i]))
	}
	want := axpyRef(1, xs, ys)
	sets := 0
	for round, one := range ones {
		for j := range pool { // bufs[j] = bufs[i] + one for every ordered pair: 552 distinct sets a round
			for i := range pool {
				if i == j {
					continue
				}
				require.NoError(t, opAdd(s, bufs[i], one, bufs[j]))
				model[j] = model[i] + 1
				sets++
			}
		}
		require.Greater(t, sets, (round+1)*cacheSize)
		require.NoError(t, g.Replay())
		want = axpyRef(1, xs, want)
		require.Equal(t, want, read(t, s, y), "round %d", round)
		for i, b := range bufs {
			require.Equal(t, ramp(n, 0, model[i]), read(t, s, b), "round %d buffer %d", round, i)
		}
	}
	require.Less(t, dev.LiveObjects()["descriptor-set"], int64(sets),
		"the cache evicted: %d distinct sets went through the slot", sets)
	require.NoError(t, g.Close())
}

// Scenario 18: back-to-back replays with no host wait run in order: 20
// replays of a dependent two-step chain then one read equal 20 passes.
func TestCaptureBackToBackReplaysOrdered(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n, replays = 16, 20
	xs, ys, zs := ramp(n, 1, 1), ramp(n, 1, 0), ramp(n, 0, 5)
	x, y, z := upload(t, dev, xs), upload(t, dev, ys), upload(t, dev, zs)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opAxpy(s, 1, x, y); err != nil { // y += x
			return err
		}
		return opAxpy(s, 1, y, z) // z += y, reading this pass's y
	})
	require.NoError(t, err)
	wantY, wantZ := axpyRef(1, xs, ys), axpyRef(1, axpyRef(1, xs, ys), zs)
	require.Equal(t, wantZ, read(t, s, z))
	for range replays {
		require.NoError(t, g.Replay())
		wantY = axpyRef(1, xs, wantY)
		wantZ = axpyRef(1, wantY, wantZ)
	}
	require.Equal(t, wantZ, read(t, s, z))
	require.Equal(t, wantY, read(t, s, y))
	require.NoError(t, g.Close())
}

// FromSlice while a window is open on the default stream's slot (stream
// Slots() shares it) still works: the new buffer is filled on a slot with
// no window, and the window is untouched.
func TestFromSliceBesideAWindowOnTheDefaultSlot(t *testing.T) {
	dev := openDevice(t)
	s := dev.StreamWithID(uint64(dev.Slots()))
	x, y := upload(t, dev, ramp(8, 1, 1)), upload(t, dev, ramp(8, 0, 0))
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, opAxpy(s, 1, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, opAxpy(s, 1, x, y))
	z, err := vkc.FromSlice(dev, ramp(8, 0, 5))
	require.NoError(t, err, "a new buffer is not refused by the window on slot 0")
	g, err := s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	assert.Equal(t, ramp(8, 2, 2), read(t, s, y))
	assert.Equal(t, ramp(8, 0, 5), read(t, dev.NewStream(), z))
	require.NoError(t, g.Close())
}
