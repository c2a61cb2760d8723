package vkc

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// soakBatch keeps the soak's batches small, so the descriptor sets that
// pending launches hold (which the slot's set cache cannot reuse until the
// work completes) stay few next to the cache's own capacity.
const soakBatch = 16

// soakCount is how many distinct constants, and distinct implicit lengths,
// the soak uses: 100 000, or a tenth of it under -short or -race.
func soakCount() int {
	if testing.Short() || raceDetector {
		return 10_000
	}
	return 100_000
}

// A long-running program that uses ever new constants and buffer lengths
// keeps device memory and Vulkan objects bounded: after a warm-up, 100 000
// distinct Const values (FillDyn with a device length, so the value is
// read from memory) and 100 000 distinct buffer lengths used as implicit
// lengths (ScaleDyn with a device scalar and no length) leave MemoryStats
// and LiveObjects where the warm-up left them.
func TestConstantsAndLengthsStayBounded(t *testing.T) {
	dev := openTest(t, WithBatchSize(soakBatch))
	s := dev.Stream()
	ctx := context.Background()
	count := soakCount()
	y := scratch[float32](t, dev, 4)
	n, err := NewParam(dev, uint32(4))
	require.NoError(t, err)
	a, err := NewParam(dev, float32(2))
	require.NoError(t, err)

	constants := func(from, to int) {
		for i := from; i < to; i++ {
			if err := FillDyn(s, y, Const(float32(i)), n); err != nil {
				t.Fatal(err)
			}
		}
		require.NoError(t, s.Sync(ctx))
		got, err := y.ReadOn(ctx, s)
		require.NoError(t, err)
		require.Equal(t, float32(to-1), got[3], "the last constant reached the device")
	}
	lengths := func(from, to int) {
		for length := from; length < to; length++ {
			x, err := NewBuffer[float32](dev, length)
			if err != nil {
				t.Fatal(err)
			}
			// x is never written: the launch is skipped, its length still
			// made a device value.
			if err := ScaleDyn(s, a, x, x, nil); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
		}
		require.NoError(t, s.Sync(ctx))
	}
	const warm = 4096
	constants(0, warm)
	lengths(count, count+warm) // the largest buffers first: their pages stay
	lengths(1, warm)
	before, liveBefore := dev.MemoryStats(), maps.Clone(dev.LiveObjects())

	constants(warm, count)
	lengths(warm, count)
	after, liveAfter := dev.MemoryStats(), dev.LiveObjects()
	t.Logf("%d distinct constants and lengths (%d after the warm-up): memory before %+v, after %+v", count, count-warm, before, after)
	t.Logf("live objects before %v, after %v", liveBefore, liveAfter)
	require.Equal(t, before.Pages, after.Pages, "pages")
	require.Equal(t, before.Reserved, after.Reserved, "reserved bytes")
	require.Equal(t, before.LiveClaims, after.LiveClaims, "live claims")
	require.Equal(t, before.Used, after.Used, "used bytes")
	require.Equal(t, liveBefore, liveAfter, "live Vulkan objects")
	require.NoError(t, n.Close())
	require.NoError(t, a.Close())
}

// Streams sharing a slot share its cache of constants: goroutines on four
// such streams, each cycling through more distinct constants than the
// cache holds, evict copies while others pin theirs for a launch. Every
// launch reads its own value (each buffer ends holding its last one), and
// after the work completes the cache holds no more than its bound.
func TestConstantCacheSharedBySlotStreams(t *testing.T) {
	dev := openTest(t)
	ctx := context.Background()
	n, err := NewParam(dev, uint32(8))
	require.NoError(t, err)
	const workers, rounds = 4, 3 * constantsPerSlot
	slots := uint64(dev.Slots())
	var wg sync.WaitGroup
	outs := make([]*Buffer[float32], workers)
	errs := make([]error, workers)
	for w := range workers {
		outs[w] = scratch[float32](t, dev, 8)
		s := dev.StreamWithID(uint64(w) * slots) // all on slot 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := FillDyn(s, outs[w], Const(float32(w*rounds+i)), n); err != nil {
					errs[w] = err
					return
				}
			}
			errs[w] = s.Sync(ctx)
		}()
	}
	wg.Wait()
	for w := range workers {
		require.NoError(t, errs[w], "worker %d", w)
		got, err := outs[w].ReadOn(ctx, dev.StreamWithID(uint64(w)*slots))
		require.NoError(t, err)
		require.Equal(t, capRamp(8, float32(w*rounds+rounds-1), 0), got, "worker %d's last value", w)
	}
	require.LessOrEqual(t, cachedConstants(dev), constantsPerSlot)
	require.NoError(t, n.Close())
}

// A constant a graph recorded stays the graph's after the cache lets it
// go: evicted by a flood of other constants, its memory is guarded (not
// reused) and every replay still reads the value; closing the graph
// releases it.
func TestEvictedConstantLivesWithItsGraph(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	ctx := context.Background()
	y := scratch[float32](t, dev, 8)
	n, err := NewParam(dev, uint32(8))
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return FillDyn(s, y, Const[float32](-3.5), n) })
	require.NoError(t, err)
	require.Zero(t, dev.MemoryStats().Guarded)

	other := scratch[float32](t, dev, 8)
	for i := range 4 * constantsPerSlot { // evicts -3.5 and reuses freed copies' memory
		require.NoError(t, FillDyn(s, other, Const(float32(i)), n))
	}
	require.NoError(t, s.Sync(ctx))
	require.NotZero(t, dev.MemoryStats().Guarded, "the evicted copy is held for the graph")
	for range 3 {
		require.NoError(t, Fill(s, y, 0))
		require.NoError(t, g.Replay())
		require.Equal(t, capRamp(8, -3.5, 0), capReadOn(t, s, y))
	}
	require.NoError(t, g.Close())
	require.Zero(t, dev.MemoryStats().Guarded, "closing the graph released it")
	require.NoError(t, n.Close())
}
