package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// The binary kernel's op codes (binary.comp).
const (
	binAdd uint32 = iota
	binSub
	binMul
	binDiv
	binMax
	binMin
)

// Add writes a + b into out, element-wise with NumPy's broadcasting: a and
// b may have any layout (transposed, sliced, broadcast), and out must
// have their broadcast shape and distinct elements. out may be a or b
// itself (same buffer, same layout): each element is read before it is
// written. In place needs a buffer or a view at an offset the device
// binds (a multiple of MinStorageBufferOffsetAlignment bytes); another
// view is refused in place, with an error wrapping vkc.ErrOverlap
// (docs/guide/ops.md). float32, Float16 (computed in float32), float64, int32 and
// uint32 (wrapping on overflow).
//
// With a dynamic out (Tensor.Dynamic), axis 0 covers the param's value
// when the work runs, so a captured graph follows it on every replay.
// On a CPU driver, where the rows after axis 0 (once axes merge) hold
// more elements than a group's lanes finish within the driver's loop
// budget (about 1.4 million on a transposed or broadcast operand, 8.4
// million where every operand is contiguous), a static shape runs a
// launch per index of its leading axes and a dynamic one is refused with
// an error wrapping vkc.ErrUnsupported; so for every element-wise op
// (unary, Scale, Axpy, Copy, Convert, Fill).
func Add[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Add", binAdd, a, b, out)
}

// Sub writes a - b into out; see Add for shapes, layouts and types.
func Sub[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Sub", binSub, a, b, out)
}

// Mul writes a * b into out; see Add for shapes, layouts and types.
func Mul[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Mul", binMul, a, b, out)
}

// Div writes a / b into out; see Add for shapes, layouts and types.
// Floats divide as IEEE 754 does (x/0 is ±Inf or NaN); integers truncate
// toward zero, and a zero divisor gives 0 rather than a fault.
func Div[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Div", binDiv, a, b, out)
}

// Maximum writes the larger of a and b into out, element-wise; see Add
// for shapes, layouts and types. Which of the two a NaN yields is up to
// the device.
func Maximum[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Maximum", binMax, a, b, out)
}

// Minimum writes the smaller of a and b into out, element-wise; see
// Maximum.
func Minimum[T vkc.Element](s *vkc.Stream, a, b, out Tensor[T]) error {
	return binaryOp(s, "Minimum", binMin, a, b, out)
}

// binaryOp runs the binary kernel: op code on a and b broadcast to out.
func binaryOp[T vkc.Element](s *vkc.Stream, op string, code uint32, a, b, out Tensor[T]) error {
	et, err := checkType[T](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, a, b, out)
	if err != nil {
		return err
	}
	shape, err := BroadcastShapes(a.at.shape, b.at.shape)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	if err := sameShape(op, "out", out, shape); err != nil {
		return fmt.Errorf("%w (the broadcast of %v and %v)", err, a.at.shape, b.at.shape)
	}
	if err := writable(op, "out", out); err != nil {
		return err
	}
	rowsP, err := dynamicRows(op, out, a, b)
	if err != nil {
		return err
	}
	la, _ := a.at.broadcastTo(shape) // cannot fail: shape is their broadcast
	lb, _ := b.at.broadcastTo(shape)
	outRange, inRanges, err := ranges(op, out, a, b)
	if err != nil {
		return err
	}
	pl, err := plan(op, true, outRange, out.at, inRanges, []layout{la, lb}, rowsP != nil, c.maxGroupsX())
	if err != nil {
		return err
	}
	preA, errA := prefixOf(op, "a", 0, a, a.rows != nil, false)
	preB, errB := prefixOf(op, "b", 1, b, b.rows != nil, false)
	preOut, errOut := prefixOf(op, "out", 2, out, rowsP != nil, true)
	if err := cmp.Or(errA, errB, errOut); err != nil {
		return err
	}
	pre := slices.Concat(preA, preB, preOut)
	if v := linearWidth(c, et, pl, 2|4|8, la.offset, lb.offset, out.at.offset); v != 0 {
		offs := [3]int{la.offset, lb.offset, out.at.offset}
		return inPlaceRefused(op, c, runLinear(c, op, "binary", code, et, pl, v, offs, 0, rowsP, pre, a.buf, b.buf, out.buf, c.rowsArg(rowsP)))
	}
	k, err := c.kernel(op, "binary_"+et.suffix)
	if err != nil {
		return err
	}
	return c.eachPiece(op, pl, []int{out.at.offset, la.offset, lb.offset}, func(pc piece) error {
		p := push{}.u(code, uint32(len(pc.pl.shape)), pc.pl.flags, uint32(pc.pl.perGroup)).
			u(uint32(pc.offs[1]), uint32(pc.offs[2]), uint32(pc.offs[0])).
			ints(maxRank, pc.pl.shape).ints(maxRank, pc.pl.strides[1]).ints(maxRank, pc.pl.strides[2]).ints(maxRank, pc.pl.strides[0])
		return inPlaceRefused(op, c, run(s, k, rowsP, pre, pc.pl.shape[0], pc.pl.perGroup, p, a.buf, b.buf, out.buf, c.rowsArg(rowsP)))
	})
}

// elementPlan is how an element-wise kernel walks its operands: the
// merged shape, each operand's strides over it (the output's first), the
// kernel flags (dynamic rows; which operands are addressed contiguously)
// and the rows each group covers.
type elementPlan struct {
	shape    []int
	strides  [][]int
	flags    uint32
	perGroup int
}

// plan merges the axes of an element-wise op over the output layout lo,
// checks the output's memory against the inputs' (ranges of the whole
// tensors), and sizes the groups for a device with the x group limit
// maxX. Input k's contiguity flag is bit 1+k, the output's bit 3
// (binary.comp's layout: 2 a, 4 b, 8 out; unary and convert: 2 x, 8 y).
func plan(op string, inPlace bool, outRange byteRange, lo layout, inRanges []byteRange, lins []layout, dynamic bool, maxX uint32) (elementPlan, error) {
	strides := [][]int{lo.strides}
	for _, l := range lins {
		strides = append(strides, l.strides)
	}
	shape := lo.shape
	if len(shape) == 0 {
		shape = []int{1}
		for k := range strides {
			strides[k] = []int{0}
		}
	}
	ms, mst := mergeAxes(shape, strides, dynamic)
	if len(ms) > maxRank {
		return elementPlan{}, fmt.Errorf("vkc: %s: shape %v needs %d axes once merged, more than the %d the kernels take", op, lo.shape, len(ms), maxRank)
	}
	if err := checkAliasing(op, inPlace, outRange, mst[0], inRanges, mst[1:]); err != nil {
		return elementPlan{}, err
	}
	var flags uint32
	if dynamic {
		flags |= flagDynamic
	}
	for k, st := range mst[1:] {
		if rowMajor(ms, st) {
			flags |= 2 << k
		}
	}
	if rowMajor(ms, mst[0]) {
		flags |= 8
	}
	inner := 1
	for _, e := range ms[1:] {
		inner *= e
	}
	return elementPlan{shape: ms, strides: mst, flags: flags, perGroup: rowsPerGroup(ms[0], inner, maxX)}, nil
}

// ranges is the byteRange of out and of each input, for plan.
func ranges[T vkc.Element](op string, out Tensor[T], ins ...Tensor[T]) (byteRange, []byteRange, error) {
	outRange, err := rangeOf(out)
	if err != nil {
		return byteRange{}, nil, fmt.Errorf("vkc: %s: %w", op, err)
	}
	inRanges := make([]byteRange, len(ins))
	for i, in := range ins {
		if inRanges[i], err = rangeOf(in); err != nil {
			return byteRange{}, nil, fmt.Errorf("vkc: %s: %w", op, err)
		}
	}
	return outRange, inRanges, nil
}

// maxGroupsX is the device's x limit on group counts.
func (c *opContext) maxGroupsX() uint32 {
	return c.dev.Info().Limits.MaxComputeWorkGroupCount[0]
}
