package shaders

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/vkcompute/vkc/internal/errs"
)

// LayoutKind says what a Layout describes.
type LayoutKind uint8

// The kinds of value a block holds.
const (
	// LayoutScalar is a number: an integer or a float of Width bytes.
	LayoutScalar LayoutKind = iota + 1
	// LayoutVector is Count scalars, tightly packed.
	LayoutVector
	// LayoutMatrix is Count column vectors, Stride bytes apart (rows, when
	// RowMajor).
	LayoutMatrix
	// LayoutArray is Count elements, Stride bytes apart.
	LayoutArray
	// LayoutRuntimeArray is an array whose length is the buffer's: its
	// elements are Stride bytes apart and it has none the layout counts.
	LayoutRuntimeArray
	// LayoutStruct is Members at their offsets.
	LayoutStruct
	// LayoutPointer is a device address (GLSL buffer_reference; a pointer
	// to PhysicalStorageBuffer): 8 bytes.
	LayoutPointer
)

// String names the kind for messages.
func (k LayoutKind) String() string {
	switch k {
	case LayoutScalar:
		return "scalar"
	case LayoutVector:
		return "vector"
	case LayoutMatrix:
		return "matrix"
	case LayoutArray:
		return "array"
	case LayoutRuntimeArray:
		return "runtime array"
	case LayoutStruct:
		return "struct"
	case LayoutPointer:
		return "pointer"
	}
	return fmt.Sprintf("LayoutKind(%d)", uint8(k))
}

// Layout is where the bytes of a block's value lie, as the module's
// decorations place them: each struct member at its Offset, array
// elements ArrayStride apart, matrix columns (or rows, for RowMajor)
// MatrixStride apart. Nothing is recomputed from a packing rule: std140,
// std430, scalar block layout and hand-written modules place the same
// GLSL types differently, and the bytes a caller passes must land where
// the kernel reads them.
type Layout struct {
	Kind LayoutKind
	// Size is the bytes the value spans, from its first byte to the end
	// of its last one: padding after the last byte is not counted (a mat3
	// with columns 16 bytes apart spans 44 bytes, not 48), and a runtime
	// array counts as empty, so a struct that ends in one spans up to the
	// array's offset. It is what a caller must pass for every byte the
	// kernel may read to be its own.
	Size uint64
	// Width is the bytes of one scalar: the value's own for a scalar or a
	// pointer, its components' for a vector or a matrix; 0 otherwise.
	Width uint32
	// Count is a vector's components, a matrix's columns or an array's
	// length (0 for a runtime array).
	Count uint32
	// Stride is an array's ArrayStride or a matrix's MatrixStride.
	Stride uint32
	// RowMajor reports a matrix stored row by row (RowMajor decoration):
	// Stride is then the distance between rows.
	RowMajor bool
	// Elem is a vector's component, a matrix's column vector, an array's
	// element.
	Elem *Layout
	// Members are a struct's members in declaration order.
	Members []MemberLayout
	// Float and Signed say what number a scalar is (a float, a signed or
	// an unsigned integer), so that a value laid out into it can be
	// checked for its type, not only its width; false for other kinds.
	Float, Signed bool
}

// TypeName names a scalar's type as Go would (float32, int16, uint64; a
// pointer is a device address, uint64), for messages.
func (l *Layout) TypeName() string {
	switch {
	case l.Kind == LayoutPointer:
		return "uint64 (device address)"
	case l.Kind != LayoutScalar:
		return l.Kind.String()
	case l.Float:
		return fmt.Sprintf("float%d", 8*l.Width)
	case l.Signed:
		return fmt.Sprintf("int%d", 8*l.Width)
	}
	return fmt.Sprintf("uint%d", 8*l.Width)
}

// MemberLayout is one member of a struct: where it starts within the
// struct (its Offset decoration) and its own layout.
type MemberLayout struct {
	Offset uint32
	Layout *Layout
}

// Decorations the layout reader interprets, and the storage class of
// device addresses.
const (
	decorationRowMajor                = 4
	decorationColMajor                = 5
	decorationMatrixStride            = 7
	storageClassPhysicalStorageBuffer = 5349
)

// maxTypeSize bounds every size so that products of sizes and counts fit
// in 64 bits, and so that a size above 4 GiB is an error rather than a
// wrapped-around uint32 that could match a small description; no block
// that a caller passes by value comes near it.
const maxTypeSize = math.MaxUint32

// maxTypeDepth bounds the nesting the readers follow.
const maxTypeDepth = 32

// matrixDecoration is what a struct member says about the matrices it
// holds, directly or through arrays: SPIR-V decorates the member, not the
// matrix type, so one matrix type is laid out differently in different
// members.
type matrixDecoration struct {
	stride   uint32
	rowMajor bool
	set      bool // a MatrixStride was given
}

// layoutKey is one type under one member's matrix decoration.
type layoutKey struct {
	id     uint32
	matrix matrixDecoration
}

// layoutReader lays out block types once each: a type used by many
// members of many structs would otherwise be walked once per path to it,
// exponentially many in the nesting depth.
type layoutReader struct {
	*declarations
	done map[layoutKey]*Layout
}

func newLayoutReader(d *declarations) *layoutReader {
	return &layoutReader{declarations: d, done: map[layoutKey]*Layout{}}
}

// sum is a+b*c, or an error for type id when it exceeds maxTypeSize.
func sum(id uint32, a, b, c uint64) (uint64, error) {
	hi, lo := bits.Mul64(b, c)
	if hi != 0 || lo > maxTypeSize || a > maxTypeSize || a+lo > maxTypeSize {
		return 0, fmt.Errorf("%w: block type %%%d is larger than 4 GiB", errs.BadSPIRV, id)
	}
	return a + lo, nil
}

// layout is the layout of type id within a member decorated with m. It
// refuses (with errs.BadSPIRV) what a block may not hold or the module
// does not lay out: a bool, an array or runtime array without ArrayStride
// or with a length that is not a constant, a matrix without MatrixStride,
// a struct member without Offset, a pointer other than a device address.
func (r *layoutReader) layout(id uint32, m matrixDecoration, depth int) (*Layout, error) {
	if depth > maxTypeDepth {
		return nil, fmt.Errorf("%w: block type nested too deeply", errs.BadSPIRV)
	}
	t, ok := r.types[id]
	if !ok {
		return nil, fmt.Errorf("%w: block member type %%%d is not a type this reader lays out", errs.BadSPIRV, id)
	}
	if t.op != opTypeMatrix && t.op != opTypeArray && t.op != opTypeRuntimeArray {
		m = matrixDecoration{} // only matrices (through arrays) read it
	}
	key := layoutKey{id, m}
	if l, ok := r.done[key]; ok {
		return l, nil
	}
	var l *Layout
	var err error
	switch t.op {
	case opTypeInt, opTypeFloat:
		if l, err = scalarLayout(id, t.words[0]); err == nil {
			l.Float, l.Signed = t.op == opTypeFloat, t.op == opTypeInt && t.words[1] == 1
		}
	case opTypeVector: // component type, count
		l, err = r.vector(id, t, depth)
	case opTypeMatrix: // column type, column count
		l, err = r.matrix(id, t, m, depth)
	case opTypeArray, opTypeRuntimeArray:
		l, err = r.array(id, t, m, depth)
	case opTypeStruct:
		l, err = r.structure(id, t, depth)
	case opTypePointer: // storage class, pointee
		if t.words[0] != storageClassPhysicalStorageBuffer {
			return nil, fmt.Errorf("%w: block member type %%%d is a pointer to storage class %d; only device addresses (PhysicalStorageBuffer) live in blocks", errs.BadSPIRV, id, t.words[0])
		}
		l = &Layout{Kind: LayoutPointer, Size: 8, Width: 8}
	default:
		err = fmt.Errorf("%w: block member type %%%d (opcode %d) is not one a block holds", errs.BadSPIRV, id, t.op)
	}
	if err != nil {
		return nil, err
	}
	r.done[key] = l
	return l, nil
}

func scalarLayout(id, bitWidth uint32) (*Layout, error) {
	if bitWidth == 0 || bitWidth%8 != 0 {
		return nil, fmt.Errorf("%w: scalar type %%%d is %d bits wide, not whole bytes", errs.BadSPIRV, id, bitWidth)
	}
	return &Layout{Kind: LayoutScalar, Size: uint64(bitWidth / 8), Width: bitWidth / 8}, nil
}

func (r *layoutReader) vector(id uint32, t spirvType, depth int) (*Layout, error) {
	comp, err := r.layout(t.words[0], matrixDecoration{}, depth+1)
	if err != nil {
		return nil, err
	}
	if comp.Kind != LayoutScalar || t.words[1] == 0 {
		return nil, fmt.Errorf("%w: vector type %%%d is not of scalars, or has no components", errs.BadSPIRV, id)
	}
	size, err := sum(id, 0, uint64(comp.Width), uint64(t.words[1]))
	if err != nil {
		return nil, err
	}
	return &Layout{Kind: LayoutVector, Size: size, Width: comp.Width, Count: t.words[1], Elem: comp}, nil
}

// matrix lays out a matrix as its member's decorations say: columns (or,
// row-major, rows) MatrixStride apart, each a tightly packed vector, so
// that it spans every stride but the last and one vector.
func (r *layoutReader) matrix(id uint32, t spirvType, m matrixDecoration, depth int) (*Layout, error) {
	col, err := r.layout(t.words[0], matrixDecoration{}, depth+1)
	if err != nil {
		return nil, err
	}
	columns := t.words[1]
	if col.Kind != LayoutVector || columns == 0 {
		return nil, fmt.Errorf("%w: matrix type %%%d is not of vectors, or has no columns", errs.BadSPIRV, id)
	}
	if !m.set || m.stride == 0 {
		return nil, fmt.Errorf("%w: matrix type %%%d in a block without a MatrixStride decoration on its member", errs.BadSPIRV, id)
	}
	vectors, vector := columns, col.Size // column-major: columns of col.Count components
	if m.rowMajor {
		vectors, vector = col.Count, uint64(columns)*uint64(col.Width) // rows of one component per column
	}
	size, err := sum(id, vector, uint64(m.stride), uint64(vectors-1))
	if err != nil {
		return nil, err
	}
	return &Layout{Kind: LayoutMatrix, Size: size, Width: col.Width, Count: columns, Stride: m.stride, RowMajor: m.rowMajor, Elem: col}, nil
}

// array lays out an array (its length a constant) or a runtime array:
// elements ArrayStride apart, so that an array spans every stride but the
// last and one element, and a runtime array nothing.
func (r *layoutReader) array(id uint32, t spirvType, m matrixDecoration, depth int) (*Layout, error) {
	deco := r.decorations[id]
	if deco == nil || deco.arrayStride == 0 {
		return nil, fmt.Errorf("%w: array type %%%d in a block without an ArrayStride decoration", errs.BadSPIRV, id)
	}
	elem, err := r.layout(t.words[0], m, depth+1)
	if err != nil {
		return nil, err
	}
	l := &Layout{Kind: LayoutRuntimeArray, Stride: deco.arrayStride, Elem: elem}
	if t.op == opTypeRuntimeArray {
		return l, nil
	}
	length, ok := r.constants[t.words[1]]
	if !ok || length == 0 {
		return nil, fmt.Errorf("%w: array type %%%d in a block has no constant, non-zero length", errs.BadSPIRV, id)
	}
	if l.Size, err = sum(id, elem.Size, uint64(deco.arrayStride), uint64(length-1)); err != nil {
		return nil, err
	}
	l.Kind, l.Count = LayoutArray, length
	return l, nil
}

// structure lays out a struct: each member at its Offset decoration, the
// struct spanning to the furthest end of a member.
func (r *layoutReader) structure(id uint32, t spirvType, depth int) (*Layout, error) {
	deco := r.decorations[id]
	l := &Layout{Kind: LayoutStruct, Members: make([]MemberLayout, len(t.words))}
	for i, member := range t.words {
		m := uint32(i)
		var offset uint32
		var hasOffset bool
		var md matrixDecoration
		if deco != nil {
			offset, hasOffset = deco.memberOffset[m]
			md.stride, md.set = deco.memberMatrixStride[m]
			md.rowMajor = deco.memberRowMajor[m]
		}
		if !hasOffset {
			return nil, fmt.Errorf("%w: member %d of struct %%%d in a block has no Offset decoration", errs.BadSPIRV, i, id)
		}
		ml, err := r.layout(member, md, depth+1)
		if err != nil {
			return nil, err
		}
		end, err := sum(id, uint64(offset), ml.Size, 1)
		if err != nil {
			return nil, err
		}
		l.Size = max(l.Size, end)
		l.Members[i] = MemberLayout{Offset: offset, Layout: ml}
	}
	return l, nil
}
