package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// Transpose materialises src into dst: the elements of any layout (a
// Permute, T, Slice or BroadcastTo of a tensor, strided or not) written
// in dst's layout, usually a contiguous tensor of src's shape made with
// Of, which Reshape and the kernels' fast paths then take. src is
// broadcast to dst's shape; dst must have distinct elements and may not
// share memory with src. Every element type ops has kernels for:
// float32, Float16, float64, int32 and uint32, copied exactly.
func Transpose[T vkc.Element](s *vkc.Stream, src, dst Tensor[T]) error {
	return convert(s, "Transpose", src, dst)
}

// Copy writes src's elements into dst, exactly, bit for bit: Transpose
// under the name of what it does when src and dst share a shape. src may
// have any layout and is broadcast to dst's shape; dst must have distinct
// elements and may not share memory with src. With a dynamic dst (and
// src, if it is dynamic, with the same param) it copies the rows of axis
// 0 that the param holds when the work runs and leaves the rest of dst
// untouched, so a captured graph follows every Set. float32, Float16,
// float64, int32 and uint32; vkc.Copy copies a whole buffer of any
// element type with a transfer command.
func Copy[T vkc.Element](s *vkc.Stream, src, dst Tensor[T]) error {
	return convert(s, "Copy", src, dst)
}

// Convert writes src's elements into dst as dst's element type: floats
// round to nearest even (float64 to Float16 through float32, which can
// differ from direct rounding by one unit in a halfway case); floats
// become integers truncated toward zero and saturated to the integer's
// range, NaN as 0; integers become integers keeping their 32 bits (two's
// complement, as Go converts). Between float32, Float16, float64, int32
// and uint32; shapes and layouts as in Transpose. A dynamic src or dst
// must be both, with one param.
func Convert[S, D vkc.Element](s *vkc.Stream, src Tensor[S], dst Tensor[D]) error {
	return convert(s, "Convert", src, dst)
}

// convert runs the convert kernel from S to D.
func convert[S, D vkc.Element](s *vkc.Stream, op string, src Tensor[S], dst Tensor[D]) error {
	st, err := checkType[S](op, numericTypes)
	if err != nil {
		return err
	}
	dt, err := checkType[D](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, src, dst)
	if err != nil {
		return err
	}
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	ls, err := src.at.broadcastTo(dst.at.shape)
	if err != nil {
		return fmt.Errorf("vkc: %s: src of shape %v for dst of shape %v: %w", op, src.at.shape, dst.at.shape, err)
	}
	rowsP := dst.rows
	switch {
	case src.rows != nil && src.rows != rowsP:
		return fmt.Errorf("vkc: %s: src is dynamic and dst is not, or with another param: make both Dynamic with one param", op)
	case src.rows != nil && src.Rank() != dst.Rank():
		return fmt.Errorf("vkc: %s: dynamic src has shape %v, dst %v: a dynamic axis 0 must be dst's axis 0", op, src.at.shape, dst.at.shape)
	case rowsP != nil:
		if n := rowsP.Value(); n < 1 || int(n) > dst.at.shape[0] {
			return fmt.Errorf("vkc: %s: the rows param holds %d, outside 1..%d, dst's capacity %v", op, n, dst.at.shape[0], dst.at.shape)
		}
	}
	outRange, err := rangeOf(dst)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	inRange, err := rangeOf(src)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	pl, err := plan(op, false, outRange, dst.at, []byteRange{inRange}, []layout{ls}, rowsP != nil, c.maxGroupsX())
	if err != nil {
		return err
	}
	k, err := c.kernel(op, "convert_"+st.suffix+"_"+dt.suffix)
	if err != nil {
		return err
	}
	preSrc, errSrc := prefixOf(op, "src", 0, src, src.rows != nil, false)
	preDst, errDst := prefixOf(op, "dst", 1, dst, rowsP != nil, true)
	if err := cmp.Or(errSrc, errDst); err != nil {
		return err
	}
	pre := slices.Concat(preSrc, preDst)
	return c.eachPiece(op, pl, []int{dst.at.offset, ls.offset}, func(pc piece) error {
		p := push{}.u(uint32(len(pc.pl.shape)), pc.pl.flags, uint32(pc.pl.perGroup), uint32(pc.offs[1]), uint32(pc.offs[0])).
			ints(maxRank, pc.pl.shape).ints(maxRank, pc.pl.strides[1]).ints(maxRank, pc.pl.strides[0])
		return run(s, k, rowsP, pre, pc.pl.shape[0], pc.pl.perGroup, p, src.buf, dst.buf, c.rowsArg(rowsP))
	})
}
