package shaders

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// ErrInvalidSPIRV reports bytes that are not a SPIR-V module Inspect can
// read: too short, wrong magic number, a truncated instruction, or a
// push-constant member of a type whose size it cannot work out. Loading a
// user kernel checks this before handing the bytes to the driver, so bad
// input is an error at load rather than a crash in the driver.
var ErrInvalidSPIRV = errors.New("shaders: invalid SPIR-V")

// DescriptorKind says which kind of buffer descriptor a module's binding
// expects.
type DescriptorKind uint8

const (
	// StorageBuffer is a GLSL buffer block (StorageBuffer storage class, or
	// Uniform with BufferBlock in SPIR-V before 1.3).
	StorageBuffer DescriptorKind = iota + 1
	// UniformBuffer is a GLSL uniform block.
	UniformBuffer
)

// String names the kind for error messages.
func (k DescriptorKind) String() string {
	switch k {
	case StorageBuffer:
		return "storage buffer"
	case UniformBuffer:
		return "uniform buffer"
	default:
		return fmt.Sprintf("DescriptorKind(%d)", uint8(k))
	}
}

// ModuleBinding is one (set, binding) slot a module declares. Variables that
// alias one slot (matmul views B as float and as vec4) are merged: the
// access is ReadOnly or WriteOnly only if every alias agrees.
type ModuleBinding struct {
	Set, Binding uint32
	Kind         DescriptorKind
	Access       Access
}

// Module is what Inspect reads from a SPIR-V module: enough to check a
// kernel description (bindings, push-constant size, workgroup size) against
// the code before building a pipeline from it.
type Module struct {
	// EntryPoints are the names of the GLCompute entry points.
	EntryPoints []string
	// Bindings are the buffer slots, sorted by set then binding.
	Bindings []ModuleBinding
	// PushSize is the byte size of the push-constant block, 0 if none.
	PushSize uint32
	// LocalSize is the default workgroup size (the WorkgroupSize built-in's
	// default values, else the LocalSize execution mode).
	LocalSize [3]uint32
	// LocalSizeSpecIDs are the specialization-constant IDs that set the
	// workgroup size in x, y, z; -1 where the size is not specializable.
	LocalSizeSpecIDs [3]int64
}

// SPIR-V opcodes, decorations and enumerants Inspect reads.
const (
	spirvMagic = 0x07230203

	opEntryPoint              = 15
	opExecutionMode           = 16
	opTypeInt                 = 21
	opTypeFloat               = 22
	opTypeVector              = 23
	opTypeMatrix              = 24
	opTypeArray               = 28
	opTypeStruct              = 30
	opTypePointer             = 32
	opConstant                = 43
	opConstantComposite       = 44
	opSpecConstant            = 50
	opSpecConstantComposite   = 51
	opVariable                = 59
	opDecorate                = 71
	opMemberDecorate          = 72
	execModelGLCompute        = 5
	execModeLocalSize         = 17
	decorationSpecID          = 1
	decorationBufferBlock     = 3
	decorationArrayStride     = 6
	decorationBuiltIn         = 11
	decorationNonWritable     = 24
	decorationNonReadable     = 25
	decorationBinding         = 33
	decorationDescriptorSet   = 34
	decorationOffset          = 35
	builtInWorkgroupSize      = 25
	storageClassUniform       = 2
	storageClassPushConstant  = 9
	storageClassStorageBuffer = 12
)

type spirvType struct {
	op    uint32
	words []uint32 // operands after the result id
}

type decorations struct {
	set, binding         *uint32
	specID               *uint32
	bufferBlock          bool
	nonWritable          bool
	nonReadable          bool
	arrayStride          uint32
	workgroupSizeBuiltIn bool
	memberNonWritable    map[uint32]bool
	memberNonReadable    map[uint32]bool
	memberOffset         map[uint32]uint32
}

// Inspect reads a SPIR-V module's interface: entry points, buffer bindings
// with their access, push-constant block size and default workgroup size.
// It never panics on malformed input; it returns an error wrapping
// ErrInvalidSPIRV instead.
func Inspect(code []byte) (Module, error) {
	if len(code) < 20 || len(code)%4 != 0 {
		return Module{}, fmt.Errorf("%w: %d bytes is not a whole module (header is 20 bytes, size a multiple of 4)", ErrInvalidSPIRV, len(code))
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	if words[0] != spirvMagic {
		return Module{}, fmt.Errorf("%w: magic number %#08x, want %#08x (little-endian)", ErrInvalidSPIRV, words[0], spirvMagic)
	}

	var mod Module
	mod.LocalSizeSpecIDs = [3]int64{-1, -1, -1}
	types := map[uint32]spirvType{}
	constants := map[uint32]uint32{}
	composites := map[uint32][]uint32{}
	decos := map[uint32]*decorations{}
	deco := func(id uint32) *decorations {
		d := decos[id]
		if d == nil {
			d = &decorations{memberNonWritable: map[uint32]bool{}, memberNonReadable: map[uint32]bool{}, memberOffset: map[uint32]uint32{}}
			decos[id] = d
		}
		return d
	}
	type variable struct{ id, pointer, class uint32 }
	var variables []variable
	var modeLocalSize *[3]uint32

	for pos := 5; pos < len(words); {
		count := int(words[pos] >> 16)
		op := words[pos] & 0xffff
		if count == 0 || pos+count > len(words) {
			return Module{}, fmt.Errorf("%w: instruction at word %d (opcode %d) has length %d past the end", ErrInvalidSPIRV, pos, op, count)
		}
		ops := words[pos+1 : pos+count]
		pos += count
		need := func(n int) error {
			if len(ops) < n {
				return fmt.Errorf("%w: opcode %d with %d operands, want at least %d", ErrInvalidSPIRV, op, len(ops), n)
			}
			return nil
		}
		switch op {
		case opEntryPoint:
			if err := need(3); err != nil {
				return Module{}, err
			}
			if ops[0] == execModelGLCompute {
				mod.EntryPoints = append(mod.EntryPoints, literalString(ops[2:]))
			}
		case opExecutionMode:
			if err := need(2); err != nil {
				return Module{}, err
			}
			if ops[1] == execModeLocalSize {
				if err := need(5); err != nil {
					return Module{}, err
				}
				modeLocalSize = &[3]uint32{ops[2], ops[3], ops[4]}
			}
		case opTypeInt, opTypeFloat, opTypeVector, opTypeMatrix, opTypeArray, opTypeStruct, opTypePointer:
			if err := need(1); err != nil {
				return Module{}, err
			}
			types[ops[0]] = spirvType{op: op, words: ops[1:]}
		case opConstant, opSpecConstant:
			if err := need(3); err != nil {
				return Module{}, err
			}
			constants[ops[1]] = ops[2]
		case opConstantComposite, opSpecConstantComposite:
			if err := need(2); err != nil {
				return Module{}, err
			}
			composites[ops[1]] = ops[2:]
		case opVariable:
			if err := need(3); err != nil {
				return Module{}, err
			}
			variables = append(variables, variable{id: ops[1], pointer: ops[0], class: ops[2]})
		case opDecorate:
			if err := need(2); err != nil {
				return Module{}, err
			}
			d := deco(ops[0])
			arg := func() (uint32, error) {
				if err := need(3); err != nil {
					return 0, err
				}
				return ops[2], nil
			}
			switch ops[1] {
			case decorationSpecID, decorationBinding, decorationDescriptorSet, decorationArrayStride, decorationBuiltIn:
				v, err := arg()
				if err != nil {
					return Module{}, err
				}
				switch ops[1] {
				case decorationSpecID:
					d.specID = &v
				case decorationBinding:
					d.binding = &v
				case decorationDescriptorSet:
					d.set = &v
				case decorationArrayStride:
					d.arrayStride = v
				case decorationBuiltIn:
					d.workgroupSizeBuiltIn = v == builtInWorkgroupSize
				}
			case decorationBufferBlock:
				d.bufferBlock = true
			case decorationNonWritable:
				d.nonWritable = true
			case decorationNonReadable:
				d.nonReadable = true
			}
		case opMemberDecorate:
			if err := need(3); err != nil {
				return Module{}, err
			}
			d := deco(ops[0])
			switch ops[2] {
			case decorationNonWritable:
				d.memberNonWritable[ops[1]] = true
			case decorationNonReadable:
				d.memberNonReadable[ops[1]] = true
			case decorationOffset:
				if err := need(4); err != nil {
					return Module{}, err
				}
				d.memberOffset[ops[1]] = ops[3]
			}
		}
	}

	// Workgroup size: the WorkgroupSize built-in wins over the execution mode.
	if modeLocalSize != nil {
		mod.LocalSize = *modeLocalSize
	}
	for id, d := range decos {
		if !d.workgroupSizeBuiltIn {
			continue
		}
		parts, ok := composites[id]
		if !ok || len(parts) != 3 {
			return Module{}, fmt.Errorf("%w: WorkgroupSize built-in %%%d is not a 3-component constant", ErrInvalidSPIRV, id)
		}
		for axis, part := range parts {
			v, ok := constants[part]
			if !ok {
				return Module{}, fmt.Errorf("%w: WorkgroupSize component %d is not a constant", ErrInvalidSPIRV, axis)
			}
			mod.LocalSize[axis] = v
			if pd := decos[part]; pd != nil && pd.specID != nil {
				mod.LocalSizeSpecIDs[axis] = int64(*pd.specID)
			}
		}
	}

	slots := map[[2]uint32]*ModuleBinding{}
	for _, v := range variables {
		ptr, ok := types[v.pointer]
		if !ok || ptr.op != opTypePointer || len(ptr.words) < 2 {
			return Module{}, fmt.Errorf("%w: variable %%%d has no pointer type", ErrInvalidSPIRV, v.id)
		}
		blockID := ptr.words[1]
		blockDeco := decos[blockID]
		switch v.class {
		case storageClassPushConstant:
			size, err := typeSize(blockID, types, constants, decos)
			if err != nil {
				return Module{}, err
			}
			mod.PushSize = size
		case storageClassStorageBuffer, storageClassUniform:
			vd := decos[v.id]
			if vd == nil || vd.binding == nil {
				continue
			}
			var set uint32
			if vd.set != nil {
				set = *vd.set
			}
			kind := StorageBuffer
			if v.class == storageClassUniform && (blockDeco == nil || !blockDeco.bufferBlock) {
				kind = UniformBuffer
			}
			access := variableAccess(vd, blockDeco, types[blockID])
			key := [2]uint32{set, *vd.binding}
			if prev := slots[key]; prev != nil {
				if prev.Access != access {
					prev.Access = ReadWrite
				}
				continue
			}
			slots[key] = &ModuleBinding{Set: set, Binding: *vd.binding, Kind: kind, Access: access}
		}
	}
	for _, b := range slots {
		mod.Bindings = append(mod.Bindings, *b)
	}
	sort.Slice(mod.Bindings, func(i, j int) bool {
		if mod.Bindings[i].Set != mod.Bindings[j].Set {
			return mod.Bindings[i].Set < mod.Bindings[j].Set
		}
		return mod.Bindings[i].Binding < mod.Bindings[j].Binding
	})
	return mod, nil
}

// variableAccess: readonly/writeonly appear on the variable or on every
// member of its block (glslang puts them on the members).
func variableAccess(vd, bd *decorations, block spirvType) Access {
	nonWritable, nonReadable := vd.nonWritable, vd.nonReadable
	if bd != nil && block.op == opTypeStruct && len(block.words) > 0 {
		allNW, allNR := true, true
		for m := range block.words {
			allNW = allNW && bd.memberNonWritable[uint32(m)]
			allNR = allNR && bd.memberNonReadable[uint32(m)]
		}
		nonWritable = nonWritable || allNW
		nonReadable = nonReadable || allNR
	}
	switch {
	case nonWritable && !nonReadable:
		return ReadOnly
	case nonReadable && !nonWritable:
		return WriteOnly
	default:
		return ReadWrite
	}
}

// typeSize is the byte size of a push-constant type: scalars, vectors,
// matrices, arrays with an ArrayStride and structs with member Offsets. A
// size above 4 GiB is an error rather than a wrapped-around uint32 that
// could match a small description.
func typeSize(id uint32, types map[uint32]spirvType, constants map[uint32]uint32, decos map[uint32]*decorations) (uint32, error) {
	s := typeSizer{types: types, constants: constants, decos: decos, sized: map[uint32]uint64{}}
	size, err := s.size(id, 0)
	return uint32(size), err
}

// typeSizer sizes types once each: a type used by many members of many
// structs would otherwise be walked once per path to it, exponentially
// many in the nesting depth.
type typeSizer struct {
	types     map[uint32]spirvType
	constants map[uint32]uint32
	decos     map[uint32]*decorations
	sized     map[uint32]uint64
}

// maxTypeSize bounds every size so that products of sizes and counts fit
// in 64 bits; no push-constant block comes near it.
const maxTypeSize = math.MaxUint32

// product is a*b, or an error for type id when it exceeds maxTypeSize.
func product(id uint32, a, b uint64) (uint64, error) {
	if hi, lo := bits.Mul64(a, b); hi != 0 || lo > maxTypeSize {
		return 0, fmt.Errorf("%w: push-constant type %%%d is larger than 4 GiB", ErrInvalidSPIRV, id)
	}
	return a * b, nil
}

func (s *typeSizer) size(id uint32, depth int) (uint64, error) {
	if size, ok := s.sized[id]; ok {
		return size, nil
	}
	size, err := s.measure(id, depth)
	if err != nil {
		return 0, err
	}
	s.sized[id] = size
	return size, nil
}

func (s *typeSizer) measure(id uint32, depth int) (uint64, error) {
	if depth > 32 {
		return 0, fmt.Errorf("%w: push-constant type nested too deeply", ErrInvalidSPIRV)
	}
	t, ok := s.types[id]
	if !ok {
		return 0, fmt.Errorf("%w: push-constant member type %%%d is not a type this reader sizes", ErrInvalidSPIRV, id)
	}
	operand := func(i int) (uint32, error) {
		if i >= len(t.words) {
			return 0, fmt.Errorf("%w: type %%%d lacks operand %d", ErrInvalidSPIRV, id, i)
		}
		return t.words[i], nil
	}
	switch t.op {
	case opTypeInt, opTypeFloat:
		width, err := operand(0)
		return uint64(width / 8), err
	case opTypeVector:
		comp, err := operand(0)
		if err != nil {
			return 0, err
		}
		n, err := operand(1)
		if err != nil {
			return 0, err
		}
		size, err := s.size(comp, depth+1)
		if err != nil {
			return 0, err
		}
		return product(id, size, uint64(n))
	case opTypeArray:
		elem, err := operand(0)
		if err != nil {
			return 0, err
		}
		lengthID, err := operand(1)
		if err != nil {
			return 0, err
		}
		length, ok := s.constants[lengthID]
		d := s.decos[id]
		if !ok || d == nil || d.arrayStride == 0 {
			return 0, fmt.Errorf("%w: push-constant array %%%d without constant length or ArrayStride", ErrInvalidSPIRV, id)
		}
		if _, err := s.size(elem, depth+1); err != nil {
			return 0, err
		}
		return product(id, uint64(length), uint64(d.arrayStride))
	case opTypeMatrix:
		cols, err := operand(1)
		if err != nil {
			return 0, err
		}
		colType, err := operand(0)
		if err != nil {
			return 0, err
		}
		colSize, err := s.size(colType, depth+1)
		if err != nil {
			return 0, err
		}
		return product(id, uint64(cols), colSize)
	case opTypeStruct:
		d := s.decos[id]
		var size uint64
		for m, member := range t.words {
			var offset uint64
			if d != nil {
				offset = uint64(d.memberOffset[uint32(m)])
			}
			ms, err := s.size(member, depth+1)
			if err != nil {
				return 0, err
			}
			end, err := product(id, offset+ms, 1)
			if err != nil {
				return 0, err
			}
			size = max(size, end)
		}
		return size, nil
	default:
		return 0, fmt.Errorf("%w: push-constant member type %%%d (opcode %d) is not sized by this reader", ErrInvalidSPIRV, id, t.op)
	}
}

// literalString decodes a SPIR-V literal string (UTF-8, NUL-terminated,
// packed little-endian into words).
func literalString(words []uint32) string {
	var b []byte
	for _, w := range words {
		for shift := 0; shift < 32; shift += 8 {
			c := byte(w >> shift)
			if c == 0 {
				return string(b)
			}
			b = append(b, c)
		}
	}
	return string(b)
}
