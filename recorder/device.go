// Package recorder turns launches on logical streams into Vulkan command
// buffers: eager batches with barriers only where a hazard needs them, a
// descriptor-set cache, the drop queue for staging, capture windows sealed
// into replayable graphs, and the taint that follows every failure. It is
// wgpu-core to vk's wgpu-hal: vk is thin and unsafe, this layer tracks.
package recorder

import (
	"errors"
	"time"

	"github.com/vkcompute/vkc/vk"
)

// Device is everything the recorder asks of the device. It is defined here,
// where it is used: *vk.Device satisfies it, and tests wrap it to inject
// faults (an allocation that runs out, a map, a submit or a fence wait that
// fails) on the real device.
type Device interface {
	Info() vk.DeviceInfo
	AllocateBlock(use vk.MemoryUse, size uint64) (*vk.Block, error)
	MapBlock(b *vk.Block) error
	NewPipeline(code []byte, desc vk.PipelineDesc) (*vk.Pipeline, error)
	NewDescriptorPool(maxSets uint32) (*vk.DescriptorPool, error)
	NewCommandPool() (*vk.CommandPool, error)
	NewFence() (*vk.Fence, error)
	UpdateSet(s vk.DescriptorSet, r []vk.BufferRange)
	Begin(cb *vk.CommandBuffer, flags uint32) error
	End(cb *vk.CommandBuffer) error
	Reset(cb *vk.CommandBuffer) error
	CmdDispatch(cb *vk.CommandBuffer, x *vk.Dispatch)
	CmdBarrier(cb *vk.CommandBuffer, b vk.Barrier)
	CmdCopy(cb *vk.CommandBuffer, src *vk.Block, srcOff uint64, dst *vk.Block, dstOff, size uint64)
	Submit(cb *vk.CommandBuffer, fence *vk.Fence) error
	WaitFence(f *vk.Fence, timeout time.Duration) (bool, error)
	ResetFence(f *vk.Fence) error
	WaitIdle() error
	Lost() bool
}

var _ Device = (*vk.Device)(nil)

var (
	// ErrSyncInCapture: the stream that owns a recording capture window
	// asked to wait for the device (a read or a sync). Nothing recorded has
	// run, so there is nothing to wait for; the window is doomed.
	ErrSyncInCapture = errors.New("vkc: sync or read inside a capture window")
	// ErrStreamCapturing: another logical stream on the same backend slot
	// owns a capture window; this stream's read, sync or launch is refused
	// so it cannot slip into (or wait on) the recording.
	ErrStreamCapturing = errors.New("vkc: another stream on this slot is capturing")
)
