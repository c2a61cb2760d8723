package vkc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// faultCall names a device call that faultyDevice can make fail.
type faultCall int

const (
	callAllocate       faultCall = iota // AllocateMemory: a new page (vkAllocateMemory)
	callMap                             // MapMemory: mapping a host-visible page (vkMapMemory)
	callSubmit                          // Submit: an eager batch or a replay (vkQueueSubmit)
	callWaitFence                       // WaitFence: Sync, Read, retiring a batch (vkWaitForFences)
	callEnd                             // End: vkEndCommandBuffer, eager or a graph's
	callBegin                           // Begin: vkBeginCommandBuffer, eager or a graph's
	callUpdateSet                       // UpdateSet: writing a new descriptor set (a texel binding's vkCreateBufferView)
	callDescriptorPool                  // NewDescriptorPool: a slot's descriptor sets (vkCreateDescriptorPool)
	callCommandBuffer                   // AllocateCommandBuffer: an eager batch or a graph's (vkAllocateCommandBuffers)
	callFence                           // NewFence: a batch's fence (vkCreateFence)
	numFaultCalls
)

// faultRule lets pass calls through, then fails the next fail calls (every
// later call when fail is negative) with err.
type faultRule struct {
	pass, fail int
	err        error
}

// faultyDevice is the real device with chosen calls made to fail, so the
// recorder's handling of every driver failure runs against lavapipe and the
// validation layer. A failed call never reaches the driver: the injected
// failure leaves the real device untouched (and in particular not lost).
type faultyDevice struct {
	recorder.Device

	mu       sync.Mutex
	rules    [numFaultCalls]faultRule
	injected [numFaultCalls]int
}

// failNext makes the next n calls of c fail with err.
func (f *faultyDevice) failNext(c faultCall, n int, err error) {
	f.set(c, faultRule{fail: n, err: err})
}

// failAfter lets pass calls of c through and fails every one after with err.
func (f *faultyDevice) failAfter(c faultCall, pass int, err error) {
	f.set(c, faultRule{pass: pass, fail: -1, err: err})
}

// heal stops injecting failures into c.
func (f *faultyDevice) heal(c faultCall) { f.set(c, faultRule{}) }

func (f *faultyDevice) set(c faultCall, r faultRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[c] = r
}

// injectedCount is how many calls of c failed by injection.
func (f *faultyDevice) injectedCount(c faultCall) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[c]
}

// fault consumes one call of c: the error to inject, or nil to pass it on.
func (f *faultyDevice) fault(c faultCall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &f.rules[c]
	switch {
	case r.err == nil || r.fail == 0:
		return nil
	case r.pass > 0:
		r.pass--
		return nil
	case r.fail > 0:
		r.fail--
	}
	f.injected[c]++
	return r.err
}

func (f *faultyDevice) AllocateMemory(kind alloc.Kind, size uint64) (recorder.Memory, error) {
	if err := f.fault(callAllocate); err != nil {
		return 0, err
	}
	return f.Device.AllocateMemory(kind, size)
}

func (f *faultyDevice) MapMemory(m recorder.Memory) ([]byte, error) {
	if err := f.fault(callMap); err != nil {
		return nil, err
	}
	return f.Device.MapMemory(m)
}

func (f *faultyDevice) Submit(cb recorder.CommandBuffer, fence recorder.Fence) error {
	if err := f.fault(callSubmit); err != nil {
		return err
	}
	return f.Device.Submit(cb, fence)
}

func (f *faultyDevice) WaitFence(fence recorder.Fence, timeout time.Duration) (bool, error) {
	if err := f.fault(callWaitFence); err != nil {
		return false, err
	}
	return f.Device.WaitFence(fence, timeout)
}

func (f *faultyDevice) End(cb recorder.CommandBuffer) error {
	if err := f.fault(callEnd); err != nil {
		return err
	}
	return f.Device.End(cb)
}

func (f *faultyDevice) Begin(cb recorder.CommandBuffer, r recorder.Recording) error {
	if err := f.fault(callBegin); err != nil {
		return err
	}
	return f.Device.Begin(cb, r)
}

func (f *faultyDevice) NewDescriptorPool(maxSets uint32) (recorder.DescriptorPool, error) {
	if err := f.fault(callDescriptorPool); err != nil {
		return 0, err
	}
	return f.Device.NewDescriptorPool(maxSets)
}

func (f *faultyDevice) AllocateCommandBuffer(p recorder.CommandPool) (recorder.CommandBuffer, error) {
	if err := f.fault(callCommandBuffer); err != nil {
		return 0, err
	}
	return f.Device.AllocateCommandBuffer(p)
}

func (f *faultyDevice) NewFence() (recorder.Fence, error) {
	if err := f.fault(callFence); err != nil {
		return 0, err
	}
	return f.Device.NewFence()
}

func (f *faultyDevice) UpdateSet(s recorder.DescriptorSet, r []recorder.BufferRange) error {
	if err := f.fault(callUpdateSet); err != nil {
		return err
	}
	return f.Device.UpdateSet(s, r)
}

// openFaulty opens the test device (validation on, leak-checked at
// cleanup) behind a faultyDevice that injects nothing until told.
func openFaulty(t *testing.T, opts ...Option) (*Device, *faultyDevice) {
	t.Helper()
	fd := &faultyDevice{}
	wrap := withDeviceWrapper(func(d recorder.Device) recorder.Device {
		fd.Device = d
		return fd
	})
	return openTest(t, append(opts, wrap)...), fd
}

// Injected driver failures, each a distinct value so a test can check that
// exactly this failure is the cause an error unwraps to.
func outOfDeviceMemory() error { return injected("vkAllocateMemory", errs.OutOfMemory) }

func mapFailure() error { return injected("vkMapMemory", errs.OutOfMemory) }

func submitFailure() error { return injected("vkQueueSubmit", errs.OutOfMemory) }

func fenceFailure() error { return injected("vkWaitForFences", errs.OutOfMemory) }

func endFailure() error { return injected("vkEndCommandBuffer", errs.OutOfMemory) }

func beginFailure() error { return injected("vkBeginCommandBuffer", errs.OutOfMemory) }

func deviceLoss() error { return injected("vkWaitForFences", errs.DeviceLost) }

// injectedError is a driver failure a test injects: a distinct value per
// call, so a test can check that exactly it is the cause an error unwraps
// to, which matches the sentinel a driver's result would map onto.
type injectedError struct {
	call     string
	sentinel error
}

func injected(call string, sentinel error) error {
	return &injectedError{call: call, sentinel: sentinel}
}

func (e *injectedError) Error() string { return e.call + " (injected): " + e.sentinel.Error() }
func (e *injectedError) Unwrap() error { return e.sentinel }

// ramp returns n distinct values start, start+1, ...
func ramp(n int, start float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = start + float32(i)
	}
	return xs
}

// requireUnwrittenBy checks that reading b fails with ErrUnwritten whose
// cause is exactly the injected failure.
func requireUnwrittenBy[T Element](t *testing.T, b *Buffer[T], cause error) {
	t.Helper()
	_, err := b.Read(context.Background())
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, cause)
	var uw *alloc.UnwrittenError
	require.ErrorAs(t, err, &uw)
	assert.Same(t, cause, uw.Cause)
}

// pageSize makes every buffer of pageElems float32s need a page of its own,
// so a test decides exactly which call allocates.
const (
	pageSize  = 64 << 10
	pageElems = pageSize / elemSize
)

// testAllocationFault is the shape shared by the allocation and map faults:
// the failing request (the first try and its retry) returns the injected
// error and leaves no object behind, other buffers stay intact, and
// allocation works once it clears.
func testAllocationFault(t *testing.T, call faultCall, cause error) {
	dev, fd := openFaulty(t, WithPageSize(pageSize))
	keepData := ramp(pageElems, 1)
	keep, err := FromSlice(dev, keepData)
	require.NoError(t, err)
	live := dev.LiveObjects()
	stats := dev.MemoryStats()

	// Each request reclaims and retries once: two failures each.
	fd.failNext(call, 4, cause)
	b, err := NewBuffer[float32](dev, pageElems)
	require.ErrorIs(t, err, cause)
	require.Nil(t, b)
	fromSlice, err := FromSlice(dev, ramp(pageElems, 7))
	require.ErrorIs(t, err, cause)
	require.Nil(t, fromSlice)
	require.Equal(t, 4, fd.injectedCount(call))
	assert.Equal(t, live, dev.LiveObjects(), "a failed page leaves no Vulkan object behind")
	assert.Equal(t, stats.Pages, dev.MemoryStats().Pages)
	assert.Equal(t, keepData, readAll(t, keep))

	again := ramp(pageElems, 100)
	b2, err := FromSlice(dev, again)
	require.NoError(t, err)
	assert.Equal(t, again, readAll(t, b2))
	assert.Equal(t, keepData, readAll(t, keep))
}

func TestFaultPageAllocation(t *testing.T) {
	cause := outOfDeviceMemory()
	testAllocationFault(t, callAllocate, cause)
	assert.ErrorIs(t, public(cause), ErrOutOfMemory, "a driver's out-of-memory is the public ErrOutOfMemory")
}

func TestFaultMap(t *testing.T) {
	testAllocationFault(t, callMap, mapFailure())
}

func TestFaultSubmitEager(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const n = 256
	xData, yData := ramp(n, 1), ramp(n, 1000)
	x, err := FromSlice(dev, xData)
	require.NoError(t, err)
	y, err := FromSlice(dev, yData)
	require.NoError(t, err)
	bystander, err := FromSlice(dev, ramp(n, -50))
	require.NoError(t, err)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	w, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)

	cause := submitFailure()
	require.NoError(t, Axpy(s, 2, x, y))
	fd.failNext(callSubmit, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	require.Equal(t, 1, fd.injectedCount(callSubmit))

	requireUnwrittenBy(t, y, cause)
	assert.Equal(t, xData, readAll(t, x))
	assert.Equal(t, ramp(n, -50), readAll(t, bystander))

	// The cause travels down a chain of launches that each read the last
	// one's tainted output; none of them runs.
	require.NoError(t, Copy(s, y, z))
	require.NoError(t, Scale(s, 3, z, w))
	require.NoError(t, s.Sync(context.Background()))
	requireUnwrittenBy(t, z, cause)
	requireUnwrittenBy(t, w, cause)

	// A buffer that is read as well as written (Axpy's y) is an input too:
	// a launch on it is skipped and leaves it tainted.
	require.NoError(t, Axpy(s, 1, x, y))
	requireUnwrittenBy(t, y, cause)

	// A good launch that rewrites the output clears it, and the chain
	// recovers from there.
	require.NoError(t, Copy(s, x, y))
	assert.Equal(t, xData, readAll(t, y))
	requireUnwrittenBy(t, z, cause)
	require.NoError(t, Scale(s, 3, y, w))
	want := make([]float32, n)
	for i, v := range xData {
		want[i] = 3 * v
	}
	assert.Equal(t, want, readAll(t, w))
	assert.Equal(t, ramp(n, -50), readAll(t, bystander))
}

func TestFaultEndEager(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	x, err := FromSlice(dev, ramp(64, 1))
	require.NoError(t, err)
	y, err := NewBuffer[float32](dev, 64)
	require.NoError(t, err)

	cause := endFailure()
	require.NoError(t, Copy(s, x, y))
	fd.failNext(callEnd, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	requireUnwrittenBy(t, y, cause)
	assert.Equal(t, ramp(64, 1), readAll(t, x))

	require.NoError(t, Copy(s, x, y))
	assert.Equal(t, ramp(64, 1), readAll(t, y))
}

func TestFaultFenceWait(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const n = 128
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, ramp(n, 500))
	require.NoError(t, err)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)

	cause := fenceFailure()
	require.NoError(t, Add(s, x, y, z))
	fd.failNext(callWaitFence, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	require.Equal(t, 1, fd.injectedCount(callWaitFence))
	requireUnwrittenBy(t, z, cause)
	assert.Equal(t, ramp(n, 1), readAll(t, x))
	assert.Equal(t, ramp(n, 500), readAll(t, y))

	// A read whose own wait fails reports the taint it left.
	require.NoError(t, Add(s, x, y, z))
	fd.failNext(callWaitFence, 1, cause)
	_, err = z.Read(context.Background())
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, cause)

	require.NoError(t, Add(s, x, y, z))
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(i+1) + float32(i+500)
	}
	assert.Equal(t, want, readAll(t, z))
	assert.False(t, errors.Is(cause, ErrDeviceLost), "a failed wait that is not a loss leaves the device usable")
}

// captureAxpy captures y = 2*x + y on s through the explicit window calls,
// so a test can inject a fault between the recorded run and EndCapture.
func captureAxpy(t *testing.T, s *Stream, x, y *Buffer[float32]) {
	t.Helper()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, Axpy(s, 2, x, y))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
	require.NoError(t, Axpy(s, 2, x, y))
}

// Scenario 13: a replay whose submit fails returns the error, every output
// of the graph reads as ErrUnwritten unwrapping to it, and the next good
// replay clears that.
func TestFaultReplaySubmit(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, make([]float32, n))
	require.NoError(t, err)
	other, err := FromSlice(dev, ramp(n, 9))
	require.NoError(t, err)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)

	g, err := s.Capture(func(s *Stream) error {
		if err := Fill(s, y, 1); err != nil {
			return err
		}
		if err := Axpy(s, 2, x, y); err != nil {
			return err
		}
		return Copy(s, y, z)
	})
	require.NoError(t, err)
	want := make([]float32, n)
	for i := range want {
		want[i] = 1 + 2*float32(i+1)
	}
	assert.Equal(t, want, readAll(t, z))

	cause := submitFailure()
	fd.failNext(callSubmit, 1, cause)
	require.ErrorIs(t, g.Replay(), cause)
	requireUnwrittenBy(t, y, cause)
	requireUnwrittenBy(t, z, cause)
	assert.Equal(t, ramp(n, 1), readAll(t, x))
	assert.Equal(t, ramp(n, 9), readAll(t, other))

	require.NoError(t, x.Write(ramp(n, 2)))
	require.NoError(t, g.Replay())
	for i := range want {
		want[i] = 1 + 2*float32(i+2)
	}
	assert.Equal(t, want, readAll(t, y))
	assert.Equal(t, want, readAll(t, z))
	require.NoError(t, g.Close())
}

// Scenario 14: the driver refuses to end the graph's command buffer. The
// window seals nothing, its recorded outputs read as ErrUnwritten
// unwrapping to the refusal, nothing leaks, and the stream captures again.
func TestFaultCaptureEnd(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.StreamWithID(2)
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, ramp(n, 10))
	require.NoError(t, err)
	other, err := FromSlice(dev, ramp(n, 40))
	require.NoError(t, err)
	require.NoError(t, Axpy(s, 0, x, y))
	require.NoError(t, s.Sync(context.Background()))
	live := dev.LiveObjects()

	captureAxpy(t, s, x, y)
	cause := endFailure()
	fd.failNext(callEnd, 1, cause)
	g, err := s.EndCapture()
	require.ErrorIs(t, err, cause)
	require.Nil(t, g)
	require.Equal(t, 1, fd.injectedCount(callEnd))

	_, err = y.ReadOn(context.Background(), s)
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, cause)
	assert.Equal(t, ramp(n, 1), readAll(t, x))
	assert.Equal(t, ramp(n, 40), readAll(t, other))
	assert.Equal(t, live, dev.LiveObjects(), "the refused graph's command buffer is freed")

	require.NoError(t, y.WriteOn(s, ramp(n, 10)))
	captureAxpy(t, s, x, y)
	g, err = s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	got, err := y.ReadOn(context.Background(), s)
	require.NoError(t, err)
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(i+10) + 2*2*float32(i+1)
	}
	assert.Equal(t, want, got, "the warmup and one replay ran; the recorded run did not")
	require.NoError(t, g.Close())
}

// requireLost checks that err reports device loss.
func requireLost(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, ErrDeviceLost, what)
}

// Device loss reported by a fence wait. The real device is not lost (the
// failure never reached the driver), so this checks the recorder's own
// latch: one VK_ERROR_DEVICE_LOST seen by the recorder fails every later
// call with ErrDeviceLost, and Close still frees everything.
func TestFaultDeviceLossOnFenceWait(t *testing.T) {
	dev, fd := openFaulty(t)
	s, other := dev.Stream(), dev.NewStream()
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, ramp(n, 20))
	require.NoError(t, err)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return Axpy(s, 2, x, y) })
	require.NoError(t, err)

	cause := deviceLoss()
	require.NoError(t, Add(s, x, y, z))
	fd.failAfter(callWaitFence, 0, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	assert.False(t, fd.Device.Lost(), "the loss was injected above the real device")
	taint := public(dev.rec.Check([]alloc.Claim{z.core.claim}))
	require.ErrorIs(t, taint, ErrUnwritten, "the lost submission's writes carry the loss (reads now fail first)")
	require.ErrorIs(t, taint, cause)

	_, err = x.Read(context.Background())
	requireLost(t, err, "read")
	requireLost(t, x.Write(ramp(n, 5)), "write")
	requireLost(t, s.Sync(context.Background()), "sync")
	requireLost(t, other.Sync(context.Background()), "sync on another slot")
	requireLost(t, s.Flush(), "flush")
	requireLost(t, Add(other, x, y, z), "launch")
	requireLost(t, Copy(s, x, y), "copy")
	requireLost(t, g.Replay(), "replay")
	_, err = NewBuffer[float32](dev, n)
	requireLost(t, err, "new buffer")
	_, err = FromSlice(dev, ramp(n, 0))
	requireLost(t, err, "from slice")
	_, err = s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	requireLost(t, err, "capture")
	requireLost(t, Fill(s, z, 3), "a kernel not built before the loss")
	require.Zero(t, fd.injectedCount(callSubmit))

	require.NoError(t, g.Close())
	require.NoError(t, x.Close())
	closeAndCheck(t, dev)
	assert.Zero(t, dev.LiveStaging())
}

// Device loss at the wait after a replay: the graph's outputs carry the
// loss, and closing the graph leaves its command buffer (which the lost
// submission may still hold) to Close, which frees it.
func TestFaultDeviceLossAfterReplay(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.StreamWithID(1)
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, ramp(n, 20))
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error {
		if err := y.WriteOn(s, ramp(n, 20)); err != nil {
			return err
		}
		return Axpy(s, 2, x, y)
	})
	require.NoError(t, err)
	require.NoError(t, g.Replay())

	cause := deviceLoss()
	fd.failAfter(callWaitFence, 0, cause)
	_, err = y.ReadOn(context.Background(), s)
	require.ErrorIs(t, err, cause)
	requireLost(t, err, "read after a lost replay")
	taint := public(dev.rec.Check([]alloc.Claim{y.core.claim}))
	require.ErrorIs(t, taint, ErrUnwritten)
	require.ErrorIs(t, taint, cause)
	requireLost(t, g.Replay(), "replay")

	require.NoError(t, g.Close())
	require.NoError(t, g.Close(), "closing twice is harmless")
	closeAndCheck(t, dev)
	assert.Zero(t, dev.LiveStaging())
}

// A driver that refuses to begin a command buffer: an eager launch or copy
// returns the error and its outputs read as ErrUnwritten unwrapping to it;
// BeginCapture returns it and leaves the slot Idle, so a new capture works.
func TestFaultBegin(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const n = 64
	x, err := FromSlice(dev, ramp(n, 1))
	require.NoError(t, err)
	y, err := FromSlice(dev, ramp(n, 30))
	require.NoError(t, err)
	z, err := NewBuffer[float32](dev, n)
	require.NoError(t, err)

	cause := beginFailure()
	fd.failNext(callBegin, 2, cause)
	require.ErrorIs(t, Add(s, x, y, z), cause)
	requireUnwrittenBy(t, z, cause)
	require.ErrorIs(t, Copy(s, x, y), cause)
	requireUnwrittenBy(t, y, cause)
	assert.Equal(t, ramp(n, 1), readAll(t, x))
	require.NoError(t, Copy(s, x, y))
	assert.Equal(t, ramp(n, 1), readAll(t, y))

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, Axpy(s, 1, x, y))
	require.NoError(t, s.Sync(context.Background()))
	live := dev.LiveObjects()
	fd.failNext(callBegin, 1, cause)
	require.ErrorIs(t, s.BeginCapture(), cause)
	_, err = s.EndCapture()
	require.ErrorIs(t, err, ErrCaptureState, "the refused window went back to Idle")
	assert.Equal(t, live, dev.LiveObjects(), "the graph's command buffer was freed")

	g, err := s.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	want := make([]float32, n)
	for i := range want {
		want[i] = 4 * float32(i+1) // the copy, two warmups and one replay
	}
	assert.Equal(t, want, readAll(t, y))
	require.NoError(t, g.Close())
}
