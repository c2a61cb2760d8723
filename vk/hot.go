package vk

/*
#include <string.h>
#include "cvk.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// Usage flags for BeginCommandBuffer.
const (
	// OneTimeSubmit: an eager batch, submitted once then reset.
	OneTimeSubmit uint32 = 0x1
	// SimultaneousUse: a sealed graph, which may be pending several times at
	// once so that consecutive replays queue without a host wait.
	SimultaneousUse uint32 = 0x4
)

// Pipeline stages and access masks used in barriers (Vulkan's values).
const (
	StageTopOfPipe    uint32 = 0x1
	StageCompute      uint32 = 0x800
	StageTransfer     uint32 = 0x1000
	StageBottomOfPipe uint32 = 0x2000
	StageHost         uint32 = 0x4000

	AccessShaderRead    uint32 = 0x20
	AccessShaderWrite   uint32 = 0x40
	AccessTransferRead  uint32 = 0x800
	AccessTransferWrite uint32 = 0x1000
	AccessHostRead      uint32 = 0x2000
	AccessHostWrite     uint32 = 0x4000
	AccessMemoryRead    uint32 = 0x8000
	AccessMemoryWrite   uint32 = 0x10000
)

// Barrier is one global memory barrier: writes of SrcAccess at SrcStage
// made visible to DstAccess at DstStage.
type Barrier struct {
	SrcStage, DstStage   uint32
	SrcAccess, DstAccess uint32
}

// Common barriers.
var (
	// BarrierAll orders all prior compute/transfer/host writes before any
	// compute or transfer work (used at a graph's start and between hazards).
	BarrierAll = Barrier{
		SrcStage: StageCompute | StageTransfer | StageHost, DstStage: StageCompute | StageTransfer,
		SrcAccess: AccessShaderWrite | AccessTransferWrite | AccessHostWrite,
		DstAccess: AccessShaderRead | AccessShaderWrite | AccessTransferRead | AccessTransferWrite,
	}
	// BarrierToHost makes compute and transfer writes visible to the host
	// and to later transfer work (at the end of a batch or graph).
	BarrierToHost = Barrier{
		SrcStage: StageCompute | StageTransfer, DstStage: StageHost | StageTransfer | StageCompute,
		SrcAccess: AccessShaderWrite | AccessTransferWrite,
		DstAccess: AccessHostRead | AccessTransferRead | AccessTransferWrite | AccessShaderRead | AccessShaderWrite,
	}
)

// Dispatch is one recorded launch. Push is copied; nothing is retained.
type Dispatch struct {
	Pipeline *Pipeline
	Set      DescriptorSet
	Groups   [3]uint32
	Push     []byte
	// Before is recorded ahead of the dispatch when BarrierFirst is set.
	Before       Barrier
	BarrierFirst bool
}

// Begin starts recording with the given usage flags.
func (d *Device) Begin(cb *CommandBuffer, flags uint32) error {
	if cb.state == nil {
		return ErrClosed
	}
	return d.check("vkBeginCommandBuffer", Result(C.vkc_cmd_begin(d.fns, cb.state, C.VkCommandBufferUsageFlags(flags))))
}

// End finishes recording.
func (d *Device) End(cb *CommandBuffer) error {
	if cb.state == nil {
		return ErrClosed
	}
	return d.check("vkEndCommandBuffer", Result(C.vkc_cmd_end(d.fns, cb.state)))
}

// Reset returns a command buffer to the initial state.
func (d *Device) Reset(cb *CommandBuffer) error {
	if cb.state == nil {
		return ErrClosed
	}
	return d.check("vkResetCommandBuffer", Result(C.vkc_cmd_reset(d.fns, cb.state)))
}

// CmdDispatch records bind pipeline, bind set, push constants, dispatch
// (and the barrier first when asked) in one cgo call. It allocates nothing:
// the fields are written into the command buffer's C scratch.
func (d *Device) CmdDispatch(cb *CommandBuffer, x *Dispatch) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	st := cb.state
	st.pipeline = *(*C.VkPipeline)(unsafe.Pointer(&x.Pipeline.pipeline))
	st.layout = *(*C.VkPipelineLayout)(unsafe.Pointer(&x.Pipeline.layout))
	st.set = *(*C.VkDescriptorSet)(unsafe.Pointer(&x.Set.set))
	st.groups[0], st.groups[1], st.groups[2] = C.uint32_t(x.Groups[0]), C.uint32_t(x.Groups[1]), C.uint32_t(x.Groups[2])
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(&st.push[0])), len(st.push)), x.Push)
	st.push_size = C.uint32_t(n)
	if x.BarrierFirst {
		st.barrier = 1
		st.src_stage, st.dst_stage = C.VkPipelineStageFlags(x.Before.SrcStage), C.VkPipelineStageFlags(x.Before.DstStage)
		st.src_access, st.dst_access = C.VkAccessFlags(x.Before.SrcAccess), C.VkAccessFlags(x.Before.DstAccess)
	} else {
		st.barrier = 0
	}
	C.vkc_cmd_dispatch(d.fns, st)
}

// CmdBarrier records one global memory barrier.
func (d *Device) CmdBarrier(cb *CommandBuffer, b Barrier) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	C.vkc_cmd_barrier(d.fns, cb.state, C.VkPipelineStageFlags(b.SrcStage), C.VkPipelineStageFlags(b.DstStage),
		C.VkAccessFlags(b.SrcAccess), C.VkAccessFlags(b.DstAccess))
}

// CmdCopy records a buffer-to-buffer copy between blocks.
func (d *Device) CmdCopy(cb *CommandBuffer, src *Block, srcOff uint64, dst *Block, dstOff, size uint64) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	C.vkc_cmd_copy(d.fns, cb.state, src.cBuffer(), dst.cBuffer(), C.VkDeviceSize(srcOff), C.VkDeviceSize(dstOff), C.VkDeviceSize(size))
}

// CmdFill records a fill of size bytes (a multiple of 4) with a 32-bit word.
func (d *Device) CmdFill(cb *CommandBuffer, dst *Block, off, size uint64, word uint32) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	C.vkc_cmd_fill(d.fns, cb.state, dst.cBuffer(), C.VkDeviceSize(off), C.VkDeviceSize(size), C.uint32_t(word))
}

// CmdResetQueries records a reset of count queries from first.
func (d *Device) CmdResetQueries(cb *CommandBuffer, q *QueryPool, first, count uint32) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	C.vkc_cmd_reset_queries(d.fns, cb.state, q.c(), C.uint32_t(first), C.uint32_t(count))
}

// CmdTimestamp records a bottom-of-pipe timestamp into query.
func (d *Device) CmdTimestamp(cb *CommandBuffer, q *QueryPool, query uint32) {
	if cb.state == nil {
		return // a freed command buffer records nothing
	}
	C.vkc_cmd_timestamp(d.fns, cb.state, q.c(), C.uint32_t(query))
}

// Submit queues cb (nil: an empty submission that only signals) and signals
// fence (nil: none) when it completes. The queue lock serialises streams.
func (d *Device) Submit(cb *CommandBuffer, fence *Fence) error {
	if err := d.usable(); err != nil {
		return err
	}
	var ccb C.VkCommandBuffer
	if cb != nil {
		ccb = cb.state.cb
	}
	var cf C.VkFence
	if fence != nil {
		cf = fence.c()
	}
	d.queueMu.Lock()
	r := C.vkc_submit(d.fns, ccb, cf)
	d.queueMu.Unlock()
	return d.check("vkQueueSubmit", Result(r))
}

// WaitFence waits up to timeout (negative: forever) and reports whether the
// fence signaled.
func (d *Device) WaitFence(f *Fence, timeout time.Duration) (bool, error) {
	if d.closed.Load() {
		return false, ErrClosed
	}
	ns := ^uint64(0)
	if timeout >= 0 {
		ns = uint64(timeout)
	}
	r := Result(C.vkc_wait_fence(d.fns, f.c(), C.uint64_t(ns)))
	if r == Timeout {
		return false, nil
	}
	return r == Success, d.check("vkWaitForFences", r)
}

// ResetFence returns a signaled fence to unsignaled.
func (d *Device) ResetFence(f *Fence) error {
	return d.check("vkResetFences", Result(C.vkc_reset_fence(d.fns, f.c())))
}

// FenceSignaled polls a fence without waiting.
func (d *Device) FenceSignaled(f *Fence) (bool, error) {
	r := Result(C.vkc_fence_status(d.fns, f.c()))
	if r == NotReady {
		return false, nil
	}
	return r == Success, d.check("vkGetFenceStatus", r)
}
