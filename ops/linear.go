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
// (an operand not contiguous over the merged shape, or broadcast), and
// the general kernel runs.
func linearWidth(c *opContext, et elemType, pl elementPlan, contiguous uint32, offs ...int) int {
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
