// Package recorder is the one gateway to the device: it turns launches,
// copies and host transfers on logical streams into command buffers (eager
// batches with barriers only where a hazard needs them, capture windows
// sealed into replayable graphs), owns device memory, pipelines and the
// descriptor-set cache, and keeps the taint ledger true through every
// failure.
//
// It reaches the device only through Device, an interface it defines in
// opaque handles and plain values. vkdev.Open implements it on a Vulkan
// driver (package vk); package recorder/hostdev implements it in host
// memory, so every invariant here is tested, fuzzed and fault-injected
// without a GPU. It is to vk what wgpu-core is to wgpu-hal: vk is thin and
// unsafe, this layer tracks.
package recorder

import (
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/devinfo"
)

// Handles name objects a Device created. They are opaque to the recorder,
// which only passes them back; the zero value names nothing. A handle is
// valid from the call that returned it until the matching destroy or free.
type (
	// Memory is one page: device memory with one buffer spanning it, which
	// descriptors and copies address by offset.
	Memory uint64
	// Pipeline is a compute pipeline with its layouts and shader module.
	Pipeline uint64
	// DescriptorPool hands out descriptor sets that are freed one by one.
	DescriptorPool uint64
	// DescriptorSet binds storage-buffer ranges to a pipeline's bindings.
	DescriptorSet uint64
	// CommandPool allocates command buffers that are reset one by one.
	CommandPool uint64
	// CommandBuffer is a primary command buffer.
	CommandBuffer uint64
	// Fence signals when a submission completes.
	Fence uint64
	// Timestamps is a pool of timestamp queries: device clock readings
	// that events and profiles take between commands.
	Timestamps uint64
)

// Recording says what a command buffer is begun for.
type Recording uint8

const (
	// Eager: a batch submitted once, then reset for reuse.
	Eager Recording = iota
	// Replayable: a sealed graph, which may be pending several times at
	// once so that consecutive replays queue without a host wait.
	Replayable
)

// Barrier is a global memory barrier of one of the two kinds the recorder
// needs. A device maps each onto its own stages and access masks.
type Barrier uint8

const (
	// BarrierBetween orders every earlier compute, transfer and host write
	// before every later compute or transfer access: it separates a launch
	// or copy from earlier work it depends on, and opens every graph.
	BarrierBetween Barrier = iota
	// BarrierToHost makes compute and transfer writes visible to the host
	// and to every later command on the queue: it closes every batch and
	// every graph, which is what orders one submission after another.
	BarrierToHost
)

// Dispatch is one recorded launch: bind the pipeline and the set, set the
// push constants, dispatch the group counts, with BarrierBetween first when
// Barrier is set. Push is copied; nothing is retained after the call.
type Dispatch struct {
	Pipeline Pipeline
	Set      DescriptorSet
	Groups   [3]uint32
	Push     []byte
	Barrier  bool
	// Indirect, when not zero, holds the group counts (three uint32) at
	// IndirectOffset, read when the command executes (vkCmdDispatchIndirect):
	// Groups is then ignored, and the host may change them between replays.
	Indirect       Memory
	IndirectOffset uint64
}

// PipelineDesc is a compute kernel's interface: buffers at set 0,
// bindings 0..Bindings-1, of which the ones with their bit set in Writes
// are written and the ones with their bit set in Texels are read as
// uniform texel buffers (by default of TexelSize-byte R32G32B32A32_UINT
// texels, GLSL usamplerBuffer; Formats says otherwise) instead of storage
// buffers, each viewing the whole texels of the claim bound (a claim's
// tail short of a texel is not seen); StorageTexels and Uniforms mark
// storage texel and uniform buffers; PushSize bytes of push constants; values for specialization
// constants, Spec[i] for the constant with ID SpecIDs[i] (ID i when SpecIDs
// is nil). Name identifies the kernel: a device that executes kernels in
// Go (hostdev) looks its reference up by it, and errors name it.
type PipelineDesc struct {
	Name     string
	Bindings int
	Writes   uint32
	Texels   uint32
	// StorageTexels has bit i set when binding i is a storage texel
	// buffer (read, written or both, as Writes says), and Uniforms when it
	// is a uniform buffer (read only); no bit is set in two of Texels,
	// StorageTexels and Uniforms.
	StorageTexels, Uniforms uint32
	// Formats are the formats the texel bindings view their claims as,
	// each viewing the whole texels of the claim bound; the zero value
	// is R32G32B32A32_UINT (TexelSize bytes).
	Formats  [MaxBindings]TexelFormat
	PushSize uint32
	Spec     []uint32
	// SpecIDs are the IDs of the constants Spec sets, one per value and
	// no two alike, so that a user kernel's workgroup size is set without
	// touching its other constants; nil means 0..len(Spec)-1 (the
	// catalogue's convention).
	SpecIDs []uint32
	// Constants set further specialization constants of any width (a
	// user kernel's constants, typed by its module); no ID is set twice
	// across Spec and Constants.
	Constants []SpecConstant
	// Entry names the entry point the pipeline runs; "" is "main".
	Entry string
}

// SpecConstant is the value of one specialization constant: Size bytes (1,
// 2, 4 or 8: its type's width, 4 for a bool) of Bits, low bytes first.
type SpecConstant struct {
	ID   uint32
	Size uint32
	Bits uint64
}

// SpecValue is the value desc sets for the specialization constant with
// the given ID, if it sets one: what a device that runs kernels in Go
// reads a workgroup size from.
func (desc PipelineDesc) SpecValue(id uint32) (uint32, bool) {
	for i, v := range desc.Spec {
		if desc.SpecIDs == nil && uint32(i) == id || i < len(desc.SpecIDs) && desc.SpecIDs[i] == id {
			return v, true
		}
	}
	return 0, false
}

// BufferRange is the bytes of a page that one binding of a set names.
type BufferRange struct {
	Memory Memory
	Offset uint64
	Size   uint64
	// Format is the format a texel binding views the range as (ignored
	// for other bindings).
	Format TexelFormat
}

// TexelSize is the bytes of one texel of a uniform texel binding.
const TexelSize = devinfo.TexelSize

// TexelFormat is the format a texel binding views a claim as.
type TexelFormat = devinfo.TexelFormat

// The texel formats (see devinfo).
const (
	TexelRGBA32Uint  = devinfo.TexelRGBA32Uint
	TexelR32Float    = devinfo.TexelR32Float
	TexelR32Uint     = devinfo.TexelR32Uint
	TexelR32Sint     = devinfo.TexelR32Sint
	TexelRGBA32Float = devinfo.TexelRGBA32Float
	TexelRGBA32Sint  = devinfo.TexelRGBA32Sint
	TexelRGBA16Float = devinfo.TexelRGBA16Float
	TexelR16Float    = devinfo.TexelR16Float
	TexelR16Uint     = devinfo.TexelR16Uint
	TexelR16Sint     = devinfo.TexelR16Sint
	TexelR8Uint      = devinfo.TexelR8Uint
	TexelR8Sint      = devinfo.TexelR8Sint
)

// MaxBindings is the most buffers (storage or texel) one launch binds.
const MaxBindings = 16

// MaxPushSize is the most push-constant bytes one launch carries; Vulkan
// guarantees 128, devices often offer 256.
const MaxPushSize = 256

// Device is everything the recorder asks of a device: every call that can
// fail returns its error here, so a wrapper injects faults at any of them
// and the recorder's bookkeeping is tested at each. It is not safe to use
// one command pool, or the buffers allocated from it, from two goroutines
// at once; the recorder never does.
//
// Errors a Device returns wrap vkc's sentinels (package errs) where one applies
// (errs.DeviceLost, errs.OutOfMemory, errs.Closed, errs.BadSPIRV).
type Device interface {
	// Info describes the device: name, type, limits, memory.
	Info() DeviceInfo

	// AllocateMemory creates a page of size bytes of the given kind, not
	// mapped yet.
	AllocateMemory(kind alloc.Kind, size uint64) (Memory, error)
	// MapMemory maps a host-visible page persistently and returns its bytes,
	// which stay valid until FreeMemory.
	MapMemory(m Memory) ([]byte, error)
	// FlushMemory makes host writes to [off, off+size) visible to the device.
	FlushMemory(m Memory, off, size uint64) error
	// InvalidateMemory makes device writes to [off, off+size) visible to the host.
	InvalidateMemory(m Memory, off, size uint64) error
	// FreeMemory unmaps and frees a page; no pending work may use it.
	FreeMemory(m Memory)

	// NewPipeline builds a compute pipeline (entry point "main") from
	// SPIR-V, which the device validates before its driver sees it.
	NewPipeline(code []byte, desc PipelineDesc) (Pipeline, error)
	// DestroyPipeline destroys a pipeline no pending work uses.
	DestroyPipeline(p Pipeline)

	// NewDescriptorPool makes a pool for maxSets sets of up to MaxBindings
	// buffers (storage or texel) each.
	NewDescriptorPool(maxSets uint32) (DescriptorPool, error)
	// DestroyDescriptorPool destroys a pool and every set still in it.
	DestroyDescriptorPool(p DescriptorPool)
	// AllocateSet takes a set of the pipeline's layout from the pool.
	AllocateSet(pool DescriptorPool, p Pipeline) (DescriptorSet, error)
	// FreeSet returns a set no pending work uses to its pool.
	FreeSet(pool DescriptorPool, s DescriptorSet)
	// UpdateSet points bindings 0..len(r)-1 of s at the ranges; s is not in
	// use by any pending or recording command buffer. A texel binding's
	// range (see PipelineDesc.Texels) must start at a multiple of
	// Limits.MinTexelBufferOffsetAlignment and hold whole texels, at most
	// Limits.MaxTexelBufferElements; the error says which is not so, or
	// that the device could not make the binding's view, and the set is
	// then as it was.
	UpdateSet(s DescriptorSet, r []BufferRange) error

	// NewCommandPool creates a pool whose buffers are reset one by one.
	NewCommandPool() (CommandPool, error)
	// DestroyCommandPool destroys a pool and the buffers still allocated from it.
	DestroyCommandPool(p CommandPool)
	// AllocateCommandBuffer takes a primary command buffer from the pool.
	AllocateCommandBuffer(p CommandPool) (CommandBuffer, error)
	// FreeCommandBuffer returns a buffer that is not pending to its pool.
	FreeCommandBuffer(p CommandPool, cb CommandBuffer)
	// Begin starts recording.
	Begin(cb CommandBuffer, r Recording) error
	// End finishes recording.
	End(cb CommandBuffer) error
	// Reset returns a buffer that is not pending to the initial state.
	Reset(cb CommandBuffer) error
	// CmdDispatch records one launch. It is the hot path: one call into the
	// driver, no allocation.
	CmdDispatch(cb CommandBuffer, x *Dispatch)
	// CmdBarrier records a global memory barrier.
	CmdBarrier(cb CommandBuffer, b Barrier)
	// CmdCopy records a copy of size bytes between pages.
	CmdCopy(cb CommandBuffer, src Memory, srcOff uint64, dst Memory, dstOff, size uint64)

	// NewTimestamps creates a pool of count timestamp queries (at least
	// one). A device whose queue takes no timestamps (a timestamp period
	// of zero in its limits) fails with errs.Unsupported.
	NewTimestamps(count uint32) (Timestamps, error)
	// DestroyTimestamps destroys a pool no pending command buffer writes.
	DestroyTimestamps(q Timestamps)
	// CmdTimestamp records a reset of query i of q followed by a write of
	// the device clock once every earlier command on the queue completed,
	// so a buffer that records it may be submitted again (a replay).
	CmdTimestamp(cb CommandBuffer, q Timestamps, i uint32)
	// ReadTimestamps waits for queries [first, first+len(out)) of q and
	// stores them in ticks (Limits.TimestampPeriod nanoseconds each). The
	// caller has submitted every command buffer that writes them.
	ReadTimestamps(q Timestamps, first uint32, out []uint64) error

	// NewFence creates an unsignaled fence.
	NewFence() (Fence, error)
	// DestroyFence destroys a fence no pending submission signals.
	DestroyFence(f Fence)
	// Submit queues cb and signals f when it completes. Submissions run in
	// the order they are made: the device has one queue.
	Submit(cb CommandBuffer, f Fence) error
	// WaitFence waits up to timeout (negative: forever) and reports
	// whether f signaled.
	WaitFence(f Fence, timeout time.Duration) (bool, error)
	// ResetFence returns a signaled fence to unsignaled.
	ResetFence(f Fence) error

	// WaitIdle waits until the queue has no pending work.
	WaitIdle() error
	// Lost reports whether the device reported its loss.
	Lost() bool
	// Live counts the live objects of each kind the device created, by
	// name; after Close every count is zero.
	Live() map[string]int64
	// Diagnostics reports what the device's checker (the Vulkan validation
	// layer, or the host device's hazard checker) found.
	Diagnostics() Diagnostics
	// Close destroys the device; every object created from it must be
	// destroyed first. Idempotent.
	Close() error
}

// Diagnostics is what a device's own checker reported: the Khronos
// validation layer on Vulkan, the hazard and misuse checker on hostdev.
type Diagnostics struct {
	// Checking says whether a checker is active.
	Checking bool
	// Errors and Warnings count the messages reported since the device opened.
	Errors, Warnings int64
	// Recent holds up to the last 32 messages.
	Recent []string
}

// The device's description is package devinfo's, declared once below the
// root; the recorder speaks of it by these names in its Device interface.
type (
	DeviceType   = devinfo.DeviceType
	Limits       = devinfo.Limits
	MemoryHeap   = devinfo.MemoryHeap
	SubgroupInfo = devinfo.SubgroupInfo
	DeviceInfo   = devinfo.DeviceInfo
	Features     = devinfo.Features
	// ComponentType and Scope describe a cooperative-matrix configuration
	// (DeviceInfo.CooperativeMatrices).
	ComponentType = devinfo.ComponentType
	Scope         = devinfo.Scope
)
