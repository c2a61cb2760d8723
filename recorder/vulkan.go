package recorder

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/vk"
)

// VulkanOptions choose the Vulkan device OpenVulkan opens.
type VulkanOptions struct {
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
	WithoutFeatures Features
	// Surface, when set, opens the device to present to a window: it is
	// called with the new VkInstance and returns the window's VkSurfaceKHR
	// (GLFW's CreateWindowSurface does this), which the device then owns;
	// the device chosen can present to it, has VK_KHR_swapchain, and is
	// also a Presenter. InstanceExtensions are the surface extensions to
	// enable (GLFW's GetRequiredInstanceExtensions).
	Surface            func(instance uintptr) (uint64, error)
	InstanceExtensions []string
}

// VulkanDevices lists the Vulkan devices of this machine.
func VulkanDevices() ([]DeviceInfo, error) {
	in, err := vk.NewInstance(vk.InstanceOptions{})
	if err != nil {
		return nil, fromVK(err)
	}
	defer in.Close()
	infos, err := in.Devices()
	if err != nil {
		return nil, fromVK(err)
	}
	out := make([]DeviceInfo, len(infos))
	for i, info := range infos {
		out[i] = infoFromVK(info)
	}
	return out, nil
}

// OpenVulkan opens a Vulkan device (an instance of its own, with the
// validation layer if asked) as a Device.
func OpenVulkan(o VulkanOptions) (Device, error) {
	if o.Surface != nil {
		return openPresentingVulkan(o)
	}
	in, err := vk.NewInstance(vk.InstanceOptions{Validation: o.Validation || o.SyncValidation, SyncValidation: o.SyncValidation, Logger: o.Logger,
		WithoutFeatures: vkFeatures(o.WithoutFeatures)})
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
	return &vulkanDevice{in: in, d: d, info: infoFromVK(d.Info())}, nil
}

// vulkanDevice implements Device on package vk. It keeps vk's objects in
// tables and hands out their indexes as handles.
type vulkanDevice struct {
	in   *vk.Instance
	d    *vk.Device
	info DeviceInfo

	mems   table[*vk.Block]
	pipes  table[*vk.Pipeline]
	dpools table[*vk.DescriptorPool]
	sets   table[vk.DescriptorSet]
	cpools table[*vk.CommandPool]
	cbs    table[*vk.CommandBuffer]
	fences table[*vk.Fence]

	closeOnce sync.Once
}

// table maps handles to objects: a handle is an index plus one, so the
// zero handle names nothing. Lookups (every recorded command makes a few)
// take no lock: entries live in chunks that never move, each published
// with an atomic store. Adding and removing lock; freed handles are reused.
type table[T any] struct {
	mu     sync.Mutex
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
			panic("recorder: more live Vulkan objects of one kind than the handle table holds")
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

// vkError maps a vk error onto the recorder's sentinel, keeping vk's
// message and chain.
type vkError struct {
	sentinel error
	err      error
}

func (e *vkError) Error() string        { return e.err.Error() }
func (e *vkError) Unwrap() error        { return e.err }
func (e *vkError) Is(target error) bool { return target == e.sentinel }

// fromVK maps vk's sentinels onto the recorder's.
func fromVK(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range [...]struct{ from, to error }{
		{vk.ErrDeviceLost, ErrDeviceLost},
		{vk.ErrOutOfDeviceMemory, ErrOutOfDeviceMemory},
		{vk.ErrClosed, ErrClosed},
		{vk.ErrBadSPIRV, ErrBadSPIRV},
		{vk.ErrNoLoader, ErrNoLoader},
		{vk.ErrNoDevice, ErrNoDevice},
	} {
		if errors.Is(err, m.from) {
			return &vkError{sentinel: m.to, err: err}
		}
	}
	return err
}

func infoFromVK(i vk.DeviceInfo) DeviceInfo {
	out := DeviceInfo{Index: i.Index, Name: i.Name, Type: DeviceType(i.Type), VendorID: i.VendorID, DeviceID: i.DeviceID,
		Vendor: i.Vendor, DriverVersion: i.DriverVersion, APIVersion: i.APIVersion,
		Limits:        Limits(i.Limits),
		Subgroup:      SubgroupInfo(i.Subgroup),
		UnifiedMemory: i.UnifiedMemory,
		Features:      featuresFromVK(i.Features)}
	for _, h := range i.Heaps {
		out.Heaps = append(out.Heaps, MemoryHeap(h))
	}
	return out
}

// featurePairs names each feature at both layers.
var featurePairs = [...]struct {
	f  Features
	vk vk.Features
}{
	{FeatureFloat16, vk.FeatureFloat16}, {FeatureFloat64, vk.FeatureFloat64}, {FeatureInt8, vk.FeatureInt8},
	{FeatureInt16, vk.FeatureInt16}, {FeatureInt64, vk.FeatureInt64}, {FeatureStorage8, vk.FeatureStorage8},
	{FeatureStorage16, vk.FeatureStorage16}, {FeatureUniformAndStorage8, vk.FeatureUniformAndStorage8},
	{FeatureUniformAndStorage16, vk.FeatureUniformAndStorage16},
}

func featuresFromVK(in vk.Features) Features {
	var out Features
	for _, p := range featurePairs {
		if in&p.vk != 0 {
			out |= p.f
		}
	}
	return out
}

func vkFeatures(in Features) vk.Features {
	var out vk.Features
	for _, p := range featurePairs {
		if in&p.f != 0 {
			out |= p.vk
		}
	}
	return out
}

func (v *vulkanDevice) Info() DeviceInfo { return v.info }

func (v *vulkanDevice) AllocateMemory(kind alloc.Kind, size uint64) (Memory, error) {
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
	return Memory(v.mems.add(b)), nil
}

func (v *vulkanDevice) MapMemory(m Memory) ([]byte, error) {
	b := v.mems.get(uint64(m))
	if err := v.d.MapBlock(b); err != nil {
		return nil, fromVK(err)
	}
	return b.Mapped(), nil
}

func (v *vulkanDevice) FlushMemory(m Memory, off, size uint64) error {
	return fromVK(v.mems.get(uint64(m)).FlushRange(off, size))
}

func (v *vulkanDevice) InvalidateMemory(m Memory, off, size uint64) error {
	return fromVK(v.mems.get(uint64(m)).InvalidateRange(off, size))
}

func (v *vulkanDevice) FreeMemory(m Memory) { v.mems.remove(uint64(m)).Release() }

func (v *vulkanDevice) NewPipeline(code []byte, desc PipelineDesc) (Pipeline, error) {
	p, err := v.d.NewPipeline(code, vk.PipelineDesc{Bindings: desc.Bindings, PushSize: desc.PushSize, Spec: desc.Spec, SpecIDs: desc.SpecIDs})
	if err != nil {
		return 0, fromVK(err)
	}
	return Pipeline(v.pipes.add(p)), nil
}

func (v *vulkanDevice) DestroyPipeline(p Pipeline) { v.pipes.remove(uint64(p)).Destroy() }

func (v *vulkanDevice) NewDescriptorPool(maxSets uint32) (DescriptorPool, error) {
	p, err := v.d.NewDescriptorPool(maxSets)
	if err != nil {
		return 0, fromVK(err)
	}
	return DescriptorPool(v.dpools.add(p)), nil
}

func (v *vulkanDevice) DestroyDescriptorPool(p DescriptorPool) { v.dpools.remove(uint64(p)).Destroy() }

func (v *vulkanDevice) AllocateSet(pool DescriptorPool, p Pipeline) (DescriptorSet, error) {
	s, err := v.dpools.get(uint64(pool)).Allocate(v.pipes.get(uint64(p)))
	if err != nil {
		return 0, fromVK(err)
	}
	return DescriptorSet(v.sets.add(s)), nil
}

func (v *vulkanDevice) FreeSet(pool DescriptorPool, s DescriptorSet) {
	v.dpools.get(uint64(pool)).Free(v.sets.remove(uint64(s)))
}

func (v *vulkanDevice) UpdateSet(s DescriptorSet, r []BufferRange) {
	var ranges [MaxBindings]vk.BufferRange
	n := min(len(r), MaxBindings)
	for i := 0; i < n; i++ {
		ranges[i] = vk.BufferRange{Block: v.mems.get(uint64(r[i].Memory)), Offset: r[i].Offset, Range: r[i].Size}
	}
	v.d.UpdateSet(v.sets.get(uint64(s)), ranges[:n])
}

func (v *vulkanDevice) NewCommandPool() (CommandPool, error) {
	p, err := v.d.NewCommandPool()
	if err != nil {
		return 0, fromVK(err)
	}
	return CommandPool(v.cpools.add(p)), nil
}

func (v *vulkanDevice) DestroyCommandPool(p CommandPool) { v.cpools.remove(uint64(p)).Destroy() }

func (v *vulkanDevice) AllocateCommandBuffer(p CommandPool) (CommandBuffer, error) {
	cb, err := v.cpools.get(uint64(p)).Allocate()
	if err != nil {
		return 0, fromVK(err)
	}
	return CommandBuffer(v.cbs.add(cb)), nil
}

func (v *vulkanDevice) FreeCommandBuffer(_ CommandPool, cb CommandBuffer) {
	v.cbs.remove(uint64(cb)).Free()
}

func (v *vulkanDevice) Begin(cb CommandBuffer, r Recording) error {
	flags := vk.OneTimeSubmit
	if r == Replayable {
		flags = vk.SimultaneousUse
	}
	return fromVK(v.d.Begin(v.cbs.get(uint64(cb)), flags))
}

func (v *vulkanDevice) End(cb CommandBuffer) error { return fromVK(v.d.End(v.cbs.get(uint64(cb)))) }

func (v *vulkanDevice) Reset(cb CommandBuffer) error {
	return fromVK(v.d.Reset(v.cbs.get(uint64(cb))))
}

func barrierOf(b Barrier) vk.Barrier {
	if b == BarrierToHost {
		return vk.BarrierToHost
	}
	return vk.BarrierAll
}

func (v *vulkanDevice) CmdDispatch(cb CommandBuffer, x *Dispatch) {
	d := vk.Dispatch{Pipeline: v.pipes.get(uint64(x.Pipeline)), Set: v.sets.get(uint64(x.Set)),
		Groups: x.Groups, Push: x.Push, Before: vk.BarrierAll, BarrierFirst: x.Barrier}
	if x.Indirect != 0 {
		d.Indirect, d.IndirectOffset = v.mems.get(uint64(x.Indirect)), x.IndirectOffset
	}
	v.d.CmdDispatch(v.cbs.get(uint64(cb)), &d)
}

func (v *vulkanDevice) CmdBarrier(cb CommandBuffer, b Barrier) {
	v.d.CmdBarrier(v.cbs.get(uint64(cb)), barrierOf(b))
}

func (v *vulkanDevice) CmdCopy(cb CommandBuffer, src Memory, srcOff uint64, dst Memory, dstOff, size uint64) {
	v.d.CmdCopy(v.cbs.get(uint64(cb)), v.mems.get(uint64(src)), srcOff, v.mems.get(uint64(dst)), dstOff, size)
}

func (v *vulkanDevice) NewFence() (Fence, error) {
	f, err := v.d.NewFence()
	if err != nil {
		return 0, fromVK(err)
	}
	return Fence(v.fences.add(f)), nil
}

func (v *vulkanDevice) DestroyFence(f Fence) { v.fences.remove(uint64(f)).Destroy() }

func (v *vulkanDevice) Submit(cb CommandBuffer, f Fence) error {
	return fromVK(v.d.Submit(v.cbs.get(uint64(cb)), v.fences.get(uint64(f))))
}

func (v *vulkanDevice) WaitFence(f Fence, timeout time.Duration) (bool, error) {
	ok, err := v.d.WaitFence(v.fences.get(uint64(f)), timeout)
	return ok, fromVK(err)
}

func (v *vulkanDevice) ResetFence(f Fence) error {
	return fromVK(v.d.ResetFence(v.fences.get(uint64(f))))
}

func (v *vulkanDevice) WaitIdle() error { return fromVK(v.d.WaitIdle()) }

func (v *vulkanDevice) Lost() bool { return v.d.Lost() }

func (v *vulkanDevice) Live() map[string]int64 { return v.d.Live() }

func (v *vulkanDevice) Diagnostics() Diagnostics {
	e, w := v.in.ValidationCounts()
	return Diagnostics{Checking: v.in.Validating(), Errors: e, Warnings: w, Recent: v.in.RecentMessages()}
}

func (v *vulkanDevice) Close() error {
	v.closeOnce.Do(func() {
		v.d.Close()
		v.in.Close()
	})
	return nil
}

// String names the device, for errors.
func (v *vulkanDevice) String() string { return fmt.Sprintf("vulkan device %q", v.info.Name) }
