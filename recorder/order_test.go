package recorder_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

func addf(x, y []float32) []float32 {
	z := make([]float32, len(x))
	for i := range z {
		z[i] = x[i] + y[i]
	}
	return z
}

func axpyf(a float32, x, y []float32) []float32 {
	z := make([]float32, len(x))
	for i := range z {
		z[i] = a*x[i] + y[i]
	}
	return z
}

// A barrier is recorded exactly before a launch that depends on earlier
// work of its command buffer (read after write, write after read, write
// after write since the last barrier), never between independent ones,
// and hostdev's hazard checker, which executes every command, finds none
// missing.
func TestBarriersOnlyOnHazards(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y, z, w, v, u := g.buf(), g.buf(), g.buf(), g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.write(0, y, nil, ramp(10)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.spy.take()

		require.NoError(t, g.fill(0, z, 3))
		require.NoError(t, g.fill(0, w, 4))
		require.NoError(t, g.add(0, x, y, v))      // independent of both fills
		require.NoError(t, g.add(0, z, w, u))      // reads what the fills wrote
		require.NoError(t, g.axpy(0, 2, x, y))     // writes y, read before the last barrier only
		require.NoError(t, g.copyK(0, u, z))       // reads u, written since the barrier
		require.NoError(t, g.r.Copy(0, x, v, 4*n)) // a transfer independent of the copy kernel's work
		require.NoError(t, g.r.Copy(0, z, w, 4*n)) // a transfer reading what the copy kernel wrote
		require.NoError(t, g.r.Sync(context.Background(), 0))
		require.Equal(t, []string{"begin", "dispatch", "dispatch", "dispatch", "dispatch+barrier",
			"dispatch", "dispatch+barrier", "copy", "between", "copy", "toHost", "end", "submit"}, kinds(g.spy.take()))

		g.mustRead(0, z, splat(7))
		g.mustRead(0, u, splat(7))
		g.mustRead(0, v, ramp(1))
		g.mustRead(0, y, axpyf(2, ramp(1), ramp(10)))
		g.mustRead(0, w, splat(7))
		g.close()
	})
}

// A staged write records its upload copy into the open batch, so a launch
// that reads the written buffer right after it waits behind a barrier; a
// mapped write lands before the batch and needs none.
func TestWriteThenLaunchOrdering(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y, z := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, y, nil, ramp(100)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.spy.take()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.add(0, x, y, z))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		want := []string{"begin", "dispatch", "toHost", "end", "submit"}
		if !unified {
			want = []string{"begin", "copy", "dispatch+barrier", "toHost", "end", "submit"}
		}
		require.Equal(t, want, kinds(g.spy.take()))
		g.mustRead(0, z, addf(ramp(1), ramp(100)))
		// A write drains the slot first: the launch that reads x must have
		// run before x changes again.
		require.NoError(t, g.copyK(0, x, y))
		require.NoError(t, g.write(0, x, nil, ramp(50)))
		g.mustRead(0, y, ramp(1))
		g.mustRead(0, x, ramp(50))
		g.close()
	})
}

// An eager command buffer is submitted when it holds BatchSize launches,
// not before; Flush submits without waiting and Sync waits for all.
func TestBatchSize(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1, BatchSize: 4})
		a, b := g.buf(), g.buf()
		require.NoError(t, g.fill(0, a, 0))
		require.NoError(t, g.fill(0, b, 1))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		submits := g.dev.Count(hostdev.Submit)
		g.dev.Pause()
		for i := 1; i <= 10; i++ {
			require.NoError(t, g.axpy(0, 1, b, a), "launch %d", i)
			require.Equal(t, i/4, g.dev.Count(hostdev.Submit)-submits, "after %d launches", i)
		}
		require.Equal(t, 2, g.dev.Pending(), "two full batches submitted, still pending")
		require.NoError(t, g.r.Flush(0))
		require.Equal(t, 3, g.dev.Pending(), "Flush submits the open batch without waiting")
		g.dev.Resume()
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.mustRead(0, a, splat(10))
		g.close()
	})
}

// With BatchSize 1 every launch is a submission; more than maxInflight of
// them in flight make the slot wait for the oldest instead of growing its
// drop queue without bound, and everything still runs in order.
func TestManySubmissionsInFlight(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1, BatchSize: 1})
	a, b := g.buf(), g.buf()
	require.NoError(t, g.fill(0, a, 0))
	require.NoError(t, g.fill(0, b, 1))
	for i := 0; i < 40; i++ {
		require.NoError(t, g.axpy(0, 1, b, a))
	}
	g.mustRead(0, a, splat(40))
	g.close()
}

// The descriptor-set cache: a launch with the same kernel and claims reuses
// its set; at capacity the least recently used idle set is evicted, one
// still used by pending work is not; sets of a destroyed kernel are freed.
func TestDescriptorCache(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 1, CacheSize: 2})
	sets := func() int64 { return g.dev.Live()["descriptor-set"] }
	allocs := func() int { return g.dev.Count(hostdev.AllocateSet) }
	a, b, c := g.buf(), g.buf(), g.buf()

	require.NoError(t, g.fill(0, a, 1))
	n0 := allocs()
	require.NoError(t, g.fill(0, a, 2))
	require.Equal(t, n0, allocs(), "same kernel and claims: a hit")
	require.NoError(t, g.fill(0, b, 3))
	require.Equal(t, n0+1, allocs())
	require.EqualValues(t, 2, sets())
	require.NoError(t, g.r.Sync(context.Background(), 0))

	require.NoError(t, g.fill(0, c, 4))
	require.EqualValues(t, 2, sets(), "at capacity the idle LRU set (a) is evicted")
	require.NoError(t, g.fill(0, b, 5))
	require.Equal(t, n0+2, allocs(), "b is still cached")
	require.NoError(t, g.fill(0, a, 6))
	require.Equal(t, n0+3, allocs(), "a was evicted")
	require.EqualValues(t, 3, sets(), "c and b are used by the open batch: nothing evictable, the cache grows")
	require.NoError(t, g.r.Sync(context.Background(), 0))
	g.mustRead(0, a, splat(6))
	g.mustRead(0, b, splat(5))
	g.mustRead(0, c, splat(4))
	require.Zero(t, g.dev.Diagnostics().Errors, "no set updated or freed while bound")
	g.close()
}

// Destroying a kernel frees its cached sets, after the work that uses them.
func TestDescriptorCacheForgetsDestroyedKernel(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 2})
	sets := func() int64 { return g.dev.Live()["descriptor-set"] }
	a, b, c := g.buf(), g.buf(), g.buf()
	require.NoError(t, g.fill(0, a, 6))
	k, err := g.r.NewKernel(code, descs["copy"])
	require.NoError(t, err)
	before := sets()
	for i, dst := range []alloc.Claim{b, c} {
		l := recorder.Launch{Args: []capture.Binding{rd(a), wr(dst)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}
		require.NoError(t, g.r.Launch(recorder.StreamID(i), k, &l))
	}
	require.Equal(t, before+2, sets())
	require.NoError(t, k.Release())
	require.Equal(t, before, sets(), "Release destroys the kernel's sets after its work")
	g.mustRead(0, c, splat(6))
	l := recorder.Launch{Args: []capture.Binding{rd(a), wr(b)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}
	require.ErrorIs(t, g.r.Launch(0, k, &l), errs.Closed)
	require.NoError(t, k.Release(), "Release is idempotent")
	g.close()
}

// While a window is open the cache evicts nothing (the warmup creates the
// sets the recording names, and a graph's sets must survive); when it
// closes the cache trims back to capacity, skipping the sets the graph
// pins, which no later eviction touches until the graph closes.
func TestDescriptorCachePinnedByWindowAndGraph(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 1, CacheSize: 2})
	sets := func() int64 { return g.dev.Live()["descriptor-set"] }
	bufs := []alloc.Claim{g.buf(), g.buf(), g.buf(), g.buf(), g.buf(), g.buf()}
	require.NoError(t, g.fill(0, bufs[0], 1))
	require.NoError(t, g.r.Sync(context.Background(), 0))

	body := func() {
		for i, c := range bufs[1:4] {
			require.NoError(t, g.fill(0, c, float32(10+i)))
		}
	}
	require.NoError(t, g.r.PrepareCapture(0))
	body()
	require.NoError(t, g.r.Sync(context.Background(), 0))
	require.EqualValues(t, 4, sets(), "the warmup evicts nothing")
	allocs := g.dev.Count(hostdev.AllocateSet)
	require.NoError(t, g.r.BeginCapture(0))
	body()
	require.Equal(t, allocs, g.dev.Count(hostdev.AllocateSet), "the recording finds the warmup's sets")
	graph, err := g.r.EndCapture(0)
	require.NoError(t, err)
	require.EqualValues(t, 3, sets(), "trimmed to what the graph pins")

	for i := 0; i < 3; i++ {
		require.NoError(t, graph.Replay())
		for _, c := range bufs[4:] {
			require.NoError(t, g.fill(0, c, float32(20+i)))
		}
		require.NoError(t, g.r.Sync(context.Background(), 0))
	}
	require.GreaterOrEqual(t, sets(), int64(3), "pinned sets survive eviction")
	for i, c := range bufs[1:4] {
		g.mustRead(0, c, splat(float32(10+i)))
	}
	require.NoError(t, graph.Close())
	require.NoError(t, graph.Close(), "Close is idempotent")
	for _, c := range bufs[4:] {
		require.NoError(t, g.fill(0, c, 1))
		require.NoError(t, g.r.Sync(context.Background(), 0))
	}
	require.ErrorIs(t, graph.Replay(), errs.Closed)
	g.close()
}

// An eager batch is submitted early, every 64 launches, when the slot has
// no work left on the device, and not while its earlier batch still runs;
// the chain's result is the same as one batch's.
func TestIdleDeviceGetsTheOpenBatch(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, splat(1)))
		require.NoError(t, g.write(0, y, nil, splat(0)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.dev.Pause()
		chain := func(k int) {
			for range k {
				require.NoError(t, g.axpy(0, 1, x, y))
			}
		}
		chain(63)
		require.Equal(t, 0, g.dev.Pending(), "63 launches stay in the open batch")
		chain(1)
		require.Equal(t, 1, g.dev.Pending(), "the 64th goes to the idle device")
		chain(128)
		require.Equal(t, 1, g.dev.Pending(), "nothing more is submitted while the first batch runs")
		g.dev.Resume()
		eventually(t, "the first batch completes", func() bool { return g.dev.Pending() == 0 })
		g.dev.Pause()
		chain(64)
		require.Equal(t, 1, g.dev.Pending(), "the next check finds the device idle and submits 192 launches")
		g.dev.Resume()
		g.mustRead(0, y, splat(64+128+64))
		g.close()
	})
}

// A descriptor pool that refuses a set before it holds its count (Vulkan's
// fragmented or out-of-pool-memory pool) does not fail the launch: the
// cache counts that pool full and takes the set from a new pool.
func TestDescriptorPoolRefusalTakesANewPool(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1})
	pools := func() int { return g.dev.Count(hostdev.NewDescriptorPool) }
	a, b, c := g.buf(), g.buf(), g.buf()
	require.NoError(t, g.fill(0, a, 1))
	p0 := pools()
	g.dev.FailNth(hostdev.AllocateSet, 1, nil) // the next set, from the pool a's came from
	require.NoError(t, g.fill(0, b, 2), "the pool refused; a new one serves")
	require.Equal(t, p0+1, pools())
	require.NoError(t, g.fill(0, c, 3), "the new pool has room")
	require.Equal(t, p0+1, pools())
	g.mustRead(0, a, splat(1))
	g.mustRead(0, b, splat(2))
	g.mustRead(0, c, splat(3))
	g.close()
}
