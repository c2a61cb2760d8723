package ops

import (
	"fmt"
	"math"
	"slices"
)

// layout is where a tensor's elements sit in its buffer: the index of the
// first element, the extent of each axis (outermost first) and the number
// of elements between neighbours along each axis. It is pure arithmetic,
// apart from any buffer, so that its rules are tested and fuzzed with no
// device.
type layout struct {
	offset  int
	shape   []int
	strides []int
}

// maxElements bounds every extent product and addressed index, so that the
// arithmetic on them (and the 32-bit words kernels receive) cannot
// overflow: a larger tensor is refused, never wrapped around.
const maxElements = math.MaxInt32

// contiguous is the row-major layout of shape from offset.
func contiguous(offset int, shape []int) (layout, error) {
	if _, err := count(shape); err != nil {
		return layout{}, err
	}
	strides := make([]int, len(shape))
	step := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = step
		step *= shape[i]
	}
	return layout{offset: offset, shape: slices.Clone(shape), strides: strides}, nil
}

// count is the number of elements of shape (1 for a scalar's empty
// shape), refusing an extent below 1 or a product past maxElements.
func count(shape []int) (int, error) {
	n := 1
	for i, e := range shape {
		if e < 1 {
			return 0, fmt.Errorf("shape %v: extent %d of axis %d (every extent is at least 1)", shape, e, i)
		}
		if n > maxElements/e {
			return 0, fmt.Errorf("shape %v: more than %d elements", shape, maxElements)
		}
		n *= e
	}
	return n, nil
}

// span is one past the largest element index the layout addresses.
func (l layout) span() int {
	last := l.offset
	for i, e := range l.shape {
		last += (e - 1) * l.strides[i]
	}
	return last + 1
}

// check reports whether l is a valid layout inside a buffer of n
// elements: extents at least 1, strides not negative, every addressed
// element inside [0, n), and no index past maxElements.
func (l layout) check(n int) error {
	if len(l.strides) != len(l.shape) {
		return fmt.Errorf("shape %v with %d strides %v", l.shape, len(l.strides), l.strides)
	}
	if _, err := count(l.shape); err != nil {
		return err
	}
	if l.offset < 0 {
		return fmt.Errorf("offset %d is negative", l.offset)
	}
	last := l.offset
	for i, e := range l.shape {
		st := l.strides[i]
		if st < 0 {
			return fmt.Errorf("shape %v strides %v: stride %d of axis %d is negative", l.shape, l.strides, st, i)
		}
		if st > 0 && e-1 > (maxElements-last)/st {
			return fmt.Errorf("shape %v strides %v from offset %d: addresses past element %d", l.shape, l.strides, l.offset, maxElements)
		}
		last += (e - 1) * st
	}
	if last >= n {
		return fmt.Errorf("shape %v strides %v from offset %d reaches element %d of a buffer of %d", l.shape, l.strides, l.offset, last, n)
	}
	return nil
}

// isContiguous reports whether the elements are row-major and adjacent,
// ignoring axes of extent 1 (whose stride never matters).
func (l layout) isContiguous() bool {
	step := 1
	for i := len(l.shape) - 1; i >= 0; i-- {
		if l.shape[i] == 1 {
			continue
		}
		if l.strides[i] != step {
			return false
		}
		step *= l.shape[i]
	}
	return true
}

// overlapsItself reports whether two distinct indices may address one
// element: a stride of 0 on an axis longer than 1 (a broadcast), or axes
// whose strides interleave. A layout an op writes through must not.
func (l layout) overlapsItself() bool {
	type axis struct{ extent, stride int }
	axes := make([]axis, 0, len(l.shape))
	for i, e := range l.shape {
		if e > 1 {
			if l.strides[i] == 0 {
				return true
			}
			axes = append(axes, axis{e, l.strides[i]})
		}
	}
	// Sorted by stride, each axis must step past everything the smaller
	// ones reach: the sufficient test NumPy and PyTorch use.
	slices.SortFunc(axes, func(a, b axis) int { return a.stride - b.stride })
	reach := 0
	for _, a := range axes {
		if a.stride <= reach {
			return true
		}
		reach += (a.extent - 1) * a.stride
	}
	return false
}

// permute reorders the axes: axis i of the result is axis axes[i] of l.
func (l layout) permute(axes []int) (layout, error) {
	if len(axes) != len(l.shape) {
		return layout{}, fmt.Errorf("permutation %v of %d axes, want %d", axes, len(axes), len(l.shape))
	}
	seen := make([]bool, len(axes))
	out := layout{offset: l.offset, shape: make([]int, len(axes)), strides: make([]int, len(axes))}
	for i, a := range axes {
		if a < 0 || a >= len(axes) || seen[a] {
			return layout{}, fmt.Errorf("permutation %v of shape %v: each axis 0..%d once", axes, l.shape, len(axes)-1)
		}
		seen[a] = true
		out.shape[i], out.strides[i] = l.shape[a], l.strides[a]
	}
	return out, nil
}

// broadcastTo gives l the shape want by NumPy's rules: axes are matched
// from the last; a missing leading axis or an axis of extent 1 is repeated
// with stride 0; any other axis must already have the extent wanted.
func (l layout) broadcastTo(want []int) (layout, error) {
	if _, err := count(want); err != nil {
		return layout{}, err
	}
	if len(want) < len(l.shape) {
		return layout{}, fmt.Errorf("cannot broadcast shape %v to %v: fewer axes", l.shape, want)
	}
	out := layout{offset: l.offset, shape: slices.Clone(want), strides: make([]int, len(want))}
	lead := len(want) - len(l.shape)
	for i, e := range l.shape {
		switch {
		case e == want[lead+i]:
			out.strides[lead+i] = l.strides[i]
		case e == 1:
			out.strides[lead+i] = 0
		default:
			return layout{}, fmt.Errorf("cannot broadcast shape %v to %v: axis %d has extent %d", l.shape, want, i, e)
		}
	}
	return out, nil
}

// reshape gives a contiguous layout another shape of the same count; one
// extent may be -1, inferred from the others.
func (l layout) reshape(shape []int) (layout, error) {
	if !l.isContiguous() {
		return layout{}, fmt.Errorf("reshape of shape %v strides %v: not contiguous (Transpose it into a buffer first)", l.shape, l.strides)
	}
	have, _ := count(l.shape)
	shape = slices.Clone(shape)
	infer, known := -1, 1
	for i, e := range shape {
		switch {
		case e == -1 && infer < 0:
			infer = i
		case e < 1:
			return layout{}, fmt.Errorf("reshape of shape %v to %v: extent %d of axis %d", l.shape, shape, e, i)
		case known > maxElements/e:
			return layout{}, fmt.Errorf("reshape of shape %v to %v: more than %d elements", l.shape, shape, maxElements)
		default:
			known *= e
		}
	}
	if infer >= 0 {
		if have%known != 0 {
			return layout{}, fmt.Errorf("reshape of shape %v (%d elements) to %v: no whole extent for axis %d", l.shape, have, shape, infer)
		}
		shape[infer] = have / known
		known = have
	}
	if known != have {
		return layout{}, fmt.Errorf("reshape of shape %v (%d elements) to %v (%d elements)", l.shape, have, shape, known)
	}
	return contiguous(l.offset, shape)
}

// slice keeps elements [start, end) of one axis.
func (l layout) slice(axis, start, end int) (layout, error) {
	if axis < 0 || axis >= len(l.shape) {
		return layout{}, fmt.Errorf("slice of axis %d of shape %v", axis, l.shape)
	}
	if start < 0 || end <= start || end > l.shape[axis] {
		return layout{}, fmt.Errorf("slice [%d, %d) of axis %d of shape %v (extent %d)", start, end, axis, l.shape, l.shape[axis])
	}
	out := layout{offset: l.offset + start*l.strides[axis], shape: slices.Clone(l.shape), strides: slices.Clone(l.strides)}
	out.shape[axis] = end - start
	return out, nil
}

// BroadcastShapes is the shape NumPy's rules give operands of the shapes
// given: axes matched from the last, an extent of 1 (or a missing leading
// axis) repeated to the other's extent. Shapes that do not broadcast are
// an error naming them.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		lead := rank - len(s)
		for i, e := range s {
			switch o := out[lead+i]; {
			case e < 1:
				return nil, fmt.Errorf("shape %v: extent %d of axis %d", s, e, i)
			case o == 1:
				out[lead+i] = e
			case e != 1 && e != o:
				return nil, fmt.Errorf("shapes %v do not broadcast: extents %d and %d at axis %d from the end", shapes, o, e, len(s)-i)
			}
		}
	}
	return out, nil
}
