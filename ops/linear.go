package ops

import (
	"github.com/vkcompute/vkc"
)

// linearWidth is how many elements an invocation of the linear kernels
// (linear.glsl) moves at once for an op of type et whose operands start
// at offs (elements): 8, as 64-bit words, for float32 on a CPU driver
// with 64-bit integers (the shaders.Wide rule: a GPU keeps the vec4 view,
// which fills a wave), else 4 as a vec4; each operand's offset must be a
// multiple of it. 0: the plan or an offset does not allow the fast path
// (an operand not contiguous over the merged shape, or broadcast), or on
// a CPU driver its lanes would run past the loop budget (linearIters),
// and the general kernel runs, whose pieces split that work or refuse
// it (elementPlan.pieces).
func linearWidth(c *opContext, et elemType, pl elementPlan, contiguous uint32, offs ...int) int {
	v := linearVector(c, et, pl, contiguous, offs...)
	if v != 0 && !loopsFit(c.dev.Info().Type == vkc.TypeCPU, linearIters(pl, v, c.maxGroupsX())) {
		return 0
	}
	return v
}

// linearIters is how many loop iterations an invocation of a linear
// kernel of width v runs over the plan: its group's perGroup rows of
// inner elements, 256 a step (LWG lanes of v), each step counting two
// on lavapipe (the step and the element-wise loop of the last partial
// vector, entered once a step though it runs none: rows of 2^23
// elements were cut short at 2^23, every width and family), then that
// loop's at most v. A group covers its own rows, static or dynamic
// (GroupsOf(param, perGroup)), so the count does not depend on the
// param. A static contiguous plan merges to one axis, whose
// rowsPerGroup keeps a group's share to 4096 elements or ceil(n/maxX):
// within the budget for any n the kernels take; a dynamic plan keeps
// its axis 0, so rows of some 8.4 million elements run past it.
func linearIters(pl elementPlan, v int, maxX uint32) int {
	_, inner, per := linearGroups(pl, v, maxX)
	return 2*((per*inner+255)/256) + v + 2
}

// linearVector is linearWidth's choice before the loop budget.
func linearVector(c *opContext, et elemType, pl elementPlan, contiguous uint32, offs ...int) int {
	if pl.flags&contiguous != contiguous {
		return 0
	}
	aligned := func(v int) bool {
		for _, o := range offs {
			if o%v != 0 {
				return false
			}
		}
		return true
	}
	info := c.dev.Info()
	switch {
	case et.suffix == "f32" && info.Type == vkc.TypeCPU && info.Features.Has(vkc.FeatureInt64) && aligned(8):
		return 8
	case aligned(4):
		return 4
	}
	return 0
}

// linearKernel is the name of family's linear variant ("unary", "axpy"
// or "binary") for et and width v.
func linearKernel(family string, et elemType, v int) string {
	if v == 8 {
		return family + "_lin_wide_" + et.suffix
	}
	return family + "_lin_" + et.suffix
}

// linearGroups lays a linear kernel's launch out over the plan's shape:
// its rows (axis 0) and the elements of each, and the rows a group
// covers, rounded up so that a group starts on a whole vector of v.
func linearGroups(pl elementPlan, v int, maxX uint32) (rows, inner, perGroup int) {
	inner = 1
	for _, e := range pl.shape[1:] {
		inner *= e
	}
	rows = pl.shape[0]
	perGroup = rowsPerGroup(rows, inner, maxX)
	g, r := v, inner%v // g: gcd(v, inner)
	for r != 0 {
		g, r = r, g%r
	}
	step := v / g // rows whose elements make whole vectors
	perGroup = (perGroup + step - 1) / step * step
	return rows, inner, perGroup
}

// linearPush is a linear kernel's push block: op code, flags, the
// group's rows, elements a row, rows, the operands' offsets (first
// input, second input, output) and the scalar.
func linearPush(code, flags uint32, rows, inner, perGroup int, offs [3]int, alpha float64, et elemType) push {
	return push{}.u(code, flags, uint32(perGroup), uint32(inner)).
		u(uint32(rows), uint32(offs[0]), uint32(offs[1]), uint32(offs[2])).
		scalar(alpha, et)
}

// runLinear launches family's linear variant of width v over the plan's
// shape: offs are the operands' offsets (first input, second input,
// output), flags the plan's dynamic bit and the scalar's param bit
// (flagAlphaParam), alpha a constant scalar's value; the rest as run's.
func runLinear(c *opContext, op, family string, code uint32, et elemType, pl elementPlan, v int, offs [3]int, alpha float64,
	rowsP *vkc.Param[uint32], pre []rowPrefix, args ...vkc.Arg) error {
	k, err := c.kernel(op, linearKernel(family, et, v))
	if err != nil {
		return err
	}
	rows, inner, per := linearGroups(pl, v, c.maxGroupsX())
	p := linearPush(code, pl.flags&(flagDynamic|flagAlphaParam), rows, inner, per, offs, alpha, et)
	return run(c.s, k, rowsP, pre, rows, per, p, args...)
}
