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
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// MaxBindings is the most storage buffers one kernel may bind.
const MaxBindings = C.VKC_MAX_BINDINGS

// PipelineDesc describes a compute kernel's interface: storage buffers at
// set 0 bindings 0..Bindings-1, PushSize bytes of push constants and the
// values of specialization constants 0..len(Spec)-1 (32-bit each).
type PipelineDesc struct {
	Bindings int
	PushSize uint32
	Spec     []uint32
}

// Pipeline is a compute pipeline with its layouts and shader module.
type Pipeline struct {
	dev       *Device
	module    vulkan.ShaderModule
	setLayout vulkan.DescriptorSetLayout
	layout    vulkan.PipelineLayout
	pipeline  vulkan.Pipeline
	desc      PipelineDesc
	destroyed bool
}

// Desc returns the interface the pipeline was built with.
func (p *Pipeline) Desc() PipelineDesc { return p.desc }

// SPIR-V opcodes CheckSPIRV follows to see that the module is whole.
const (
	spvOpEntryPoint  = 15
	spvOpFunction    = 54
	spvOpFunctionEnd = 56
	spvOpLabel       = 248
)

// CheckSPIRV verifies that code is a whole SPIR-V module: whole words, the
// magic number, a header, instructions that fit, every function closed and
// every entry point a function with a body. Drivers do not validate SPIR-V
// (lavapipe crashes on a module cut at an instruction boundary), so the
// driver is not asked to parse garbage; semantic validity is left to the
// validation layer.
func CheckSPIRV(code []byte) error {
	if len(code) < 20 || len(code)%4 != 0 {
		return fmt.Errorf("%w: %d bytes (need a multiple of 4, at least 20)", ErrBadSPIRV, len(code))
	}
	if m := binary.LittleEndian.Uint32(code); m != 0x07230203 {
		return fmt.Errorf("%w: magic number 0x%08x", ErrBadSPIRV, m)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(code[4*i:]) }
	n := len(code) / 4
	entries := map[uint32]bool{} // entry point function id -> has a body
	var open uint32              // the function being read, 0 outside one
	inFunction := false
	for i := 5; i < n; {
		count, op := int(word(i)>>16), word(i)&0xffff
		if count == 0 || i+count > n {
			return fmt.Errorf("%w: instruction at word %d (opcode %d) of %d words runs past the end (%d words)", ErrBadSPIRV, i, op, count, n)
		}
		switch {
		case op == spvOpEntryPoint && count >= 3:
			entries[word(i+2)] = false
		case op == spvOpFunction && count >= 3:
			if inFunction {
				return fmt.Errorf("%w: function at word %d opens inside another", ErrBadSPIRV, i)
			}
			open, inFunction = word(i+2), true
		case op == spvOpFunctionEnd:
			if !inFunction {
				return fmt.Errorf("%w: OpFunctionEnd at word %d outside a function", ErrBadSPIRV, i)
			}
			inFunction = false
		case op == spvOpLabel && inFunction:
			if _, ok := entries[open]; ok {
				entries[open] = true
			}
		}
		i += count
	}
	if inFunction {
		return fmt.Errorf("%w: function %%%d not closed (module truncated?)", ErrBadSPIRV, open)
	}
	for id, body := range entries {
		if !body {
			return fmt.Errorf("%w: entry point %%%d has no function body (module truncated?)", ErrBadSPIRV, id)
		}
	}
	return nil
}

// NewPipeline builds a compute pipeline (entry point "main") from SPIR-V.
func (d *Device) NewPipeline(code []byte, desc PipelineDesc) (*Pipeline, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := CheckSPIRV(code); err != nil {
		return nil, err
	}
	if desc.Bindings < 0 || desc.Bindings > MaxBindings {
		return nil, fmt.Errorf("vkc: %d bindings (at most %d)", desc.Bindings, MaxBindings)
	}
	if desc.PushSize%4 != 0 || desc.PushSize > d.info.Limits.MaxPushConstantsSize || desc.PushSize > 256 {
		return nil, fmt.Errorf("vkc: push constants of %d bytes (multiple of 4, at most %d on this device)", desc.PushSize, min(d.info.Limits.MaxPushConstantsSize, 256))
	}
	p := &Pipeline{dev: d, desc: PipelineDesc{Bindings: desc.Bindings, PushSize: desc.PushSize, Spec: append([]uint32(nil), desc.Spec...)}}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	smci := vulkan.ShaderModuleCreateInfo{SType: vulkan.StructureTypeShaderModuleCreateInfo, CodeSize: uint(len(code)), PCode: words}
	var mod vulkan.ShaderModule
	if err := d.check("vkCreateShaderModule", Result(vulkan.CreateShaderModule(d.handle, &smci, nil, &mod))); err != nil {
		return nil, err
	}
	p.module = mod
	d.live[ObjShaderModule].Add(1)

	binds := make([]vulkan.DescriptorSetLayoutBinding, desc.Bindings)
	for i := range binds {
		binds[i] = vulkan.DescriptorSetLayoutBinding{Binding: uint32(i), DescriptorType: vulkan.DescriptorTypeStorageBuffer,
			DescriptorCount: 1, StageFlags: vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit)}
	}
	dslci := vulkan.DescriptorSetLayoutCreateInfo{SType: vulkan.StructureTypeDescriptorSetLayoutCreateInfo,
		BindingCount: uint32(len(binds)), PBindings: binds}
	var dsl vulkan.DescriptorSetLayout
	if err := d.check("vkCreateDescriptorSetLayout", Result(vulkan.CreateDescriptorSetLayout(d.handle, &dslci, nil, &dsl))); err != nil {
		p.Destroy()
		return nil, err
	}
	p.setLayout = dsl
	d.live[ObjSetLayout].Add(1)

	plci := vulkan.PipelineLayoutCreateInfo{SType: vulkan.StructureTypePipelineLayoutCreateInfo,
		SetLayoutCount: 1, PSetLayouts: []vulkan.DescriptorSetLayout{dsl}}
	if desc.PushSize > 0 {
		plci.PushConstantRangeCount = 1
		plci.PPushConstantRanges = []vulkan.PushConstantRange{{StageFlags: vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit), Size: desc.PushSize}}
	}
	var pl vulkan.PipelineLayout
	if err := d.check("vkCreatePipelineLayout", Result(vulkan.CreatePipelineLayout(d.handle, &plci, nil, &pl))); err != nil {
		p.Destroy()
		return nil, err
	}
	p.layout = pl
	d.live[ObjPipelineLayout].Add(1)

	stage := vulkan.PipelineShaderStageCreateInfo{SType: vulkan.StructureTypePipelineShaderStageCreateInfo,
		Stage: vulkan.ShaderStageComputeBit, Module: mod, PName: "main\x00"}
	var specData unsafe.Pointer
	if n := len(desc.Spec); n > 0 {
		specData = C.malloc(C.size_t(4 * n))
		defer C.free(specData)
		copy(unsafe.Slice((*uint32)(specData), n), desc.Spec)
		entries := make([]vulkan.SpecializationMapEntry, n)
		for i := range entries {
			entries[i] = vulkan.SpecializationMapEntry{ConstantID: uint32(i), Offset: uint32(4 * i), Size: 4}
		}
		stage.PSpecializationInfo = []vulkan.SpecializationInfo{{MapEntryCount: uint32(n), PMapEntries: entries, DataSize: uint(4 * n), PData: specData}}
	}
	cpci := []vulkan.ComputePipelineCreateInfo{{SType: vulkan.StructureTypeComputePipelineCreateInfo, Stage: stage, Layout: pl}}
	pipes := make([]vulkan.Pipeline, 1)
	if err := d.check("vkCreateComputePipelines", Result(vulkan.CreateComputePipelines(d.handle, nil, 1, cpci, nil, pipes))); err != nil {
		p.Destroy()
		return nil, err
	}
	p.pipeline = pipes[0]
	d.live[ObjPipeline].Add(1)
	return p, nil
}

// Destroy releases the pipeline and its layouts; idempotent.
func (p *Pipeline) Destroy() {
	if p == nil || p.destroyed {
		return
	}
	p.destroyed = true
	d := p.dev
	if p.pipeline != nil {
		vulkan.DestroyPipeline(d.handle, p.pipeline, nil)
		d.live[ObjPipeline].Add(-1)
	}
	if p.layout != nil {
		vulkan.DestroyPipelineLayout(d.handle, p.layout, nil)
		d.live[ObjPipelineLayout].Add(-1)
	}
	if p.setLayout != nil {
		vulkan.DestroyDescriptorSetLayout(d.handle, p.setLayout, nil)
		d.live[ObjSetLayout].Add(-1)
	}
	if p.module != nil {
		vulkan.DestroyShaderModule(d.handle, p.module, nil)
		d.live[ObjShaderModule].Add(-1)
	}
}

// DescriptorPool hands out storage-buffer descriptor sets that can be freed
// one by one (the recorder's cache evicts and frees individual sets).
type DescriptorPool struct {
	dev       *Device
	pool      vulkan.DescriptorPool
	allocated int // sets allocated and not freed, settled in the live count by Destroy
	destroyed bool
}

// DescriptorSet is one allocated set.
type DescriptorSet struct{ set vulkan.DescriptorSet }

// NewDescriptorPool makes a pool for maxSets sets of up to MaxBindings buffers each.
func (d *Device) NewDescriptorPool(maxSets uint32) (*DescriptorPool, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	ci := vulkan.DescriptorPoolCreateInfo{SType: vulkan.StructureTypeDescriptorPoolCreateInfo,
		Flags:   vulkan.DescriptorPoolCreateFlags(vulkan.DescriptorPoolCreateFreeDescriptorSetBit),
		MaxSets: maxSets, PoolSizeCount: 1,
		PPoolSizes: []vulkan.DescriptorPoolSize{{Type: vulkan.DescriptorTypeStorageBuffer, DescriptorCount: maxSets * MaxBindings}}}
	var pool vulkan.DescriptorPool
	if err := d.check("vkCreateDescriptorPool", Result(vulkan.CreateDescriptorPool(d.handle, &ci, nil, &pool))); err != nil {
		return nil, err
	}
	d.live[ObjDescriptorPool].Add(1)
	return &DescriptorPool{dev: d, pool: pool}, nil
}

// Allocate takes a set of the pipeline's layout from the pool.
func (dp *DescriptorPool) Allocate(p *Pipeline) (DescriptorSet, error) {
	d := dp.dev
	ai := vulkan.DescriptorSetAllocateInfo{SType: vulkan.StructureTypeDescriptorSetAllocateInfo,
		DescriptorPool: dp.pool, DescriptorSetCount: 1, PSetLayouts: []vulkan.DescriptorSetLayout{p.setLayout}}
	var set vulkan.DescriptorSet
	if err := d.check("vkAllocateDescriptorSets", Result(vulkan.AllocateDescriptorSets(d.handle, &ai, &set))); err != nil {
		return DescriptorSet{}, err
	}
	d.live[ObjDescriptorSet].Add(1)
	dp.allocated++
	return DescriptorSet{set: set}, nil
}

// Free returns a set to the pool. The caller guarantees no pending command
// buffer references it. After Destroy it is a no-op (the pool freed it).
func (dp *DescriptorPool) Free(s DescriptorSet) {
	if dp.destroyed {
		return
	}
	dp.allocated--
	set := s.set
	vulkan.FreeDescriptorSets(dp.dev.handle, dp.pool, 1, &set)
	dp.dev.live[ObjDescriptorSet].Add(-1)
}

// Destroy frees the pool and every set still allocated from it; idempotent.
func (dp *DescriptorPool) Destroy() {
	if dp == nil || dp.destroyed {
		return
	}
	dp.destroyed = true
	vulkan.DestroyDescriptorPool(dp.dev.handle, dp.pool, nil)
	dp.dev.live[ObjDescriptorSet].Add(-int64(dp.allocated))
	dp.allocated = 0
	dp.dev.live[ObjDescriptorPool].Add(-1)
}

// BufferRange names bytes of a block for a descriptor.
type BufferRange struct {
	Block  *Block
	Offset uint64
	Range  uint64
}

// UpdateSet points the set's bindings 0..len(r)-1 at the ranges. It goes
// through C with a fixed-size array, so it allocates nothing.
func (d *Device) UpdateSet(s DescriptorSet, r []BufferRange) {
	var cr C.vkc_ranges
	n := min(len(r), MaxBindings)
	cr.count = C.uint32_t(n)
	for i := 0; i < n; i++ {
		cr.buffer[i] = r[i].Block.cBuffer()
		cr.offset[i] = C.VkDeviceSize(r[i].Offset)
		cr.size[i] = C.VkDeviceSize(r[i].Range)
	}
	C.vkc_update_set(d.fns, *(*C.VkDescriptorSet)(unsafe.Pointer(&s.set)), &cr)
}
