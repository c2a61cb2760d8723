package shaders

import (
	"errors"
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
	// MinSize is the bytes a buffer bound here must hold for every
	// access the module's types declare to stay inside it: the block's
	// fixed part (Block.Size: fixed arrays whole; a runtime array at the
	// end counts as empty, not as one element). 0 for other kinds, for
	// an array of descriptors and for a block it cannot lay out. Indices
	// the code computes are not bounded by it.
	MinSize uint64
	// NonWritable and NonReadable are the module's decorations (GLSL
	// readonly and writeonly), on the variable or on every member of its
	// block; for a slot several variables alias, set only if every alias
	// has it.
	NonWritable, NonReadable bool
	// Loads and Stores are what the entry point's code (and every function
	// it calls) does through the binding: a load (OpLoad, OpCopyMemory's
	// source, an image read or fetch, an atomic) or a store (OpStore,
	// OpCopyMemory's target, an image write, an atomic). They are complete
	// only when Traced: an entry point was chosen and every use of a pointer
	// into the binding was one the reader follows (access chains, copies,
	// function parameters, phis and selects, texel pointers).
	Loads, Stores bool
	Traced        bool
	// TexelType is, for a texel buffer, the image's sampled type (what its
	// reads return and its writes take, per component), and TexelFormat
	// the image's SPIR-V format (ImageFormat: 0 Unknown, 1 Rgba32f, 3
	// R32f, 21 Rgba32i, 24 R32i, 30 Rgba32ui, 33 R32ui, ...).
	TexelType   ScalarType
	TexelFormat uint32
}

// Contradiction describes a decoration the binding's traced code
// contradicts (NonWritable on one it stores to, NonReadable on one it
// loads), "" when there is none or the code was not traced: a description
// the code does not keep would mislead every check built on it.
func (b ModuleBinding) Contradiction() string {
	switch {
	case !b.Traced:
		return ""
	case b.NonWritable && b.Stores:
		return "is declared NonWritable (readonly) but the entry point stores to it"
	case b.NonReadable && b.Loads:
		return "is declared NonReadable (writeonly) but the entry point loads from it"
	}
	return ""
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
	// LocalSize is the default workgroup size of the chosen entry point
	// (Entry): the WorkgroupSize built-in's default values, else the entry
	// point's LocalSize or LocalSizeId execution mode (other entry points'
	// modes are not read); zero when no entry point was chosen.
	LocalSize [3]uint32
	// LocalSizeSpecIDs are, per axis x, y, z, the ID of the
	// specialization constant that sets the workgroup's size along it
	// (GLSL local_size_x_id and so on); -1 where the size is not
	// specializable. Two axes may share one.
	LocalSizeSpecIDs [3]int64
	// Entry is the GLCompute entry point the description is of (its
	// workgroup size, and the code whose loads and stores give each
	// binding's access): the one InspectEntry was asked for, else "main",
	// else the module's only one; "" when none was chosen (several entry
	// points, none "main").
	Entry string
	// SpecConstants are the module's specialization constants that carry
	// a SpecId, sorted by it: what a kernel may set at load.
	SpecConstants []SpecConstant
}

// SpecKind is the kind of number a specialization constant is.
type SpecKind uint8

// The kinds of specialization constant.
const (
	SpecBool SpecKind = iota + 1
	SpecInt
	SpecUint
	SpecFloat
)

// String names the kind as a type name would start.
func (k SpecKind) String() string {
	switch k {
	case SpecBool:
		return "bool"
	case SpecInt:
		return "int"
	case SpecUint:
		return "uint"
	case SpecFloat:
		return "float"
	}
	return fmt.Sprintf("SpecKind(%d)", uint8(k))
}

// SpecConstant is one specialization constant a module declares with a
// SpecId: what a value set for it must fit and how many bytes the
// driver takes for it.
type SpecConstant struct {
	ID   uint32
	Kind SpecKind
	// Bits is the type's width: 8, 16, 32 or 64 for numbers, 32 for a
	// bool (VkBool32 is what Vulkan takes for one).
	Bits uint32
	// Default is the module's value, as the constant's bits (a float's
	// IEEE 754 pattern, an integer's two's complement, 0 or 1 for a bool).
	Default uint64
}

// TypeName is the constant's type as GLSL names it (float64 as double),
// for messages.
func (c SpecConstant) TypeName() string {
	if c.Kind == SpecBool {
		return "bool"
	}
	return fmt.Sprintf("%s%d", c.Kind, c.Bits)
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
	return InspectEntry(code, "")
}

// ErrNoEntryPoint reports an entry point name the module does not declare
// as a GLCompute entry point.
var ErrNoEntryPoint = errors.New("no such compute entry point")

// InspectEntry is Inspect for the GLCompute entry point named entry: its
// workgroup size and the access its code makes of each binding. "" picks
// "main", else the module's only GLCompute entry point, else none (the
// module's interface is still read, with access from decorations alone).
// A name the module does not declare is ErrNoEntryPoint.
func InspectEntry(code []byte, entry string) (Module, error) {
	insts, err := decode(code)
	if err != nil {
		return Module{}, err
	}
	decl, err := collect(insts)
	if err != nil {
		return Module{}, err
	}
	if err := decl.chooseEntry(entry); err != nil {
		return Module{}, err
	}
	mod, err := decl.resolve()
	if err != nil {
		return Module{}, err
	}
	if decl.entryFunction != nil {
		traceAccess(insts, decl, *decl.entryFunction, mod.Bindings)
	}
	return mod, nil
}

// chooseEntry picks the entry point the description is of (see
// InspectEntry).
func (d *declarations) chooseEntry(name string) error {
	pick := -1
	for i, e := range d.entryPoints {
		if name == "" && e == "main" || name != "" && e == name {
			pick = i
			break
		}
	}
	if pick < 0 && name == "" && len(d.entryPoints) == 1 {
		pick = 0
	}
	if pick < 0 && name != "" {
		return fmt.Errorf("%w: %q (the module has %q)", ErrNoEntryPoint, name, d.entryPoints)
	}
	if pick >= 0 {
		fn := d.entryFunctions[pick]
		d.entryFunction, d.entry = &fn, d.entryPoints[pick]
	}
	return nil
}

// declarations are what a module's instructions say about its interface,
// indexed by result id; resolving them into a Module follows the ids.
type declarations struct {
	entryPoints    []string
	entryFunctions []uint32 // the function of each of entryPoints
	// entryFunction is the function of the chosen entry point (see
	// chooseEntry), the one a pipeline runs; modeLocalSize is the LocalSize
	// execution mode of each entry point's function, modeLocalSizeID the
	// constants of its LocalSizeId mode (glslc writes that one for SPIR-V
	// 1.6), both read for the chosen one's alone.
	entryFunction   *uint32
	entry           string
	specs           []specDecl
	modeLocalSize   map[uint32][3]uint32
	modeLocalSizeID map[uint32][3]uint32
	types           map[uint32]spirvType
	constants       map[uint32]uint32   // scalar constants: their first word
	composites      map[uint32][]uint32 // composite constants: their parts
	specOps         map[uint32][]uint32 // OpSpecConstantOp: its opcode and operands
	// coopTypes are the OpTypeCooperativeMatrixKHR types by result id:
	// their component type, scope, rows, columns and use ids.
	coopTypes   map[uint32][]uint32
	decorations map[uint32]*decorations
	variables   []variable
	scalars     map[uint32]ScalarType // scalarOf's answers, by type id
}

// specDecl is an OpSpecConstant, OpSpecConstantTrue or
// OpSpecConstantFalse: its type, result id and value words.
type specDecl struct {
	typ, id uint32
	value   []uint32
	boolean bool
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
			d.entryPoints = append(d.entryPoints, literalString(ops[2:]))
			d.entryFunctions = append(d.entryFunctions, ops[1])
		}
	case opExecutionMode, opExecutionModeID:
		return d.executionMode(in)
	case opTypeBool, opTypeInt, opTypeFloat, opTypeVector, opTypeMatrix, opTypeArray, opTypeRuntimeArray, opTypeStruct, opTypePointer,
		opTypeImage, opTypeSampler, opTypeSampledImage:
		d.types[ops[0]] = spirvType{op: in.op, words: ops[1:]}
	case opConstant, opSpecConstant, opConstantTrue, opSpecConstantTrue, opConstantFalse, opSpecConstantFalse:
		d.scalarConstant(in)
	case opConstantComposite, opSpecConstantComposite:
		d.composites[ops[1]] = ops[2:]
	case opTypeCooperativeMatrixKHR:
		if d.coopTypes == nil {
			d.coopTypes = map[uint32][]uint32{}
		}
		d.coopTypes[ops[0]] = ops[1:6]
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

// executionMode records the workgroup size an OpExecutionMode LocalSize
// or an OpExecutionModeId LocalSizeId gives a function; the reader uses
// no other execution mode.
func (d *declarations) executionMode(in instruction) error {
	ops := in.operands
	var modes *map[uint32][3]uint32
	switch {
	case in.op == opExecutionMode && ops[1] == execModeLocalSize:
		modes = &d.modeLocalSize
	case in.op == opExecutionModeID && ops[1] == execModeLocalSizeID:
		modes = &d.modeLocalSizeID
	default:
		return nil
	}
	if err := in.need(5); err != nil {
		return err
	}
	if *modes == nil {
		*modes = map[uint32][3]uint32{}
	}
	(*modes)[ops[0]] = [3]uint32{ops[2], ops[3], ops[4]}
	return nil
}

// scalarConstant records the value of an OpConstant, OpConstantTrue or
// OpConstantFalse or of their specialization forms, and notes each
// specialization constant's declaration for specConstants.
func (d *declarations) scalarConstant(in instruction) {
	ops := in.operands
	switch in.op {
	case opConstant, opSpecConstant:
		d.constants[ops[1]] = ops[2]
		if in.op == opSpecConstant {
			d.specs = append(d.specs, specDecl{typ: ops[0], id: ops[1], value: ops[2:]})
		}
	case opConstantTrue, opSpecConstantTrue:
		d.constants[ops[1]] = 1
		if in.op == opSpecConstantTrue {
			d.specs = append(d.specs, specDecl{typ: ops[0], id: ops[1], value: []uint32{1}, boolean: true})
		}
	case opConstantFalse, opSpecConstantFalse:
		d.constants[ops[1]] = 0
		if in.op == opSpecConstantFalse {
			d.specs = append(d.specs, specDecl{typ: ops[0], id: ops[1], value: []uint32{0}, boolean: true})
		}
	}
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
