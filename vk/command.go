package vk

/*
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// CommandPool allocates command buffers that can be reset one by one.
// A pool and its buffers belong to one backend stream (external sync).
type CommandPool struct {
	dev  *Device
	pool vulkan.CommandPool
	// allocated counts buffers not yet freed: destroying the pool frees
	// them with it, so Destroy settles their live count.
	allocated int
	destroyed bool
}

// NewCommandPool creates a pool on the compute queue's family with
// RESET_COMMAND_BUFFER, so buffers are recycled individually.
func (d *Device) NewCommandPool() (*CommandPool, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	ci := vulkan.CommandPoolCreateInfo{SType: vulkan.StructureTypeCommandPoolCreateInfo,
		Flags:            vulkan.CommandPoolCreateFlags(vulkan.CommandPoolCreateResetCommandBufferBit),
		QueueFamilyIndex: d.family}
	var pool vulkan.CommandPool
	if err := d.check("vkCreateCommandPool", Result(vulkan.CreateCommandPool(d.handle, &ci, nil, &pool))); err != nil {
		return nil, err
	}
	d.live[ObjCommandPool].Add(1)
	return &CommandPool{dev: d, pool: pool}, nil
}

// CommandBuffer is a primary command buffer plus the C-side scratch its
// hot-path calls read (see cvk.h: vkc_cmd).
type CommandBuffer struct {
	pool  *CommandPool
	cb    vulkan.CommandBuffer
	state *C.vkc_cmd // C memory
}

// Allocate takes a primary command buffer from the pool.
func (p *CommandPool) Allocate() (*CommandBuffer, error) {
	d := p.dev
	if err := d.usable(); err != nil {
		return nil, err
	}
	if p.destroyed {
		return nil, ErrClosed
	}
	ai := vulkan.CommandBufferAllocateInfo{SType: vulkan.StructureTypeCommandBufferAllocateInfo,
		CommandPool: p.pool, Level: vulkan.CommandBufferLevelPrimary, CommandBufferCount: 1}
	cbs := make([]vulkan.CommandBuffer, 1)
	if err := d.check("vkAllocateCommandBuffers", Result(vulkan.AllocateCommandBuffers(d.handle, &ai, cbs))); err != nil {
		return nil, err
	}
	d.live[ObjCommandBuffer].Add(1)
	p.allocated++
	st := (*C.vkc_cmd)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_cmd{}))))
	st.cb = *(*C.VkCommandBuffer)(unsafe.Pointer(&cbs[0]))
	return &CommandBuffer{pool: p, cb: cbs[0], state: st}, nil
}

// Free returns the buffer to its pool; idempotent. The caller guarantees
// it is not pending execution. After the pool's Destroy, which freed the
// buffer with it, only the host-side state is left to free.
func (c *CommandBuffer) Free() {
	if c == nil || c.state == nil {
		return
	}
	if p := c.pool; !p.destroyed {
		cbs := []vulkan.CommandBuffer{c.cb}
		vulkan.FreeCommandBuffers(p.dev.handle, p.pool, 1, cbs)
		p.dev.live[ObjCommandBuffer].Add(-1)
		p.allocated--
	}
	C.free(unsafe.Pointer(c.state))
	c.state = nil
}

// Destroy destroys the pool and the buffers still allocated from it;
// idempotent. Those buffers' Free then only releases their host state.
func (p *CommandPool) Destroy() {
	if p == nil || p.destroyed {
		return
	}
	p.destroyed = true
	vulkan.DestroyCommandPool(p.dev.handle, p.pool, nil)
	p.dev.live[ObjCommandBuffer].Add(-int64(p.allocated))
	p.allocated = 0
	p.dev.live[ObjCommandPool].Add(-1)
}

// Fence signals when a submission completes.
type Fence struct {
	dev       *Device
	fence     vulkan.Fence
	destroyed bool
}

// NewFence creates an unsignaled fence.
func (d *Device) NewFence() (*Fence, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	ci := vulkan.FenceCreateInfo{SType: vulkan.StructureTypeFenceCreateInfo}
	var f vulkan.Fence
	if err := d.check("vkCreateFence", Result(vulkan.CreateFence(d.handle, &ci, nil, &f))); err != nil {
		return nil, err
	}
	d.live[ObjFence].Add(1)
	return &Fence{dev: d, fence: f}, nil
}

func (f *Fence) c() C.VkFence { return *(*C.VkFence)(unsafe.Pointer(&f.fence)) }

// Destroy destroys the fence; idempotent.
func (f *Fence) Destroy() {
	if f == nil || f.destroyed {
		return
	}
	f.destroyed = true
	vulkan.DestroyFence(f.dev.handle, f.fence, nil)
	f.dev.live[ObjFence].Add(-1)
}

// QueryPool holds timestamp queries for GPU-side timing.
type QueryPool struct {
	dev       *Device
	pool      vulkan.QueryPool
	count     uint32
	destroyed bool
}

// NewTimestampPool creates count timestamp queries (at least one: Vulkan
// has no empty query pool).
func (d *Device) NewTimestampPool(count uint32) (*QueryPool, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, fmt.Errorf("vkc: timestamp pool of zero queries")
	}
	ci := vulkan.QueryPoolCreateInfo{SType: vulkan.StructureTypeQueryPoolCreateInfo, QueryType: vulkan.QueryTypeTimestamp, QueryCount: count}
	var qp vulkan.QueryPool
	if err := d.check("vkCreateQueryPool", Result(vulkan.CreateQueryPool(d.handle, &ci, nil, &qp))); err != nil {
		return nil, err
	}
	d.live[ObjQueryPool].Add(1)
	return &QueryPool{dev: d, pool: qp, count: count}, nil
}

func (q *QueryPool) c() C.VkQueryPool { return *(*C.VkQueryPool)(unsafe.Pointer(&q.pool)) }

// Results waits for and returns count timestamps starting at first, in ticks
// (multiply by Limits.TimestampPeriod for nanoseconds). Queries past the
// pool's end are an error: the driver would read outside the pool.
func (q *QueryPool) Results(first, count uint32) ([]uint64, error) {
	if uint64(first)+uint64(count) > uint64(q.count) {
		return nil, fmt.Errorf("vkc: timestamps [%d,%d) of a pool of %d", first, uint64(first)+uint64(count), q.count)
	}
	out := make([]uint64, count)
	if count == 0 {
		return out, nil
	}
	buf := (*C.uint64_t)(C.malloc(C.size_t(8 * count)))
	defer C.free(unsafe.Pointer(buf))
	if err := q.dev.check("vkGetQueryPoolResults", Result(C.vkc_query_results(q.dev.fns, q.c(), C.uint32_t(first), C.uint32_t(count), buf))); err != nil {
		return nil, err
	}
	copy(out, unsafe.Slice((*uint64)(unsafe.Pointer(buf)), count))
	return out, nil
}

// Destroy destroys the pool; idempotent.
func (q *QueryPool) Destroy() {
	if q == nil || q.destroyed {
		return
	}
	q.destroyed = true
	vulkan.DestroyQueryPool(q.dev.handle, q.pool, nil)
	q.dev.live[ObjQueryPool].Add(-1)
}
