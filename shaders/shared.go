package shaders

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/vkcompute/vkc/internal/errs"
)

// SharedSize is the bytes of workgroup memory (GLSL shared; the Workgroup
// storage class) module code declares, with the specialization constants
// in spec set (constant ID to its 32-bit value; the others keep their
// defaults), so that a kernel whose shared memory exceeds the device's
// maxComputeSharedMemorySize is refused before the driver builds it.
//
// It is an upper bound on what the entry point uses: every Workgroup
// variable of the module counts, used by main or not, each type tightly
// packed (a scalar its width, a bool 4 bytes, a vector or matrix its
// components, a 3-component vector as 4, an array its length times its
// element, a struct the sum of its members), which is how the validation
// layer measures Vulkan's limit for scalars and vectors and arrays of them.
// Array lengths may be constants, specialization constants or
// specialization-constant expressions of the scalar integer and boolean
// operations Vulkan allows there: arithmetic, shifts and bitwise logic,
// comparisons, select and boolean logic (GLSL shared float
// s[gl_WorkGroupSize.x + 1], s[N > 8u ? N : 8u]); a length this reader
// cannot evaluate (vector operations), or a type it cannot size,
// is an error (wrapping errs.BadSPIRV only where the bytes are not a
// whole, consistent module), as are bytes Inspect refuses.
func SharedSize(code []byte, spec map[uint32]uint32) (uint64, error) {
	insts, err := decode(code)
	if err != nil {
		return 0, err
	}
	d, err := collect(insts)
	if err != nil {
		return 0, err
	}
	s := sharedSizer{declarations: d, spec: spec, sized: map[uint32]uint64{}, values: map[uint32]uint64{}}
	var total uint64
	for _, v := range d.variables {
		if v.class != storageClassWorkgroup {
			continue
		}
		ptr, ok := d.types[v.pointer]
		if !ok || ptr.op != opTypePointer {
			return 0, fmt.Errorf("%w: variable %%%d has no pointer type", errs.BadSPIRV, v.id)
		}
		size, err := s.size(ptr.words[1], 0)
		if err != nil {
			return 0, err
		}
		if total, err = sharedProduct(total+size, 1); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// sharedSizer sizes Workgroup types once each under one specialization.
type sharedSizer struct {
	*declarations
	spec   map[uint32]uint32
	sized  map[uint32]uint64
	values map[uint32]uint64 // constants evaluated, so shared subexpressions cost once
}

// sharedProduct is a*b, or an error when it exceeds maxTypeSize.
func sharedProduct(a, b uint64) (uint64, error) {
	if hi, lo := bits.Mul64(a, b); hi != 0 || lo > maxTypeSize {
		return 0, errors.New("shared memory larger than 4 GiB")
	}
	return a * b, nil
}

func (s *sharedSizer) size(id uint32, depth int) (uint64, error) {
	if size, ok := s.sized[id]; ok {
		return size, nil
	}
	if depth > maxTypeDepth {
		return 0, fmt.Errorf("%w: shared type nested too deeply", errs.BadSPIRV)
	}
	t, ok := s.types[id]
	if !ok {
		return 0, fmt.Errorf("shared type %%%d is not a type this reader sizes", id)
	}
	var size uint64
	var err error
	switch t.op {
	case opTypeBool:
		size = 4
	case opTypeInt, opTypeFloat:
		size = uint64(t.words[0]+7) / 8
	case opTypeVector, opTypeMatrix: // component (column) type, count
		count := uint64(t.words[1])
		if t.op == opTypeVector && count == 3 {
			count = 4 // padded as a vec4 is, so the bound stays above any layout
		}
		if size, err = s.size(t.words[0], depth+1); err == nil {
			size, err = sharedProduct(size, count)
		}
	case opTypeArray: // element type, length
		var length uint64
		if length, err = s.value(t.words[1], 0); err == nil {
			if size, err = s.size(t.words[0], depth+1); err == nil {
				size, err = sharedProduct(size, length)
			}
		}
	case opTypeStruct:
		for _, member := range t.words {
			var ms uint64
			if ms, err = s.size(member, depth+1); err != nil {
				break
			}
			if size, err = sharedProduct(size+ms, 1); err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("shared type %%%d (opcode %d) is not sized by this reader", id, t.op)
	}
	if err != nil {
		return 0, err
	}
	s.sized[id] = size
	return size, nil
}

// SPIR-V opcodes of the scalar integer and boolean operations Vulkan
// allows in OpSpecConstantOp, which value evaluates (booleans as 0 and 1).
const (
	opCompositeExtract     = 81
	opUConvert             = 113
	opSConvert             = 114
	opSNegate              = 126
	opIAdd                 = 128
	opISub                 = 130
	opIMul                 = 132
	opUDiv                 = 134
	opSDiv                 = 135
	opUMod                 = 137
	opSRem                 = 138
	opSMod                 = 139
	opLogicalEqual         = 164
	opLogicalNotEqual      = 165
	opLogicalOr            = 166
	opLogicalAnd           = 167
	opLogicalNot           = 168
	opSelect               = 169
	opIEqual               = 170
	opINotEqual            = 171
	opUGreaterThan         = 172
	opSGreaterThan         = 173
	opUGreaterThanEqual    = 174
	opSGreaterThanEqual    = 175
	opULessThan            = 176
	opSLessThan            = 177
	opULessThanEqual       = 178
	opSLessThanEqual       = 179
	opShiftRightLogical    = 194
	opShiftRightArithmetic = 195
	opShiftLeftLogical     = 196
	opBitwiseOr            = 197
	opBitwiseXor           = 198
	opBitwiseAnd           = 199
	opNot                  = 200
)

// value is the 32-bit value of constant id under the specialization: a
// specialized constant's value, a constant's, or an OpSpecConstantOp's
// integer arithmetic worked out.
func (s *sharedSizer) value(id uint32, depth int) (uint64, error) {
	if v, ok := s.values[id]; ok {
		return v, nil
	}
	v, err := s.evaluate(id, depth)
	if err != nil {
		return 0, err
	}
	s.values[id] = v
	return v, nil
}

// evaluate works out value's answer for an id not yet evaluated.
func (s *sharedSizer) evaluate(id uint32, depth int) (uint64, error) {
	if depth > maxTypeDepth {
		return 0, fmt.Errorf("%w: constant expression nested too deeply", errs.BadSPIRV)
	}
	if deco := s.decorations[id]; deco != nil && deco.specID != nil {
		if v, ok := s.spec[*deco.specID]; ok {
			return uint64(v), nil
		}
	}
	if v, ok := s.constants[id]; ok {
		return uint64(v), nil
	}
	ops, ok := s.specOps[id]
	if !ok || len(ops) < 2 {
		return 0, fmt.Errorf("%%%d is not a constant this reader evaluates (an array length or a matrix size may be a constant, a specialization constant or an integer expression of them)", id)
	}
	return s.operation(id, ops, depth)
}

// operation works out OpSpecConstantOp id, whose opcode and operands are
// ops, by how many operands its opcode takes: a composite extract, the
// one-operand conversions and negations, a selection of two, and the
// two-operand comparisons and arithmetic.
func (s *sharedSizer) operation(id uint32, ops []uint32, depth int) (uint64, error) {
	if ops[0] == opCompositeExtract {
		return s.extract(ops[1], ops[2:], depth)
	}
	a, err := s.value(ops[1], depth+1)
	if err != nil {
		return 0, err
	}
	if r, ok := unary(ops[0], a); ok {
		return r, nil
	}
	if len(ops) < 3 {
		return 0, fmt.Errorf("%w: OpSpecConstantOp %%%d lacks an operand", errs.BadSPIRV, id)
	}
	b, err := s.value(ops[2], depth+1)
	if err != nil {
		return 0, err
	}
	if ops[0] == opSelect {
		return s.selection(id, ops, a, b, depth)
	}
	x, y := uint32(a), uint32(b)
	if r, ok := compare(ops[0], x, y); ok {
		return r, nil
	}
	return arithmetic(id, ops[0], x, y)
}

// unary evaluates the one-operand opcodes on a; ok is false for any other
// opcode.
func unary(op uint32, a uint64) (uint64, bool) {
	switch op {
	case opUConvert, opSConvert:
		return a, true
	case opSNegate:
		return uint64(uint32(-int32(a))), true
	case opNot:
		return uint64(^uint32(a)), true
	case opLogicalNot:
		return boolValue(a == 0), true
	}
	return 0, false
}

// selection evaluates OpSpecConstantOp id, an OpSelect on condition a:
// b where a is true, else its third operand, evaluated only then.
func (s *sharedSizer) selection(id uint32, ops []uint32, a, b uint64, depth int) (uint64, error) {
	if len(ops) < 4 {
		return 0, fmt.Errorf("%w: OpSpecConstantOp %%%d lacks an operand", errs.BadSPIRV, id)
	}
	c, err := s.value(ops[3], depth+1)
	if err != nil {
		return 0, err
	}
	if a != 0 {
		return b, nil
	}
	return c, nil
}

// arithmetic evaluates the two-operand integer and bitwise opcodes of
// OpSpecConstantOp id on the words x and y; any other opcode is one this
// reader does not evaluate.
func arithmetic(id, op, x, y uint32) (uint64, error) {
	var r uint32
	switch op {
	case opIAdd:
		r = x + y
	case opISub:
		r = x - y
	case opIMul:
		r = x * y
	case opUDiv, opSDiv, opUMod, opSRem, opSMod:
		if y == 0 {
			return 0, fmt.Errorf("%w: OpSpecConstantOp %%%d divides by zero", errs.BadSPIRV, id)
		}
		r = divide(op, x, y)
	case opShiftRightLogical:
		r = x >> (y % 32)
	case opShiftRightArithmetic:
		r = uint32(int32(x) >> (y % 32))
	case opShiftLeftLogical:
		r = x << (y % 32)
	case opBitwiseOr:
		r = x | y
	case opBitwiseXor:
		r = x ^ y
	case opBitwiseAnd:
		r = x & y
	default:
		return 0, fmt.Errorf("shared array length %%%d is an OpSpecConstantOp (opcode %d) this reader does not evaluate", id, op)
	}
	return uint64(r), nil
}

// divide is x / y or a remainder by one of the division opcodes, y not 0:
// signed ones on the words as int32, with MinInt32 / -1 wrapping as the
// two's-complement hardware does; SRem takes the sign of x, SMod of y.
func divide(op, x, y uint32) uint32 {
	sx, sy := int32(x), int32(y)
	switch op {
	case opUDiv:
		return x / y
	case opUMod:
		return x % y
	}
	if sx == math.MinInt32 && sy == -1 {
		if op == opSDiv {
			return x
		}
		return 0
	}
	switch op {
	case opSDiv:
		return uint32(sx / sy)
	case opSRem:
		return uint32(sx % sy)
	}
	m := sx % sy // SMod
	if m != 0 && (m < 0) != (sy < 0) {
		m += sy
	}
	return uint32(m)
}

// compare evaluates the comparison and logical opcodes (1 true, 0 false);
// ok is false for any other opcode.
func compare(op, x, y uint32) (uint64, bool) {
	sx, sy := int32(x), int32(y)
	var r bool
	switch op {
	case opIEqual, opLogicalEqual:
		r = x == y
	case opINotEqual, opLogicalNotEqual:
		r = x != y
	case opUGreaterThan:
		r = x > y
	case opSGreaterThan:
		r = sx > sy
	case opUGreaterThanEqual:
		r = x >= y
	case opSGreaterThanEqual:
		r = sx >= sy
	case opULessThan:
		r = x < y
	case opSLessThan:
		r = sx < sy
	case opULessThanEqual:
		r = x <= y
	case opSLessThanEqual:
		r = sx <= sy
	case opLogicalOr:
		r = x != 0 || y != 0
	case opLogicalAnd:
		r = x != 0 && y != 0
	default:
		return 0, false
	}
	return boolValue(r), true
}

func boolValue(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// extract is the value of a component of a composite constant (the
// WorkgroupSize built-in's x, y or z), through the indexes given.
func (s *sharedSizer) extract(composite uint32, indexes []uint32, depth int) (uint64, error) {
	for _, i := range indexes {
		parts, ok := s.composites[composite]
		if !ok || int(i) >= len(parts) {
			return 0, fmt.Errorf("%w: OpCompositeExtract of %%%d at %d: not a composite constant with that part", errs.BadSPIRV, composite, i)
		}
		composite = parts[i]
	}
	return s.value(composite, depth+1)
}
