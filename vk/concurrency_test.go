package vk

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openPlain opens the default device without the validation layer, for
// tests that leave objects alive across Close on purpose (which the layer
// reports).
func openPlain(t *testing.T) (*Instance, *Device) {
	t.Helper()
	return openWith(t, InstanceOptions{})
}

// openWith opens an instance with opts and the test device on it; the
// caller closes both.
func openWith(t testing.TB, opts InstanceOptions) (*Instance, *Device) {
	t.Helper()
	in, err := NewInstance(opts)
	require.NoError(t, err)
	infos, err := in.Devices()
	require.NoError(t, err)
	idx, err := Select(infos, os.Getenv("VKC_DEVICE"))
	require.NoError(t, err)
	d, err := in.OpenDevice(idx)
	require.NoError(t, err)
	return in, d
}

// Every call on a closed device, with objects made before the close,
// returns ErrClosed or does nothing; none reaches the destroyed device.
func TestEveryCallAfterCloseReturnsErrClosed(t *testing.T) {
	in, d := openPlain(t)
	r := newAxpyRig(t, d, 64)
	up, err := d.AllocateBlock(UseUpload, 256)
	require.NoError(t, err)
	q, err := d.NewTimestampPool(2)
	require.NoError(t, err)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	live := d.Live()
	d.Close()
	d.Close()

	_, err = d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.NewDescriptorPool(1)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.NewCommandPool()
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.NewFence()
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.NewTimestampPool(1)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.AllocateBlock(UseUpload, 64)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = r.pool.Allocate(r.pipe)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = r.cp.Allocate()
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, d.MapBlock(up), ErrClosed)
	assert.ErrorIs(t, d.Begin(r.cb, OneTimeSubmit), ErrClosed)
	d.CmdDispatch(r.cb, &Dispatch{Pipeline: r.pipe, Set: r.set, Groups: [3]uint32{1, 1, 1}})
	d.CmdBarrier(r.cb, BarrierAll)
	d.CmdCopy(r.cb, r.x, 0, r.y, 0, 4)
	d.CmdFill(r.cb, r.x, 0, 4, 0)
	d.CmdResetQueries(r.cb, q, 0, 2)
	d.CmdTimestamp(r.cb, q, 0)
	assert.ErrorIs(t, d.End(r.cb), ErrClosed)
	assert.ErrorIs(t, d.Reset(r.cb), ErrClosed)
	assert.ErrorIs(t, d.Submit(r.cb, r.f), ErrClosed)
	_, err = d.WaitFence(r.f, -1)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, d.ResetFence(r.f), ErrClosed)
	_, err = d.FenceSignaled(r.f)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = q.Results(0, 2)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, d.WaitIdle(), ErrClosed)
	assert.NoError(t, r.x.FlushRange(0, 4), "coherent memory needs no flush, closed or not")
	assert.ErrorIs(t, d.UpdateSet(r.set, []BufferRange{{r.x, 0, 4, 0}}), ErrClosed)
	q.Destroy()
	up.Release()
	r.close()
	assert.Nil(t, r.x.Mapped(), "a block released after Close no longer offers the device's mapping")
	assert.Equal(t, live, d.Live(), "destroying after Close does nothing: what was alive at Close stays counted")

	in.Close()
	in.Close()
	_, err = in.Devices()
	assert.ErrorIs(t, err, ErrClosed)
	_, err = in.OpenDevice(0)
	assert.ErrorIs(t, err, ErrClosed)
}

// A command that names a destroyed pipeline, a released block or a
// destroyed query pool is left out, and End and Submit fail, instead of
// handing the driver a dead handle.
func TestRecordingADestroyedObjectFailsTheRecording(t *testing.T) {
	d := fixture(t)
	r := newAxpyRig(t, d, 64)
	defer r.close()
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	gone, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	gone.Destroy()
	released, err := d.AllocateBlock(UseUpload, 64)
	require.NoError(t, err)
	released.Release()
	q, err := d.NewTimestampPool(1)
	require.NoError(t, err)
	q.Destroy()

	record := []func(){
		func() {
			d.CmdDispatch(r.cb, &Dispatch{Pipeline: gone, Set: r.set, Groups: [3]uint32{1, 1, 1}, Push: make([]byte, 8)})
		},
		func() { d.CmdCopy(r.cb, released, 0, r.y, 0, 4) },
		func() { d.CmdFill(r.cb, released, 0, 4, 0) },
		func() { d.CmdTimestamp(r.cb, q, 0) },
		func() { d.CmdResetQueries(r.cb, q, 0, 1) },
	}
	for i, cmd := range record {
		require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
		cmd()
		err := d.End(r.cb)
		assert.ErrorIs(t, err, ErrClosed, "command %d", i)
		assert.ErrorIs(t, d.Submit(r.cb, r.f), ErrClosed, "command %d", i)
		require.NoError(t, d.Reset(r.cb))
	}
	// The same buffer records and runs normally once reset.
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdFill(r.cb, r.y, 0, 256, 0)
	require.NoError(t, d.End(r.cb))
	require.NoError(t, d.Submit(r.cb, r.f))
	ok, err := d.WaitFence(r.f, -1)
	require.NoError(t, err)
	assert.True(t, ok)
}

// Goroutines standing for backend slots share one device, pipeline and
// descriptor pool, each with its own command pool, buffer, fence and
// blocks, while others allocate and free sets and blocks: every result is
// checked, and under -race vk's own state (live counts, pool counts,
// mapped pointers, destroyed flags, the queue lock) must show no race.
func TestSlotsShareTheDeviceConcurrently(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	pipe, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	defer pipe.Destroy()
	shared, err := d.NewDescriptorPool(64)
	require.NoError(t, err)
	defer shared.Destroy()

	const slots, rounds, n = 4, 5, 128
	var wg sync.WaitGroup
	errs := make(chan error, slots+1)
	for s := 0; s < slots; s++ {
		wg.Add(1)
		go func(slot int) {
			defer wg.Done()
			errs <- runSlot(d, pipe, shared, slot, rounds, n)
		}(s)
	}
	wg.Add(1)
	go func() { // churn: sets and blocks come and go beside the slots
		defer wg.Done()
		for i := 0; i < 4*rounds; i++ {
			set, err := shared.Allocate(pipe)
			if err != nil {
				errs <- err
				return
			}
			b, err := d.AllocateBlock(UseReadback, 1024)
			if err != nil {
				errs <- err
				return
			}
			if err := d.MapBlock(b); err != nil {
				errs <- err
				return
			}
			b.Release()
			shared.Free(set)
		}
		errs <- nil
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// runSlot runs rounds of y = a*x + y on its own objects and checks y.
func runSlot(d *Device, pipe *Pipeline, shared *DescriptorPool, slot, rounds, n int) error {
	set, err := shared.Allocate(pipe)
	if err != nil {
		return err
	}
	defer shared.Free(set)
	x, err := d.AllocateBlock(UseUpload, uint64(4*n))
	if err != nil {
		return err
	}
	defer x.Release()
	y, err := d.AllocateBlock(UseUpload, uint64(4*n))
	if err != nil {
		return err
	}
	defer y.Release()
	if err := errors.Join(d.MapBlock(x), d.MapBlock(y)); err != nil {
		return err
	}
	xs, ys := x.Mapped(), y.Mapped()
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(float32(i%4)))
		binary.LittleEndian.PutUint32(ys[4*i:], math.Float32bits(float32(slot)))
	}
	d.UpdateSet(set, []BufferRange{{x, 0, uint64(4 * n), 0}, {y, 0, uint64(4 * n), 0}})
	cp, err := d.NewCommandPool()
	if err != nil {
		return err
	}
	defer cp.Destroy()
	cb, err := cp.Allocate()
	if err != nil {
		return err
	}
	defer cb.Free()
	f, err := d.NewFence()
	if err != nil {
		return err
	}
	defer f.Destroy()
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push, math.Float32bits(1))
	binary.LittleEndian.PutUint32(push[4:], uint32(n))
	for r := 0; r < rounds; r++ {
		if err := d.Begin(cb, OneTimeSubmit); err != nil {
			return err
		}
		d.CmdDispatch(cb, &Dispatch{Pipeline: pipe, Set: set, Groups: [3]uint32{uint32(n+63) / 64, 1, 1}, Push: push, BarrierFirst: true, Before: BarrierAll})
		d.CmdBarrier(cb, BarrierToHost)
		if err := d.End(cb); err != nil {
			return err
		}
		if err := d.Submit(cb, f); err != nil {
			return err
		}
		if _, err := d.WaitFence(f, -1); err != nil {
			return err
		}
		if err := errors.Join(d.ResetFence(f), d.Reset(cb)); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(ys[4*i:]))
		if want := float32(slot + rounds*(i%4)); got != want {
			return errors.New("slot result differs from a*x+y applied rounds times")
		}
	}
	return nil
}

// Close from another goroutine while calls are in flight, including a wait
// on a fence that will never signal: Close is not held up by the wait, and
// every call then ends with nil or ErrClosed, never a crash.
func TestCloseRacesCallsInFlight(t *testing.T) {
	in, d := openPlain(t)
	defer in.Close()
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	never, err := d.NewFence()
	require.NoError(t, err)

	const workers = 4
	started := make(chan struct{}, workers+1)
	results := make(chan error, workers+1)
	go func() {
		started <- struct{}{}
		_, err := d.WaitFence(never, -1) // ends only by the Close below
		results <- err
	}()
	for w := 0; w < workers; w++ {
		go func() {
			first := true
			for {
				err := closeRaceStep(d, code)
				if first {
					started <- struct{}{}
					first = false
				}
				if err != nil {
					results <- err
					return
				}
			}
		}()
	}
	for i := 0; i < workers+1; i++ {
		<-started
	}
	d.Close()
	for i := 0; i < workers+1; i++ {
		assert.ErrorIs(t, <-results, ErrClosed)
	}
}

// closeRaceStep makes and destroys one of each kind of object and runs an
// empty submission; its first error is the step's.
func closeRaceStep(d *Device, code []byte) error {
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	if err != nil {
		return err
	}
	defer p.Destroy()
	pool, err := d.NewDescriptorPool(1)
	if err != nil {
		return err
	}
	defer pool.Destroy()
	if _, err := pool.Allocate(p); err != nil {
		return err
	}
	b, err := d.AllocateBlock(UseUpload, 256)
	if err != nil {
		return err
	}
	defer b.Release()
	if err := d.MapBlock(b); err != nil {
		return err
	}
	cp, err := d.NewCommandPool()
	if err != nil {
		return err
	}
	defer cp.Destroy()
	cb, err := cp.Allocate()
	if err != nil {
		return err
	}
	defer cb.Free()
	f, err := d.NewFence()
	if err != nil {
		return err
	}
	defer f.Destroy()
	if err := d.Begin(cb, OneTimeSubmit); err != nil {
		return err
	}
	d.CmdFill(cb, b, 0, 256, 7)
	if err := d.End(cb); err != nil {
		return err
	}
	if err := d.Submit(cb, f); err != nil {
		return err
	}
	_, err = d.WaitFence(f, -1)
	return err
}

// A command given a nil pipeline, block or query pool fails the recording
// without panicking, and leaves the device's gate free: a panic while the
// gate was held shared made the next Close wait forever.
func TestNilCommandArgumentsFailTheRecordingAndCloseReturns(t *testing.T) {
	in, d := openPlain(t)
	r := newAxpyRig(t, d, 64)
	record := []func(){
		func() { d.CmdDispatch(r.cb, nil) },
		func() { d.CmdDispatch(r.cb, &Dispatch{Set: r.set, Groups: [3]uint32{1, 1, 1}}) },
		func() { d.CmdCopy(r.cb, nil, 0, r.y, 0, 4) },
		func() { d.CmdCopy(r.cb, r.x, 0, nil, 0, 4) },
		func() { d.CmdFill(r.cb, nil, 0, 4, 0) },
		func() { d.CmdResetQueries(r.cb, nil, 0, 1) },
		func() { d.CmdTimestamp(r.cb, nil, 0) },
	}
	for i, cmd := range record {
		require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
		func() {
			defer func() { assert.Nil(t, recover(), "command %d panicked", i) }()
			cmd()
		}()
		err := d.End(r.cb)
		assert.Error(t, err, "command %d", i)
		assert.NotErrorIs(t, err, ErrClosed, "command %d: a nil argument is not a closed object", i)
		assert.Error(t, d.Submit(r.cb, r.f), "command %d", i)
		require.NoError(t, d.Reset(r.cb))
	}
	r.close()
	closed := make(chan struct{})
	go func() {
		d.Close()
		close(closed)
	}()
	select {
	case <-closed:
		in.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("Device.Close did not return: a command left the gate held")
	}
}

// nonCoherentBlock is a mapped upload block that FlushRange and
// InvalidateRange treat as non-coherent, so that their path to the driver
// runs on a device (lavapipe) whose host-visible memory is all coherent:
// flushing coherent memory is valid Vulkan.
func nonCoherentBlock(t *testing.T, d *Device, size uint64) *Block {
	t.Helper()
	b, err := d.AllocateBlock(UseUpload, size)
	require.NoError(t, err)
	require.NoError(t, d.MapBlock(b))
	b.coherent = false
	return b
}

// A flush or invalidate of a range not within the block is refused before
// the driver sees it, including one whose end wraps around.
func TestSyncRangeRefusesRangesOutsideTheBlock(t *testing.T) {
	d := fixture(t)
	b := nonCoherentBlock(t, d, 256)
	defer b.Release()
	for _, sync := range []func(off, size uint64) error{b.FlushRange, b.InvalidateRange} {
		assert.NoError(t, sync(0, 256))
		assert.NoError(t, sync(4, 8))
		assert.NoError(t, sync(256, 0))
		assert.Error(t, sync(0, 257))
		assert.Error(t, sync(257, 0))
		assert.Error(t, sync(8, math.MaxUint64))
		assert.Error(t, sync(math.MaxUint64, 2))
	}
}

// Flushes and invalidates racing Release never reach the driver with the
// freed memory (the layer, which the fixture checks, would report it).
func TestSyncRangeRacesRelease(t *testing.T) {
	d := fixture(t)
	for i := 0; i < 200; i++ {
		b := nonCoherentBlock(t, d, 256)
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b.Mapped() != nil {
					assert.NoError(t, b.FlushRange(0, 256))
					assert.NoError(t, b.InvalidateRange(0, 256))
				}
			}()
		}
		b.Release()
		wg.Wait()
	}
}

// Updates of texel sets racing their pool's Destroy: each update either
// lands before Destroy, which then destroys its view, or is refused with
// ErrClosed, as is every update after it; no view is left alive and no
// call reaches a destroyed set, the layer silent.
func TestTexelUpdatesRaceThePoolsDestroy(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/texelsum.spv")
	require.NoError(t, err)
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, Texels: 0b01, PushSize: 4})
	require.NoError(t, err)
	defer p.Destroy()
	in, err := d.AllocateBlock(UseUpload, 4096)
	require.NoError(t, err)
	defer in.Release()
	const sets = 4
	pool, err := d.NewDescriptorPool(sets)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var destroyed atomic.Bool
	started := make(chan struct{}, sets)
	for range sets {
		set, err := pool.Allocate(p)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := 0 // updates begun once Destroy had returned
			for r := 0; ; r++ {
				if r == 1 {
					started <- struct{}{}
				}
				if destroyed.Load() {
					after++
				}
				err := d.UpdateSet(set, []BufferRange{{in, uint64(16 * (r % 8)), 256, 0}, {in, 2048, 256, 0}})
				if err != nil {
					assert.ErrorIs(t, err, ErrClosed)
					return
				}
				if after > 0 {
					t.Errorf("an update begun after the pool's Destroy succeeded")
					return
				}
			}
		}()
	}
	for range sets {
		<-started
	}
	pool.Destroy()
	destroyed.Store(true)
	wg.Wait()
	assert.Zero(t, d.LiveCount(ObjBufferView), "every view went with the pool")
	assert.Zero(t, d.LiveCount(ObjDescriptorSet))
}
