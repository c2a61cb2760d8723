package shaders

import (
	"fmt"
)

// DescriptorKind says which kind of buffer descriptor a module's binding
// expects.
type DescriptorKind uint8

const (
	// StorageBuffer is a GLSL buffer block (StorageBuffer storage class, or
	// Uniform with BufferBlock in SPIR-V before 1.3).
	StorageBuffer DescriptorKind = iota + 1
	// UniformBuffer is a GLSL uniform block.
	UniformBuffer
	// The kinds below are reported so that a caller that binds only
	// buffers can refuse a module that needs anything else, rather than
	// let the driver meet a pipeline whose layout lacks it.

	// UniformTexelBuffer is a GLSL samplerBuffer or textureBuffer.
	UniformTexelBuffer
	// StorageTexelBuffer is a GLSL imageBuffer.
	StorageTexelBuffer
	// SampledImage is a GLSL texture2D and the like (no sampler).
	SampledImage
	// StorageImage is a GLSL image2D and the like.
	StorageImage
	// Sampler is a GLSL sampler.
	Sampler
	// CombinedImageSampler is a GLSL sampler2D and the like.
	CombinedImageSampler
	// OtherDescriptor is any other descriptor-bound variable (an
	// acceleration structure, a type this reader does not know).
	OtherDescriptor
)

// String names the kind for error messages.
func (k DescriptorKind) String() string {
	switch k {
	case StorageBuffer:
		return "storage buffer"
	case UniformBuffer:
		return "uniform buffer"
	case UniformTexelBuffer:
		return "uniform texel buffer"
	case StorageTexelBuffer:
		return "storage texel buffer"
	case SampledImage:
		return "sampled image"
	case StorageImage:
		return "storage image"
	case Sampler:
		return "sampler"
	case CombinedImageSampler:
		return "combined image sampler"
	case OtherDescriptor:
		return "other descriptor"
	default:
		return fmt.Sprintf("DescriptorKind(%d)", uint8(k))
	}
}

// ModuleBinding is one (set, binding) slot a module declares: every
// variable decorated with a Binding, whatever its kind. Variables that
// alias one slot (matmul views B as float and as vec4) are merged: the
// access is ReadOnly or WriteOnly only if every alias agrees, the kind is
// one other than StorageBuffer if any alias has one, and the slot is
// arrayed if any alias is.
type ModuleBinding struct {
	Set, Binding uint32
	Kind         DescriptorKind
	// Arrayed reports an array of descriptors at the slot (GLSL
	// `buffer B { ... } bufs[2];`), which takes Count descriptors, not
	// one: Count is the array's length (its default, for a length set by
	// a specialization constant), 0 for a runtime-sized array.
	Arrayed bool
	Count   uint32
	Access  Access
	// Elem is the 32-bit scalar every member of the block is made of
	// (through arrays, vectors and structs), or ScalarUnknown when they
	// differ or are not 32-bit numbers: what a buffer bound here must hold.
	Elem ScalarType
	// Block is the layout of the block a buffer binding holds (of one
	// block, for an array of them), nil for other kinds of binding or a
	// block this reader cannot lay out; for a slot several variables
	// alias, the first one's.
	Block *Layout
}

// ScalarType is the 32-bit number a buffer binding holds.
type ScalarType uint8

const (
	// ScalarUnknown: mixed members, or not 32-bit numbers.
	ScalarUnknown ScalarType = iota
	// ScalarFloat is float (32 bits).
	ScalarFloat
	// ScalarInt is int (32 bits, signed).
	ScalarInt
	// ScalarUint is uint (32 bits, unsigned).
	ScalarUint
)

// String names the type as GLSL does.
func (t ScalarType) String() string {
	switch t {
	case ScalarFloat:
		return "float"
	case ScalarInt:
		return "int"
	case ScalarUint:
		return "uint"
	}
	return "unknown"
}

// Module is what Inspect reads from a SPIR-V module: enough to derive a
// kernel description (bindings, push-constant size, workgroup size) from
// the code, or to check a hand-written one against it, before building a
// pipeline from it.
type Module struct {
	// EntryPoints are the names of the GLCompute entry points.
	EntryPoints []string
	// Bindings are the buffer slots, sorted by set then binding.
	Bindings []ModuleBinding
	// PushSize is the byte size of the push-constant block, 0 if none:
	// Push.Size, the bytes from the block's start to the end of the last
	// byte of its last member, as the module's Offset, ArrayStride and
	// MatrixStride decorations place them.
	PushSize uint32
	// Push is the layout of the push-constant block, nil if none.
	Push *Layout
	// LocalSize is the default workgroup size of the entry point "main"
	// (the WorkgroupSize built-in's default values, else main's LocalSize
	// or LocalSizeId execution mode; other entry points' modes are not
	// read).
	LocalSize [3]uint32
	// LocalSizeSpecIDs are, per axis x, y, z, the ID of the
	// specialization constant that sets the workgroup's size along it
	// (GLSL local_size_x_id and so on); -1 where the size is not
	// specializable. Two axes may share one.
	LocalSizeSpecIDs [3]int64
}

// SPIR-V opcodes, decorations and enumerants the reader interprets.
const (
	opEntryPoint                = 15
	opExecutionMode             = 16
	opTypeBool                  = 20
	opTypeInt                   = 21
	opTypeFloat                 = 22
	opTypeVector                = 23
	opTypeMatrix                = 24
	opTypeArray                 = 28
	opTypeRuntimeArray          = 29
	opTypeStruct                = 30
	opTypeImage                 = 25
	opTypeSampler               = 26
	opTypeSampledImage          = 27
	opTypePointer               = 32
	opConstantTrue              = 41
	opConstantFalse             = 42
	opConstant                  = 43
	opConstantComposite         = 44
	opSpecConstantTrue          = 48
	opSpecConstantFalse         = 49
	opSpecConstant              = 50
	opSpecConstantComposite     = 51
	opSpecConstantOp            = 52
	opFunction                  = 54
	opFunctionEnd               = 56
	opFunctionCall              = 57
	opVariable                  = 59
	opDecorate                  = 71
	opMemberDecorate            = 72
	opLabel                     = 248
	opExecutionModeID           = 331
	execModelGLCompute          = 5
	execModeLocalSize           = 17
	execModeLocalSizeID         = 38
	decorationSpecID            = 1
	decorationBufferBlock       = 3
	decorationArrayStride       = 6
	decorationBuiltIn           = 11
	decorationNonWritable       = 24
	decorationNonReadable       = 25
	decorationBinding           = 33
	decorationDescriptorSet     = 34
	decorationOffset            = 35
	builtInWorkgroupSize        = 25
	dimBuffer                   = 5
	imageSampledStorage         = 2
	storageClassUniformConstant = 0
	storageClassUniform         = 2
	storageClassWorkgroup       = 4
	storageClassPushConstant    = 9
	storageClassStorageBuffer   = 12
)

// Inspect reads a SPIR-V module's interface: entry points, buffer bindings
// with their access, push-constant block size and default workgroup size.
// It first checks that the module is whole (see decode), so a module it
// accepts can be handed to a driver. It never panics on malformed input; it
// returns an error wrapping errs.BadSPIRV instead.
func Inspect(code []byte) (Module, error) {
	insts, err := decode(code)
	if err != nil {
		return Module{}, err
	}
	decl, err := collect(insts)
	if err != nil {
		return Module{}, err
	}
	return decl.resolve()
}

// declarations are what a module's instructions say about its interface,
// indexed by result id; resolving them into a Module follows the ids.
type declarations struct {
	entryPoints []string
	// mainFunction is the function of the GLCompute entry point "main",
	// the one a pipeline runs; modeLocalSize is the LocalSize execution
	// mode of each entry point's function, modeLocalSizeID the constants
	// of its LocalSizeId mode (glslc writes that one for SPIR-V 1.6), both
	// read for main's alone.
	mainFunction    *uint32
	modeLocalSize   map[uint32][3]uint32
	modeLocalSizeID map[uint32][3]uint32
	types           map[uint32]spirvType
	constants       map[uint32]uint32   // scalar constants: their first word
	composites      map[uint32][]uint32 // composite constants: their parts
	specOps         map[uint32][]uint32 // OpSpecConstantOp: its opcode and operands
	decorations     map[uint32]*decorations
	variables       []variable
	scalars         map[uint32]ScalarType // scalarOf's answers, by type id
}

// spirvType is a type declaration: its opcode and the operands after its
// result id (at least minOperands-1 of them).
type spirvType struct {
	op    uint32
	words []uint32
}

// variable is an OpVariable: its id, its pointer type and storage class.
type variable struct{ id, pointer, class uint32 }

// decorations are those of one id the reader uses.
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
	memberMatrixStride   map[uint32]uint32
	memberRowMajor       map[uint32]bool
}

// collect indexes the declarations among a decoded module's instructions.
func collect(insts []instruction) (*declarations, error) {
	d := &declarations{
		types:       map[uint32]spirvType{},
		constants:   map[uint32]uint32{},
		composites:  map[uint32][]uint32{},
		decorations: map[uint32]*decorations{},
	}
	for _, in := range insts {
		if err := d.add(in); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// add records one instruction; decode has checked its minimum operands.
func (d *declarations) add(in instruction) error {
	ops := in.operands
	switch in.op {
	case opEntryPoint:
		if ops[0] == execModelGLCompute {
			name := literalString(ops[2:])
			d.entryPoints = append(d.entryPoints, name)
			if name == "main" && d.mainFunction == nil {
				fn := ops[1]
				d.mainFunction = &fn
			}
		}
	case opExecutionMode:
		if ops[1] == execModeLocalSize {
			if err := in.need(5); err != nil {
				return err
			}
			if d.modeLocalSize == nil {
				d.modeLocalSize = map[uint32][3]uint32{}
			}
			d.modeLocalSize[ops[0]] = [3]uint32{ops[2], ops[3], ops[4]}
		}
	case opExecutionModeID:
		if ops[1] == execModeLocalSizeID {
			if err := in.need(5); err != nil {
				return err
			}
			if d.modeLocalSizeID == nil {
				d.modeLocalSizeID = map[uint32][3]uint32{}
			}
			d.modeLocalSizeID[ops[0]] = [3]uint32{ops[2], ops[3], ops[4]}
		}
	case opTypeBool, opTypeInt, opTypeFloat, opTypeVector, opTypeMatrix, opTypeArray, opTypeRuntimeArray, opTypeStruct, opTypePointer,
		opTypeImage, opTypeSampler, opTypeSampledImage:
		d.types[ops[0]] = spirvType{op: in.op, words: ops[1:]}
	case opConstant, opSpecConstant:
		d.constants[ops[1]] = ops[2]
	case opConstantTrue, opSpecConstantTrue:
		d.constants[ops[1]] = 1
	case opConstantFalse, opSpecConstantFalse:
		d.constants[ops[1]] = 0
	case opConstantComposite, opSpecConstantComposite:
		d.composites[ops[1]] = ops[2:]
	case opSpecConstantOp:
		if d.specOps == nil {
			d.specOps = map[uint32][]uint32{}
		}
		d.specOps[ops[1]] = ops[2:]
	case opVariable:
		d.variables = append(d.variables, variable{id: ops[1], pointer: ops[0], class: ops[2]})
	case opDecorate:
		return d.decorate(in)
	case opMemberDecorate:
		return d.decorateMember(in)
	}
	return nil
}

// of returns the decorations of id, creating them on first use. The member
// maps are left nil (reading a nil map is safe) until decorateMember needs
// one: only structs have members, and making three maps for every decorated
// id cost a module of many OpDecorate some hundred bytes per id.
func (d *declarations) of(id uint32) *decorations {
	deco := d.decorations[id]
	if deco == nil {
		deco = &decorations{}
		d.decorations[id] = deco
	}
	return deco
}

// decorate records an OpDecorate the reader uses.
func (d *declarations) decorate(in instruction) error {
	target, kind := in.operands[0], in.operands[1]
	switch kind {
	case decorationBufferBlock:
		d.of(target).bufferBlock = true
		return nil
	case decorationNonWritable:
		d.of(target).nonWritable = true
		return nil
	case decorationNonReadable:
		d.of(target).nonReadable = true
		return nil
	case decorationSpecID, decorationBinding, decorationDescriptorSet, decorationArrayStride, decorationBuiltIn:
	default:
		return nil
	}
	if err := in.need(3); err != nil {
		return err
	}
	deco, literal := d.of(target), in.operands[2]
	switch kind {
	case decorationSpecID:
		deco.specID = &literal
	case decorationBinding:
		deco.binding = &literal
	case decorationDescriptorSet:
		deco.set = &literal
	case decorationArrayStride:
		deco.arrayStride = literal
	case decorationBuiltIn:
		deco.workgroupSizeBuiltIn = literal == builtInWorkgroupSize
	}
	return nil
}

// decorateMember records an OpMemberDecorate the reader uses.
func (d *declarations) decorateMember(in instruction) error {
	ops := in.operands
	switch ops[2] {
	case decorationNonWritable:
		deco := d.of(ops[0])
		if deco.memberNonWritable == nil {
			deco.memberNonWritable = map[uint32]bool{}
		}
		deco.memberNonWritable[ops[1]] = true
	case decorationNonReadable:
		deco := d.of(ops[0])
		if deco.memberNonReadable == nil {
			deco.memberNonReadable = map[uint32]bool{}
		}
		deco.memberNonReadable[ops[1]] = true
	case decorationOffset:
		if err := in.need(4); err != nil {
			return err
		}
		deco := d.of(ops[0])
		if deco.memberOffset == nil {
			deco.memberOffset = map[uint32]uint32{}
		}
		deco.memberOffset[ops[1]] = ops[3]
	case decorationMatrixStride:
		if err := in.need(4); err != nil {
			return err
		}
		deco := d.of(ops[0])
		if deco.memberMatrixStride == nil {
			deco.memberMatrixStride = map[uint32]uint32{}
		}
		deco.memberMatrixStride[ops[1]] = ops[3]
	case decorationRowMajor, decorationColMajor:
		deco := d.of(ops[0])
		if deco.memberRowMajor == nil {
			deco.memberRowMajor = map[uint32]bool{}
		}
		deco.memberRowMajor[ops[1]] = ops[2] == decorationRowMajor
	}
	return nil
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
