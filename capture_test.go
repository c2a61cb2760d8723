package vkc

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The capture-window scenarios of DESIGN.md §4, on lavapipe with the
// validation layer (openTest fails a test on any message or leaked object).
// Values are small integers so every float32 result is exact and the
// expected numbers come from a host model of the same arithmetic.

// capRamp returns n values start, start+step, ... .
func capRamp(n int, start, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = start + float32(i)*step
	}
	return out
}

// capAxpy is the host model of Axpy: a*x + y.
func capAxpy(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// capBuffer is FromSlice that fails the test on error.
func capBuffer(t testing.TB, dev *Device, xs []float32) *Buffer[float32] {
	t.Helper()
	b, err := FromSlice(dev, xs)
	require.NoError(t, err)
	return b
}

// capReadOn reads b on stream s, failing the test on error.
func capReadOn(t testing.TB, s *Stream, b *Buffer[float32]) []float32 {
	t.Helper()
	out, err := b.ReadOn(context.Background(), s)
	require.NoError(t, err)
	return out
}

// capRequireUnwritten checks that reading b fails with ErrUnwritten
// unwrapping to cause.
func capRequireUnwritten(t testing.TB, s *Stream, b *Buffer[float32], cause error) {
	t.Helper()
	_, err := b.ReadOn(context.Background(), s)
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, cause)
}

// capSlotWorks checks that stream s still runs eager work: y = x + y.
func capSlotWorks(t testing.TB, s *Stream) {
	t.Helper()
	dev := s.Device()
	x := capBuffer(t, dev, capRamp(8, 1, 1))
	y := capBuffer(t, dev, capRamp(8, 10, 10))
	require.NoError(t, Axpy(s, 1, x, y))
	assert.Equal(t, capAxpy(1, capRamp(8, 1, 1), capRamp(8, 10, 10)), capReadOn(t, s, y))
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
}

// Scenario 1: the warmup executes once, the recorded run executes nothing,
// and each replay advances the outputs exactly once.
func TestCaptureReplayAdvancesOncePerReplay(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	xs, ys := capRamp(64, 1, 1), capRamp(64, 100, 3)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	require.NoError(t, s.Sync(context.Background()))

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, Axpy(s, 2, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, Axpy(s, 2, x, y))
	g, err := s.EndCapture()
	require.NoError(t, err)

	want := capAxpy(2, xs, ys)
	require.Equal(t, want, capReadOn(t, s, y), "the warmup runs once and the recorded run runs nothing")
	for replay := 1; replay <= 2; replay++ {
		require.NoError(t, g.Replay())
		want = capAxpy(2, xs, want)
		require.Equal(t, want, capReadOn(t, s, y), "after replay %d", replay)
	}
	require.Equal(t, xs, capReadOn(t, s, x), "the input is never written")
	require.NoError(t, g.Close())
}

// Scenario 2: a 150-launch dependent chain; warmup plus N replays equal
// N+1 passes of the chain.
func TestCaptureLongChainEqualsPasses(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	const n, pairs, replays = 32, 75, 4
	as, cs := capRamp(n, 0, 1), capRamp(n, 1, 0)
	a := capBuffer(t, dev, as)
	b, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	c := capBuffer(t, dev, cs)
	g, err := s.Capture(func(s *Stream) error {
		for range pairs { // b = a + c; a = b + c: every launch reads the previous one's output
			if err := Add(s, a, c, b); err != nil {
				return err
			}
			if err := Add(s, b, c, a); err != nil {
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
	require.Equal(t, wantA, capReadOn(t, s, a))
	require.Equal(t, wantB, capReadOn(t, s, b))
	require.NoError(t, g.Close())
}

// Scenario 3: an input rewritten in place between replays (a plain WriteOn
// outside the window) feeds the next replay.
func TestCaptureInputRewrittenBetweenReplays(t *testing.T) {
	dev := openTest(t, WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n = 48
	ws := capRamp(n, 5, 2)
	x, w := capBuffer(t, dev, capRamp(n, 1, 1)), capBuffer(t, dev, ws)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return Add(s, x, w, z) })
	require.NoError(t, err)
	for round := range 3 {
		xs := capRamp(n, float32(10*round), float32(round+1))
		require.NoError(t, x.WriteOn(s, xs))
		require.NoError(t, g.Replay())
		require.Equal(t, capAxpy(1, xs, ws), capReadOn(t, s, z), "round %d", round)
	}
	require.NoError(t, g.Close())
}

// Scenario 4: an intermediate freed inside the captured function keeps its
// range for the graph; buffers allocated and filled after the seal are never
// clobbered by a replay.
func TestCaptureFreedIntermediateNotClobbered(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	const n = 64
	xs, ws := capRamp(n, 1, 1), capRamp(n, 3, 0)
	x, w := capBuffer(t, dev, xs), capBuffer(t, dev, ws)
	out, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error {
		tmp, err := NewBuffer[float32](dev, n)
		if err != nil {
			return err
		}
		if err := Scale(s, 2, x, tmp); err != nil {
			return err
		}
		if err := Add(s, tmp, w, out); err != nil {
			return err
		}
		return tmp.Close()
	})
	require.NoError(t, err)
	require.NotZero(t, dev.MemoryStats().Guarded, "the intermediate freed in the window stays guarded")

	fresh := make([]*Buffer[float32], 8)
	for i := range fresh {
		fresh[i] = capBuffer(t, dev, capRamp(n, float32(1000*(i+1)), 1))
	}
	want := capAxpy(2, xs, ws)
	for replay := range 3 {
		require.NoError(t, g.Replay())
		require.Equal(t, want, capReadOn(t, s, out), "replay %d", replay)
		for i, f := range fresh {
			require.Equal(t, capRamp(n, float32(1000*(i+1)), 1), capReadOn(t, s, f), "buffer %d after replay %d", i, replay)
		}
	}
	require.NoError(t, g.Close())
	require.Zero(t, dev.MemoryStats().Guarded, "closing the graph releases the guarded intermediate")
}

// Scenario 5: an allocation inside the window that needs a new page fails
// with ErrAllocInCapture and dooms the window; the stream can prepare again.
func TestCaptureAllocNeedingPageFails(t *testing.T) {
	const page = 64 << 10
	dev := openTest(t, WithPageSize(page))
	s := dev.NewStream()
	x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 0))
	pages := dev.MemoryStats().Pages

	t.Run("manual window", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, Axpy(s, 1, x, y))
		require.NoError(t, s.Sync(context.Background()))
		require.NoError(t, s.BeginCapture())
		require.NoError(t, Axpy(s, 1, x, y))
		_, err := NewBuffer[float32](dev, page/elemSize) // a whole page: never fits the free rest
		require.ErrorIs(t, err, ErrAllocInCapture)
		g, err := s.EndCapture()
		require.ErrorIs(t, err, ErrAllocInCapture)
		require.Nil(t, g)
		capRequireUnwritten(t, s, y, ErrAllocInCapture)
		require.Equal(t, pages, dev.MemoryStats().Pages, "no page was created inside the window")
	})

	t.Run("Capture", func(t *testing.T) {
		calls := 0
		g, err := s.Capture(func(s *Stream) error {
			calls++
			if calls == 2 { // only the recorded run asks for a new page
				if _, err := NewBuffer[float32](dev, page/elemSize); err != nil {
					return err
				}
			}
			return Fill(s, y, 7)
		})
		require.ErrorIs(t, err, ErrAllocInCapture)
		require.Nil(t, g)
	})

	t.Run("prepare again", func(t *testing.T) {
		require.NoError(t, y.WriteOn(s, capRamp(16, 0, 0)))
		g, err := s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
		require.NoError(t, err)
		require.NoError(t, g.Replay())
		require.Equal(t, capAxpy(2, capRamp(16, 1, 1), capRamp(16, 0, 0)), capReadOn(t, s, y))
		require.NoError(t, g.Close())
	})
}

// capWarmAndBegin prepares s's window, runs fn as the warmup, syncs and
// begins recording.
func capWarmAndBegin(t testing.TB, s *Stream, fn func(*Stream) error) {
	t.Helper()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, fn(s))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
}

// Scenario 6: the owner's read or sync inside its window fails with
// ErrSyncInCapture and dooms it: nothing seals and the recorded outputs
// read as ErrUnwritten.
func TestCaptureOwnerReadDoomsWindow(t *testing.T) {
	for _, wait := range []string{"read", "sync"} {
		t.Run(wait, func(t *testing.T) {
			dev := openTest(t)
			s := dev.NewStream()
			x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 2, 2))
			step := func(s *Stream) error { return Axpy(s, 1, x, y) }
			capWarmAndBegin(t, s, step)
			require.NoError(t, step(s))
			var err error
			if wait == "read" {
				_, err = y.ReadOn(context.Background(), s)
			} else {
				err = s.Sync(context.Background())
			}
			require.ErrorIs(t, err, ErrSyncInCapture)
			require.NoError(t, step(s), "the doomed window still accepts launches until it ends")
			g, err := s.EndCapture()
			require.ErrorIs(t, err, ErrSyncInCapture)
			require.Nil(t, g)
			capRequireUnwritten(t, s, y, ErrSyncInCapture)
			require.Equal(t, capRamp(16, 1, 1), capReadOn(t, s, x), "what the window only read stays readable")
			capSlotWorks(t, s)
		})
	}
}

// Scenario 7: a neighbour on the owner's slot is refused with
// ErrStreamCapturing for launches, reads and syncs, without dooming the
// owner's window; its refused outputs read as ErrUnwritten.
func TestCaptureNeighbourRefused(t *testing.T) {
	dev := openTest(t)
	owner := dev.NewStream()
	neighbour := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 0, 5)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	a, b := capBuffer(t, dev, capRamp(16, 3, 0)), capBuffer(t, dev, capRamp(16, 4, 0))
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	capWarmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	require.ErrorIs(t, Axpy(neighbour, 1, a, b), ErrStreamCapturing)
	_, err := a.ReadOn(context.Background(), neighbour)
	require.ErrorIs(t, err, ErrStreamCapturing)
	require.ErrorIs(t, neighbour.Sync(context.Background()), ErrStreamCapturing)

	g, err := owner.EndCapture()
	require.NoError(t, err, "the neighbour's refusals do not doom the owner's window")
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, xs, ys), capReadOn(t, owner, y))
	capRequireUnwritten(t, neighbour, b, ErrStreamCapturing)
	require.Equal(t, capRamp(16, 3, 0), capReadOn(t, neighbour, a), "the refused launch only read a")
	require.NoError(t, g.Close())
	capSlotWorks(t, neighbour)
}

// Scenario 8: a stream on another slot runs eager work during the window,
// unaffected, and the window still seals.
func TestCaptureOtherSlotUnaffected(t *testing.T) {
	dev := openTest(t)
	owner := dev.NewStream()
	other := dev.NewStream()
	require.NotEqual(t, owner.ID()%uint64(dev.Slots()), other.ID()%uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 0, 5)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	ps, qs := capRamp(32, 2, 1), capRamp(32, 7, 0)
	p, q := capBuffer(t, dev, ps), capBuffer(t, dev, qs)
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	capWarmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	want := qs
	for i := range 3 {
		require.NoError(t, Axpy(other, 3, p, q))
		want = capAxpy(3, ps, want)
		require.Equal(t, want, capReadOn(t, other, q), "eager step %d", i)
	}
	require.NoError(t, other.Sync(context.Background()))

	g, err := owner.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, xs, ys), capReadOn(t, owner, y))
	require.NoError(t, g.Close())
}

// Scenario 9: an end from a non-owner closes the window with an error
// naming both streams; the owner's later end finds nothing recording and
// the slot is usable again.
func TestCaptureEndFromNonOwner(t *testing.T) {
	dev := openTest(t)
	owner := dev.NewStream()
	intruder := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 5))
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	capWarmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	g, err := intruder.EndCapture()
	require.ErrorIs(t, err, ErrCaptureState)
	require.Nil(t, g)
	require.Contains(t, err.Error(), fmt.Sprintf("stream %d", owner.ID()))
	require.Contains(t, err.Error(), fmt.Sprintf("stream %d", intruder.ID()))
	capRequireUnwritten(t, owner, y, ErrCaptureState)

	g, err = owner.EndCapture()
	require.ErrorIs(t, err, ErrCaptureState)
	require.Nil(t, g)

	capSlotWorks(t, owner)
	capSlotWorks(t, intruder)
	require.NoError(t, y.WriteOn(owner, capRamp(16, 0, 5)))
	g, err = owner.Capture(step)
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, capRamp(16, 1, 1), capRamp(16, 0, 5)), capReadOn(t, owner, y))
	require.NoError(t, g.Close())
}

// Scenario 10: every wrong transition fails with ErrCaptureState and leaves
// the window as it was; the slot works normally after each.
func TestCaptureWrongTransitionsChangeNothing(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	neighbour := dev.StreamWithID(s.ID() + uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 0, 5)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }

	// sealsAfter finishes a window left Recording and checks the graph it
	// seals replays exactly the recorded step.
	sealsAfter := func(t *testing.T) {
		t.Helper()
		require.NoError(t, step(s))
		g, err := s.EndCapture()
		require.NoError(t, err, "the misuse left the window intact")
		before := capReadOn(t, s, y)
		require.NoError(t, g.Replay())
		require.Equal(t, capAxpy(1, xs, before), capReadOn(t, s, y))
		require.NoError(t, g.Close())
	}

	t.Run("from Idle", func(t *testing.T) {
		require.ErrorIs(t, s.BeginCapture(), ErrCaptureState)
		g, err := s.EndCapture()
		require.ErrorIs(t, err, ErrCaptureState)
		require.Nil(t, g)
		require.ErrorIs(t, s.AbortCapture(), ErrCaptureState)
		capSlotWorks(t, s)
		capSlotWorks(t, neighbour)
	})

	t.Run("from Prepared", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		require.ErrorIs(t, s.PrepareCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.PrepareCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.BeginCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.AbortCapture(), ErrCaptureState)
		capSlotWorks(t, s) // the warmup executes
		require.NoError(t, s.BeginCapture(), "still Prepared for its owner")
		sealsAfter(t)
		capSlotWorks(t, s)
	})

	t.Run("from Recording", func(t *testing.T) {
		capWarmAndBegin(t, s, step)
		require.ErrorIs(t, s.BeginCapture(), ErrCaptureState)
		require.ErrorIs(t, s.PrepareCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.PrepareCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.BeginCapture(), ErrCaptureState)
		require.ErrorIs(t, neighbour.AbortCapture(), ErrCaptureState)
		sealsAfter(t)
		capSlotWorks(t, s)
		capSlotWorks(t, neighbour)
	})

	t.Run("End from Prepared aborts", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		g, err := s.EndCapture()
		require.ErrorIs(t, err, ErrCaptureState)
		require.Nil(t, g)
		require.ErrorIs(t, s.BeginCapture(), ErrCaptureState, "the failed warmup's window is gone")
		capSlotWorks(t, neighbour)
	})
}

// Scenario 11: AbortCapture after PrepareCapture frees the stream, and
// nothing the warmup grew leaks.
func TestCaptureAbortAfterPrepare(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	neighbour := dev.StreamWithID(s.ID() + uint64(dev.Slots()))
	baseline := dev.MemoryStats().LiveClaims
	x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 5))

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, x.WriteOn(s, capRamp(16, 2, 2)))
	require.Equal(t, 1, dev.LiveStaging(), "a warmup write gives x its host staging")
	require.NoError(t, Axpy(s, 1, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.AbortCapture())
	require.Equal(t, capAxpy(1, capRamp(16, 2, 2), capRamp(16, 0, 5)), capReadOn(t, s, y), "the warmup's work is real")

	capSlotWorks(t, neighbour)
	capSlotWorks(t, s)
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
	dev := openTest(t)
	s := dev.NewStream()
	const n = 32
	x, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	first, zero := capRamp(n, 1, 1), capRamp(n, 0, 0)
	g, err := s.Capture(func(s *Stream) error {
		if err := x.WriteOn(s, first); err != nil {
			return err
		}
		return Scale(s, 2, x, y)
	})
	require.NoError(t, err)
	require.Equal(t, 1, dev.LiveStaging(), "x's staging, shared by x and the graph")
	require.Equal(t, capAxpy(2, first, zero), capReadOn(t, s, y))

	second := capRamp(n, 50, -1)
	require.NoError(t, x.WriteOn(s, second))
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, second, zero), capReadOn(t, s, y), "the write between replays fed the replay")

	require.NoError(t, Fill(s, x, 100)) // device copy only: the staging still holds second
	require.Equal(t, capRamp(n, 100, 0), capReadOn(t, s, x))
	require.NoError(t, g.Replay())
	require.Equal(t, second, capReadOn(t, s, x), "the replay copied what the staging holds")
	require.Equal(t, capAxpy(2, second, zero), capReadOn(t, s, y))
	require.Equal(t, 1, dev.LiveStaging())

	t.Run("buffer closed first", func(t *testing.T) {
		require.NoError(t, x.Close())
		require.Equal(t, 1, dev.LiveStaging(), "the graph still copies from it")
		require.NoError(t, Fill(s, y, 0))
		require.NoError(t, g.Replay())
		require.Equal(t, capAxpy(2, second, zero), capReadOn(t, s, y))
		require.NoError(t, g.Close())
		require.Zero(t, dev.LiveStaging())
	})

	t.Run("graph closed first", func(t *testing.T) {
		u, err := NewBuffer[float32](dev, n)
		require.NoError(t, err)
		g2, err := s.Capture(func(s *Stream) error { return u.WriteOn(s, first) })
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
	dev := openTest(t, WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n = 1 << 12
	xs, ys := capRamp(n, 1, 0), capRamp(n, 0, 1)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	g, err := s.Capture(func(s *Stream) error {
		for range 8 {
			if err := Axpy(s, 1, x, y); err != nil {
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
	require.ErrorIs(t, raced.last, ErrClosed)
	total := 3 + raced.replays
	require.NoError(t, g.Close(), "a second Close is harmless")
	require.ErrorIs(t, g.Replay(), ErrClosed)

	want := ys
	for range (1 + total) * 8 {
		want = capAxpy(1, xs, want)
	}
	require.Equal(t, want, capReadOn(t, s, y), "every replay enqueued before Close completed")
}

// Scenario 16: two graphs sharing buffers; closing one keeps the other's
// guards, so its buffers survive reuse and it still replays.
func TestCaptureTwoGraphsShareBuffers(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	const n = 64
	xs, ys := capRamp(n, 1, 1), capRamp(n, 0, 2)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	g1, err := s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	require.NoError(t, err)
	g2, err := s.Capture(func(s *Stream) error { return Axpy(s, 2, x, y) })
	require.NoError(t, err)
	want := capAxpy(3, xs, ys)
	require.NoError(t, g1.Replay())
	require.NoError(t, g2.Replay())
	want = capAxpy(3, xs, want)
	require.Equal(t, want, capReadOn(t, s, y))

	require.NoError(t, g1.Close())
	require.NoError(t, x.Close()) // g2 still guards x's range
	require.NotZero(t, dev.MemoryStats().Guarded)
	fresh := make([]*Buffer[float32], 8)
	for i := range fresh {
		fresh[i] = capBuffer(t, dev, capRamp(n, float32(-100*(i+1)), 0))
	}
	for range 2 {
		require.NoError(t, g2.Replay())
		want = capAxpy(2, xs, want)
	}
	require.Equal(t, want, capReadOn(t, s, y))
	for i, f := range fresh {
		require.Equal(t, capRamp(n, float32(-100*(i+1)), 0), capReadOn(t, s, f), "buffer %d", i)
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
	dev := openTest(t, WithBatchSize(16))
	s := dev.Stream() // the churn below runs on the graph's own slot
	const n, pool = 8, 24
	xs, ys := capRamp(n, 1, 1), capRamp(n, 0, 0)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	g, err := s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	require.NoError(t, err)

	ones := []*Buffer[float32]{capBuffer(t, dev, capRamp(n, 1, 0)), capBuffer(t, dev, capRamp(n, 1, 0))}
	bufs := make([]*Buffer[float32], pool)
	model := make([]float32, pool) // every buffer holds one value in all its elements
	for i := range bufs {
		model[i] = float32(i)
		bufs[i] = capBuffer(t, dev, capRamp(n, model[i], 0))
	}
	want := capAxpy(1, xs, ys)
	sets := 0
	for round, one := range ones {
		for j := range pool { // bufs[j] = bufs[i] + one for every ordered pair: 552 distinct sets a round
			for i := range pool {
				if i == j {
					continue
				}
				require.NoError(t, Add(s, bufs[i], one, bufs[j]))
				model[j] = model[i] + 1
				sets++
			}
		}
		require.Greater(t, sets, (round+1)*cacheSize)
		require.NoError(t, g.Replay())
		want = capAxpy(1, xs, want)
		require.Equal(t, want, capReadOn(t, s, y), "round %d", round)
		for i, b := range bufs {
			require.Equal(t, capRamp(n, model[i], 0), capReadOn(t, s, b), "round %d buffer %d", round, i)
		}
	}
	require.Less(t, dev.LiveObjects()["descriptor-set"], int64(sets),
		"the cache evicted: %d distinct sets went through the slot", sets)
	require.NoError(t, g.Close())
}

// Scenario 18: back-to-back replays with no host wait run in order: 20
// replays of a dependent two-step chain then one read equal 20 passes.
func TestCaptureBackToBackReplaysOrdered(t *testing.T) {
	dev := openTest(t, WithSyncValidation(syncValidation()))
	s := dev.NewStream()
	const n, replays = 16, 20
	xs, ys, zs := capRamp(n, 1, 1), capRamp(n, 0, 1), capRamp(n, 5, 0)
	x, y, z := capBuffer(t, dev, xs), capBuffer(t, dev, ys), capBuffer(t, dev, zs)
	g, err := s.Capture(func(s *Stream) error {
		if err := Axpy(s, 1, x, y); err != nil { // y += x
			return err
		}
		return Axpy(s, 1, y, z) // z += y, reading this pass's y
	})
	require.NoError(t, err)
	wantY, wantZ := capAxpy(1, xs, ys), capAxpy(1, capAxpy(1, xs, ys), zs)
	require.Equal(t, wantZ, capReadOn(t, s, z))
	for range replays {
		require.NoError(t, g.Replay())
		wantY = capAxpy(1, xs, wantY)
		wantZ = capAxpy(1, wantY, wantZ)
	}
	require.Equal(t, wantZ, capReadOn(t, s, z))
	require.Equal(t, wantY, capReadOn(t, s, y))
	require.NoError(t, g.Close())
}

// Scenario 19: two adjacent buffers carved from one page, both written in
// a window: a refusal taints exactly both (not their untouched sibling), and
// a replay of a graph that writes them releases both.
func TestCaptureSiblingClaimsOnOnePage(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	const n = 16
	a, b, sibling := capBuffer(t, dev, capRamp(n, 0, 0)), capBuffer(t, dev, capRamp(n, 0, 0)), capBuffer(t, dev, capRamp(n, 9, 1))
	require.Equal(t, a.core.claim.Page, b.core.claim.Page, "adjacent small buffers share the default page")
	require.Equal(t, a.core.claim.Page, sibling.core.claim.Page)
	require.NotEqual(t, a.core.claim, b.core.claim, "two claims even though adjacent")
	fill := func(s *Stream) error {
		if err := Fill(s, a, 1); err != nil {
			return err
		}
		return Fill(s, b, 2)
	}

	capWarmAndBegin(t, s, fill)
	require.NoError(t, fill(s))
	require.ErrorIs(t, s.Sync(context.Background()), ErrSyncInCapture)
	_, err := s.EndCapture()
	require.ErrorIs(t, err, ErrSyncInCapture)
	capRequireUnwritten(t, s, a, ErrSyncInCapture)
	capRequireUnwritten(t, s, b, ErrSyncInCapture)
	require.Equal(t, capRamp(n, 9, 1), capReadOn(t, s, sibling), "the taint stays on the exact claims")

	// A window recorded without warmup (the pools already hold everything)
	// executes nothing, so a and b stay tainted until the replay.
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, s.BeginCapture())
	require.NoError(t, fill(s))
	g, err := s.EndCapture()
	require.NoError(t, err)
	capRequireUnwritten(t, s, a, ErrSyncInCapture)
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(n, 1, 0), capReadOn(t, s, a))
	require.Equal(t, capRamp(n, 2, 0), capReadOn(t, s, b))
	require.Equal(t, capRamp(n, 9, 1), capReadOn(t, s, sibling))
	require.NoError(t, g.Close())
}

// BenchmarkReplay measures one replay of a small captured chain: the cost
// of one submit, with no Go allocation in steady state.
func BenchmarkReplay(b *testing.B) {
	dev := openTest(b)
	s := dev.NewStream()
	x, y := capBuffer(b, dev, capRamp(256, 1, 0)), capBuffer(b, dev, capRamp(256, 0, 0))
	g, err := s.Capture(func(s *Stream) error {
		for range 4 {
			if err := Axpy(s, 1, x, y); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(b, err)
	for range 64 { // fill the spare batches and in-flight slices once
		require.NoError(b, g.Replay())
	}
	require.NoError(b, s.Sync(context.Background()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := g.Replay(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, s.Sync(context.Background()))
	require.NoError(b, g.Close())
}

// FromSlice while a window is open on the default stream's slot (stream
// Slots() shares it) still works: the new buffer is filled on a slot with
// no window, and the window is untouched.
func TestFromSliceBesideAWindowOnTheDefaultSlot(t *testing.T) {
	dev := openTest(t)
	s := dev.StreamWithID(uint64(dev.Slots()))
	x, y := capBuffer(t, dev, capRamp(8, 1, 1)), capBuffer(t, dev, capRamp(8, 0, 0))
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, Axpy(s, 1, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, Axpy(s, 1, x, y))
	z, err := FromSlice(dev, capRamp(8, 5, 0))
	require.NoError(t, err, "a new buffer is not refused by the window on slot 0")
	g, err := s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	assert.Equal(t, capRamp(8, 2, 2), capReadOn(t, s, y))
	assert.Equal(t, capRamp(8, 5, 0), capReadOn(t, dev.NewStream(), z))
	require.NoError(t, g.Close())
}
