package vk

/*
#include <stdlib.h>
#include <string.h>
#include "cvk.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc/devinfo"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// MaxBindings is the most buffers (of any kind) one kernel may bind.
const MaxBindings = C.VKC_MAX_BINDINGS

// PipelineDesc describes a compute kernel's interface: buffers at set 0
// bindings 0..Bindings-1, PushSize bytes of push constants and the values
// of specialization constants (32-bit each): Spec[i] sets the constant with
// ID SpecIDs[i], or ID i when SpecIDs is nil.
type PipelineDesc struct {
	Bindings int
	// Texels has bit i set when binding i is a uniform texel buffer
	// instead of a storage buffer (the catalogue's matmul_texel reads
	// R32G32B32A32_UINT texels, GLSL usamplerBuffer: on a CPU driver a
	// texel fetch gathers a lane's 16 bytes in one vector load, where a
	// storage-buffer load is a bounds-checked loop over the lanes). Its
	// sets then own one buffer view per texel binding, in the format of
	// the range UpdateSet names.
	Texels uint32
	// StorageTexels has bit i set when binding i is a storage texel
	// buffer, and Uniforms when it is a uniform buffer; no bit is set in
	// two of Texels, StorageTexels and Uniforms.
	StorageTexels, Uniforms uint32
	PushSize                uint32
	Spec                    []uint32
	// SpecIDs are the IDs of the constants Spec sets, one per value and
	// no two alike, so that a kernel sets only the constants it means to
	// (a user module's workgroup-size constants, not an unrelated
	// constant that happens to have ID 0); nil means 0..len(Spec)-1.
	SpecIDs []uint32
	// Constants set further specialization constants of any width (a
	// bool, an 8-, 16-, 32- or 64-bit number), beside Spec's; no ID may
	// be set twice.
	Constants []SpecConstant
	// Entry names the entry point the pipeline runs; "" is "main".
	Entry string
}

// SpecConstant is the value of one specialization constant: Size bytes
// (1, 2, 4 or 8: the constant's type's width, 4 for a bool) of Bits, low
// bytes first, as the driver takes them.
type SpecConstant struct {
	ID   uint32
	Size uint32
	Bits uint64
}

// specialization lays out desc's constants as Vulkan takes them: one map
// entry per constant, each value at an 8-byte-aligned offset of data.
func specialization(desc PipelineDesc) (entries []C.VkSpecializationMapEntry, data []byte, err error) {
	ids := make([]uint32, 0, len(desc.Spec)+len(desc.Constants))
	for i, v := range desc.Spec {
		id := uint32(i)
		if desc.SpecIDs != nil {
			id = desc.SpecIDs[i]
		}
		ids = append(ids, id)
		entries = append(entries, C.VkSpecializationMapEntry{constantID: C.uint32_t(id), offset: C.uint32_t(len(data)), size: 4})
		data = binary.LittleEndian.AppendUint64(data, uint64(v))
	}
	for _, c := range desc.Constants {
		switch c.Size {
		case 1, 2, 4, 8:
		default:
			return nil, nil, fmt.Errorf("specialization constant %d of %d bytes (1, 2, 4 or 8)", c.ID, c.Size)
		}
		if slices.Contains(ids, c.ID) {
			return nil, nil, fmt.Errorf("specialization constant %d set twice", c.ID)
		}
		ids = append(ids, c.ID)
		entries = append(entries, C.VkSpecializationMapEntry{constantID: C.uint32_t(c.ID), offset: C.uint32_t(len(data)), size: C.size_t(c.Size)})
		data = binary.LittleEndian.AppendUint64(data, c.Bits)
	}
	return entries, data, nil
}

// descriptorTypes is each binding's VkDescriptorType.
func (desc PipelineDesc) descriptorTypes() [MaxBindings]C.uint32_t {
	var types [MaxBindings]C.uint32_t
	for i := range types {
		switch bit := uint32(1) << uint(i); {
		case desc.Texels&bit != 0:
			types[i] = C.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
		case desc.StorageTexels&bit != 0:
			types[i] = C.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
		case desc.Uniforms&bit != 0:
			types[i] = C.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
		default:
			types[i] = C.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
		}
	}
	return types
}

// vkFormats are the VkFormat of each texel format.
var vkFormats = map[devinfo.TexelFormat]C.uint32_t{
	devinfo.TexelRGBA32Uint:  C.VK_FORMAT_R32G32B32A32_UINT,
	devinfo.TexelR32Float:    C.VK_FORMAT_R32_SFLOAT,
	devinfo.TexelR32Uint:     C.VK_FORMAT_R32_UINT,
	devinfo.TexelR32Sint:     C.VK_FORMAT_R32_SINT,
	devinfo.TexelRGBA32Float: C.VK_FORMAT_R32G32B32A32_SFLOAT,
	devinfo.TexelRGBA32Sint:  C.VK_FORMAT_R32G32B32A32_SINT,
	devinfo.TexelRGBA16Float: C.VK_FORMAT_R16G16B16A16_SFLOAT,
	devinfo.TexelR16Float:    C.VK_FORMAT_R16_SFLOAT,
	devinfo.TexelR16Uint:     C.VK_FORMAT_R16_UINT,
	devinfo.TexelR16Sint:     C.VK_FORMAT_R16_SINT,
	devinfo.TexelR8Uint:      C.VK_FORMAT_R8_UINT,
	devinfo.TexelR8Sint:      C.VK_FORMAT_R8_SINT,
}

// checkSpecIDs refuses SpecIDs that do not name one distinct constant per
// value of Spec; nil IDs always pass.
func checkSpecIDs(spec, ids []uint32) error {
	if ids == nil {
		return nil
	}
	if len(ids) != len(spec) {
		return fmt.Errorf("%d specialization-constant IDs for %d values", len(ids), len(spec))
	}
	for i, id := range ids {
		for _, earlier := range ids[:i] {
			if id == earlier {
				return fmt.Errorf("specialization constant %d set twice", id)
			}
		}
	}
	return nil
}

// Pipeline is a compute pipeline with its layouts and shader module.
type Pipeline struct {
	dev       *Device
	module    C.VkShaderModule
	setLayout C.VkDescriptorSetLayout
	layout    C.VkPipelineLayout
	pipeline  C.VkPipeline
	desc      PipelineDesc
	destroyed atomic.Bool
}

// Desc returns the interface the pipeline was built with.
func (p *Pipeline) Desc() PipelineDesc { return p.desc }

// MaxSpecConstants is the most specialization constants one pipeline may set.
const MaxSpecConstants = C.VKC_MAX_SPEC

// NewPipeline builds a compute pipeline (entry point "main") from SPIR-V.
// The module must pass ValidateSPIRV for the device's API version: the
// driver is never handed a module the Khronos validator refuses.
func (d *Device) NewPipeline(code []byte, desc PipelineDesc) (*Pipeline, error) {
	if d.closed.Load() {
		return nil, ErrClosed // before the validator's work; enterUsable below decides
	}
	if err := d.checkPipelineDesc(desc); err != nil {
		return nil, err
	}
	entries, data, err := specialization(desc)
	if err != nil {
		return nil, err
	}
	entry := desc.Entry
	if entry == "" {
		entry = "main"
	}
	if strings.IndexByte(entry, 0) >= 0 {
		return nil, fmt.Errorf("entry point name %q holds a NUL byte", entry)
	}
	if err := ValidateSPIRV(code, d.api); err != nil {
		return nil, err
	}
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	p := &Pipeline{dev: d, desc: PipelineDesc{Bindings: desc.Bindings, Texels: desc.Texels, StorageTexels: desc.StorageTexels, Uniforms: desc.Uniforms,
		PushSize: desc.PushSize, Spec: append([]uint32(nil), desc.Spec...), Constants: slices.Clone(desc.Constants), Entry: desc.Entry}}
	if desc.SpecIDs != nil {
		p.desc.SpecIDs = append([]uint32{}, desc.SpecIDs...)
	}
	// Each handle is kept only once its create succeeded (a failed create
	// leaves its output undefined), so destroyLocked undoes exactly what
	// exists. The words go to the driver from C memory: malloc's alignment
	// suits uint32, and no Go memory is involved at all.
	words := C.CBytes(code)
	d.moduleCalls.Add(1)
	var module C.VkShaderModule
	r := Result(C.vkc_create_shader_module(d.fns, (*C.uint32_t)(words), C.size_t(len(code)), &module))
	C.free(words)
	if err := d.check("vkCreateShaderModule", r); err != nil {
		return nil, err
	}
	p.module = module
	d.live[ObjShaderModule].Add(1)
	var setLayout C.VkDescriptorSetLayout
	types := p.desc.descriptorTypes()
	if err := d.check("vkCreateDescriptorSetLayout", Result(C.vkc_create_set_layout(d.fns, C.uint32_t(desc.Bindings), &types[0], &setLayout))); err != nil {
		p.destroyLocked()
		return nil, err
	}
	p.setLayout = setLayout
	d.live[ObjSetLayout].Add(1)
	var layout C.VkPipelineLayout
	if err := d.check("vkCreatePipelineLayout", Result(C.vkc_create_pipeline_layout(d.fns, p.setLayout, C.uint32_t(desc.PushSize), &layout))); err != nil {
		p.destroyLocked()
		return nil, err
	}
	p.layout = layout
	d.live[ObjPipelineLayout].Add(1)
	var entryPtr *C.VkSpecializationMapEntry
	var dataPtr unsafe.Pointer
	if len(entries) > 0 {
		// Go pointers as direct arguments: pinned for the call, holding
		// no pointers, copied by the driver before it returns.
		entryPtr, dataPtr = &entries[0], unsafe.Pointer(&data[0])
	}
	name := C.CString(entry)
	var pipeline C.VkPipeline
	r = Result(C.vkc_create_compute_pipeline(d.fns, p.module, p.layout, name, C.uint32_t(len(entries)), entryPtr, dataPtr, C.size_t(len(data)), &pipeline))
	C.free(unsafe.Pointer(name))
	if err := d.check("vkCreateComputePipelines", r); err != nil {
		p.destroyLocked()
		return nil, err
	}
	p.pipeline = pipeline
	d.live[ObjPipeline].Add(1)
	return p, nil
}

// checkPipelineDesc refuses a desc the device cannot build a pipeline
// from: bindings out of range or of two kinds, push constants the device
// does not allow, too many specialization constants or IDs that do not
// match their values. NewPipeline checks these before the validator's
// work and any Vulkan call.
func (d *Device) checkPipelineDesc(desc PipelineDesc) error {
	if desc.Bindings < 0 || desc.Bindings > MaxBindings {
		return fmt.Errorf("%d bindings (at most %d)", desc.Bindings, MaxBindings)
	}
	if (desc.Texels|desc.StorageTexels|desc.Uniforms)>>uint(desc.Bindings) != 0 {
		return fmt.Errorf("texel bindings %#x or uniform bindings %#x beyond the %d bindings", desc.Texels|desc.StorageTexels, desc.Uniforms, desc.Bindings)
	}
	if desc.Texels&desc.StorageTexels != 0 || desc.Texels&desc.Uniforms != 0 || desc.StorageTexels&desc.Uniforms != 0 {
		return fmt.Errorf("a binding of two kinds (uniform texel %#x, storage texel %#x, uniform %#x)", desc.Texels, desc.StorageTexels, desc.Uniforms)
	}
	if desc.PushSize%4 != 0 || desc.PushSize > d.info.Limits.MaxPushConstantsSize || desc.PushSize > 256 {
		return fmt.Errorf("push constants of %d bytes (multiple of 4, at most %d on this device)", desc.PushSize, min(d.info.Limits.MaxPushConstantsSize, 256))
	}
	if len(desc.Spec)+len(desc.Constants) > MaxSpecConstants {
		return fmt.Errorf("%d specialization constants (at most %d)", len(desc.Spec)+len(desc.Constants), MaxSpecConstants)
	}
	return checkSpecIDs(desc.Spec, desc.SpecIDs)
}

// Destroy releases the pipeline and its layouts; idempotent, and a no-op
// once the device is closed.
func (p *Pipeline) Destroy() {
	if p == nil || p.destroyed.Load() {
		return
	}
	if p.dev.enter() != nil {
		return
	}
	defer p.dev.leave()
	p.destroyLocked()
}

// destroyLocked destroys what exists of the pipeline; the caller is inside
// the device's gate.
func (p *Pipeline) destroyLocked() {
	if p.destroyed.Swap(true) {
		return
	}
	d := p.dev
	if p.pipeline != nil {
		C.vkc_destroy_pipeline(d.fns, p.pipeline)
		d.live[ObjPipeline].Add(-1)
	}
	if p.layout != nil {
		C.vkc_destroy_pipeline_layout(d.fns, p.layout)
		d.live[ObjPipelineLayout].Add(-1)
	}
	if p.setLayout != nil {
		C.vkc_destroy_set_layout(d.fns, p.setLayout)
		d.live[ObjSetLayout].Add(-1)
	}
	if p.module != nil {
		C.vkc_destroy_shader_module(d.fns, p.module)
		d.live[ObjShaderModule].Add(-1)
	}
}

// DescriptorPool hands out descriptor sets of storage and uniform texel
// buffers that can be freed one by one (the recorder's cache evicts and
// frees individual sets), each with the texel views it owns. Its
// methods are safe from several goroutines: Vulkan's external
// synchronisation of the pool is its mutex.
type DescriptorPool struct {
	dev  *Device
	pool C.VkDescriptorPool
	mu   lockrank.Mutex
	// allocated holds the sets allocated and not yet freed, by handle: Free
	// of a set not in it (the zero set, one freed already, one of another
	// pool) is a no-op instead of a second vkFreeDescriptorSets and a
	// second decrement, and Destroy settles what is left in the live count.
	// The value is the set's texel views (nil for a set with none), which
	// Free and Destroy destroy with it.
	allocated map[uintptr]*texelViews
	destroyed bool
}

// DescriptorSet is one allocated set; views holds the buffer views of its
// uniform texel bindings (nil when its layout has none).
type DescriptorSet struct {
	set   C.VkDescriptorSet
	views *texelViews
}

// texelViews are the buffer views a set's uniform texel bindings point at:
// the set owns them, since a view must outlive every command buffer that
// reads through the set, which is exactly what the recorder already
// guarantees of the set. UpdateSet replaces the views of the bindings it
// rewrites; Free and the pool's Destroy destroy them all and mark them
// freed, so that an update of the freed set (whose handle the pool may
// already have handed out again) is refused instead of making views
// nothing would destroy. mu orders an update against Free and Destroy.
type texelViews struct {
	mu    lockrank.Mutex
	mask  uint32                  // the texel bindings
	types [MaxBindings]C.uint32_t // every binding's descriptor type
	freed bool
	views [MaxBindings]C.VkBufferView
	// fresh receives each new view's handle from the driver: the address
	// of a local would escape through cgo and cost an allocation per view.
	fresh C.VkBufferView
}

// retire destroys the views that exist and marks the set freed; the
// caller holds tv.mu and is inside the device's gate.
func (tv *texelViews) retire(d *Device) {
	for i, v := range tv.views {
		d.destroyView(v)
		tv.views[i] = nil
	}
	tv.freed = true
}

// destroyView destroys a texel view (none for nil); the caller is inside
// the device's gate.
func (d *Device) destroyView(v C.VkBufferView) {
	if v != nil {
		C.vkc_destroy_buffer_view(d.fns, v)
		d.live[ObjBufferView].Add(-1)
	}
}

// key is the set's handle as a map key: an integer, so that the pool's map
// holds nothing the garbage collector would take for a Go pointer.
func (s DescriptorSet) key() uintptr { return uintptr(unsafe.Pointer(s.set)) }

// NewDescriptorPool makes a pool for maxSets sets of up to MaxBindings buffers each.
func (d *Device) NewDescriptorPool(maxSets uint32) (*DescriptorPool, error) {
	if maxSets == 0 || maxSets > math.MaxUint32/MaxBindings {
		return nil, fmt.Errorf("descriptor pool of %d sets (1 to %d)", maxSets, math.MaxUint32/MaxBindings)
	}
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	dp := &DescriptorPool{dev: d, allocated: map[uintptr]*texelViews{}}
	dp.mu.SetRank(lockrank.VkDescriptorPool, 0)
	if err := d.check("vkCreateDescriptorPool", Result(C.vkc_create_descriptor_pool(d.fns, C.uint32_t(maxSets), C.uint32_t(maxSets*MaxBindings), &dp.pool))); err != nil {
		return nil, err
	}
	d.live[ObjDescriptorPool].Add(1)
	return dp, nil
}

// Allocate takes a set of the pipeline's layout from the pool.
func (dp *DescriptorPool) Allocate(p *Pipeline) (DescriptorSet, error) {
	d := dp.dev
	if err := d.enterUsable(); err != nil {
		return DescriptorSet{}, err
	}
	defer d.leave()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.destroyed || p.destroyed.Load() {
		return DescriptorSet{}, ErrClosed
	}
	var s DescriptorSet
	if err := d.check("vkAllocateDescriptorSets", Result(C.vkc_allocate_set(d.fns, dp.pool, p.setLayout, &s.set))); err != nil {
		return DescriptorSet{}, err
	}
	d.live[ObjDescriptorSet].Add(1)
	if p.desc.Texels|p.desc.StorageTexels|p.desc.Uniforms != 0 {
		s.views = &texelViews{mask: p.desc.Texels | p.desc.StorageTexels, types: p.desc.descriptorTypes()}
		s.views.mu.SetRank(lockrank.VkTexelViews, 0)
	}
	dp.allocated[s.key()] = s.views
	return s, nil
}

// Free returns a set to the pool. The caller guarantees no pending command
// buffer references it. After Destroy, or the device's Close, it is a
// no-op (the pool freed it), and so it is for the zero set, a set freed
// already or one this pool did not allocate.
func (dp *DescriptorPool) Free(s DescriptorSet) {
	if s.set == nil {
		return
	}
	d := dp.dev
	if d.enter() != nil {
		return
	}
	defer d.leave()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.destroyed {
		return
	}
	tv, ok := dp.allocated[s.key()]
	if !ok {
		return
	}
	delete(dp.allocated, s.key())
	if tv != nil { // first, so that no update slips in while the set is freed
		tv.mu.Lock()
		tv.retire(d)
		tv.mu.Unlock()
	}
	C.vkc_free_set(d.fns, dp.pool, s.set)
	d.live[ObjDescriptorSet].Add(-1)
}

// Destroy frees the pool and every set still allocated from it; idempotent.
func (dp *DescriptorPool) Destroy() {
	if dp == nil {
		return
	}
	d := dp.dev
	if d.enter() != nil {
		return
	}
	defer d.leave()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.destroyed {
		return
	}
	dp.destroyed = true
	for _, tv := range dp.allocated { // first, as Free does
		if tv != nil {
			tv.mu.Lock()
			tv.retire(d)
			tv.mu.Unlock()
		}
	}
	C.vkc_destroy_descriptor_pool(d.fns, dp.pool)
	d.live[ObjDescriptorSet].Add(-int64(len(dp.allocated)))
	clear(dp.allocated)
	d.live[ObjDescriptorPool].Add(-1)
}

// BufferRange names bytes of a block for a descriptor.
type BufferRange struct {
	Block  *Block
	Offset uint64
	Range  uint64
	// Format is the format a texel binding views the range as (ignored
	// for other bindings); the zero value is R32G32B32A32_UINT.
	Format devinfo.TexelFormat
}

// UpdateSet points the set's bindings 0..len(r)-1 at the ranges. A uniform
// texel binding among them gets a new view of its range, and its previous
// view is destroyed (the caller guarantees no pending command buffer reads
// through the set); its range must start at a multiple of
// MinTexelBufferOffsetAlignment and hold whole texels of the binding's
// format, at most MaxTexelBufferElements of them; a uniform buffer's range
// is written as it is. A refused update (such a range, a view
// the driver would not make, a set with texel bindings freed already, a
// closed device) leaves the set as it was. The ranges go to C as a
// fixed-size struct passed by value, so it allocates nothing: a pointer to
// a Go local would move that local to the heap (cgo makes every pointer
// argument escape), and #cgo noescape only avoids that together with
// nocallback, which this call cannot promise, since the validation layer
// reports a bad range from inside vkUpdateDescriptorSets through the Go
// message callback. A new view's handle is written into the set's own
// table (texelViews.fresh), already on the heap, for the same reason.
func (d *Device) UpdateSet(s DescriptorSet, r []BufferRange) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	var cr C.vkc_ranges
	n := min(len(r), MaxBindings)
	cr.count = C.uint32_t(n)
	for i := 0; i < n; i++ {
		cr.buffer[i] = r[i].Block.cBuffer()
		cr.offset[i] = C.VkDeviceSize(r[i].Offset)
		cr.size[i] = C.VkDeviceSize(r[i].Range)
		cr._type[i] = C.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
	}
	if tv := s.views; tv != nil {
		for i := 0; i < n; i++ {
			cr._type[i] = tv.types[i]
		}
		tv.mu.Lock()
		defer tv.mu.Unlock()
		if err := d.makeTexelViews(tv, r[:n], &cr); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if v := cr.view[i]; v != nil {
				d.destroyView(tv.views[i])
				tv.views[i] = v
			}
		}
	}
	C.vkc_update_set(d.fns, s.set, cr)
	return nil
}

// makeTexelViews makes a view of each of tv's texel bindings among r into
// cr.view, or none at all: it refuses a freed set and a range no view may
// cover before making any, and destroys the ones it made when the driver
// refuses one. The caller holds tv.mu and is inside the device's gate.
func (d *Device) makeTexelViews(tv *texelViews, r []BufferRange, cr *C.vkc_ranges) error {
	if tv.freed {
		return fmt.Errorf("UpdateSet of a freed descriptor set: %w", ErrClosed)
	}
	for i := range r {
		if tv.mask>>uint(i)&1 != 0 {
			if _, ok := vkFormats[r[i].Format]; !ok {
				return fmt.Errorf("texel binding %d: texel format %v", i, r[i].Format)
			}
			if err := d.info.Limits.CheckTexelRangeOf(r[i].Offset, r[i].Range, r[i].Format.Size()); err != nil {
				return fmt.Errorf("texel binding %d: %w", i, err)
			}
		}
	}
	for i := range r {
		if tv.mask>>uint(i)&1 == 0 {
			continue
		}
		tv.fresh = nil
		res := Result(C.vkc_create_texel_view(d.fns, cr.buffer[i], cr.offset[i], cr.size[i], vkFormats[r[i].Format], &tv.fresh))
		if err := d.check("vkCreateBufferView", res); err != nil {
			for j := range i {
				d.destroyView(cr.view[j])
				cr.view[j] = nil
			}
			return err
		}
		d.live[ObjBufferView].Add(1)
		cr.view[i], tv.fresh = tv.fresh, nil
	}
	return nil
}

// TexelSize is the bytes of one texel of a uniform texel binding
// (R32G32B32A32_UINT).
const TexelSize = devinfo.TexelSize
