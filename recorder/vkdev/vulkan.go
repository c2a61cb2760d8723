package vkdev

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
	"github.com/vkcompute/vkc/internal/pipecache"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/vk"
)

// Options choose the Vulkan device Open opens and how it is checked.
type Options struct {
	// Device picks the device by index or by a case-insensitive substring
	// of its name; empty picks the best (discrete > integrated > virtual > CPU).
	Device string
	// Validation enables the Khronos validation layer where it is installed.
	Validation bool
	// SyncValidation also enables its synchronization validation.
	SyncValidation bool
	// Logger receives validation messages; nil means slog.Default().
	Logger *slog.Logger
	// WithoutFeatures are optional features not to enable even where the
	// device offers them (tests of devices that lack them).
	WithoutFeatures recorder.Features
	// Surface, when set, opens the device to present to a window: it is
	// called with the new VkInstance and returns the window's VkSurfaceKHR
	// (GLFW's CreateWindowSurface does this), which the device then owns;
	// the device chosen can present to it, has VK_KHR_swapchain, and is
	// also a recorder.Presenter. InstanceExtensions are the surface extensions to
	// enable (GLFW's GetRequiredInstanceExtensions).
	Surface            func(instance uintptr) (uint64, error)
	InstanceExtensions []string
	// PipelineCacheDir is the directory of the pipeline-cache file loaded
	// at open and saved at Close (internal/pipecache); empty: no file.
	PipelineCacheDir string
	// Wait is how fence waits poll before they sleep.
	Wait WaitPolicy
}

// WaitPolicy chooses how a Vulkan device's fence waits poll the fence
// before they sleep (vk.WaitPolicy holds the durations).
type WaitPolicy uint8

// The wait policies, as CUDA's device schedule flags.
const (
	WaitAuto  WaitPolicy = iota // poll briefly (vk.AutoWaitPolicy), then sleep
	WaitSpin                    // poll busily until the fence signals
	WaitYield                   // poll, yielding the processor between polls
	WaitBlock                   // sleep in vkWaitForFences at once
)

// setUp configures a device just opened: its fence waits and its
// pipeline cache, which it returns for Close to save.
func setUp(d *vk.Device, o Options) *pipecache.Store {
	d.SetWaitPolicy([...]vk.WaitPolicy{WaitAuto: vk.AutoWaitPolicy(d.Info()), WaitSpin: vk.WaitSpin, WaitYield: vk.WaitYield, WaitBlock: vk.WaitBlock}[min(o.Wait, WaitBlock)])
	return pipecache.Attach(d, o.PipelineCacheDir, o.Logger)
}

// Devices lists the Vulkan devices of this machine.
func Devices() ([]recorder.DeviceInfo, error) {
	in, err := vk.NewInstance(vk.InstanceOptions{})
	if err != nil {
		return nil, fromVK(err)
	}
	defer in.Close()
	infos, err := in.Devices()
	if err != nil {
		return nil, fromVK(err)
	}
	return infos, nil
}

// Open opens a Vulkan device (an instance of its own, with the
// validation layer if asked) as a recorder.Device, which the recorder made
// on it closes.
func Open(o Options) (recorder.Device, error) {
	if o.Surface != nil {
		return openPresenting(o)
	}
	in, err := vk.NewInstance(vk.InstanceOptions{Validation: o.Validation || o.SyncValidation, SyncValidation: o.SyncValidation, Logger: o.Logger,
		WithoutFeatures: o.WithoutFeatures})
	if err != nil {
		return nil, fromVK(err)
	}
	infos, err := in.Devices()
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	idx, err := vk.Select(infos, o.Device)
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	d, err := in.OpenDevice(idx)
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	return &vulkanDevice{in: in, d: d, info: d.Info(), cache: setUp(d, o)}, nil
}

// vulkanDevice implements Device on package vk. It keeps vk's objects in
// tables and hands out their indexes as handles.
type vulkanDevice struct {
	in   *vk.Instance
	d    *vk.Device
	info recorder.DeviceInfo

	mems   table[*vk.Block]
	pipes  table[*vk.Pipeline]
	dpools table[*vk.DescriptorPool]
	sets   table[vk.DescriptorSet]
	cpools table[*vk.CommandPool]
	cbs    table[*vk.CommandBuffer]
	fences table[*vk.Fence]
	stamps table[*vk.QueryPool]

	cache     *pipecache.Store // saved at Close; nil: no cache file
	closeOnce sync.Once
}

// table maps handles to objects: a handle is an index plus one, so the
// zero handle names nothing. Lookups (every recorded command makes a few)
// take no lock: entries live in chunks that never move, each published
// with an atomic store. Adding and removing lock; freed handles are reused.
type table[T any] struct {
	mu     lockrank.LeafMutex
	chunks [tableChunks]atomic.Pointer[[tableChunk]atomic.Pointer[T]]
	next   uint64 // handles handed out so far
	free   []uint64
}

const (
	tableChunk  = 1024
	tableChunks = 4096 // at most 4M live objects of one kind
)

func (t *table[T]) add(v T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var h uint64
	if n := len(t.free); n > 0 {
		h, t.free = t.free[n-1], t.free[:n-1]
	} else {
		t.next++
		h = t.next
		c := (h - 1) / tableChunk
		if c >= tableChunks {
			panic("vkdev: more live Vulkan objects of one kind than the handle table holds")
		}
		if t.chunks[c].Load() == nil {
			t.chunks[c].Store(new([tableChunk]atomic.Pointer[T]))
		}
	}
	t.chunks[(h-1)/tableChunk].Load()[(h-1)%tableChunk].Store(&v)
	return h
}

func (t *table[T]) get(h uint64) T {
	return *t.chunks[(h-1)/tableChunk].Load()[(h-1)%tableChunk].Load()
}

func (t *table[T]) remove(h uint64) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := &t.chunks[(h-1)/tableChunk].Load()[(h-1)%tableChunk]
	v := *e.Load()
	e.Store(nil)
	t.free = append(t.free, h)
	return v
}

func (v *vulkanDevice) Info() recorder.DeviceInfo { return v.info }

func (v *vulkanDevice) AllocateMemory(kind alloc.Kind, size uint64) (recorder.Memory, error) {
	use := vk.UseDeviceLocal
	switch kind {
	case alloc.Upload:
		use = vk.UseUpload
	case alloc.Readback:
		use = vk.UseReadback
	}
	b, err := v.d.AllocateBlock(use, size)
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.Memory(v.mems.add(b)), nil
}

func (v *vulkanDevice) MapMemory(m recorder.Memory) ([]byte, error) {
	b := v.mems.get(uint64(m))
	if err := v.d.MapBlock(b); err != nil {
		return nil, fromVK(err)
	}
	return b.Mapped(), nil
}

func (v *vulkanDevice) FlushMemory(m recorder.Memory, off, size uint64) error {
	return fromVK(v.mems.get(uint64(m)).FlushRange(off, size))
}

func (v *vulkanDevice) InvalidateMemory(m recorder.Memory, off, size uint64) error {
	return fromVK(v.mems.get(uint64(m)).InvalidateRange(off, size))
}

func (v *vulkanDevice) FreeMemory(m recorder.Memory) { v.mems.remove(uint64(m)).Release() }

func (v *vulkanDevice) NewPipeline(code []byte, desc recorder.PipelineDesc) (recorder.Pipeline, error) {
	constants := make([]vk.SpecConstant, len(desc.Constants))
	for i, c := range desc.Constants {
		constants[i] = vk.SpecConstant{ID: c.ID, Size: c.Size, Bits: c.Bits}
	}
	p, err := v.d.NewPipeline(code, vk.PipelineDesc{Bindings: desc.Bindings, Texels: desc.Texels, StorageTexels: desc.StorageTexels, Uniforms: desc.Uniforms,
		PushSize: desc.PushSize, Spec: desc.Spec, SpecIDs: desc.SpecIDs,
		Constants: constants, Entry: desc.Entry})
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.Pipeline(v.pipes.add(p)), nil
}

func (v *vulkanDevice) DestroyPipeline(p recorder.Pipeline) { v.pipes.remove(uint64(p)).Destroy() }

func (v *vulkanDevice) NewDescriptorPool(maxSets uint32) (recorder.DescriptorPool, error) {
	p, err := v.d.NewDescriptorPool(maxSets)
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.DescriptorPool(v.dpools.add(p)), nil
}

func (v *vulkanDevice) DestroyDescriptorPool(p recorder.DescriptorPool) {
	v.dpools.remove(uint64(p)).Destroy()
}

func (v *vulkanDevice) AllocateSet(pool recorder.DescriptorPool, p recorder.Pipeline) (recorder.DescriptorSet, error) {
	s, err := v.dpools.get(uint64(pool)).Allocate(v.pipes.get(uint64(p)))
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.DescriptorSet(v.sets.add(s)), nil
}

func (v *vulkanDevice) FreeSet(pool recorder.DescriptorPool, s recorder.DescriptorSet) {
	v.dpools.get(uint64(pool)).Free(v.sets.remove(uint64(s)))
}

func (v *vulkanDevice) UpdateSet(s recorder.DescriptorSet, r []recorder.BufferRange) error {
	var ranges [recorder.MaxBindings]vk.BufferRange
	n := min(len(r), recorder.MaxBindings)
	for i := 0; i < n; i++ {
		ranges[i] = vk.BufferRange{Block: v.mems.get(uint64(r[i].Memory)), Offset: r[i].Offset, Range: r[i].Size, Format: r[i].Format}
	}
	return fromVK(v.d.UpdateSet(v.sets.get(uint64(s)), ranges[:n]))
}

func (v *vulkanDevice) NewCommandPool() (recorder.CommandPool, error) {
	p, err := v.d.NewCommandPool()
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.CommandPool(v.cpools.add(p)), nil
}

func (v *vulkanDevice) DestroyCommandPool(p recorder.CommandPool) {
	v.cpools.remove(uint64(p)).Destroy()
}

func (v *vulkanDevice) AllocateCommandBuffer(p recorder.CommandPool) (recorder.CommandBuffer, error) {
	cb, err := v.cpools.get(uint64(p)).Allocate()
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.CommandBuffer(v.cbs.add(cb)), nil
}

func (v *vulkanDevice) FreeCommandBuffer(_ recorder.CommandPool, cb recorder.CommandBuffer) {
	v.cbs.remove(uint64(cb)).Free()
}

func (v *vulkanDevice) Begin(cb recorder.CommandBuffer, r recorder.Recording) error {
	flags := vk.OneTimeSubmit
	if r == recorder.Replayable {
		flags = vk.SimultaneousUse
	}
	return fromVK(v.d.Begin(v.cbs.get(uint64(cb)), flags))
}

func (v *vulkanDevice) End(cb recorder.CommandBuffer) error {
	return fromVK(v.d.End(v.cbs.get(uint64(cb))))
}

func (v *vulkanDevice) Reset(cb recorder.CommandBuffer) error {
	return fromVK(v.d.Reset(v.cbs.get(uint64(cb))))
}

func barrierOf(b recorder.Barrier) vk.Barrier {
	if b == recorder.BarrierToHost {
		return vk.BarrierToHost
	}
	return vk.BarrierAll
}

func (v *vulkanDevice) CmdDispatch(cb recorder.CommandBuffer, x *recorder.Dispatch) {
	d := vk.Dispatch{Pipeline: v.pipes.get(uint64(x.Pipeline)), Set: v.sets.get(uint64(x.Set)),
		Groups: x.Groups, Push: x.Push, Before: vk.BarrierAll, BarrierFirst: x.Barrier}
	if x.Indirect != 0 {
		d.Indirect, d.IndirectOffset = v.mems.get(uint64(x.Indirect)), x.IndirectOffset
	}
	v.d.CmdDispatch(v.cbs.get(uint64(cb)), &d)
}

func (v *vulkanDevice) CmdBarrier(cb recorder.CommandBuffer, b recorder.Barrier) {
	v.d.CmdBarrier(v.cbs.get(uint64(cb)), barrierOf(b))
}

func (v *vulkanDevice) CmdCopy(cb recorder.CommandBuffer, src recorder.Memory, srcOff uint64, dst recorder.Memory, dstOff, size uint64) {
	v.d.CmdCopy(v.cbs.get(uint64(cb)), v.mems.get(uint64(src)), srcOff, v.mems.get(uint64(dst)), dstOff, size)
}

func (v *vulkanDevice) NewTimestamps(count uint32) (recorder.Timestamps, error) {
	if v.info.Limits.TimestampPeriod <= 0 {
		return 0, fmt.Errorf("%q takes no timestamps on its compute queue: %w", v.info.Name, errs.Unsupported)
	}
	q, err := v.d.NewTimestampPool(count)
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.Timestamps(v.stamps.add(q)), nil
}

func (v *vulkanDevice) DestroyTimestamps(q recorder.Timestamps) { v.stamps.remove(uint64(q)).Destroy() }

func (v *vulkanDevice) CmdTimestamp(cb recorder.CommandBuffer, q recorder.Timestamps, i uint32) {
	c, p := v.cbs.get(uint64(cb)), v.stamps.get(uint64(q))
	v.d.CmdResetQueries(c, p, i, 1)
	v.d.CmdTimestamp(c, p, i)
}

func (v *vulkanDevice) ReadTimestamps(q recorder.Timestamps, first uint32, out []uint64) error {
	ts, err := v.stamps.get(uint64(q)).Results(first, uint32(len(out)))
	if err != nil {
		return fromVK(err)
	}
	copy(out, ts)
	return nil
}

func (v *vulkanDevice) NewFence() (recorder.Fence, error) {
	f, err := v.d.NewFence()
	if err != nil {
		return 0, fromVK(err)
	}
	return recorder.Fence(v.fences.add(f)), nil
}

func (v *vulkanDevice) DestroyFence(f recorder.Fence) { v.fences.remove(uint64(f)).Destroy() }

func (v *vulkanDevice) Submit(cb recorder.CommandBuffer, f recorder.Fence) error {
	return fromVK(v.d.Submit(v.cbs.get(uint64(cb)), v.fences.get(uint64(f))))
}

func (v *vulkanDevice) WaitFence(f recorder.Fence, timeout time.Duration) (bool, error) {
	ok, err := v.d.WaitFence(v.fences.get(uint64(f)), timeout)
	return ok, fromVK(err)
}

func (v *vulkanDevice) ResetFence(f recorder.Fence) error {
	return fromVK(v.d.ResetFence(v.fences.get(uint64(f))))
}

func (v *vulkanDevice) WaitIdle() error { return fromVK(v.d.WaitIdle()) }

func (v *vulkanDevice) Lost() bool { return v.d.Lost() }

func (v *vulkanDevice) Live() map[string]int64 { return v.d.Live() }

func (v *vulkanDevice) Diagnostics() recorder.Diagnostics {
	e, w := v.in.ValidationCounts()
	return recorder.Diagnostics{Checking: v.in.Validating(), Errors: e, Warnings: w, Recent: v.in.RecentMessages()}
}

func (v *vulkanDevice) Close() error {
	v.closeOnce.Do(func() {
		v.cache.Save()
		v.d.Close()
		v.in.Close()
	})
	return nil
}

// String names the device, for errors.
func (v *vulkanDevice) String() string { return fmt.Sprintf("vulkan device %q", v.info.Name) }
