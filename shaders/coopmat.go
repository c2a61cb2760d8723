package shaders

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vkcompute/vkc/internal/errs"
)

// opTypeCooperativeMatrixKHR declares a cooperative matrix type
// (SPV_KHR_cooperative_matrix).
const opTypeCooperativeMatrixKHR = 4456

// CooperativeMatrixUse is what a cooperative matrix is in a multiply-add
// (SPIR-V's CooperativeMatrixUse): A, B, or the accumulator C and result.
type CooperativeMatrixUse uint32

// The uses.
const (
	UseMatrixA CooperativeMatrixUse = iota
	UseMatrixB
	UseAccumulator
)

// String names the use as GLSL does.
func (u CooperativeMatrixUse) String() string {
	switch u {
	case UseMatrixA:
		return "gl_MatrixUseA"
	case UseMatrixB:
		return "gl_MatrixUseB"
	case UseAccumulator:
		return "gl_MatrixUseAccumulator"
	}
	return fmt.Sprintf("CooperativeMatrixUse(%d)", uint32(u))
}

// CooperativeMatrixType is one cooperative matrix type a module declares
// (OpTypeCooperativeMatrixKHR), under a specialization: its component
// type (a float or an integer of Bits bits, Signed for a signed integer),
// the scope sharing it (a SPIR-V Scope: 3 is Subgroup), its rows and
// columns, and its use. A device runs only the types its configurations
// list (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-08974), so a
// launcher compares them before a driver sees the module.
type CooperativeMatrixType struct {
	Float         bool
	Signed        bool
	Bits          uint32
	Scope         uint32
	Rows, Columns uint32
	Use           CooperativeMatrixUse
}

// String is the type as "16x16 float16 gl_MatrixUseA (scope 3)".
func (t CooperativeMatrixType) String() string {
	kind := "uint"
	switch {
	case t.Float:
		kind = "float"
	case t.Signed:
		kind = "int"
	}
	return fmt.Sprintf("%dx%d %s%d %v (scope %d)", t.Rows, t.Columns, kind, t.Bits, t.Use, t.Scope)
}

// CooperativeMatrixTypes lists the cooperative matrix types module code
// declares, in the order of their ids (so a refusal names the same one
// every time), with the specialization constants in
// spec set (constant ID to its 32-bit value; the others keep their
// defaults), their sizes, scope and use worked out as SharedSize works
// out array lengths. A size this reader cannot evaluate is an error, as
// are bytes Inspect refuses.
func CooperativeMatrixTypes(code []byte, spec map[uint32]uint32) ([]CooperativeMatrixType, error) {
	insts, err := decode(code)
	if err != nil {
		return nil, err
	}
	d, err := collect(insts)
	if err != nil {
		return nil, err
	}
	s := sharedSizer{declarations: d, spec: spec, sized: map[uint32]uint64{}, values: map[uint32]uint64{}}
	var out []CooperativeMatrixType
	for _, id := range slices.Sorted(maps.Keys(d.coopTypes)) {
		ops := d.coopTypes[id]
		comp, ok := d.types[ops[0]]
		if !ok || (comp.op != opTypeFloat && comp.op != opTypeInt) {
			return nil, fmt.Errorf("%w: cooperative matrix type %%%d has no numeric component type", errs.BadSPIRV, id)
		}
		t := CooperativeMatrixType{Float: comp.op == opTypeFloat, Bits: comp.words[0]}
		if comp.op == opTypeInt {
			t.Signed = comp.words[1] != 0
		}
		var vals [4]uint64
		for i, operand := range ops[1:5] {
			if vals[i], err = s.value(operand, 0); err != nil {
				return nil, fmt.Errorf("cooperative matrix type %%%d: %w", id, err)
			}
		}
		t.Scope, t.Rows, t.Columns, t.Use = uint32(vals[0]), uint32(vals[1]), uint32(vals[2]), CooperativeMatrixUse(vals[3])
		out = append(out, t)
	}
	return out, nil
}
