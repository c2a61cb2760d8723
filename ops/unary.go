package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// The unary kernel's op codes (unary.glsl).
const (
	unExp uint32 = iota
	unLog
	unSqrt
	unTanh
	unSigmoid
	unRelu
	unGelu
	unGeluErf
	unSilu
	unScale
)

// flagAlphaParam: the kernel reads its scalar from the Alpha binding.
const flagAlphaParam = 16

// Exp writes e^x into y. x is broadcast to y's shape (NumPy's rules) and
// may have any layout; y needs distinct elements and may be x itself
// (in place, as Add says: not on a view the device cannot bind at its
// offset).
// float32 and Float16 (computed in float32); float64 is refused, as GLSL
// has no double-precision exponential.
func Exp[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Exp", unExp, float32And16, Scalar{}, x, y)
}

// Log writes the natural logarithm of x into y (NaN below 0, -Inf at 0);
// see Exp for shapes and types.
func Log[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Log", unLog, float32And16, Scalar{}, x, y)
}

// Sqrt writes the square root of x into y (NaN below 0); see Exp for
// shapes. float32, Float16 and float64.
func Sqrt[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Sqrt", unSqrt, floatTypes, Scalar{}, x, y)
}

// Tanh writes tanh(x) into y, computed so that no |x| overflows; see Exp
// for shapes and types.
func Tanh[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Tanh", unTanh, float32And16, Scalar{}, x, y)
}

// Sigmoid writes 1/(1+e^-x) into y; see Exp for shapes and types.
func Sigmoid[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Sigmoid", unSigmoid, float32And16, Scalar{}, x, y)
}

// Relu writes max(x, 0) into y; see Exp for shapes. float32, Float16 and
// float64.
func Relu[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Relu", unRelu, floatTypes, Scalar{}, x, y)
}

// Gelu writes the GELU of x into y in its tanh form, as GPT-2 and most
// transformer code compute it: x/2 * (1 + tanh(sqrt(2/pi) * (x +
// 0.044715 x^3))). GeluErf is the exact form; the two differ by up to
// about 5e-4. See Exp for shapes and types.
func Gelu[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Gelu", unGelu, float32And16, Scalar{}, x, y)
}

// GeluErf writes the exact GELU of x into y: x/2 * (1 + erf(x/sqrt(2))),
// with erf approximated to within 1.5e-7 (Abramowitz and Stegun 7.1.26).
// See Exp for shapes and types.
func GeluErf[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "GeluErf", unGeluErf, float32And16, Scalar{}, x, y)
}

// Silu writes x * sigmoid(x) (swish) into y; see Exp for shapes and
// types.
func Silu[T vkc.Element](s *vkc.Stream, x, y Tensor[T]) error {
	return unaryOp(s, "Silu", unSilu, float32And16, Scalar{}, x, y)
}

// Scale writes a*x into y. a is a constant or a param (ParamOf: a
// *vkc.Param[float32] for float32 and Float16, a *vkc.Param[float64] for
// float64), read when the work runs, so a captured graph follows its Set.
// See Exp for shapes; float32, Float16 and float64.
func Scale[T vkc.Element](s *vkc.Stream, a Scalar, x, y Tensor[T]) error {
	return unaryOp(s, "Scale", unScale, floatTypes, a, x, y)
}

// Axpy adds a*x to y (y = a*x + y): y is read and written, so it must
// have been written before. x is broadcast to y's shape (a bias row over
// a batch) and may be y itself. a is as in Scale. float32, Float16
// (computed in float32) and float64.
func Axpy[T vkc.Element](s *vkc.Stream, a Scalar, x, y Tensor[T]) error {
	return unaryOp(s, "Axpy", 0, floatTypes, a, x, y)
}

// unaryOp runs the unary kernel (or, for Axpy, the axpy kernel): x
// broadcast to y's shape, op code, scalar a.
func unaryOp[T vkc.Element](s *vkc.Stream, op string, code uint32, types []string, a Scalar, x, y Tensor[T]) error {
	et, err := checkType[T](op, types)
	if err != nil {
		return err
	}
	c, err := begin(op, s, x, y)
	if err != nil {
		return err
	}
	if err := writable(op, "y", y); err != nil {
		return err
	}
	lx, err := x.at.broadcastTo(y.at.shape)
	if err != nil {
		return fmt.Errorf("vkc: %s: x of shape %v for y of shape %v: %w", op, x.at.shape, y.at.shape, err)
	}
	rowsP, err := dynamicRows(op, y, x)
	if err != nil {
		return err
	}
	alpha, err := c.scalarArg(op, "the scalar", a, et)
	if err != nil {
		return err
	}
	outRange, inRanges, err := ranges(op, y, x)
	if err != nil {
		return err
	}
	pl, err := plan(op, true, outRange, y.at, inRanges, []layout{lx}, rowsP != nil, c.maxGroupsX())
	if err != nil {
		return err
	}
	if a.IsParam() {
		pl.flags |= flagAlphaParam
	}
	family := "unary"
	if op == "Axpy" {
		family = "axpy"
	}
	preX, errX := prefixOf(op, "x", 0, x, x.rows != nil, false)
	preY, errY := prefixOf(op, "y", 1, y, rowsP != nil, true)
	if err := cmp.Or(errX, errY); err != nil {
		return err
	}
	pre := slices.Concat(preX, preY)
	if v := linearWidth(c, et, pl, 2|8, lx.offset, y.at.offset); v != 0 {
		offs := [3]int{lx.offset, y.at.offset, y.at.offset}
		return inPlaceRefused(op, c, runLinear(c, op, family, code, et, pl, v, offs, a.value, rowsP, pre, x.buf, y.buf, c.rowsArg(rowsP), alpha))
	}
	k, err := c.kernel(op, family+"_"+et.suffix)
	if err != nil {
		return err
	}
	return c.eachPiece(op, pl, []int{y.at.offset, lx.offset}, func(pc piece) error {
		p := push{}.u(code, uint32(len(pc.pl.shape)), pc.pl.flags, uint32(pc.pl.perGroup)).
			u(uint32(pc.offs[1]), uint32(pc.offs[0])).scalar(a.value, et).
			ints(maxRank, pc.pl.shape).ints(maxRank, pc.pl.strides[1]).ints(maxRank, pc.pl.strides[0])
		return inPlaceRefused(op, c, run(s, k, rowsP, pre, pc.pl.shape[0], pc.pl.perGroup, p, x.buf, y.buf, c.rowsArg(rowsP), alpha))
	})
}
