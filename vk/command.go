package vk

/*
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc/internal/lockrank"
)

// CommandPool allocates command buffers that can be reset one by one.
// Allocate, Free and Destroy are safe from several goroutines (the pool's
// mutex is Vulkan's external synchronisation for them); recording into the
// pool's buffers is one goroutine's at a time, as Vulkan requires.
type CommandPool struct {
	dev  *Device
	pool C.VkCommandPool
	mu   lockrank.Mutex
	// allocated counts buffers not yet freed: destroying the pool frees
	// them with it, so Destroy settles their live count.
	allocated int
	destroyed bool
}

// NewCommandPool creates a pool on the compute queue's family with
// RESET_COMMAND_BUFFER, so buffers are recycled individually.
func (d *Device) NewCommandPool() (*CommandPool, error) {
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	p := &CommandPool{dev: d}
	p.mu.SetRank(lockrank.VkCommandPool, 0)
	if err := d.check("vkCreateCommandPool", Result(C.vkc_create_command_pool(d.fns, C.uint32_t(d.family), &p.pool))); err != nil {
		return nil, err
	}
	d.live[ObjCommandPool].Add(1)
	return p, nil
}

// CommandBuffer is a primary command buffer plus the C-side scratch its
// hot-path calls read (see cvk.h: vkc_cmd).
type CommandBuffer struct {
	pool  *CommandPool
	state *C.vkc_cmd // C memory; nil once freed
	// err is the first misuse met while recording (a destroyed pipeline or
	// released block named by a command, a closed device): the command is
	// left out and End returns err, so the recording is never submitted
	// as if it were whole. Begin and Reset clear it.
	err error
}

// Allocate takes a primary command buffer from the pool.
func (p *CommandPool) Allocate() (*CommandBuffer, error) {
	d := p.dev
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil, ErrClosed
	}
	var cb C.VkCommandBuffer
	if err := d.check("vkAllocateCommandBuffers", Result(C.vkc_allocate_command_buffer(d.fns, p.pool, &cb))); err != nil {
		return nil, err
	}
	d.live[ObjCommandBuffer].Add(1)
	p.allocated++
	st := (*C.vkc_cmd)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_cmd{}))))
	st.cb = cb
	return &CommandBuffer{pool: p, state: st}, nil
}

// Free returns the buffer to its pool; idempotent. The caller guarantees
// it is not pending execution. After the pool's Destroy, which freed the
// buffer with it, or the device's Close, only the host-side state is left
// to free.
func (c *CommandBuffer) Free() {
	if c == nil {
		return
	}
	p := c.pool
	open := p.dev.enter() == nil
	if open {
		defer p.dev.leave()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state == nil {
		return
	}
	if open && !p.destroyed {
		C.vkc_free_command_buffer(p.dev.fns, p.pool, c.state.cb)
		p.dev.live[ObjCommandBuffer].Add(-1)
		p.allocated--
	}
	C.free(unsafe.Pointer(c.state))
	c.state = nil
}

// Destroy destroys the pool and the buffers still allocated from it;
// idempotent. Those buffers' Free then only releases their host state.
func (p *CommandPool) Destroy() {
	if p == nil {
		return
	}
	d := p.dev
	if d.enter() != nil {
		return
	}
	defer d.leave()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return
	}
	p.destroyed = true
	C.vkc_destroy_command_pool(d.fns, p.pool)
	d.live[ObjCommandBuffer].Add(-int64(p.allocated))
	p.allocated = 0
	d.live[ObjCommandPool].Add(-1)
}

// Fence signals when a submission completes.
type Fence struct {
	dev       *Device
	fence     C.VkFence
	destroyed atomic.Bool
}

// NewFence creates an unsignaled fence.
func (d *Device) NewFence() (*Fence, error) {
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	f := &Fence{dev: d}
	if err := d.check("vkCreateFence", Result(C.vkc_create_fence(d.fns, &f.fence))); err != nil {
		return nil, err
	}
	d.live[ObjFence].Add(1)
	return f, nil
}

// Destroy destroys the fence; idempotent, and a no-op once the device is
// closed.
func (f *Fence) Destroy() {
	if f == nil || f.destroyed.Load() {
		return
	}
	if f.dev.enter() != nil {
		return
	}
	defer f.dev.leave()
	if f.destroyed.Swap(true) {
		return
	}
	C.vkc_destroy_fence(f.dev.fns, f.fence)
	f.dev.live[ObjFence].Add(-1)
}

// QueryPool holds timestamp queries for GPU-side timing.
type QueryPool struct {
	dev       *Device
	pool      C.VkQueryPool
	count     uint32
	destroyed atomic.Bool
}

// NewTimestampPool creates count timestamp queries (at least one: Vulkan
// has no empty query pool).
func (d *Device) NewTimestampPool(count uint32) (*QueryPool, error) {
	if count == 0 {
		return nil, fmt.Errorf("timestamp pool of zero queries")
	}
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	q := &QueryPool{dev: d, count: count}
	if err := d.check("vkCreateQueryPool", Result(C.vkc_create_timestamp_pool(d.fns, C.uint32_t(count), &q.pool))); err != nil {
		return nil, err
	}
	d.live[ObjQueryPool].Add(1)
	return q, nil
}

// Results waits for and returns count timestamps starting at first, in ticks
// (multiply by Limits.TimestampPeriod for nanoseconds). Queries past the
// pool's end are an error: the driver would read outside the pool.
func (q *QueryPool) Results(first, count uint32) ([]uint64, error) {
	if uint64(first)+uint64(count) > uint64(q.count) {
		return nil, fmt.Errorf("timestamps [%d,%d) of a pool of %d", first, uint64(first)+uint64(count), q.count)
	}
	out := make([]uint64, count)
	if count == 0 {
		return out, nil
	}
	d := q.dev
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	if q.destroyed.Load() {
		return nil, ErrClosed
	}
	// out is passed as a direct argument: Go memory pinned for the call,
	// holding no pointers, written by the driver before it returns.
	if err := d.check("vkGetQueryPoolResults", Result(C.vkc_query_results(d.fns, q.pool, C.uint32_t(first), C.uint32_t(count), (*C.uint64_t)(unsafe.Pointer(&out[0]))))); err != nil {
		return nil, err
	}
	return out, nil
}

// Destroy destroys the pool; idempotent, and a no-op once the device is
// closed.
func (q *QueryPool) Destroy() {
	if q == nil || q.destroyed.Load() {
		return
	}
	if q.dev.enter() != nil {
		return
	}
	defer q.dev.leave()
	if q.destroyed.Swap(true) {
		return
	}
	C.vkc_destroy_query_pool(q.dev.fns, q.pool)
	q.dev.live[ObjQueryPool].Add(-1)
}
