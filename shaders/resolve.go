package shaders

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/vkcompute/vkc/internal/errs"
)

// resolve builds the Module description from the collected declarations.
func (d *declarations) resolve() (Module, error) {
	mod := Module{EntryPoints: d.entryPoints, Entry: d.entry}
	var err error
	if mod.SpecConstants, err = d.specConstants(); err != nil {
		return Module{}, err
	}
	if mod.LocalSize, mod.LocalSizeSpecIDs, err = d.localSize(); err != nil {
		return Module{}, err
	}
	for _, v := range d.variables {
		if ptr, ok := d.types[v.pointer]; !ok || ptr.op != opTypePointer {
			return Module{}, fmt.Errorf("%w: variable %%%d has no pointer type", errs.BadSPIRV, v.id)
		}
	}
	layouts := newLayoutReader(d)
	if mod.Bindings, err = d.bindings(layouts); err != nil {
		return Module{}, err
	}
	if mod.Push, err = d.pushLayout(layouts); err != nil {
		return Module{}, err
	}
	if mod.Push != nil {
		mod.PushSize = uint32(mod.Push.Size) // at most maxTypeSize
	}
	return mod, nil
}

// specConstants lists the specialization constants with a SpecId, by id;
// two constants with one id, or one whose type is not a bool, an integer
// or a float of 8, 16, 32 or 64 bits, are refused.
func (d *declarations) specConstants() ([]SpecConstant, error) {
	var out []SpecConstant
	for _, s := range d.specs {
		deco := d.decorations[s.id]
		if deco == nil || deco.specID == nil {
			continue
		}
		c, err := d.specConstant(s, *deco.specID)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(out, func(o SpecConstant) bool { return o.ID == c.ID }); i >= 0 {
			if out[i].Kind != c.Kind || out[i].Bits != c.Bits {
				return nil, fmt.Errorf("%w: SpecId %d decorates a %s and a %s", errs.BadSPIRV, c.ID, out[i].TypeName(), c.TypeName())
			}
			continue // one value sets both
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b SpecConstant) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// specConstant describes one specialization constant s with SpecId id:
// its kind and width from its type, its default from its value words.
// A type other than a bool, an integer or a float, a width other than 8,
// 16, 32 or 64 bits, or too few value words for the width is refused.
func (d *declarations) specConstant(s specDecl, id uint32) (SpecConstant, error) {
	c := SpecConstant{ID: id}
	var ok bool
	if c.Kind, c.Bits, ok = d.specKind(s); !ok {
		return c, fmt.Errorf("%w: specialization constant %%%d (SpecId %d) is not a bool, an integer or a float", errs.BadSPIRV, s.id, c.ID)
	}
	if c.Bits != 8 && c.Bits != 16 && c.Bits != 32 && c.Bits != 64 {
		return c, fmt.Errorf("%w: specialization constant %%%d (SpecId %d) is %d bits wide", errs.BadSPIRV, s.id, c.ID, c.Bits)
	}
	if words := (c.Bits + 31) / 32; uint32(len(s.value)) < words {
		return c, fmt.Errorf("%w: specialization constant %%%d (SpecId %d) has %d value words, want %d", errs.BadSPIRV, s.id, c.ID, len(s.value), words)
	}
	c.Default = uint64(s.value[0])
	if c.Bits == 64 {
		c.Default |= uint64(s.value[1]) << 32
	} else if c.Bits < 32 {
		c.Default &= 1<<c.Bits - 1
	}
	return c, nil
}

// specKind is the kind and width a specialization constant's type gives
// it (a bool is 32 bits, as Vulkan passes it); ok is false where the type
// is not a bool, an integer or a float, or does not match how the
// constant was declared (OpSpecConstantTrue/False against OpSpecConstant).
func (d *declarations) specKind(s specDecl) (kind SpecKind, bits uint32, ok bool) {
	t, found := d.types[s.typ]
	switch {
	case found && t.op == opTypeBool && s.boolean:
		return SpecBool, 32, true
	case found && t.op == opTypeInt && !s.boolean:
		if t.words[1] == 1 {
			return SpecInt, t.words[0], true
		}
		return SpecUint, t.words[0], true
	case found && t.op == opTypeFloat && !s.boolean:
		return SpecFloat, t.words[0], true
	}
	return 0, 0, false
}

// pointee is the type a variable points to; resolve has checked that the
// variable's type is a pointer.
func (d *declarations) pointee(v variable) uint32 { return d.types[v.pointer].words[1] }

// localSize is the default workgroup size and, per axis, the
// specialization-constant ID that sets it (-1 if none). The LocalSize or
// LocalSizeId execution mode is the one of the chosen entry point (the one
// a pipeline runs; another entry point's size says nothing about it).
// The WorkgroupSize built-in, which applies to every entry point, wins over
// the execution mode, as in Vulkan. Compilers
// write one WorkgroupSize built-in and SPIR-V does not say which of two
// would set the size; reading two, the answer would follow map order and
// change from run to run, so a second is refused.
func (d *declarations) localSize() (size [3]uint32, specIDs [3]int64, err error) {
	specIDs = [3]int64{-1, -1, -1}
	if d.entryFunction != nil {
		size = d.modeLocalSize[*d.entryFunction]
		if ids, ok := d.modeLocalSizeID[*d.entryFunction]; ok {
			if err := d.constantSize(ids[:], &size, &specIDs, "LocalSizeId"); err != nil {
				return size, specIDs, err
			}
		}
	}
	var builtIns []uint32
	for id, deco := range d.decorations {
		if deco.workgroupSizeBuiltIn {
			builtIns = append(builtIns, id)
		}
	}
	if len(builtIns) > 1 {
		slices.Sort(builtIns)
		return size, specIDs, fmt.Errorf("%w: WorkgroupSize built-in decorates both %%%d and %%%d", errs.BadSPIRV, builtIns[0], builtIns[1])
	}
	for _, id := range builtIns {
		parts, ok := d.composites[id]
		if !ok || len(parts) != 3 {
			return size, specIDs, fmt.Errorf("%w: WorkgroupSize built-in %%%d is not a 3-component constant", errs.BadSPIRV, id)
		}
		specIDs = [3]int64{-1, -1, -1} // the built-in's, not LocalSizeId's
		if err := d.constantSize(parts, &size, &specIDs, "WorkgroupSize"); err != nil {
			return size, specIDs, err
		}
	}
	return size, specIDs, nil
}

// constantSize reads a workgroup size from three constants (the
// WorkgroupSize built-in's components or LocalSizeId's operands) and the
// specialization-constant ID of each that has one.
func (d *declarations) constantSize(parts []uint32, size *[3]uint32, specIDs *[3]int64, what string) error {
	for axis, part := range parts {
		v, ok := d.constants[part]
		if !ok {
			return fmt.Errorf("%w: %s component %d is not a constant", errs.BadSPIRV, what, axis)
		}
		size[axis] = v
		if pd := d.decorations[part]; pd != nil && pd.specID != nil {
			specIDs[axis] = int64(*pd.specID)
		}
	}
	return nil
}

// bindings lists the descriptor slots, sorted by set then binding.
// Variables that alias one slot are merged: the slot is read-only or
// write-only only if every alias is, of a kind other than StorageBuffer if
// any alias is, and arrayed if any alias is.
func (d *declarations) bindings(layouts *layoutReader) ([]ModuleBinding, error) {
	slots := map[[2]uint32]*ModuleBinding{}
	for _, v := range d.variables {
		vd := d.decorations[v.id]
		if vd == nil || vd.binding == nil {
			continue
		}
		var set uint32
		if vd.set != nil {
			set = *vd.set
		}
		b := d.descriptor(v, layouts)
		b.Set, b.Binding = set, *vd.binding
		key := [2]uint32{set, *vd.binding}
		if prev := slots[key]; prev != nil {
			if prev.Access != b.Access {
				prev.Access = ReadWrite
			}
			if prev.Elem != b.Elem {
				prev.Elem = ScalarUnknown
			}
			if prev.Kind != b.Kind {
				// One binding declared as two kinds (a uniform block and a
				// storage block) has no one descriptor type: not bindable,
				// so LoadKernel refuses it.
				prev.Kind = OtherDescriptor
			}
			prev.Arrayed = prev.Arrayed || b.Arrayed
			prev.NonWritable = prev.NonWritable && b.NonWritable
			prev.NonReadable = prev.NonReadable && b.NonReadable
			prev.MinSize = max(prev.MinSize, b.MinSize)
			prev.Count = max(prev.Count, b.Count)
			continue
		}
		slots[key] = &b
	}
	bindings := make([]ModuleBinding, 0, len(slots))
	for _, b := range slots {
		bindings = append(bindings, *b)
	}
	sort.Slice(bindings, func(i, j int) bool {
		if bindings[i].Set != bindings[j].Set {
			return bindings[i].Set < bindings[j].Set
		}
		return bindings[i].Binding < bindings[j].Binding
	})
	if len(bindings) == 0 {
		return nil, nil
	}
	return bindings, nil
}

// descriptor describes the descriptor a Binding-decorated variable takes:
// its kind (from its storage class and, through an array of descriptors,
// the type it holds), whether it is an array of them, its access, its
// element type and, for a buffer, its block's layout.
func (d *declarations) descriptor(v variable, layouts *layoutReader) ModuleBinding {
	var b ModuleBinding
	id := d.pointee(v)
	if t, ok := d.types[id]; ok && (t.op == opTypeArray || t.op == opTypeRuntimeArray) {
		b.Arrayed = true
		if t.op == opTypeArray {
			b.Count = d.constants[t.words[1]]
		}
		id = t.words[0]
	}
	t := d.types[id]
	deco := d.decorations[id]
	switch v.class {
	case storageClassStorageBuffer:
		b.Kind = StorageBuffer
	case storageClassUniform:
		b.Kind = UniformBuffer
		if deco != nil && deco.bufferBlock {
			b.Kind = StorageBuffer
		}
	case storageClassUniformConstant:
		b.Kind = d.opaqueKind(t)
	default:
		b.Kind = OtherDescriptor
	}
	b.NonWritable, b.NonReadable = declaredAccess(d.decorations[v.id], deco, t)
	b.Access = accessFrom(b.NonWritable, b.NonReadable)
	switch b.Kind {
	case UniformBuffer, UniformTexelBuffer, SampledImage, Sampler, CombinedImageSampler:
		b.Access = ReadOnly // no shader writes these, decorated or not
	}
	b.Elem = d.scalarOf(id, 0)
	if b.Kind == StorageBuffer || b.Kind == UniformBuffer {
		b.Block, _ = layouts.layout(id, matrixDecoration{}, 0) // nil if it cannot be laid out
		if b.Block != nil && !b.Arrayed {
			b.MinSize = b.Block.Size
		}
	}
	if b.Kind == UniformTexelBuffer || b.Kind == StorageTexelBuffer {
		image := t
		if t.op == opTypeSampledImage {
			image = d.types[t.words[0]] // opaqueKind checked it is an image
		}
		b.TexelType, b.TexelFormat = d.scalarOf(image.words[0], 0), image.words[6]
	}
	return b
}

// opaqueKind is the descriptor kind of a UniformConstant variable of type
// t: an image (sampled or storage, texel buffer or not), a sampler, or a
// combined image sampler (of a buffer, GLSL samplerBuffer, it is a uniform
// texel buffer).
func (d *declarations) opaqueKind(t spirvType) DescriptorKind {
	switch t.op {
	case opTypeImage: // sampled type, dim, depth, arrayed, MS, sampled, format
		storage := t.words[5] == imageSampledStorage
		switch {
		case t.words[1] == dimBuffer && storage:
			return StorageTexelBuffer
		case t.words[1] == dimBuffer:
			return UniformTexelBuffer
		case storage:
			return StorageImage
		default:
			return SampledImage
		}
	case opTypeSampler:
		return Sampler
	case opTypeSampledImage:
		if image, ok := d.types[t.words[0]]; ok && image.op == opTypeImage && image.words[1] == dimBuffer {
			return UniformTexelBuffer
		}
		return CombinedImageSampler
	}
	return OtherDescriptor
}

// scalarOf is the 32-bit scalar type id is made of, through arrays,
// vectors, matrices and structs whose members all agree. Each type is
// resolved once, so wide nested structs cost their size, not its power.
func (d *declarations) scalarOf(id uint32, depth int) ScalarType {
	if s, ok := d.scalars[id]; ok {
		return s
	}
	s := d.resolveScalar(id, depth)
	if d.scalars == nil {
		d.scalars = map[uint32]ScalarType{}
	}
	d.scalars[id] = s
	return s
}

func (d *declarations) resolveScalar(id uint32, depth int) ScalarType {
	t, ok := d.types[id]
	if !ok || depth > maxTypeDepth {
		return ScalarUnknown
	}
	switch t.op {
	case opTypeFloat:
		if t.words[0] == 32 {
			return ScalarFloat
		}
	case opTypeInt:
		if t.words[0] == 32 && t.words[1] == 1 {
			return ScalarInt
		} else if t.words[0] == 32 {
			return ScalarUint
		}
	case opTypeVector, opTypeMatrix, opTypeArray, opTypeRuntimeArray:
		return d.scalarOf(t.words[0], depth+1)
	case opTypeStruct:
		if len(t.words) == 0 {
			return ScalarUnknown
		}
		first := d.scalarOf(t.words[0], depth+1)
		for _, m := range t.words[1:] {
			if d.scalarOf(m, depth+1) != first {
				return ScalarUnknown
			}
		}
		return first
	}
	return ScalarUnknown
}

// declaredAccess: readonly/writeonly appear on the variable or on every
// member of its block (glslang puts them on the members).
func declaredAccess(vd, bd *decorations, block spirvType) (nonWritable, nonReadable bool) {
	nonWritable, nonReadable = vd.nonWritable, vd.nonReadable
	if bd != nil && block.op == opTypeStruct && len(block.words) > 0 {
		allNW, allNR := true, true
		for m := range block.words {
			allNW = allNW && bd.memberNonWritable[uint32(m)]
			allNR = allNR && bd.memberNonReadable[uint32(m)]
		}
		nonWritable = nonWritable || allNW
		nonReadable = nonReadable || allNR
	}
	return nonWritable, nonReadable
}

// accessFrom is the access decorations alone say.
func accessFrom(nonWritable, nonReadable bool) Access {
	switch {
	case nonWritable && !nonReadable:
		return ReadOnly
	case nonReadable && !nonWritable:
		return WriteOnly
	default:
		return ReadWrite
	}
}

// pushLayout is the layout of the push-constant block, nil if none; a
// block it cannot lay out is an error, since its size is what Launch
// requires of every push.
func (d *declarations) pushLayout(layouts *layoutReader) (*Layout, error) {
	var push *Layout
	for _, v := range d.variables {
		if v.class != storageClassPushConstant {
			continue
		}
		l, err := layouts.layout(d.pointee(v), matrixDecoration{}, 0)
		if err != nil {
			return nil, fmt.Errorf("push-constant block: %w", err)
		}
		push = l
	}
	return push, nil
}
