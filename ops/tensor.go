package ops

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// Tensor is an op's operand: elements of a vkc.Buffer (or a view of one)
// seen as an array of some shape, with a stride per axis counted in
// elements. It is a small value that holds no device memory of its own:
// the buffer stays the caller's, to close as always.
//
// Transposes, permutations, broadcasts, slices and reshapes of contiguous
// data are changes of shape and strides, never copies (Permute, T,
// BroadcastTo, Slice, Reshape). A stride of 0 repeats an element along its
// axis: that is how a broadcast reads one bias row for every row of a
// batch. Ops read any valid layout; an op writes only through a layout
// whose elements are distinct (no stride 0, no axes that interleave).
//
// Axis 0 may be dynamic (Dynamic): its extent is then a vkc.Param's value
// when the work runs, at most the extent given, which is the capacity. A
// captured graph then does as many rows as the param says on every replay,
// with no re-capture, and marks written only the rows it wrote (a dynamic
// output must lie so that it can: see Dynamic).
//
// A Tensor built from bad arguments (a nil buffer, a shape that does not
// fit, an axis out of range) is not a panic: it carries the error, which
// every op given it returns and Err reports. Methods on such a tensor keep
// the first error.
type Tensor[T vkc.Element] struct {
	buf  *vkc.Buffer[T]
	at   layout
	rows *vkc.Param[uint32] // axis 0's extent at run time; nil: at.shape[0]
	err  error
}

// errNilBuffer is the error of a tensor over a nil buffer.
var errNilBuffer = errors.New("vkc: tensor of a nil buffer")

// Of is b's elements as a contiguous row-major array of the given shape,
// whose extents must multiply to b.Len(); with no shape, b as a vector.
// Use a view (Buffer.View) to take part of a buffer.
func Of[T vkc.Element](b *vkc.Buffer[T], shape ...int) Tensor[T] {
	if b == nil {
		return Tensor[T]{err: errNilBuffer}
	}
	n := b.Len()
	if len(shape) == 0 {
		shape = []int{n}
	}
	at, err := contiguous(0, shape)
	if err == nil && at.span() != n {
		err = fmt.Errorf("shape %v holds %d elements, the buffer %d", shape, at.span(), n)
	}
	if err != nil {
		return Tensor[T]{err: fmt.Errorf("vkc: Of: %w", err)}
	}
	return Tensor[T]{buf: b, at: at}
}

// Strided is b's elements from element offset on, with the shape and
// strides given (in elements, outermost axis first). Every element the
// layout addresses must lie inside b; strides may not be negative, and a
// stride of 0 repeats an element (such a tensor can be read, not written).
func Strided[T vkc.Element](b *vkc.Buffer[T], offset int, shape, strides []int) Tensor[T] {
	if b == nil {
		return Tensor[T]{err: errNilBuffer}
	}
	at := layout{offset: offset, shape: slices.Clone(shape), strides: slices.Clone(strides)}
	if err := at.check(b.Len()); err != nil {
		return Tensor[T]{err: fmt.Errorf("vkc: Strided: %w", err)}
	}
	return Tensor[T]{buf: b, at: at}
}

// Err is the error the tensor carries, nil for a valid one.
func (t Tensor[T]) Err() error {
	if t.err == nil && t.buf == nil {
		return errors.New("vkc: zero Tensor (use Of or Strided)")
	}
	return t.err
}

// Buffer is the buffer the tensor's elements are in.
func (t Tensor[T]) Buffer() *vkc.Buffer[T] { return t.buf }

// Offset is the index in Buffer of the tensor's first element.
func (t Tensor[T]) Offset() int { return t.at.offset }

// Shape is the extent of each axis, outermost first (a copy). A dynamic
// axis 0 reports its capacity.
func (t Tensor[T]) Shape() []int { return slices.Clone(t.at.shape) }

// Strides is the number of elements between neighbours along each axis (a
// copy).
func (t Tensor[T]) Strides() []int { return slices.Clone(t.at.strides) }

// Rank is the number of axes.
func (t Tensor[T]) Rank() int { return len(t.at.shape) }

// Len is the number of elements the tensor has (with a dynamic axis 0, at
// its capacity).
func (t Tensor[T]) Len() int {
	n, err := count(t.at.shape)
	if err != nil {
		return 0
	}
	return n
}

// Contiguous reports whether the elements are row-major and adjacent, as
// Of lays them out.
func (t Tensor[T]) Contiguous() bool { return t.err == nil && t.at.isContiguous() }

// Rows is the param that sizes axis 0 at run time, nil when the tensor is
// not dynamic.
func (t Tensor[T]) Rows() *vkc.Param[uint32] { return t.rows }

// String describes the tensor for errors and logs: element type, shape,
// strides, offset and, when dynamic, that axis 0 is.
func (t Tensor[T]) String() string {
	if err := t.Err(); err != nil {
		return fmt.Sprintf("Tensor(%v)", err)
	}
	dyn := ""
	if t.rows != nil {
		dyn = ", axis 0 dynamic"
	}
	return fmt.Sprintf("Tensor[%T](shape %v, strides %v, offset %d%s)", *new(T), t.at.shape, t.at.strides, t.at.offset, dyn)
}

// with is t with another layout, or t carrying err.
func (t Tensor[T]) with(what string, at layout, err error) Tensor[T] {
	if t.err != nil {
		return t
	}
	if err != nil {
		t.err = fmt.Errorf("vkc: %s of %v: %w", what, t, err)
		return t
	}
	t.at = at
	return t
}

// Permute reorders the axes with no copy: axis i of the result is axis
// axes[i] of t. A dynamic axis 0 must stay axis 0.
func (t Tensor[T]) Permute(axes ...int) Tensor[T] {
	at, err := t.at.permute(axes)
	if err == nil && t.rows != nil && axes[0] != 0 {
		err = errors.New("the dynamic axis 0 must stay first")
	}
	return t.with("Permute", at, err)
}

// T swaps the last two axes with no copy: the matrix transpose, batch
// axes kept (PyTorch's mT).
func (t Tensor[T]) T() Tensor[T] {
	r := len(t.at.shape)
	if t.err == nil && r < 2 {
		return t.with("T", layout{}, errors.New("fewer than two axes"))
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if r >= 2 {
		axes[r-1], axes[r-2] = axes[r-2], axes[r-1]
	}
	return t.Permute(axes...)
}

// BroadcastTo repeats t to the shape given by NumPy's rules, with no copy:
// axes match from the last, and an axis of extent 1 or a missing leading
// axis repeats (stride 0). The result can be read, not written.
func (t Tensor[T]) BroadcastTo(shape ...int) Tensor[T] {
	at, err := t.at.broadcastTo(shape)
	if err == nil && t.rows != nil && (len(shape) != len(t.at.shape) || at.strides[0] == 0) {
		err = errors.New("a dynamic axis 0 cannot be broadcast")
	}
	return t.with("BroadcastTo", at, err)
}

// Reshape gives a contiguous tensor another shape with the same number of
// elements; one extent may be -1, inferred from the others. A tensor that
// is not contiguous (a transpose) is refused: materialise it first
// (Transpose). A dynamic tensor keeps its axis 0.
func (t Tensor[T]) Reshape(shape ...int) Tensor[T] {
	at, err := t.at.reshape(shape)
	if err == nil && t.rows != nil && (len(at.shape) == 0 || at.shape[0] != t.at.shape[0]) {
		err = errors.New("a dynamic tensor keeps the extent of axis 0")
	}
	return t.with("Reshape", at, err)
}

// Slice keeps elements [start, end) of one axis, with no copy. The
// dynamic axis 0 cannot be sliced.
func (t Tensor[T]) Slice(axis, start, end int) Tensor[T] {
	at, err := t.at.slice(axis, start, end)
	if err == nil && t.rows != nil && axis == 0 {
		err = errors.New("the dynamic axis 0 cannot be sliced")
	}
	return t.with("Slice", at, err)
}

// Dynamic makes axis 0's extent the value rows holds when the work runs,
// from 1 up to the extent t has now (its capacity). Ops over it cover
// that many rows, and a captured graph follows every rows.Set with no
// re-capture; rows.Set refuses a value above the capacity of any live
// graph that recorded it. Operands of one op that are dynamic must share
// the same param. A dynamic output must start at offset 0 with each row
// inside axis 0's stride, and its buffer must hold capacity times that
// stride elements (a contiguous tensor always does): only then can the
// launch mark written just the rows it wrote, so an op refuses any other
// dynamic output with an error wrapping vkc.ErrUnsupported. A dynamic
// input of another layout is read whole.
func (t Tensor[T]) Dynamic(rows *vkc.Param[uint32]) Tensor[T] {
	switch {
	case t.err != nil:
		return t
	case rows == nil:
		t.err = fmt.Errorf("vkc: Dynamic of %v: nil param", t)
	case len(t.at.shape) == 0:
		t.err = fmt.Errorf("vkc: Dynamic of %v: a scalar has no axis 0", t)
	case t.at.strides[0] == 0 && t.at.shape[0] > 1:
		t.err = fmt.Errorf("vkc: Dynamic of %v: axis 0 is broadcast", t)
	default:
		t.rows = rows
	}
	return t
}
