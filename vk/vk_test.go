package vk

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/devinfo"
)

// fixture opens the default device with validation and checks at cleanup
// that the layer stayed silent and every object was destroyed.
func fixture(t testing.TB) *Device {
	t.Helper()
	_, bench := t.(*testing.B) // the layer would dominate what a benchmark measures
	in, err := NewInstance(InstanceOptions{Validation: !bench})
	require.NoError(t, err)
	infos, err := in.Devices()
	require.NoError(t, err)
	idx, err := Select(infos, os.Getenv("VKC_DEVICE"))
	require.NoError(t, err)
	d, err := in.OpenDevice(idx)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.Empty(t, d.Live(), "live objects at close")
		d.Close()
		e, w := in.ValidationCounts()
		assert.Zero(t, e+w, "validation messages: %v", in.RecentMessages())
		in.Close()
	})
	return d
}

func TestSelect(t *testing.T) {
	infos := []DeviceInfo{{Name: "llvmpipe (LLVM 15)", Type: devinfo.TypeCPU}, {Name: "Intel UHD", Type: devinfo.TypeIntegrated}, {Name: "NVIDIA H200", Type: devinfo.TypeDiscrete}}
	i, err := Select(infos, "")
	require.NoError(t, err)
	assert.Equal(t, 2, i)
	i, err = Select(infos, "llvm")
	require.NoError(t, err)
	assert.Equal(t, 0, i)
	i, err = Select(infos, "1")
	require.NoError(t, err)
	assert.Equal(t, 1, i)
	_, err = Select(infos, "7")
	assert.ErrorContains(t, err, "out of range")
	_, err = Select(infos, "radeon")
	assert.ErrorContains(t, err, "no device matches")
	_, err = Select(nil, "")
	assert.ErrorIs(t, err, ErrNoDevice)
}

func TestErrorSentinels(t *testing.T) {
	assert.ErrorIs(t, &Error{Call: "vkAllocateMemory", Result: ErrorOutOfDevMemory}, ErrOutOfDeviceMemory)
	assert.ErrorIs(t, &Error{Call: "vkQueueSubmit", Result: ErrorDeviceLostCode}, ErrDeviceLost)
	assert.NotErrorIs(t, &Error{Call: "vkQueueSubmit", Result: ErrorDeviceLostCode}, ErrOutOfDeviceMemory)
	assert.Equal(t, "vkQueueSubmit: VK_ERROR_DEVICE_LOST", (&Error{Call: "vkQueueSubmit", Result: ErrorDeviceLostCode}).Error())
}

func TestValidateSPIRVRefusesWhatIsNotWords(t *testing.T) {
	assert.ErrorIs(t, ValidateSPIRV([]byte("not spir-v at all!!!"), 0), ErrBadSPIRV)
	assert.ErrorIs(t, ValidateSPIRV([]byte{1, 2, 3}, 0), ErrBadSPIRV)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	assert.NoError(t, ValidateSPIRV(code, 0))
}

func TestDeviceInfo(t *testing.T) {
	d := fixture(t)
	info := d.Info()
	assert.NotEmpty(t, info.Name)
	assert.NotZero(t, info.Limits.MaxComputeWorkGroupCount[0])
	assert.NotZero(t, info.Limits.MaxStorageBufferRange)
	assert.NotEmpty(t, info.Heaps)
	assert.True(t, slices.ContainsFunc(info.Heaps, func(h MemoryHeap) bool { return h.DeviceLocal && h.Size > 0 }), "a device-local heap: %v", info.Heaps)
}

type axpyRig struct {
	d    *Device
	pipe *Pipeline
	pool *DescriptorPool
	set  DescriptorSet
	x, y *Block
	cp   *CommandPool
	cb   *CommandBuffer
	f    *Fence
}

func newAxpyRig(t testing.TB, d *Device, n int) *axpyRig {
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	r := &axpyRig{d: d}
	r.pipe, err = d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	r.pool, err = d.NewDescriptorPool(4)
	require.NoError(t, err)
	r.set, err = r.pool.Allocate(r.pipe)
	require.NoError(t, err)
	r.x, err = d.AllocateBlock(UseUpload, uint64(4*n))
	require.NoError(t, err)
	r.y, err = d.AllocateBlock(UseUpload, uint64(4*n))
	require.NoError(t, err)
	require.NoError(t, d.MapBlock(r.x))
	require.NoError(t, d.MapBlock(r.y))
	d.UpdateSet(r.set, []BufferRange{{r.x, 0, uint64(4 * n), 0}, {r.y, 0, uint64(4 * n), 0}})
	r.cp, err = d.NewCommandPool()
	require.NoError(t, err)
	r.cb, err = r.cp.Allocate()
	require.NoError(t, err)
	r.f, err = d.NewFence()
	require.NoError(t, err)
	return r
}

func (r *axpyRig) close() {
	r.f.Destroy()
	r.cb.Free()
	r.cp.Destroy()
	r.pool.Free(r.set)
	r.pool.Destroy()
	r.pipe.Destroy()
	r.x.Release()
	r.y.Release()
}

func TestAxpyChainThroughHotPath(t *testing.T) {
	d := fixture(t)
	const n, k = 300, 5
	r := newAxpyRig(t, d, n)
	defer r.close()
	xs, ys := r.x.Mapped(), r.y.Mapped()
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(float32(i%7)))
		binary.LittleEndian.PutUint32(ys[4*i:], math.Float32bits(1))
	}
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push, math.Float32bits(2))
	binary.LittleEndian.PutUint32(push[4:], n)
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	for i := 0; i < k; i++ {
		d.CmdDispatch(r.cb, &Dispatch{Pipeline: r.pipe, Set: r.set, Groups: [3]uint32{(n + 63) / 64, 1, 1}, Push: push, BarrierFirst: i > 0, Before: BarrierAll})
	}
	d.CmdBarrier(r.cb, BarrierToHost)
	require.NoError(t, d.End(r.cb))
	require.NoError(t, d.Submit(r.cb, r.f))
	ok, err := d.WaitFence(r.f, -1)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < n; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(ys[4*i:]))
		require.Equal(t, float32(1+2*k*(i%7)), got, "y[%d]", i)
	}
	require.NoError(t, d.ResetFence(r.f))
	sig, err := d.FenceSignaled(r.f)
	require.NoError(t, err)
	assert.False(t, sig)
}

func TestBadInputs(t *testing.T) {
	d := fixture(t)
	_, err := d.NewPipeline([]byte("garbage garbage garbage!"), PipelineDesc{Bindings: 1})
	assert.ErrorIs(t, err, ErrBadSPIRV)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	_, err = d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 4096})
	assert.ErrorContains(t, err, "push constants")
	_, err = d.NewPipeline(code, PipelineDesc{Bindings: 99, PushSize: 8})
	assert.ErrorContains(t, err, "bindings")
	_, err = d.AllocateBlock(UseDeviceLocal, 0)
	assert.Error(t, err)
}

func TestValidationCountsMessages(t *testing.T) {
	var logged bytes.Buffer
	in, d := openWith(t, InstanceOptions{Validation: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	defer in.Close()
	defer d.Close()
	if !in.Validating() {
		t.Skip("VK_LAYER_KHRONOS_validation not installed")
	}
	r := newAxpyRig(t, d, 64)
	defer r.close()
	d.UpdateSet(r.set, []BufferRange{{r.x, 0, 0, 0}, {r.y, 0, 256, 0}}) // range 0 is invalid
	errs, _ := in.ValidationCounts()
	assert.Positive(t, errs, "the layer must report the zero range")
	assert.NotEmpty(t, in.RecentMessages())
	assert.Contains(t, logged.String(), "level=ERROR msg=\"vulkan validation\"", "the message reaches the instance's logger")
}

func TestTimestamps(t *testing.T) {
	d := fixture(t)
	r := newAxpyRig(t, d, 64)
	defer r.close()
	q, err := d.NewTimestampPool(2)
	require.NoError(t, err)
	defer q.Destroy()
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdResetQueries(r.cb, q, 0, 2)
	d.CmdTimestamp(r.cb, q, 0)
	d.CmdTimestamp(r.cb, q, 1)
	require.NoError(t, d.End(r.cb))
	require.NoError(t, d.Submit(r.cb, r.f))
	_, err = d.WaitFence(r.f, -1)
	require.NoError(t, err)
	ts, err := q.Results(0, 2)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ts[1], ts[0])
}

// BenchmarkRecordDispatch measures one recorded launch through the hot path;
// allocs/op must be 0.
func BenchmarkRecordDispatch(b *testing.B) {
	d := fixture(b)
	r := newAxpyRig(b, d, 256)
	defer r.close()
	push := make([]byte, 8)
	x := &Dispatch{Pipeline: r.pipe, Set: r.set, Groups: [3]uint32{4, 1, 1}, Push: push, BarrierFirst: true, Before: BarrierAll}
	require.NoError(b, d.Begin(r.cb, OneTimeSubmit))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1000 == 999 {
			require.NoError(b, d.End(r.cb))
			require.NoError(b, d.Reset(r.cb))
			require.NoError(b, d.Begin(r.cb, OneTimeSubmit))
		}
		d.CmdDispatch(r.cb, x)
	}
	require.NoError(b, d.End(r.cb))
}

func TestCommandPoolDestroyAccountsForItsBuffers(t *testing.T) {
	d := fixture(t)
	pool, err := d.NewCommandPool()
	require.NoError(t, err)
	cb, err := pool.Allocate()
	require.NoError(t, err)
	pool.Destroy()
	assert.Zero(t, d.LiveCount(ObjCommandBuffer), "destroying the pool frees its buffers")
	cb.Free() // after the pool: only the host state is left to free
	cb.Free()
	assert.Zero(t, d.LiveCount(ObjCommandBuffer))
	_, err = pool.Allocate()
	assert.ErrorIs(t, err, ErrClosed)
}

func TestTimestampPoolRefusesQueriesItDoesNotHave(t *testing.T) {
	d := fixture(t)
	_, err := d.NewTimestampPool(0)
	assert.Error(t, err)
	q, err := d.NewTimestampPool(2)
	require.NoError(t, err)
	defer q.Destroy()
	_, err = q.Results(1, 2)
	assert.Error(t, err)
	_, err = q.Results(math.MaxUint32, 2)
	assert.Error(t, err)
}

func TestDescriptorPoolCountsItsSets(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	defer p.Destroy()
	pool, err := d.NewDescriptorPool(4)
	require.NoError(t, err)
	a, err := pool.Allocate(p)
	require.NoError(t, err)
	_, err = pool.Allocate(p)
	require.NoError(t, err)
	pool.Free(a)
	assert.Equal(t, int64(1), d.LiveCount(ObjDescriptorSet))
	pool.Destroy()
	assert.Zero(t, d.LiveCount(ObjDescriptorSet), "Destroy settles the sets still allocated")
	pool.Free(a) // after Destroy: harmless, no double count
	pool.Destroy()
	assert.Zero(t, d.LiveCount(ObjDescriptorSet))
}

// Calls on a closed device, or with a freed command buffer, fail or do
// nothing instead of crashing in C.
func TestCallsAfterCloseDoNotCrash(t *testing.T) {
	in, err := NewInstance(InstanceOptions{})
	require.NoError(t, err)
	defer in.Close()
	d, err := in.OpenDevice(0)
	require.NoError(t, err)
	r := newAxpyRig(t, d, 64)
	kept, err := d.NewFence() // outlives the device on purpose: only its Go handle is used below
	require.NoError(t, err)
	freed, err := r.cp.Allocate()
	require.NoError(t, err)
	freed.Free()
	require.ErrorIs(t, d.Begin(freed, OneTimeSubmit), ErrClosed)
	d.CmdBarrier(freed, BarrierAll)
	r.close()
	d.Close()
	assert.ErrorIs(t, d.Begin(r.cb, OneTimeSubmit), ErrClosed, "the command buffer was freed with the rig")
	assert.ErrorIs(t, d.Submit(nil, nil), ErrClosed)
	_, err = d.WaitFence(r.f, 0)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, d.WaitIdle(), ErrClosed)
	assert.ErrorIs(t, d.ResetFence(kept), ErrClosed)
	_, err = d.FenceSignaled(kept)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.AllocateBlock(UseUpload, 64)
	assert.ErrorIs(t, err, ErrClosed)
}

// Recording a reset or a timestamp past the pool's end fails the
// recording, as Results refuses such queries, instead of handing the
// driver an index outside the pool.
func TestRecordingQueriesPastThePoolFails(t *testing.T) {
	d := fixture(t)
	r := newAxpyRig(t, d, 64)
	defer r.close()
	q, err := d.NewTimestampPool(2)
	require.NoError(t, err)
	defer q.Destroy()
	record := []func(){
		func() { d.CmdResetQueries(r.cb, q, 1, 2) },
		func() { d.CmdResetQueries(r.cb, q, math.MaxUint32, 2) },
		func() { d.CmdTimestamp(r.cb, q, 2) },
	}
	for i, cmd := range record {
		require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
		cmd()
		assert.ErrorContains(t, d.End(r.cb), "of a pool of 2", "command %d", i)
		assert.Error(t, d.Submit(r.cb, r.f), "command %d", i)
		require.NoError(t, d.Reset(r.cb))
	}
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdResetQueries(r.cb, q, 0, 2)
	d.CmdTimestamp(r.cb, q, 1)
	require.NoError(t, d.End(r.cb), "the whole pool is in range")
}

// Freeing the zero set, a set twice or a set of another pool does nothing:
// no second vkFreeDescriptorSets (the layer would report it) and no second
// decrement of the live count.
func TestDescriptorPoolFreeIgnoresWhatItDoesNotHold(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	defer p.Destroy()
	pool, err := d.NewDescriptorPool(4)
	require.NoError(t, err)
	defer pool.Destroy()
	other, err := d.NewDescriptorPool(1)
	require.NoError(t, err)
	defer other.Destroy()
	a, err := pool.Allocate(p)
	require.NoError(t, err)
	b, err := pool.Allocate(p)
	require.NoError(t, err)
	pool.Free(DescriptorSet{})
	assert.Equal(t, int64(2), d.LiveCount(ObjDescriptorSet), "the zero set")
	pool.Free(a)
	pool.Free(a)
	assert.Equal(t, int64(1), d.LiveCount(ObjDescriptorSet), "a set freed twice")
	other.Free(b)
	assert.Equal(t, int64(1), d.LiveCount(ObjDescriptorSet), "a set of another pool")
	pool.Free(b)
	assert.Zero(t, d.LiveCount(ObjDescriptorSet))
}

// UpdateSet allocates nothing: its ranges reach C by value, not through a
// pointer to a Go local (which cgo would move to the heap, ~400 B a call).
func TestUpdateSetAllocatesNothing(t *testing.T) {
	d := fixture(t)
	r := newAxpyRig(t, d, 64)
	defer r.close()
	ranges := []BufferRange{{r.x, 0, 256, 0}, {r.y, 0, 256, 0}}
	assert.Zero(t, testing.AllocsPerRun(200, func() { d.UpdateSet(r.set, ranges) }))
}

// panickingHandler is a slog.Handler whose Handle panics.
type panickingHandler struct{ slog.Handler }

func (panickingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (panickingHandler) Handle(context.Context, slog.Record) error {
	panic("the user's logger fails")
}

// A logger that panics on a layer message must not unwind through the
// driver's frames (it would leave the loader's locks held and hang every
// later Vulkan call): the message is still counted and kept, the call that
// made the layer speak returns, and the next instance opens and closes.
func TestPanickingLoggerIsContained(t *testing.T) {
	for round := 0; round < 2; round++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			in, d := openWith(t, InstanceOptions{Validation: true, Logger: slog.New(panickingHandler{})})
			defer in.Close()
			defer d.Close()
			if !in.Validating() {
				return
			}
			r := newAxpyRig(t, d, 64)
			defer r.close()
			d.UpdateSet(r.set, []BufferRange{{r.x, 0, 0, 0}, {r.y, 0, 256, 0}}) // range 0 is invalid
			errs, _ := in.ValidationCounts()
			assert.Positive(t, errs, "the message is counted though the logger panicked")
			assert.NotEmpty(t, in.RecentMessages())
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: a Vulkan call hung after the logger panicked", round)
		}
	}
}

// A block larger than every heap is refused as out of device memory
// without asking the driver: asking is invalid usage, which the layer
// reports (and lavapipe even grants). The fixture fails on any message.
func TestBlockLargerThanItsHeapIsRefused(t *testing.T) {
	d := fixture(t)
	var largest uint64
	for _, h := range d.Info().Heaps {
		largest = max(largest, h.Size)
	}
	require.NotZero(t, largest)
	before := d.Live()
	for _, use := range []MemoryUse{UseDeviceLocal, UseUpload, UseReadback} {
		_, err := d.AllocateBlock(use, largest+64<<20)
		require.ErrorIs(t, err, ErrOutOfDeviceMemory, "use %d", use)
		assert.Contains(t, err.Error(), "larger than its memory heap")
	}
	assert.Equal(t, before, d.Live(), "nothing left alive by the refusals")
}

// A block larger than the device's largest buffer (maintenance4's
// maxBufferSize, which a Vulkan 1.3 device reports) is refused as out of
// device memory without asking the driver: asking is invalid usage
// (VUID-VkBufferCreateInfo-size-06409). The fixture fails on any message.
func TestBlockLargerThanTheLargestBufferIsRefused(t *testing.T) {
	d := fixture(t)
	if d.maxBuffer == 0 {
		t.Skip("the device reports no maxBufferSize (Vulkan before 1.3)")
	}
	before := d.Live()
	_, err := d.AllocateBlock(UseDeviceLocal, d.maxBuffer+1)
	require.ErrorIs(t, err, ErrOutOfDeviceMemory)
	assert.Contains(t, err.Error(), "larger than the device's largest buffer")
	assert.Equal(t, before, d.Live(), "nothing left alive by the refusal")
}

// A set with a texel binding owns one buffer view per such binding: made by
// UpdateSet, replaced by the next update of that binding, destroyed with
// the set or its pool. The kernel reads exactly the texels of the range,
// at an offset into its block; an update that is refused (a range no view
// may cover, a set freed already, its pool destroyed) leaves the set
// reading what it read before and makes no view, the layer silent.
func TestTexelBindingsOwnTheirViews(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/texelsum.spv")
	require.NoError(t, err)
	_, err = d.NewPipeline(code, PipelineDesc{Bindings: 2, Texels: 0b100, PushSize: 4})
	assert.ErrorContains(t, err, "texel bindings", "a texel bit beyond the bindings")
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, Texels: 0b01, PushSize: 4})
	require.NoError(t, err)
	defer p.Destroy()
	pool, err := d.NewDescriptorPool(4)
	require.NoError(t, err)
	defer pool.Destroy()
	const n = 37
	align := max(d.Info().Limits.MinTexelBufferOffsetAlignment, 16)
	in, err := d.AllocateBlock(UseUpload, align+16*n)
	require.NoError(t, err)
	defer in.Release()
	out, err := d.AllocateBlock(UseReadback, 4*n)
	require.NoError(t, err)
	defer out.Release()
	require.NoError(t, d.MapBlock(in))
	require.NoError(t, d.MapBlock(out))
	words := in.Mapped()
	for i := range (align + 16*n) / 4 {
		binary.LittleEndian.PutUint32(words[4*i:], uint32(i))
	}
	set, err := pool.Allocate(p)
	require.NoError(t, err)
	require.NoError(t, d.UpdateSet(set, []BufferRange{{in, 0, 16 * n, 0}, {out, 0, 4 * n, 0}}))
	assert.Equal(t, int64(1), d.LiveCount(ObjBufferView))
	require.NoError(t, d.UpdateSet(set, []BufferRange{{in, align, 16 * n, 0}, {out, 0, 4 * n, 0}}))
	assert.Equal(t, int64(1), d.LiveCount(ObjBufferView), "an update replaces the set's view")

	cp, err := d.NewCommandPool()
	require.NoError(t, err)
	defer cp.Destroy()
	cb, err := cp.Allocate()
	require.NoError(t, err)
	defer cb.Free()
	f, err := d.NewFence()
	require.NoError(t, err)
	defer f.Destroy()
	push := binary.LittleEndian.AppendUint32(nil, n)
	// sums runs the kernel through set and checks it read the n texels
	// from byte align of in.
	sums := func(what string) {
		clear(out.Mapped())
		require.NoError(t, d.ResetFence(f))
		require.NoError(t, d.Begin(cb, OneTimeSubmit))
		d.CmdDispatch(cb, &Dispatch{Pipeline: p, Set: set, Groups: [3]uint32{1, 1, 1}, Push: push})
		d.CmdBarrier(cb, BarrierToHost)
		require.NoError(t, d.End(cb))
		require.NoError(t, d.Submit(cb, f))
		ok, err := d.WaitFence(f, -1)
		require.NoError(t, err)
		require.True(t, ok)
		first := uint32(align / 4) // the word the viewed range starts at
		for i := range uint32(n) {
			w := first + 4*i
			assert.Equal(t, 4*w+6, binary.LittleEndian.Uint32(out.Mapped()[4*i:]), "%s: texel %d", what, i)
		}
	}
	sums("after the update")

	for _, bad := range []BufferRange{{in, 0, 0, 0}, {in, 0, 24, 0}, {in, 0, uint64(d.Info().Limits.MaxTexelBufferElements+1) * 16, 0}} {
		assert.Error(t, d.UpdateSet(set, []BufferRange{bad, {out, 0, 4 * n, 0}}), "range %d+%d", bad.Offset, bad.Range)
		assert.Equal(t, int64(1), d.LiveCount(ObjBufferView), "a refused update keeps the set's view")
	}
	if a := d.Info().Limits.MinTexelBufferOffsetAlignment; a > 1 {
		assert.ErrorContains(t, d.UpdateSet(set, []BufferRange{{in, a / 2, 16, 0}, {out, 0, 4 * n, 0}}), "minTexelBufferOffsetAlignment")
	}
	sums("after the refused updates")
	require.NoError(t, d.UpdateSet(set, nil))
	assert.Equal(t, int64(1), d.LiveCount(ObjBufferView), "an update of no binding keeps the texel binding's view")
	sums("after an update of no binding")

	pool.Free(set)
	assert.Zero(t, d.LiveCount(ObjBufferView), "Free destroys the set's views")
	assert.ErrorIs(t, d.UpdateSet(set, []BufferRange{{in, 0, 16, 0}, {out, 0, 4, 0}}), ErrClosed, "an update of a freed set")
	assert.Zero(t, d.LiveCount(ObjBufferView), "a freed set makes no view")
	kept, err := pool.Allocate(p)
	require.NoError(t, err)
	require.NoError(t, d.UpdateSet(kept, []BufferRange{{in, 0, 16, 0}, {out, 0, 4, 0}}))
	assert.Equal(t, int64(1), d.LiveCount(ObjBufferView))
	pool.Destroy()
	assert.Zero(t, d.LiveCount(ObjBufferView), "the pool's Destroy destroys the views of the sets left")
	assert.ErrorIs(t, d.UpdateSet(kept, []BufferRange{{in, 0, 16, 0}, {out, 0, 4, 0}}), ErrClosed, "an update of a set of a destroyed pool")
	assert.Zero(t, d.LiveCount(ObjBufferView), "a set of a destroyed pool makes no view")
}
