package vk

/*
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
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
// calls a page. Descriptors and copies name Buffer plus an offset.
type Block struct {
	dev      *Device
	mem      vulkan.DeviceMemory
	buf      vulkan.Buffer
	size     uint64
	use      MemoryUse
	mapped   unsafe.Pointer
	coherent bool
	hostVis  bool
	released bool
}

// Size is the block's size in bytes.
func (b *Block) Size() uint64 { return b.size }

// Use is what the block was allocated for.
func (b *Block) Use() MemoryUse { return b.use }

// HostVisible reports whether the block can be mapped.
func (b *Block) HostVisible() bool { return b.hostVis }

// Mapped returns the block's mapped bytes, or nil when it is not mapped.
func (b *Block) Mapped() []byte {
	if b.mapped == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.mapped), b.size)
}

func (b *Block) cBuffer() C.VkBuffer { return *(*C.VkBuffer)(unsafe.Pointer(&b.buf)) }
func (b *Block) cMemory() C.VkDeviceMemory {
	return *(*C.VkDeviceMemory)(unsafe.Pointer(&b.mem))
}

// memoryType picks a type index for the use, best preference first.
func (d *Device) memoryType(bits uint32, use MemoryUse) (uint32, vulkan.MemoryPropertyFlags, error) {
	const (
		dl  = vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyDeviceLocalBit)
		hv  = vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostVisibleBit)
		hc  = vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostCoherentBit)
		hca = vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostCachedBit)
	)
	var prefs []vulkan.MemoryPropertyFlags
	switch use {
	case UseDeviceLocal:
		if d.info.UnifiedMemory {
			prefs = []vulkan.MemoryPropertyFlags{dl | hv | hc, dl}
		} else {
			prefs = []vulkan.MemoryPropertyFlags{dl, 0}
		}
	case UseUpload:
		prefs = []vulkan.MemoryPropertyFlags{hv | hc}
	case UseReadback:
		prefs = []vulkan.MemoryPropertyFlags{hv | hca, hv | hc}
	}
	mp := d.memProps
	for _, want := range prefs {
		for i := uint32(0); i < mp.MemoryTypeCount; i++ {
			f := mp.MemoryTypes[i].PropertyFlags
			if bits&(1<<i) != 0 && f&want == want {
				if use == UseDeviceLocal && !d.info.UnifiedMemory && want == dl && f&hv != 0 {
					continue // keep small host-visible device-local heaps (BAR) free
				}
				return i, f, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("vkc: no memory type for %d", use)
}

// AllocateBlock allocates memory of the given use and a buffer spanning it
// (storage, transfer source and destination). The block is not mapped yet:
// MapBlock maps a host-visible one.
func (d *Device) AllocateBlock(use MemoryUse, size uint64) (*Block, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("vkc: zero-sized block")
	}
	bci := vulkan.BufferCreateInfo{
		SType:       vulkan.StructureTypeBufferCreateInfo,
		Size:        vulkan.DeviceSize(size),
		Usage:       vulkan.BufferUsageFlags(vulkan.BufferUsageStorageBufferBit | vulkan.BufferUsageTransferSrcBit | vulkan.BufferUsageTransferDstBit),
		SharingMode: vulkan.SharingModeExclusive,
	}
	var buf vulkan.Buffer
	if err := d.check("vkCreateBuffer", Result(vulkan.CreateBuffer(d.handle, &bci, nil, &buf))); err != nil {
		return nil, err
	}
	d.live[ObjBuffer].Add(1)
	var req vulkan.MemoryRequirements
	vulkan.GetBufferMemoryRequirements(d.handle, buf, &req)
	req.Deref()
	ti, flags, err := d.memoryType(req.MemoryTypeBits, use)
	if err != nil {
		vulkan.DestroyBuffer(d.handle, buf, nil)
		d.live[ObjBuffer].Add(-1)
		return nil, err
	}
	mai := vulkan.MemoryAllocateInfo{SType: vulkan.StructureTypeMemoryAllocateInfo, AllocationSize: req.Size, MemoryTypeIndex: ti}
	var mem vulkan.DeviceMemory
	if err := d.check("vkAllocateMemory", Result(vulkan.AllocateMemory(d.handle, &mai, nil, &mem))); err != nil {
		vulkan.DestroyBuffer(d.handle, buf, nil)
		d.live[ObjBuffer].Add(-1)
		return nil, err
	}
	d.live[ObjMemory].Add(1)
	b := &Block{dev: d, mem: mem, buf: buf, size: size, use: use,
		hostVis:  flags&vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostVisibleBit) != 0,
		coherent: flags&vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostCoherentBit) != 0}
	if err := d.check("vkBindBufferMemory", Result(vulkan.BindBufferMemory(d.handle, buf, mem, 0))); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// MapBlock maps a host-visible block persistently; mapping twice is a no-op.
func (d *Device) MapBlock(b *Block) error {
	if b.mapped != nil {
		return nil
	}
	if !b.hostVis {
		return fmt.Errorf("vkc: block is not host-visible")
	}
	var p unsafe.Pointer
	if err := d.check("vkMapMemory", Result(vulkan.MapMemory(d.handle, b.mem, 0, vulkan.DeviceSize(vulkan.WholeSize), 0, &p))); err != nil {
		return err
	}
	b.mapped = p
	return nil
}

// atomRange widens [off, off+size) to nonCoherentAtomSize as flushes require.
func (b *Block) atomRange(off, size uint64) (uint64, uint64) {
	atom := b.dev.info.Limits.NonCoherentAtomSize
	if atom <= 1 {
		return off, size
	}
	start := off / atom * atom
	end := (off + size + atom - 1) / atom * atom
	if end > b.size {
		return start, uint64(vulkan.WholeSize)
	}
	return start, end - start
}

// FlushRange makes host writes visible to the device on non-coherent memory.
func (b *Block) FlushRange(off, size uint64) error {
	if b.coherent || b.mapped == nil {
		return nil
	}
	o, s := b.atomRange(off, size)
	return b.dev.check("vkFlushMappedMemoryRanges", Result(C.vkc_flush(b.dev.fns, b.cMemory(), C.VkDeviceSize(o), C.VkDeviceSize(s))))
}

// InvalidateRange makes device writes visible to the host on non-coherent memory.
func (b *Block) InvalidateRange(off, size uint64) error {
	if b.coherent || b.mapped == nil {
		return nil
	}
	o, s := b.atomRange(off, size)
	return b.dev.check("vkInvalidateMappedMemoryRanges", Result(C.vkc_invalidate(b.dev.fns, b.cMemory(), C.VkDeviceSize(o), C.VkDeviceSize(s))))
}

// Release unmaps and frees the block; idempotent. It implements alloc.Block.
func (b *Block) Release() {
	if b == nil || b.released {
		return
	}
	b.released = true
	d := b.dev
	if b.mapped != nil {
		vulkan.UnmapMemory(d.handle, b.mem)
		b.mapped = nil
	}
	vulkan.DestroyBuffer(d.handle, b.buf, nil)
	d.live[ObjBuffer].Add(-1)
	vulkan.FreeMemory(d.handle, b.mem, nil)
	d.live[ObjMemory].Add(-1)
}
