package blackbox_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// The stress suite: garbage-collector pressure over every constructor and
// op, a concurrent hammer (alone on its slots and on shared slots) and
// Device.Close racing every call; the root package's
// reads_match_model_test.go adds random programs checked against a model
// of what completed work wrote. Each logs its figures; VKC_SOAK=1 runs
// them longer.

// closeCounted closes dev, checks it leaked nothing and the layer was
// silent (as closeAndCheck), and returns the live objects and validation
// messages it found, for the figures.
func closeCounted(t *testing.T, dev *vkc.Device) (live, messages int64) {
	t.Helper()
	closeAndCheck(t, dev)
	for _, n := range dev.LiveObjects() {
		live += n
	}
	errs, warns, _ := dev.ValidationMessages()
	return live, errs + warns
}

// Every constructor and op, each result checked, on a fresh device per
// round (so every pipeline is built again) while a goroutine allocates
// without pause and the collector runs at GOGC=1.
func TestStressGCPressure(t *testing.T) {
	before := runtime.NumGoroutine()
	churn := gcpressure.Start(t)
	rounds := gcpressure.Scaled(10, 300)
	spec := affineSpec(t)
	var tally stressTally
	var live, messages int64
	var gcs runtime.MemStats
	runtime.ReadMemStats(&gcs)
	gcBefore := gcs.NumGC
	for round := range rounds {
		dev, err := vkc.Open(vkc.WithValidation(true))
		tally.calls.Add(1)
		require.NoError(t, err)
		sh, err := newStressShared(dev, spec, 1)
		require.NoError(t, err)
		w := &stressWorker{dev: dev, s: dev.NewStream(), r: rng(53, round), shared: sh, tally: &tally}
		for op := range numElementwise {
			require.NoError(t, w.elementwise(op), "round %d: elementwise op %d", round, op)
		}
		for _, st := range stressSteps[1:] {
			require.NoError(t, st.run(w), "round %d: %s", round, st.name)
		}
		require.NoError(t, sh.close())
		l, m := closeCounted(t, dev)
		tally.calls.Add(1)
		live, messages = live+l, messages+m
	}
	allocs := churn.Stop()
	runtime.ReadMemStats(&gcs)
	after := settledGoroutines(before)
	assert.LessOrEqual(t, after, before, "goroutines leaked")
	t.Logf("GC pressure: %d rounds (Open to Close), %d calls, %d results checked, %d collections, %d churn allocations; live objects after Close %d, validation messages %d, goroutines %d before, %d after",
		rounds, tally.calls.Load(), tally.checks.Load(), gcs.NumGC-gcBefore, allocs, live, messages, before, after)
}

// Eight goroutines, each on a stream of its own slot, run random steps
// (every op, captures and replays, kernel load and close, buffers closed
// with work in flight) on one device, sharing a kernel and an input
// buffer; every result is checked against the host.
func TestStressConcurrentHammer(t *testing.T) {
	const workers = 8
	before := runtime.NumGoroutine()
	// One slot per worker, none shared with the default stream, which
	// FromSlice writes on: a capture on a slot refuses its neighbours.
	dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(workers+1))
	require.NoError(t, err)
	sh, err := newStressShared(dev, affineSpec(t), 16)
	require.NoError(t, err)
	rounds := gcpressure.Scaled(300, 3000)
	var tally stressTally
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		w := &stressWorker{dev: dev, s: dev.NewStream(), r: rng(59, i), shared: sh, tally: &tally}
		wg.Go(func() {
			for r := range rounds {
				st := stressSteps[w.r.IntN(len(stressSteps))]
				if err := st.run(w); err != nil {
					errs[i] = fmt.Errorf("step %d (%s): %w", r, st.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "worker %d", i)
	}
	require.NoError(t, sh.close())
	live, messages := closeCounted(t, dev)
	after := settledGoroutines(before)
	assert.LessOrEqual(t, after, before, "goroutines leaked")
	t.Logf("hammer: %d workers x %d steps, %d calls, %d results checked; live objects after Close %d, validation messages %d, goroutines %d before, %d after",
		workers, rounds, tally.calls.Load(), tally.checks.Load(), live, messages, before, after)
}

// Device.Close in the middle of every kind of call: one goroutine per
// step kind loops until a call fails, Close runs once each has completed
// a step, and every goroutine must then stop on ErrClosed (never another
// error, a wrong result or a panic). Afterwards nothing is alive, the
// layer is silent and no goroutine is left. LoadKernel racing Close
// awaits its fix (capture_edges_test.go) and is left out here.
func TestStressDeviceCloseRace(t *testing.T) {
	var steps []stressStep
	for _, st := range stressSteps {
		if !st.loads {
			steps = append(steps, st)
		}
	}
	before := runtime.NumGoroutine()
	rounds := gcpressure.Scaled(30, 500)
	spec := affineSpec(t)
	var tally stressTally
	var live, messages int64
	for round := range rounds {
		dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(len(steps)+1))
		require.NoError(t, err)
		sh, err := newStressShared(dev, spec, 64)
		require.NoError(t, err)
		stopped := make([]error, len(steps))
		ready := make(chan struct{}, len(steps))
		var wg sync.WaitGroup
		for i, st := range steps {
			w := &stressWorker{dev: dev, s: dev.NewStream(), r: rng(67, round, i), shared: sh, tally: &tally}
			wg.Go(func() {
				for n := 0; ; n++ {
					err := st.run(w)
					if n == 0 {
						ready <- struct{}{}
					}
					if err != nil {
						stopped[i] = err
						return
					}
				}
			})
		}
		for range steps {
			<-ready
		}
		require.NoError(t, dev.Close())
		tally.calls.Add(1)
		wg.Wait()
		for i, err := range stopped {
			assert.ErrorIs(t, err, vkc.ErrClosed, "round %d: %s", round, steps[i].name)
		}
		assert.NoError(t, sh.close(), "closing after the device closed is harmless")
		l, m := closeCounted(t, dev)
		live, messages = live+l, messages+m
	}
	after := settledGoroutines(before)
	assert.LessOrEqual(t, after, before, "goroutines leaked")
	t.Logf("close race: %d rounds x %d call kinds, %d calls, %d results checked; live objects after Close %d, validation messages %d, goroutines %d before, %d after",
		rounds, len(steps), tally.calls.Load(), tally.checks.Load(), live, messages, before, after)
}

// The hammer with eight workers on the default four slots, so every slot
// is shared and every capture has neighbours: a call a neighbour's window
// refuses fails with ErrStreamCapturing and the worker runs the step again
// (its buffers are fresh each time); any other failure or wrong result
// fails the test. It needs neighbour PrepareCapture to be ErrStreamCapturing
// and allocations during another's window not to fail.
func TestAttackHammerOnSharedSlots(t *testing.T) {
	const workers = 8
	dev := openDevice(t)
	sh, err := newStressShared(dev, affineSpec(t), 16)
	require.NoError(t, err)
	rounds := gcpressure.Scaled(60, 1000)
	var tally stressTally
	var refused atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		w := &stressWorker{dev: dev, s: dev.NewStream(), r: rng(73, i), shared: sh, tally: &tally}
		wg.Go(func() {
			for r := range rounds {
				st := stressSteps[w.r.IntN(len(stressSteps))]
				for {
					err := st.run(w)
					if errors.Is(err, vkc.ErrStreamCapturing) {
						refused.Add(1)
						continue
					}
					if err != nil {
						errs[i] = fmt.Errorf("step %d (%s): %w", r, st.name, err)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "worker %d", i)
	}
	require.NoError(t, sh.close())
	t.Logf("hammer on shared slots: %d workers x %d steps, %d calls, %d results checked, %d steps refused by a neighbour's window and run again",
		workers, rounds, tally.calls.Load(), tally.checks.Load(), refused.Load())
}
