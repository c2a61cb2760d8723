package vk

/*
#include <string.h>
#include "cvk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/vkcompute/vkc/devinfo"
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
	StageDrawIndirect uint32 = 0x2 // where vkCmdDispatchIndirect reads its group counts
	StageCompute      uint32 = 0x800
	StageTransfer     uint32 = 0x1000
	StageBottomOfPipe uint32 = 0x2000
	StageHost         uint32 = 0x4000

	AccessIndirectRead  uint32 = 0x1 // VK_ACCESS_INDIRECT_COMMAND_READ_BIT
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
	// compute or transfer work, the reading of indirect group counts
	// included (used at a graph's start and between hazards).
	BarrierAll = Barrier{
		SrcStage: StageCompute | StageTransfer | StageHost, DstStage: StageCompute | StageTransfer | StageDrawIndirect,
		SrcAccess: AccessShaderWrite | AccessTransferWrite | AccessHostWrite,
		DstAccess: AccessShaderRead | AccessShaderWrite | AccessTransferRead | AccessTransferWrite | AccessIndirectRead,
	}
	// BarrierToHost makes compute and transfer writes visible to the host
	// and to later work, indirect group counts included (at the end of a
	// batch or graph).
	BarrierToHost = Barrier{
		SrcStage: StageCompute | StageTransfer, DstStage: StageHost | StageTransfer | StageCompute | StageDrawIndirect,
		SrcAccess: AccessShaderWrite | AccessTransferWrite,
		DstAccess: AccessHostRead | AccessTransferRead | AccessTransferWrite | AccessShaderRead | AccessShaderWrite | AccessIndirectRead,
	}
)

// Dispatch is one recorded launch. Push is copied; nothing is retained.
type Dispatch struct {
	Pipeline *Pipeline
	Set      DescriptorSet
	Groups   [3]uint32
	Push     []byte
	// Indirect, when set, holds the group counts (three uint32, as
	// VkDispatchIndirectCommand) at IndirectOffset, read when the command
	// executes; Groups is then ignored.
	Indirect       *Block
	IndirectOffset uint64
	// Before is recorded ahead of the dispatch when BarrierFirst is set.
	Before       Barrier
	BarrierFirst bool
}

// Misuse met while recording: the command is left out and End returns the
// error (see CommandBuffer.err). Made once, so the check allocates nothing.
var (
	errDestroyedPipeline = fmt.Errorf("command records a destroyed pipeline: %w", ErrClosed)
	errReleasedBlock     = fmt.Errorf("command records a released block: %w", ErrClosed)
	errDestroyedQueries  = fmt.Errorf("command records a destroyed query pool: %w", ErrClosed)
	// A nil argument is refused before the device's gate is entered: were
	// it dereferenced inside, the panic would leave the gate read-locked
	// and Device.Close would wait for it forever.
	errNilDispatch = errors.New("command records a nil dispatch or pipeline")
	errNilBlock    = errors.New("command records a nil block")
	errNilQueries  = errors.New("command records a nil query pool")
)

// fail keeps the first misuse of a recording for End.
func (cb *CommandBuffer) fail(err error) {
	if cb.err == nil {
		cb.err = err
	}
}

// Begin starts recording with the given usage flags.
func (d *Device) Begin(cb *CommandBuffer, flags uint32) error {
	if cb.state == nil {
		return ErrClosed
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	cb.err = nil
	return d.check("vkBeginCommandBuffer", Result(C.vkc_cmd_begin(d.fns, cb.state, C.VkCommandBufferUsageFlags(flags))))
}

// End finishes recording. It returns the first misuse met while recording
// (a command that named a destroyed pipeline, a released block or a
// destroyed query pool, wrapping ErrClosed; or a nil one): such a
// recording lacks that command and must not be submitted.
func (d *Device) End(cb *CommandBuffer) error {
	if cb.state == nil {
		return ErrClosed
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	err := d.check("vkEndCommandBuffer", Result(C.vkc_cmd_end(d.fns, cb.state)))
	if cb.err != nil {
		return cb.err
	}
	return err
}

// Reset returns a command buffer to the initial state.
func (d *Device) Reset(cb *CommandBuffer) error {
	if cb.state == nil {
		return ErrClosed
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	cb.err = nil
	return d.check("vkResetCommandBuffer", Result(C.vkc_cmd_reset(d.fns, cb.state)))
}

// CmdDispatch records bind pipeline, bind set, push constants, dispatch
// (and the barrier first when asked) in one cgo call. It allocates nothing:
// the fields are written into the command buffer's C scratch. A destroyed
// pipeline, a nil one or a closed device records nothing and fails the
// recording's End.
func (d *Device) CmdDispatch(cb *CommandBuffer, x *Dispatch) {
	if x == nil || x.Pipeline == nil {
		cb.fail(errNilDispatch)
		return
	}
	if !d.enterRecording(cb) {
		return
	}
	if x.Pipeline.destroyed.Load() {
		d.leave()
		cb.fail(errDestroyedPipeline)
		return
	}
	if x.Indirect != nil && x.Indirect.released.Load() {
		d.leave()
		cb.fail(errReleasedBlock)
		return
	}
	st := cb.state
	st.pipeline = x.Pipeline.pipeline
	st.layout = x.Pipeline.layout
	st.set = x.Set.set
	st.groups[0], st.groups[1], st.groups[2] = C.uint32_t(x.Groups[0]), C.uint32_t(x.Groups[1]), C.uint32_t(x.Groups[2])
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(&st.push[0])), len(st.push)), x.Push)
	st.push_size = C.uint32_t(n)
	st.indirect, st.indirect_offset = nil, 0
	if x.Indirect != nil {
		st.indirect, st.indirect_offset = x.Indirect.cBuffer(), C.VkDeviceSize(x.IndirectOffset)
	}
	if x.BarrierFirst {
		st.barrier = 1
		st.src_stage, st.dst_stage = C.VkPipelineStageFlags(x.Before.SrcStage), C.VkPipelineStageFlags(x.Before.DstStage)
		st.src_access, st.dst_access = C.VkAccessFlags(x.Before.SrcAccess), C.VkAccessFlags(x.Before.DstAccess)
	} else {
		st.barrier = 0
	}
	C.vkc_cmd_dispatch(d.fns, st)
	d.leave()
}

// CmdBarrier records one global memory barrier.
func (d *Device) CmdBarrier(cb *CommandBuffer, b Barrier) {
	if !d.enterRecording(cb) {
		return
	}
	C.vkc_cmd_barrier(d.fns, cb.state, C.VkPipelineStageFlags(b.SrcStage), C.VkPipelineStageFlags(b.DstStage),
		C.VkAccessFlags(b.SrcAccess), C.VkAccessFlags(b.DstAccess))
	d.leave()
}

// CmdCopy records a buffer-to-buffer copy between blocks.
func (d *Device) CmdCopy(cb *CommandBuffer, src *Block, srcOff uint64, dst *Block, dstOff, size uint64) {
	if src == nil || dst == nil {
		cb.fail(errNilBlock)
		return
	}
	if !d.enterRecording(cb) {
		return
	}
	if src.released.Load() || dst.released.Load() {
		d.leave()
		cb.fail(errReleasedBlock)
		return
	}
	C.vkc_cmd_copy(d.fns, cb.state, src.buf, dst.buf, C.VkDeviceSize(srcOff), C.VkDeviceSize(dstOff), C.VkDeviceSize(size))
	d.leave()
}

// enterRecording starts recording one command into cb, which then ends
// with leave. It is false, and nothing is to be recorded, for a freed
// command buffer, or for a closed device (which fails the recording).
func (d *Device) enterRecording(cb *CommandBuffer) bool {
	if cb.state == nil {
		return false // a freed command buffer records nothing
	}
	if d.enter() != nil {
		cb.fail(ErrClosed)
		return false
	}
	return true
}

// CmdFill records a fill of size bytes (a multiple of 4) with a 32-bit word.
func (d *Device) CmdFill(cb *CommandBuffer, dst *Block, off, size uint64, word uint32) {
	if dst == nil {
		cb.fail(errNilBlock)
		return
	}
	if !d.enterRecording(cb) {
		return
	}
	if dst.released.Load() {
		d.leave()
		cb.fail(errReleasedBlock)
		return
	}
	C.vkc_cmd_fill(d.fns, cb.state, dst.buf, C.VkDeviceSize(off), C.VkDeviceSize(size), C.uint32_t(word))
	d.leave()
}

// CmdResetQueries records a reset of count queries from first. Queries
// past the pool's end fail the recording, as Results refuses them: the
// driver would write outside the pool.
func (d *Device) CmdResetQueries(cb *CommandBuffer, q *QueryPool, first, count uint32) {
	if q == nil {
		cb.fail(errNilQueries)
		return
	}
	if uint64(first)+uint64(count) > uint64(q.count) {
		cb.fail(fmt.Errorf("command resets timestamps [%d,%d) of a pool of %d", first, uint64(first)+uint64(count), q.count))
		return
	}
	if !d.enterRecording(cb) {
		return
	}
	if q.destroyed.Load() {
		d.leave()
		cb.fail(errDestroyedQueries)
		return
	}
	C.vkc_cmd_reset_queries(d.fns, cb.state, q.pool, C.uint32_t(first), C.uint32_t(count))
	d.leave()
}

// CmdTimestamp records a bottom-of-pipe timestamp into query; a query
// past the pool's end fails the recording.
func (d *Device) CmdTimestamp(cb *CommandBuffer, q *QueryPool, query uint32) {
	if q == nil {
		cb.fail(errNilQueries)
		return
	}
	if query >= q.count {
		cb.fail(fmt.Errorf("command writes timestamp %d of a pool of %d", query, q.count))
		return
	}
	if !d.enterRecording(cb) {
		return
	}
	if q.destroyed.Load() {
		d.leave()
		cb.fail(errDestroyedQueries)
		return
	}
	C.vkc_cmd_timestamp(d.fns, cb.state, q.pool, C.uint32_t(query))
	d.leave()
}

// Submit queues cb (nil: an empty submission that only signals) and signals
// fence (nil: none) when it completes. The queue lock serialises streams.
// A freed command buffer, one whose End failed on a misuse, or a destroyed
// fence is refused with an error wrapping ErrClosed.
func (d *Device) Submit(cb *CommandBuffer, fence *Fence) error {
	var ccb C.VkCommandBuffer
	if cb != nil {
		if cb.state == nil {
			return ErrClosed
		}
		if cb.err != nil {
			return cb.err
		}
		ccb = cb.state.cb
	}
	var cf C.VkFence
	if fence != nil {
		if fence.destroyed.Load() {
			return ErrClosed
		}
		cf = fence.fence
	}
	if err := d.enterUsable(); err != nil {
		return err
	}
	defer d.leave()
	d.queueMu.Lock()
	r := C.vkc_submit(d.fns, ccb, cf)
	d.queueMu.Unlock()
	return d.check("vkQueueSubmit", Result(r))
}

// waitSlice bounds one vkWaitForFences call, so that a long or endless
// wait leaves the device's gate between slices and Close from another
// goroutine is never held up by it (the wait then ends with ErrClosed).
const waitSlice = 100 * time.Millisecond

// WaitPolicy says how WaitFence waits for a fence, as CUDA's
// cudaDeviceScheduleSpin, Yield and BlockingSync do: it polls the fence
// busily for up to Spin, then polls it giving the processor away between
// polls (sched_yield) for up to Yield, then sleeps in vkWaitForFences.
// Polling answers within a microsecond of the fence signaling, where a
// sleeping thread waits for the operating system to wake it (tens of
// microseconds, more on a loaded machine); sleeping leaves the processor
// to others. Each is bounded by the wait's own timeout; a forever wait
// polls again at each of its slices (see waitSlice).
type WaitPolicy struct {
	Spin, Yield time.Duration
}

// Wait policies. WaitSpin never sleeps, WaitYield never sleeps nor keeps
// the processor, WaitBlock sleeps at once; AutoWaitPolicy is the default.
var (
	WaitSpin  = WaitPolicy{Spin: math.MaxInt64}
	WaitYield = WaitPolicy{Yield: math.MaxInt64}
	WaitBlock = WaitPolicy{}
)

// AutoWaitPolicy is the default policy for a device: a small submission
// is caught by polling, real work is slept through (polling stops after
// 220 µs). On a GPU the first 20 µs poll busily: the host core has nothing
// else to do for the device. On a CPU device (lavapipe) every poll yields
// the processor instead, because the device's own threads run on the
// same cores and a busy poll takes a core from the work it waits for
// (measured with vkbench's eager figures on a loaded two-core machine,
// where busy polling cost several times what yielding did).
func AutoWaitPolicy(info DeviceInfo) WaitPolicy {
	if info.Type == devinfo.TypeCPU {
		return WaitPolicy{Yield: 220 * time.Microsecond}
	}
	return WaitPolicy{Spin: 20 * time.Microsecond, Yield: 200 * time.Microsecond}
}

// SetWaitPolicy chooses how this device's fence waits wait
// (AutoWaitPolicy until set); negative durations count as zero. Safe at any time: a wait
// in progress keeps the policy it started with.
func (d *Device) SetWaitPolicy(p WaitPolicy) {
	p.Spin, p.Yield = max(p.Spin, 0), max(p.Yield, 0)
	d.wait.Store(&p)
}

// waitPolicy is the policy in force.
func (d *Device) waitPolicy() WaitPolicy {
	if p := d.wait.Load(); p != nil {
		return *p
	}
	return AutoWaitPolicy(d.info)
}

// WaitFence waits up to timeout (negative: forever, or until the device is
// closed) and reports whether the fence signaled. It polls first, as the
// device's WaitPolicy says, within each slice of the wait.
func (d *Device) WaitFence(f *Fence, timeout time.Duration) (bool, error) {
	forever := timeout < 0
	policy := d.waitPolicy()
	for {
		slice := waitSlice
		if !forever && timeout < slice {
			slice = timeout
		}
		spin := min(policy.Spin, slice)
		yield := min(policy.Yield, slice-spin)
		block := slice - spin - yield
		if err := d.enter(); err != nil {
			return false, err
		}
		if f.destroyed.Load() {
			d.leave()
			return false, ErrClosed
		}
		r := Result(C.vkc_wait_fence(d.fns, f.fence, C.uint64_t(spin), C.uint64_t(yield), C.uint64_t(block)))
		d.leave()
		if r != Timeout {
			return r == Success, d.check("vkWaitForFences", r)
		}
		if !forever {
			if timeout -= slice; timeout <= 0 {
				return false, nil
			}
		}
	}
}

// ResetFence returns a signaled fence to unsignaled.
func (d *Device) ResetFence(f *Fence) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if f.destroyed.Load() {
		return ErrClosed
	}
	return d.check("vkResetFences", Result(C.vkc_reset_fence(d.fns, f.fence)))
}

// FenceSignaled polls a fence without waiting.
func (d *Device) FenceSignaled(f *Fence) (bool, error) {
	if err := d.enter(); err != nil {
		return false, err
	}
	defer d.leave()
	if f.destroyed.Load() {
		return false, ErrClosed
	}
	r := Result(C.vkc_fence_status(d.fns, f.fence))
	if r == NotReady {
		return false, nil
	}
	return r == Success, d.check("vkGetFenceStatus", r)
}
