package ops

import (
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// loopBudget is how many loop iterations, all of an invocation's loops
// together, a driver may run before it cuts them short without an error:
// Mesa's llvmpipe (lavapipe) stops every loop of an invocation after
// 65535, and the sum it was computing is silently short. The row kernel's
// layout keeps each lane's share to half of it where the launch can
// (rowIters); Matmul's variants apply on a CPU driver only where their
// longest invocation stays within it, less loopMargin (problem.loopIters).
const loopBudget = 65535

// loopMargin is what Matmul's estimates leave for the loops they do not
// count: a reduction tree, a tail of a few elements.
const loopMargin = 256

// loopsFit reports whether an invocation running iters loop iterations
// completes on a device: always on a GPU; on a CPU driver (the only kind
// known to cut loops short) within loopBudget less loopMargin.
func loopsFit(cpu bool, iters int) bool {
	return !cpu || iters <= loopBudget-loopMargin
}

// dynamicMost bounds the loops of an invocation of a launch of
// vkc.GroupsOf(param, per), the param at most capRows: the largest
// iters(g, n) over every group count g the launch may make, each at the
// largest param n that makes it (the work an invocation strides over
// grows with n for a given g).
func dynamicMost(capRows, per int, iters func(g, n int) int) int {
	most := 0
	for g := 1; (g-1)*per < capRows; g++ {
		most = max(most, iters(g, min(g*per, capRows)))
	}
	return most
}

// elementIters is how many loop iterations an invocation of the
// element-wise kernels (binary, unary, convert, fill) runs over a merged
// shape, perGroup rows a group: per element it strides to, one of its
// own and one of the index loop per axis.
func elementIters(shape []int, perGroup int) int {
	inner := 1
	for _, e := range shape[1:] {
		inner *= e
	}
	return (perGroup*inner+wg-1)/wg*(len(shape)+1) + len(shape)
}

// eachPiece runs launch for each of pl's pieces on c's device.
func (c *opContext) eachPiece(op string, pl elementPlan, offs []int, launch func(pc piece) error) error {
	ps, err := pl.pieces(op, c.dev.Info().Type == vkc.TypeCPU, offs, c.maxGroupsX())
	if err != nil {
		return err
	}
	for _, pc := range ps {
		if err := launch(pc); err != nil {
			return err
		}
	}
	return nil
}

// piece is one launch of an element-wise plan: the plan over a
// sub-tensor and each operand's offset, in the plan's order (out first).
type piece struct {
	pl   elementPlan
	offs []int
}

// pieces is the launches that run pl with the operands at offsets offs
// (the plan's order): pl itself where its invocations' loops fit the
// device (loopsFit); else, on a CPU driver, one launch per index of the
// plan's leading axes, as few of them as make the rest fit, since a group
// covers whole rows of the inner axes and rows of some million elements
// would run one invocation past the budget. A dynamic plan, whose axis 0
// the launch sizes from its param, is refused instead, with an error
// wrapping vkc.ErrUnsupported.
func (pl elementPlan) pieces(op string, cpu bool, offs []int, maxX uint32) ([]piece, error) {
	if loopsFit(cpu, elementIters(pl.shape, pl.perGroup)) {
		return []piece{{pl, offs}}, nil
	}
	if pl.flags&flagDynamic != 0 {
		row, _ := count(pl.shape[1:])
		return nil, fmt.Errorf("vkc: %s: dynamic rows of %d elements (shape %v once merged): an invocation would run more than the CPU driver's %d loop iterations: %w",
			op, row, pl.shape, loopBudget, vkc.ErrUnsupported)
	}
	j := 1
	for ; j < len(pl.shape); j++ {
		inner := 1
		for _, e := range pl.shape[j+1:] {
			inner *= e
		}
		if loopsFit(cpu, elementIters(pl.shape[j:], rowsPerGroup(pl.shape[j], inner, maxX))) {
			break
		}
	}
	if j == len(pl.shape) {
		return nil, fmt.Errorf("vkc: %s: shape %v: an invocation would run more than the CPU driver's %d loop iterations: %w", op, pl.shape, loopBudget, vkc.ErrUnsupported)
	}
	sub := pl.shape[j:]
	inner := 1
	for _, e := range sub[1:] {
		inner *= e
	}
	n, _ := count(pl.shape[:j])
	out := make([]piece, 0, n)
	idx := make([]int, j)
	for range n {
		p := piece{pl: elementPlan{shape: sub, flags: pl.flags, perGroup: rowsPerGroup(sub[0], inner, maxX)}, offs: slices.Clone(offs)}
		for k, st := range pl.strides {
			p.pl.strides = append(p.pl.strides, st[j:])
			for a, i := range idx {
				p.offs[k] += i * st[a]
			}
		}
		out = append(out, p)
		for a := j - 1; a >= 0; a-- { // the next index, row-major
			if idx[a]++; idx[a] < pl.shape[a] {
				break
			}
			idx[a] = 0
		}
	}
	return out, nil
}
