package ops

import (
	"fmt"
	"math"

	"github.com/vkcompute/vkc"
)

// Fill writes value into every element of dst, which may have any layout
// with distinct elements (a Slice of a tensor, a strided view). With a
// dynamic dst (Tensor.Dynamic) it fills the rows of axis 0 that the param
// holds when the work runs and leaves the rest untouched, so a captured
// graph follows every Set. The value is written exactly, bit for bit,
// but for a Float16 NaN, whose payload the device may not keep. float32,
// Float16, float64, int32 and uint32; vkc.Fill fills a whole buffer of
// any element type.
func Fill[T vkc.Element](s *vkc.Stream, value T, dst Tensor[T]) error {
	const op = "Fill"
	et, err := checkType[T](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, dst)
	if err != nil {
		return err
	}
	if err := writable(op, "dst", dst); err != nil {
		return err
	}
	rowsP, err := dynamicRows(op, dst)
	if err != nil {
		return err
	}
	outRange, err := rangeOf(dst)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	pl, err := plan(op, false, outRange, dst.at, nil, nil, rowsP != nil, c.maxGroupsX())
	if err != nil {
		return err
	}
	k, err := c.kernel(op, "fill_"+et.suffix)
	if err != nil {
		return err
	}
	lo, hi := valueWords(value)
	pre, err := prefixOf(op, "dst", 0, dst, rowsP != nil, true)
	if err != nil {
		return err
	}
	return c.eachPiece(op, pl, []int{dst.at.offset}, func(pc piece) error {
		p := push{}.u(uint32(len(pc.pl.shape)), pc.pl.flags, uint32(pc.pl.perGroup), uint32(pc.offs[0]), lo, hi).
			ints(maxRank, pc.pl.shape).ints(maxRank, pc.pl.strides[0])
		return run(s, k, rowsP, pre, pc.pl.shape[0], pc.pl.perGroup, p, dst.buf, c.rowsArg(rowsP))
	})
}

// valueWords is v's bits as the fill kernel's two push words: a 32-bit
// type's in lo, Float16's in lo's low half, float64's low word in lo and
// high word in hi.
func valueWords[T vkc.Element](v T) (lo, hi uint32) {
	switch x := any(v).(type) {
	case float32:
		return math.Float32bits(x), 0
	case vkc.Float16:
		return uint32(x), 0
	case float64:
		b := math.Float64bits(x)
		return uint32(b), uint32(b >> 32)
	case int32:
		return uint32(x), 0
	case uint32:
		return x, 0
	}
	return 0, 0 // checkType refused every other type
}
