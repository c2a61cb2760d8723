package ops

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// mergeAxes simplifies an iteration over shape that addresses each
// operand through its strides (strides[k] for operand k), without
// changing which elements are visited in which order: axes of extent 1
// are dropped, and an axis is folded into the one before it when, for
// every operand, stepping the outer axis once is stepping the inner one
// through its extent. With keepFirst axis 0 stays as it is (a dynamic
// axis). The result has at least one axis.
func mergeAxes(shape []int, strides [][]int, keepFirst bool) ([]int, [][]int) {
	outShape := []int{}
	outStrides := make([][]int, len(strides))
	for ax, e := range shape {
		first := keepFirst && ax == 0
		if e == 1 && !first {
			continue
		}
		last := len(outShape) - 1
		canFold := last >= 0 && !(keepFirst && last == 0)
		for k := range strides {
			if !canFold {
				break
			}
			canFold = outStrides[k][last] == strides[k][ax]*e
		}
		if canFold {
			outShape[last] *= e
			for k := range strides {
				outStrides[k][last] = strides[k][ax]
			}
			continue
		}
		outShape = append(outShape, e)
		for k := range strides {
			outStrides[k] = append(outStrides[k], strides[k][ax])
		}
	}
	if len(outShape) == 0 {
		outShape = []int{1}
		for k := range strides {
			outStrides[k] = []int{0}
		}
	}
	return outShape, outStrides
}

// rowMajor reports whether strides are the row-major strides of shape:
// the element at row-major index e is at offset + e.
func rowMajor(shape, strides []int) bool {
	step := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != step {
			return false
		}
		step *= shape[i]
	}
	return true
}

// writable refuses an output layout in which two indices address one
// element: the op's result would depend on which write lands last.
func writable[T vkc.Element](op, what string, t Tensor[T]) error {
	if t.at.overlapsItself() {
		return fmt.Errorf("vkc: %s: %s %v addresses some elements more than once (a broadcast or interleaved strides); write into a tensor whose elements are distinct", op, what, t)
	}
	return nil
}

// sameShape refuses an operand whose shape is not the one the op needs.
func sameShape[T vkc.Element](op, what string, t Tensor[T], want []int) error {
	if !slices.Equal(t.at.shape, want) {
		return fmt.Errorf("vkc: %s: %s has shape %v, want %v", op, what, t.at.shape, want)
	}
	return nil
}

// byteRange is where a tensor's addressed elements lie in device memory:
// the VkBuffer and the bytes from its first to one past its last element.
type byteRange struct {
	handle     uint64
	start, end uint64
}

// rangeOf is t's byteRange.
func rangeOf[T vkc.Element](t Tensor[T]) (byteRange, error) {
	vb, err := t.buf.VulkanBuffer()
	if err != nil {
		return byteRange{}, err
	}
	size := uint64(typeSize[T]())
	return byteRange{handle: vb.Buffer, start: vb.Offset + uint64(t.at.offset)*size, end: vb.Offset + uint64(t.at.span())*size}, nil
}

// typeSize is T's size in bytes.
func typeSize[T vkc.Element]() int {
	switch any(*new(T)).(type) {
	case int8, uint8:
		return 1
	case int16, uint16, vkc.Float16, vkc.BFloat16:
		return 2
	case float64, int64, uint64:
		return 8
	}
	return 4
}

// checkAliasing refuses an output whose memory overlaps an input's,
// except, when inPlace, an input read through exactly the output's
// layout (same start and, over the op's shape, the same strides), which
// element-wise ops and row-wise ops read before they write. outStrides
// and inStrides are the strides the kernel uses for each. Memory of
// different element types is compared by bytes too.
func checkAliasing(op string, inPlace bool, out byteRange, outStrides []int, ins []byteRange, inStrides [][]int) error {
	for i, in := range ins {
		if in.handle != out.handle || in.end <= out.start || out.end <= in.start {
			continue
		}
		if inPlace && in.start == out.start && in.end == out.end && slices.Equal(inStrides[i], outStrides) {
			continue
		}
		return fmt.Errorf("vkc: %s: the output shares memory with input %d in a way the op cannot honour (give the output memory of its own, or where the op allows, the input itself with the same layout): %w", op, i, vkc.ErrOverlap)
	}
	return nil
}

// dynamicRows is the param sizing axis 0 of an op whose output is out:
// out's, which every dynamic input must share, at out's rank; an input
// may be dynamic only when out is. The param's value now must be within
// out's capacity.
func dynamicRows[T vkc.Element](op string, out Tensor[T], ins ...Tensor[T]) (*vkc.Param[uint32], error) {
	p := out.rows
	for i, in := range ins {
		if in.rows == nil {
			continue
		}
		if p == nil {
			return nil, fmt.Errorf("vkc: %s: input %d is dynamic and the output is not: make the output Dynamic with the same param", op, i)
		}
		if in.rows != p {
			return nil, fmt.Errorf("vkc: %s: input %d is dynamic with another param than the output's", op, i)
		}
		if in.Rank() != out.Rank() {
			return nil, fmt.Errorf("vkc: %s: dynamic input %d has shape %v, the output %v: a dynamic axis 0 must be the output's axis 0", op, i, in.at.shape, out.at.shape)
		}
	}
	if p != nil {
		if n := p.Value(); n < 1 || int(n) > out.at.shape[0] {
			return nil, fmt.Errorf("vkc: %s: the rows param holds %d, outside 1..%d, the output's capacity %v", op, n, out.at.shape[0], out.at.shape)
		}
	}
	return p, nil
}

// inPlaceRefused explains err, a launch's refusal of bindings that share
// memory (vkc.ErrOverlap), for op run in place: ops refuses every other
// sharing before it launches, so the launch refuses only an output that
// is its input where that memory is a view the device cannot bind at its
// offset. The launch reaches such a view through a copy per binding, and
// the runtime refuses any such copy whose memory another binding of the
// launch shares, one of them written. Other errors are returned as they
// are.
func inPlaceRefused(op string, c *opContext, err error) error {
	if !errors.Is(err, vkc.ErrOverlap) {
		return err
	}
	align := c.dev.Info().Limits.MinStorageBufferOffsetAlignment
	return fmt.Errorf("vkc: %s: in place on a view whose byte offset is not a multiple of the device's MinStorageBufferOffsetAlignment (%d), which a launch binds through a copy: give the output memory of its own, or view the buffer at an aligned offset: %w", op, align, err)
}
