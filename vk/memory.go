package vk

/*
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc/internal/lockrank"
)

// MemoryUse says what a block is for; it picks the memory type.
type MemoryUse uint8

// Memory uses, matching alloc's page kinds.
const (
	UseDeviceLocal MemoryUse = iota // tensors; host-visible too on unified-memory devices
	UseUpload                       // host-visible, write-combined staging
	UseReadback                     // host-visible, host-cached where offered
)

// Block is one VkDeviceMemory with one VkBuffer spanning it: what alloc
// calls a page. Descriptors and copies name Buffer plus an offset. Map and
// Release are safe from several goroutines.
type Block struct {
	dev      *Device
	mem      C.VkDeviceMemory
	buf      C.VkBuffer
	size     uint64
	use      MemoryUse
	coherent bool
	hostVis  bool
	mu       lockrank.Mutex       // serialises MapBlock, FlushRange, InvalidateRange and Release
	mapped   atomic.Pointer[byte] // the mapping's first byte, nil when not mapped
	released atomic.Bool
}

// Size is the block's size in bytes.
func (b *Block) Size() uint64 { return b.size }

// Use is what the block was allocated for.
func (b *Block) Use() MemoryUse { return b.use }

// HostVisible reports whether the block can be mapped.
func (b *Block) HostVisible() bool { return b.hostVis }

// Mapped returns the block's mapped bytes, or nil when it is not mapped.
func (b *Block) Mapped() []byte {
	p := b.mapped.Load()
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, b.size)
}

func (b *Block) cBuffer() C.VkBuffer { return b.buf }

// memoryType picks a type index for the use, best preference first.
func (d *Device) memoryType(bits uint32, use MemoryUse) (uint32, uint32, error) {
	const (
		dl  = memDeviceLocal
		hv  = memHostVisible
		hc  = memHostCoherent
		hca = memHostCached
	)
	var prefs []uint32
	switch use {
	case UseDeviceLocal:
		if d.info.UnifiedMemory {
			prefs = []uint32{dl | hv | hc, dl}
		} else {
			prefs = []uint32{dl, 0}
		}
	case UseUpload:
		prefs = []uint32{hv | hc}
	case UseReadback:
		prefs = []uint32{hv | hca, hv | hc}
	}
	for _, want := range prefs {
		for i, t := range d.memTypes {
			f := t.flags
			if bits&(1<<i) != 0 && f&want == want {
				if use == UseDeviceLocal && !d.info.UnifiedMemory && want == dl && f&hv != 0 {
					continue // keep small host-visible device-local heaps (BAR) free
				}
				return uint32(i), f, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no memory type for %d", use)
}

// AllocateBlock allocates memory of the given use and a buffer spanning it
// (storage, uniform texel (the texel views a set's texel bindings make),
// transfer source and destination, indirect, and the vertex, index and
// uniform usages another program draws with). The block is not
// mapped yet: MapBlock maps a host-visible one.
func (d *Device) AllocateBlock(use MemoryUse, size uint64) (*Block, error) {
	if size == 0 {
		return nil, fmt.Errorf("zero-sized block")
	}
	if d.maxBuffer != 0 && size > d.maxBuffer {
		// Asking is invalid usage (VUID-VkBufferCreateInfo-size-06409):
		// answer as a driver that cannot serve it would.
		return nil, fmt.Errorf("%w: a block of %d bytes is larger than the device's largest buffer (maxBufferSize %d)", ErrOutOfDeviceMemory, size, d.maxBuffer)
	}
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	// Handles are kept only once their create succeeded (a failed create
	// leaves its output undefined), so releaseLocked undoes what exists.
	b := &Block{dev: d, size: size, use: use}
	b.mu.SetRank(lockrank.VkMemory, 0)
	var buf C.VkBuffer
	if err := d.check("vkCreateBuffer", Result(C.vkc_create_buffer(d.fns, C.VkDeviceSize(size), &buf))); err != nil {
		return nil, err
	}
	b.buf = buf
	d.live[ObjBuffer].Add(1)
	var req C.VkMemoryRequirements
	C.vkc_buffer_requirements(d.fns, b.buf, &req)
	ti, flags, err := d.memoryType(uint32(req.memoryTypeBits), use)
	if err != nil {
		b.releaseLocked()
		return nil, err
	}
	if heap := d.memTypes[ti].heapSize; uint64(req.size) > heap {
		// Asking is invalid usage (VUID-vkAllocateMemory-pAllocateInfo-01713),
		// and some drivers even grant it: answer as the driver should.
		b.releaseLocked()
		return nil, fmt.Errorf("%w: a block of %d bytes is larger than its memory heap (%d bytes)", ErrOutOfDeviceMemory, uint64(req.size), heap)
	}
	var mem C.VkDeviceMemory
	if err := d.check("vkAllocateMemory", Result(C.vkc_allocate_memory(d.fns, req.size, C.uint32_t(ti), &mem))); err != nil {
		b.releaseLocked()
		return nil, err
	}
	b.mem = mem
	d.live[ObjMemory].Add(1)
	b.hostVis = flags&memHostVisible != 0
	b.coherent = flags&memHostCoherent != 0
	if err := d.check("vkBindBufferMemory", Result(C.vkc_bind_buffer_memory(d.fns, b.buf, b.mem))); err != nil {
		b.releaseLocked()
		return nil, err
	}
	return b, nil
}

// MapBlock maps a host-visible block persistently; mapping twice is a no-op.
func (d *Device) MapBlock(b *Block) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released.Load() {
		return ErrClosed
	}
	if b.mapped.Load() != nil {
		return nil
	}
	if !b.hostVis {
		return fmt.Errorf("block is not host-visible")
	}
	var p unsafe.Pointer
	if err := d.check("vkMapMemory", Result(C.vkc_map_memory(d.fns, b.mem, &p))); err != nil {
		return err
	}
	b.mapped.Store((*byte)(p))
	return nil
}

// atomRange widens [off, off+size) to nonCoherentAtomSize as flushes
// require. A range that does not lie within the block is an error: the
// rounding below would wrap around, and the driver would be handed bytes
// outside the memory.
func (b *Block) atomRange(off, size uint64) (uint64, uint64, error) {
	if off > b.size || size > b.size-off {
		return 0, 0, fmt.Errorf("range [%d,+%d) of a block of %d bytes", off, size, b.size)
	}
	atom := b.dev.info.Limits.NonCoherentAtomSize
	if atom <= 1 {
		return off, size, nil
	}
	start := off / atom * atom
	end := (off + size + atom - 1) / atom * atom
	if end > b.size {
		return start, wholeSize, nil
	}
	return start, end - start, nil
}

// wholeSize is VK_WHOLE_SIZE: to the end of the memory.
const wholeSize = ^uint64(0)

// FlushRange makes host writes visible to the device on non-coherent memory.
func (b *Block) FlushRange(off, size uint64) error {
	return b.syncRange(off, size, false)
}

// InvalidateRange makes device writes visible to the host on non-coherent memory.
func (b *Block) InvalidateRange(off, size uint64) error {
	return b.syncRange(off, size, true)
}

// syncRange flushes or invalidates [off, off+size). Coherent memory, and a
// block not mapped (released included), need neither. It holds b.mu for
// the call, as Release does, so the memory is never freed under it.
func (b *Block) syncRange(off, size uint64, invalidate bool) error {
	if b.coherent || b.mapped.Load() == nil {
		return nil
	}
	d := b.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released.Load() || b.mapped.Load() == nil {
		return nil
	}
	o, s, err := b.atomRange(off, size)
	if err != nil {
		return err
	}
	if invalidate {
		return d.check("vkInvalidateMappedMemoryRanges", Result(C.vkc_invalidate(d.fns, b.mem, C.VkDeviceSize(o), C.VkDeviceSize(s))))
	}
	return d.check("vkFlushMappedMemoryRanges", Result(C.vkc_flush(d.fns, b.mem, C.VkDeviceSize(o), C.VkDeviceSize(s))))
}

// Release unmaps and frees the block; idempotent. Once the device is
// closed it only forgets the mapping (the memory went with the device),
// and the block stays in the live count. It implements alloc.Block.
func (b *Block) Release() {
	if b == nil || b.released.Load() {
		return
	}
	if b.dev.enter() != nil {
		b.mu.Lock()
		b.mapped.Store(nil)
		b.mu.Unlock()
		return
	}
	defer b.dev.leave()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked()
}

// releaseLocked destroys what exists of the block; the caller is inside the
// device's gate and holds b.mu or owns b alone.
func (b *Block) releaseLocked() {
	if b.released.Swap(true) {
		return
	}
	d := b.dev
	if b.mapped.Swap(nil) != nil {
		C.vkc_unmap_memory(d.fns, b.mem)
	}
	if b.buf != nil {
		C.vkc_destroy_buffer(d.fns, b.buf)
		d.live[ObjBuffer].Add(-1)
	}
	if b.mem != nil {
		C.vkc_free_memory(d.fns, b.mem)
		d.live[ObjMemory].Add(-1)
	}
}
