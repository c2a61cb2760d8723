package ops

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/vkcompute/vkc"
)

// The row kernel's op codes and flags (rownorm.comp).
const (
	rowSoftmax uint32 = iota
	rowLayerNorm
	rowRMSNorm

	flagHasWeight = 2
	flagHasBias   = 4
	flagEpsParam  = 8
	flagDynC      = 16
	flagLaneRows  = 32
)

// laneRowsMax is the longest row the row kernel gives one lane alone
// (flagLaneRows) rather than a whole group: a group a row would leave all
// but C of its lanes idle and walk its share one row at a time.
const laneRowsMax = wg / 4

// rowIters is an upper estimate of the loop iterations one lane of the
// row kernel runs for one row of C elements in rank axes: its three
// passes over its elements, two trees of log2(wg) levels (each counted
// with its two barriers) where a group shares the row, finding the row's
// start and the loop over rows.
func rowIters(C, rank int, lane bool) int {
	if lane {
		return 3*(C+1) + rank + 2
	}
	return 3*((C+wg-1)/wg+1) + 2*(bits.Len(wg)+2) + rank + 2
}

// rowsCap is the most rows a group may take so that each lane stays
// within half of loopBudget.
func rowsCap(C, rank int, lane bool) int {
	per := loopBudget / 2 / rowIters(C, rank, lane)
	if lane {
		per *= wg
	}
	return max(1, per)
}

// Softmax writes into y the softmax of x along axis: exp(x - max) / sum
// of exp(x - max), the maximum subtracted first so that no exponential
// overflows. y has x's shape and distinct elements and may be x itself
// (same layout; in place, as Add says: not on a view the device cannot
// bind at its offset); x may have any layout. axis may count from the end (-1:
// the last). float32 and Float16 (computed in float32); float64 is
// refused, as GLSL has no double-precision exponential.
//
// With a dynamic x and y (one param), the rows covered follow the param
// when the work runs. Along the dynamic axis 0 itself, the softmax of
// each row covers its first rows (the param's value) alone, and only
// those are written.
//
// On a CPU driver a row of more than about 1.39 million elements, which
// one group's lanes cannot walk three times within the driver's loop
// budget, is refused with an error wrapping vkc.ErrUnsupported; so for
// LayerNorm and RMSNorm.
func Softmax[T vkc.Element](s *vkc.Stream, x Tensor[T], axis int, y Tensor[T]) error {
	return rowOp(s, "Softmax", rowSoftmax, float32And16, x, axis, Tensor[T]{}, Tensor[T]{}, Scalar{}, y)
}

// LayerNorm normalises each row of x (its last axis) into y: (x - mean)
// / sqrt(var + eps) * weight + bias, var the mean squared deviation (the
// biased estimate, as PyTorch's layer_norm). weight and bias are vectors
// of the last axis's extent, any layout; either may be the zero Tensor
// (Tensor[T]{}) for none. eps is a constant or a param. y has x's shape
// and distinct elements and may be x itself (as in Softmax); weight and
// bias may not share memory with y. float32, Float16 (computed in
// float32) and float64. Dynamic rows as in Softmax: a dynamic x of one
// axis is normalised over the param's first elements (weight and bias
// keep their capacity's extent and are read as far).
func LayerNorm[T vkc.Element](s *vkc.Stream, x, weight, bias Tensor[T], eps Scalar, y Tensor[T]) error {
	return rowOp(s, "LayerNorm", rowLayerNorm, floatTypes, x, -1, weight, bias, eps, y)
}

// RMSNorm normalises each row of x (its last axis) into y by its root
// mean square: x / sqrt(mean(x^2) + eps) * weight + bias, weight and bias
// as in LayerNorm (either may be the zero Tensor). See LayerNorm for
// shapes, types and dynamic rows.
func RMSNorm[T vkc.Element](s *vkc.Stream, x, weight, bias Tensor[T], eps Scalar, y Tensor[T]) error {
	return rowOp(s, "RMSNorm", rowRMSNorm, floatTypes, x, -1, weight, bias, eps, y)
}

// isNone reports whether t is the zero Tensor, an absent optional operand.
func isNone[T vkc.Element](t Tensor[T]) bool { return t.buf == nil && t.err == nil }

// rowOp runs the row kernel over every row of x along axis.
func rowOp[T vkc.Element](s *vkc.Stream, op string, code uint32, types []string, x Tensor[T], axis int, w, b Tensor[T], eps Scalar, y Tensor[T]) error {
	et, err := checkType[T](op, types)
	if err != nil {
		return err
	}
	operands := []interface {
		Err() error
		device() *vkc.Device
	}{x, y}
	for _, v := range []Tensor[T]{w, b} {
		if !isNone(v) {
			operands = append(operands, v)
		}
	}
	c, err := begin(op, s, operands...)
	if err != nil {
		return err
	}
	if err := sameShape(op, "y", y, x.at.shape); err != nil {
		return fmt.Errorf("%w (x's)", err)
	}
	if err := writable(op, "y", y); err != nil {
		return err
	}
	rowsP, err := dynamicRows(op, y, x)
	if err != nil {
		return err
	}
	rl, err := rowLayoutOf(op, x, y, axis, rowsP != nil)
	if err != nil {
		return err
	}
	aff, err := affineOf(op, x, w, b, rl.C)
	if err != nil {
		return err
	}
	flags := aff.flags
	lead, perLead, perRows, lane := rl.layout(c.maxGroupsX())
	if lane {
		flags |= flagLaneRows
	}
	// A group takes a row whole: a row too long for one lane's share of
	// it to fit the budget has no launch that splits it.
	if it := rowIters(rl.C, len(rl.shape), lane); !loopsFit(c.dev.Info().Type == vkc.TypeCPU, it) {
		return fmt.Errorf("vkc: %s: rows of %d elements: a lane would run %d loop iterations, more than the CPU driver's %d, which would cut the row short: %w",
			op, rl.C, it, loopBudget, vkc.ErrUnsupported)
	}
	switch {
	case rl.dynC:
		flags |= flagDynC
	case rowsP != nil:
		flags |= flagDynamic
	}
	outRange, inRanges, err := ranges(op, y, aff.ins...)
	if err != nil {
		return err
	}
	inStrides := make([][]int, len(aff.ins))
	inStrides[0] = rl.sx
	if err := checkAliasing(op, true, outRange, rl.sy, inRanges, inStrides); err != nil {
		return err
	}
	epsArg, err := c.scalarArg(op, "eps", eps, et)
	if err != nil {
		return err
	}
	if eps.IsParam() {
		flags |= flagEpsParam
	}
	k, err := c.kernel(op, "rownorm_"+et.suffix)
	if err != nil {
		return err
	}
	p := push{}.u(code, uint32(len(rl.shape)), flags, uint32(perRows)).
		u(uint32(x.at.offset), uint32(y.at.offset), uint32(aff.offW), uint32(aff.offB), uint32(aff.sW), uint32(aff.sB)).
		scalar(eps.value, et).ints(maxRank, rl.shape).ints(maxRank, rl.sx).ints(maxRank, rl.sy)
	pre, err := rowOpPrefixes(op, x, y, w, b, rowsP != nil)
	if err != nil {
		return err
	}
	return inPlaceRefused(op, c, run(s, k, rowsP, pre, lead, perLead, p, x.buf, y.buf, aff.w, aff.b, c.rowsArg(rowsP), epsArg))
}

// rowOpPrefixes are the row kernel's bindings read or written only in
// their first rows, when the op is dynamic: x's and y's, and x's buffer
// where it stands in for an absent weight or bias, which is read no
// further than x's rows (bound whole, it would make the launch skip for
// rows of x past the param that no work wrote).
func rowOpPrefixes[T vkc.Element](op string, x, y, w, b Tensor[T], dynamic bool) ([]rowPrefix, error) {
	preX, errX := prefixOf(op, "x", 0, x, x.rows != nil, false)
	preY, errY := prefixOf(op, "y", 1, y, dynamic, true)
	if err := cmp.Or(errX, errY); err != nil {
		return nil, err
	}
	pre := slices.Concat(preX, preY)
	for i, v := range []Tensor[T]{w, b} {
		if isNone(v) && len(preX) > 0 {
			pre = append(pre, rowPrefix{binding: 2 + i, per: preX[0].per})
		}
	}
	return pre, nil
}

// layout picks how the row kernel walks rows (lane: a lane a row, for
// rows of up to laneRowsMax elements, or where a group must take more
// rows than a group a row keeps within loopBudget, as along a dynamic
// axis 0 with many rows to each of its indices, and a lane a row does)
// and lays the launch out (groups).
func (rl rowLayout) layout(maxX uint32) (lead, perLead, perRows int, lane bool) {
	lane = rl.C <= laneRowsMax
	lead, perLead, perRows = rl.groups(maxX, lane)
	if !lane && perRows > rowsCap(rl.C, len(rl.shape), false) && perRows <= rowsCap(rl.C, len(rl.shape), true) {
		lane = true
		lead, perLead, perRows = rl.groups(maxX, lane)
	}
	return lead, perLead, perRows, lane
}

// groups lays the row kernel's launch out: it covers lead units of axis
// 0 (or, along a dynamic axis, of its capacity C), perLead a group; a
// group's share is perRows rows, no more than rowsCap where the launch
// can split them (a dynamic axis 0's groups cover whole indices of it).
// lane says the kernel gives each lane whole rows (flagLaneRows).
func (rl rowLayout) groups(maxX uint32, lane bool) (lead, perLead, perRows int) {
	limit := rowsCap(rl.C, len(rl.shape), lane)
	if rl.dynC {
		perLead, perRows, lead = rl.dynCGroups(maxX, limit)
		return lead, perLead, perRows
	}
	inner := 1 // rows per index of axis 0
	for _, e := range rl.shape[1 : len(rl.shape)-1] {
		inner *= e
	}
	perLead = min(rowsPerGroup(1, inner*rl.C, maxX), max(1, limit/inner))
	perLead = max(perLead, (rl.shape[0]+int(maxX)-1)/int(maxX))
	return rl.shape[0], perLead, perLead * inner
}

// dynCGroups lays a row op along a dynamic axis out: its rows (every
// one, static) perGroup a group, at most limit, and groups from the
// param, in proportion to its value, so that at the capacity C there are
// as many groups as the rows need; the kernel's groups stride over the
// rows. The launch's perLead and lead are the param's elements per group
// and the capacity.
func (rl rowLayout) dynCGroups(maxX uint32, limit int) (perLead, perGroup, lead int) {
	rows, _ := count(rl.shape[:len(rl.shape)-1])
	perGroup = min(rowsPerGroup(rows, rl.C, maxX), limit)
	groups := (rows + perGroup - 1) / perGroup
	perLead = max(1, (rl.C+groups-1)/groups, (rl.C+int(maxX)-1)/int(maxX))
	return perLead, perGroup, rl.C
}

// rowLayout is how the row kernel walks x and y: the shape with the
// normalised axis last (extent C) and the others merged before it, and
// x's and y's strides over it.
type rowLayout struct {
	shape, sx, sy []int
	C             int
	dynC          bool // the normalised axis is the dynamic axis 0
}

// rowLayoutOf moves axis last and merges the other axes (keeping a
// dynamic axis 0 first, unless it is the one normalised: dynC).
func rowLayoutOf[T vkc.Element](op string, x, y Tensor[T], axis int, dynamic bool) (rowLayout, error) {
	rank := x.Rank()
	if rank == 0 {
		return rowLayout{}, fmt.Errorf("vkc: %s: x %v has no axis", op, x)
	}
	if axis < -rank || axis >= rank {
		return rowLayout{}, fmt.Errorf("vkc: %s: axis %d of shape %v", op, axis, x.at.shape)
	}
	if axis < 0 {
		axis += rank
	}
	dynC := dynamic && axis == 0
	perm := make([]int, 0, rank)
	for i := range rank {
		if i != axis {
			perm = append(perm, i)
		}
	}
	perm = append(perm, axis)
	lx, _ := x.at.permute(perm)
	ly, _ := y.at.permute(perm)
	C := lx.shape[rank-1]
	outer, ost := mergeAxes(lx.shape[:rank-1], [][]int{lx.strides[:rank-1], ly.strides[:rank-1]}, dynamic && !dynC)
	if len(outer)+1 > maxRank {
		return rowLayout{}, fmt.Errorf("vkc: %s: shape %v needs %d axes once merged, more than the %d the kernels take", op, x.at.shape, len(outer)+1, maxRank)
	}
	return rowLayout{
		shape: append(slices.Clone(outer), C),
		sx:    append(slices.Clone(ost[0]), lx.strides[rank-1]),
		sy:    append(slices.Clone(ost[1]), ly.strides[rank-1]),
		C:     C,
		dynC:  dynC,
	}, nil
}

// affineArgs are the weight and bias of a norm as the row kernel binds
// them: x's buffer, unread, stands in for an absent one.
type affineArgs[T vkc.Element] struct {
	w, b               vkc.Arg
	offW, offB, sW, sB int
	flags              uint32
	ins                []Tensor[T]
}

// affineOf checks weight w and bias b (either the zero Tensor) as vectors
// of C elements and lays them out for the row kernel; ins are the inputs
// whose memory y may not share (x first).
func affineOf[T vkc.Element](op string, x, w, b Tensor[T], C int) (affineArgs[T], error) {
	a := affineArgs[T]{w: x.buf, b: x.buf, ins: []Tensor[T]{x}}
	for i, v := range []Tensor[T]{w, b} {
		if isNone(v) {
			continue
		}
		what := [...]string{"weight", "bias"}[i]
		if v.rows != nil {
			return a, fmt.Errorf("vkc: %s: %s %v is dynamic", op, what, v)
		}
		if err := sameShape(op, what, v, []int{C}); err != nil {
			return a, err
		}
		a.ins = append(a.ins, v)
		if i == 0 {
			a.flags |= flagHasWeight
			a.w, a.offW, a.sW = v.buf, v.at.offset, v.at.strides[0]
		} else {
			a.flags |= flagHasBias
			a.b, a.offB, a.sB = v.buf, v.at.offset, v.at.strides[0]
		}
	}
	return a, nil
}
