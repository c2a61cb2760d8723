package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// Events exchanged with the program: a vkc event exported as the
// program's semaphore or fence, and the program's semaphore imported as a
// vkc event.

// newSemaphoreFor is the program's semaphore, destroyed at cleanup (after
// vkc's Close, which adopt's cleanup registered earlier and so runs
// later: cleanups run last first, so the caller adopts first only where
// the semaphore must outlive vkc).
func newSemaphoreFor(t *testing.T, r *renderer) vk.Semaphore {
	t.Helper()
	s, err := r.newSemaphore()
	require.NoError(t, err)
	t.Cleanup(func() { vk.DestroySemaphore(r.device, s, nil) })
	return s
}

// newFenceFor is the program's fence, destroyed at cleanup.
func newFenceFor(t *testing.T, r *renderer) vk.Fence {
	t.Helper()
	f, err := r.newFence()
	require.NoError(t, err)
	t.Cleanup(func() { vk.DestroyFence(r.device, f, nil) })
	return f
}

// An event exported while its work is still queued on the host signals
// the program's semaphore after that work: the program's copy, waiting on
// it, reads a*x + y. The point is the event's, not the stream's: the
// stream's later work, on another buffer, is still only queued when the
// program's copy completes, and the program's fence alone (no semaphore)
// works too.
func TestAnExportedEventSignalsThePointsWorkToTheProgram(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	s := dev.Stream()
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, ys)
	require.NoError(t, err)
	later, err := vkc.NewBuffer[float32](dev, len(xs))
	require.NoError(t, err)
	require.NoError(t, ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)))
	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, ops.Scale(s, ops.Const(2), ops.Of(x), ops.Of(later)))

	computed := newSemaphoreFor(t, r)
	fence := newFenceFor(t, r)
	require.NoError(t, vulkango.SignalEvent(ev, computed, vk.NullFence))
	src, err := vulkango.BufferOf(y)
	require.NoError(t, err)
	dst, err := r.newHostBuffer(src.Range)
	require.NoError(t, err)
	t.Cleanup(func() { r.destroyHostBuffer(dst) })
	cb, err := r.copyAfter(computed, src, dst, vk.NullSemaphore, fence)
	require.NoError(t, err)
	t.Cleanup(func() { r.free(cb) })
	require.NoError(t, r.wait(fence))
	assert.Equal(t, reference(a, xs, ys), dst.floats())

	// The host's own view agrees, and the later work still runs.
	require.NoError(t, ev.Sync(context.Background()))
	done, err := ev.Done()
	require.NoError(t, err)
	assert.True(t, done)
	got, err := later.Read(context.Background())
	require.NoError(t, err)
	for i, v := range xs {
		assert.Equal(t, 2*v, got[i], "element %d", i)
	}

	// A fence alone: the program waits on the host.
	onlyFence := newFenceFor(t, r)
	ev2, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, vulkango.SignalEvent(ev2, vk.NullSemaphore, onlyFence))
	require.NoError(t, r.wait(onlyFence))
}

// The program's semaphore imported as an event is the point after the
// program's work: the event's Sync returns, Done reports it, another
// stream that waited on the event scales what the program wrote, and the
// event exported again signals a second semaphore of the program's, whose
// copy reads that result. Imported events carry no clock. (That the event
// is not done while the program's work is held back cannot be shown on
// lavapipe: its vkQueueSubmit waits on the host for the semaphores a
// submission waits on, so the import itself returns only after the
// program's signal.)
func TestAnImportedEventIsThePointAfterTheProgramsWork(t *testing.T) {
	r := newTestRenderer(t)
	filled := newSemaphoreFor(t, r)
	scaled := newSemaphoreFor(t, r)
	fence := newFenceFor(t, r)
	dev := adopt(t, r) // closed before the program's objects go
	importer, consumer := dev.NewStream(), dev.NewStream()
	x, err := vkc.NewBuffer[float32](dev, 32)
	require.NoError(t, err)
	y, err := vkc.NewBuffer[float32](dev, 32)
	require.NoError(t, err)
	vb, err := vulkango.BufferOf(x)
	require.NoError(t, err)

	fillOutside(t, r, vb, 0x40000000, filled) // 2.0f
	ev, err := vulkango.ImportEvent(importer, filled)
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, consumer.Wait(ev))
	require.NoError(t, x.WrittenOutside(consumer, 0)) // ordered by the wait above
	require.NoError(t, ops.Scale(consumer, ops.Const(3), ops.Of(x), ops.Of(y)))
	scaledEv, err := consumer.Record()
	require.NoError(t, err)
	require.NoError(t, vulkango.SignalEvent(scaledEv, scaled, vk.NullFence))
	src, err := vulkango.BufferOf(y)
	require.NoError(t, err)
	dst, err := r.newHostBuffer(src.Range)
	require.NoError(t, err)
	t.Cleanup(func() { r.destroyHostBuffer(dst) })
	cb, err := r.copyAfter(scaled, src, dst, vk.NullSemaphore, fence)
	require.NoError(t, err)
	t.Cleanup(func() { r.free(cb) })

	require.NoError(t, ev.Sync(context.Background()))
	done, err := ev.Done()
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, r.wait(fence))
	for i, v := range dst.floats() {
		assert.Equal(t, float32(6), v, "the program's copy, element %d", i)
	}
	got, err := y.ReadOn(context.Background(), consumer)
	require.NoError(t, err)
	for i, v := range got {
		assert.Equal(t, float32(6), v, "vkc's read, element %d", i)
	}
	_, err = ev.Since(ev)
	assert.ErrorIs(t, err, vkc.ErrEventUntimed)
}

// Exporting and importing refuse what has no point to exchange, each with
// its sentinel, and change nothing: null handles (ErrNullHandle, the
// stream forms too), a nil or closed event, an event of a window (its
// point lies in the graph: refused without dooming the window) and an
// import inside the stream's own window (a wait on the program's
// semaphore cannot be replayed: ErrSyncInCapture, the window fails as a
// sync there does); an imported event is foreign to another device's
// streams.
func TestExchangedEventsRefuseWhatHasNoPoint(t *testing.T) {
	r := newTestRenderer(t)
	sem := newSemaphoreFor(t, r)
	dev := adopt(t, r)
	other := adopt(t, newTestRenderer(t))
	s := dev.Stream()

	_, err := vulkango.ImportEvent(s, vk.NullSemaphore)
	assert.ErrorIs(t, err, vkc.ErrNullHandle)
	assert.ErrorIs(t, vulkango.SignalOutside(s, vk.NullSemaphore, vk.NullFence), vkc.ErrNullHandle)
	assert.ErrorIs(t, vulkango.WaitOutside(s, vk.NullSemaphore), vkc.ErrNullHandle)
	ev, err := s.Record()
	require.NoError(t, err)
	assert.ErrorIs(t, vulkango.SignalEvent(ev, vk.NullSemaphore, vk.NullFence), vkc.ErrNullHandle)
	assert.ErrorIs(t, vulkango.SignalEvent(nil, sem, vk.NullFence), vkc.ErrEventUnrecorded)
	assert.ErrorIs(t, vulkango.SignalEvent(new(vkc.Event), sem, vk.NullFence), vkc.ErrEventUnrecorded)
	require.NoError(t, ev.Close())
	assert.ErrorIs(t, vulkango.SignalEvent(ev, sem, vk.NullFence), vkc.ErrClosed)

	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.NewBuffer[float32](dev, len(xs))
	require.NoError(t, err)
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, ops.Scale(s, ops.Const(2), ops.Of(x), ops.Of(y))) // the warmup
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, ops.Scale(s, ops.Const(2), ops.Of(x), ops.Of(y)))
	wev, err := s.Record()
	require.NoError(t, err)
	assert.ErrorIs(t, vulkango.SignalEvent(wev, sem, vk.NullFence), vkc.ErrEventInCapture)
	g, err := s.EndCapture()
	require.NoError(t, err, "a refused export leaves the window as it was")
	require.NoError(t, g.Replay())
	require.NoError(t, g.Close())

	// The semaphore was never signaled above: the program signals it now,
	// and an import inside the window is refused and fails the window.
	signalled := newFenceFor(t, r)
	require.NoError(t, r.submitSync(vk.NullSemaphore, sem, signalled))
	require.NoError(t, r.wait(signalled))
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, ops.Scale(s, ops.Const(2), ops.Of(x), ops.Of(y)))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	_, err = vulkango.ImportEvent(s, sem)
	assert.ErrorIs(t, err, vkc.ErrSyncInCapture)
	_, err = s.EndCapture()
	assert.Error(t, err, "the import failed the window")

	// The semaphore is still signaled with no wait: imported now, its
	// event is dev's, foreign to another device's streams.
	imported, err := vulkango.ImportEvent(s, sem)
	require.NoError(t, err)
	assert.ErrorIs(t, other.Stream().Wait(imported), vkc.ErrEventForeign)
	require.NoError(t, imported.Sync(context.Background()))
	got, err := y.Read(context.Background())
	require.NoError(t, err)
	for i, v := range xs {
		assert.Equal(t, 2*v, got[i], "element %d", i)
	}
}

// Closing vkc while the program's submission still waits on the semaphore
// an exported event signals is safe: Close waits for vkc's work and the
// signal, destroys only vkc's objects, and the program's copy completes
// with the result at the event's point. After Close the event and the
// stream refuse to exchange anything (ErrClosed).
func TestCloseWhileTheProgramWaitsOnAnExportedEvent(t *testing.T) {
	r := newTestRenderer(t)
	computed := newSemaphoreFor(t, r)
	imported := newSemaphoreFor(t, r)
	fence := newFenceFor(t, r)
	dev, err := vulkango.Adopt(handed(r))
	require.NoError(t, err)
	s := dev.Stream()
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, ys)
	require.NoError(t, err)
	require.NoError(t, ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)))
	ev, err := s.Record()
	require.NoError(t, err)
	src, err := vulkango.BufferOf(y)
	require.NoError(t, err)
	dst, err := r.newHostBuffer(src.Range)
	require.NoError(t, err)
	defer r.destroyHostBuffer(dst)

	require.NoError(t, vulkango.SignalEvent(ev, computed, vk.NullFence))
	cb, err := r.copyAfter(computed, src, dst, imported, fence)
	require.NoError(t, err)
	defer r.free(cb)
	require.NoError(t, dev.Close())
	assert.Empty(t, dev.LiveObjects())

	require.NoError(t, r.wait(fence))
	assert.Equal(t, reference(a, xs, ys), dst.floats())
	assert.ErrorIs(t, vulkango.SignalEvent(ev, computed, vk.NullFence), vkc.ErrClosed)
	_, err = vulkango.ImportEvent(s, imported)
	assert.ErrorIs(t, err, vkc.ErrClosed)
	_, err = ev.Done()
	assert.ErrorIs(t, err, vkc.ErrClosed)
}

// Exports and imports racing Close each either happen whole or are
// refused with ErrClosed: an export that returned nil signals the
// program's fence (the program's wait returns), one refused leaves it
// unsignaled; an import that returned nil waited on the program's
// semaphore, one refused left it signaled (the program waits on it
// itself before destroying it). Nothing is left alive.
func TestEventExchangesRaceClose(t *testing.T) {
	const racers, rounds = 4, 10
	const n = racers * rounds
	r := newTestRenderer(t)
	fences := make([]vk.Fence, n)
	sems := make([]vk.Semaphore, n)
	for j := range n {
		fences[j] = newFenceFor(t, r)
		sems[j] = newSemaphoreFor(t, r)
	}
	// Every semaphore an import may wait on is signaled first.
	signalled := newFenceFor(t, r)
	for j := range n {
		f := vk.NullFence
		if j == n-1 {
			f = signalled
		}
		require.NoError(t, r.submitSync(vk.NullSemaphore, sems[j], f))
	}
	require.NoError(t, r.wait(signalled))

	dev, err := vulkango.Adopt(handed(r))
	require.NoError(t, err)
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, ys)
	require.NoError(t, err)
	notTried := errors.New("not tried: the racer stopped before")
	exportErrs := make([]error, n)
	importErrs := make([]error, n)
	for j := range n {
		exportErrs[j], importErrs[j] = notTried, notTried
	}
	streams := make([]*vkc.Stream, racers)
	for i := range streams {
		streams[i] = dev.NewStream()
	}
	var wg, started sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			s := streams[i]
			for k := range rounds {
				j := i*rounds + k
				err := ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y))
				if k == 0 {
					started.Done()
				}
				var ev *vkc.Event
				if err == nil {
					ev, err = s.Record()
				}
				if err == nil {
					err = vulkango.SignalEvent(ev, vk.NullSemaphore, fences[j])
				}
				exportErrs[j] = err
				_, importErrs[j] = vulkango.ImportEvent(s, sems[j])
				if exportErrs[j] != nil || importErrs[j] != nil {
					return
				}
			}
		}()
	}
	started.Wait() // every racer has work queued: Close races what follows
	require.NoError(t, dev.Close())
	wg.Wait()
	assert.Empty(t, dev.LiveObjects())
	exported, imported := 0, 0
	for j := range n {
		if exportErrs[j] == nil {
			exported++
			assert.NoError(t, r.wait(fences[j]), "export %d returned nil: its fence signals", j)
		} else {
			if exportErrs[j] != notTried {
				assert.ErrorIs(t, exportErrs[j], vkc.ErrClosed, "export %d", j)
			}
			assert.Equal(t, vk.NotReady, vk.GetFenceStatus(r.device, fences[j]), "refused export %d signals nothing", j)
		}
		if importErrs[j] == nil {
			imported++
			continue
		}
		if importErrs[j] != notTried {
			assert.ErrorIs(t, importErrs[j], vkc.ErrClosed, "import %d", j)
		}
		// The program takes its signal back itself.
		require.NoError(t, r.submitSync(sems[j], vk.NullSemaphore, vk.NullFence), "import %d", j)
	}
	t.Logf("of %d exports and imports each, %d and %d happened before Close", n, exported, imported)
	r.queueMu.Lock()
	assert.NoError(t, vulkango.Result("vkQueueWaitIdle", vk.QueueWaitIdle(r.queue)))
	r.queueMu.Unlock()
}

// submitSync is the program's submission of no command buffer that waits
// on wait (at every stage; nil: none) and signals signal and fence (each
// nil: none), under the queue lock.
func (r *renderer) submitSync(wait, signal vk.Semaphore, fence vk.Fence) error {
	si := vk.SubmitInfo{SType: vk.StructureTypeSubmitInfo}
	var pins []any
	if wait != vk.NullSemaphore {
		si.WaitSemaphoreCount = 1
		si.PWaitSemaphores = []vk.Semaphore{wait}
		si.PWaitDstStageMask = []vk.PipelineStageFlags{vk.PipelineStageFlags(vk.PipelineStageAllCommandsBit)}
		pins = append(pins, &si.PWaitSemaphores[0], &si.PWaitDstStageMask[0])
	}
	if signal != vk.NullSemaphore {
		si.SignalSemaphoreCount = 1
		si.PSignalSemaphores = []vk.Semaphore{signal}
		pins = append(pins, &si.PSignalSemaphores[0])
	}
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	return paused("vkQueueSubmit", func() vk.Result { return vk.QueueSubmit(r.queue, 1, []vk.SubmitInfo{si}, fence) }, pins...)
}

// Under GOGC=1 with a goroutine allocating all the while, events exported
// and imported keep their order and results: the program's vulkan-go
// calls run with the collector paused, vkc's through its own C.
func TestEventExchangesUnderCollectorPressure(t *testing.T) {
	churn := gcpressure.Start(t)
	for i := range 3 {
		t.Run(fmt.Sprintf("export %d", i), TestAnExportedEventSignalsThePointsWorkToTheProgram)
		t.Run(fmt.Sprintf("import %d", i), TestAnImportedEventIsThePointAfterTheProgramsWork)
		t.Run(fmt.Sprintf("close %d", i), TestCloseWhileTheProgramWaitsOnAnExportedEvent)
	}
	assert.Positive(t, churn.Stop(), "the churn goroutine allocated")
}
