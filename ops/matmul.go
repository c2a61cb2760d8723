package ops

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc"
)

// Activation is the function a fused epilogue applies to each element of
// a product after the bias is added, in the accumulation type, before the
// one rounding to the output type: fusing it saves a pass over C. Each is
// the function of the element-wise op of the same name (ActGelu is Gelu's
// tanh form).
type Activation uint8

const (
	// ActNone leaves the product (plus bias) as it is.
	ActNone Activation = iota
	// ActRelu is Relu's max(x, 0).
	ActRelu
	// ActGelu is Gelu's tanh approximation
	// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the form GPT-2 and most
	// inference code use.
	ActGelu
	// ActSilu is Silu's x·sigmoid(x) (swish).
	ActSilu
)

// String names the activation as its constant does.
func (a Activation) String() string {
	switch a {
	case ActNone:
		return "ActNone"
	case ActRelu:
		return "ActRelu"
	case ActGelu:
		return "ActGelu"
	case ActSilu:
		return "ActSilu"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}

// MatmulOptions are what Matmul may add to the product. The zero value is
// the plain product, with the variant chosen by measurement.
type MatmulOptions[T vkc.Float] struct {
	// Bias, when set, is added to every row of the product before the
	// activation: a vector of N elements, or of 1 (the same value for
	// every column), read through its strides. The zero Tensor means none.
	Bias Tensor[T]
	// Activation is applied to each element last (after the bias).
	Activation Activation
	// Heuristic chooses the kernel variant by a fixed rule from the shape
	// and layouts alone, never by timing: the same call then always runs
	// the same kernels (for reproducible bits across runs and machines,
	// or when no time can be spent measuring). Without it the first call
	// of each shape class on a device times the variants that apply and
	// keeps the fastest (see the package's matmul guide).
	Heuristic bool
}

// Matmul computes C = act(A·B + bias) over the last two axes: A is
// [..., M, K], B [..., K, N] and C [..., M, N]. Leading axes are batches:
// A's and B's broadcast to C's by NumPy's rules, so a B of rank 2 (or
// with batch stride 0) is one weight matrix for every batch. Operands are
// read through their strides: a transposed operand is a.T(), no copy.
// Float16 is loaded and stored in 16 bits and summed in float32; float32
// in float32; float64 in float64.
//
// A and C may be dynamic (Tensor.Dynamic), with rank 2, sharing one
// param: M is then the param's value when the work runs, at most their
// capacity, so a captured graph multiplies as many rows as the param says
// on every replay. Only the rows M covers are checked and marked written:
// rows of C past M that no work wrote read as vkc.ErrUnwritten, and rows
// of A past M need not have been written. A dynamic product takes whole
// row-major A, B and C (one matrix each; the bias and the activation
// apply as to a static product); any other is refused with an error
// wrapping vkc.ErrUnsupported (its kernels' launches are tiles of C at
// the capacity, which cannot mark rows alone).
//
// C must be writable (no broadcast or overlapping axes) and must not
// share memory with A, B or the bias: the product reads what other
// invocations write. Such sharing, through one buffer or through views
// of it, is refused with an error wrapping vkc.ErrOverlap.
//
// The kernel is chosen per shape class by measured device time, unless
// opts sets Heuristic (see MatmulOptions); the choice never changes a
// result beyond the tolerance the matmul guide states, and inside a
// capture window (or a Profile of the stream) no variant is timed: the
// heuristic's choice is made there unless one was measured before.
// At most one MatmulOptions is taken.
func Matmul[T vkc.Float](s *vkc.Stream, a, b, c Tensor[T], opts ...MatmulOptions[T]) error {
	if len(opts) > 1 {
		return fmt.Errorf("vkc: Matmul: %d MatmulOptions given (at most one)", len(opts))
	}
	var o MatmulOptions[T]
	if len(opts) == 1 {
		o = opts[0]
	}
	p, err := planMatmul(s, a, b, c, o)
	if err != nil {
		return err
	}
	return p.run(s)
}

// errMatmulNilStream is Matmul's error for a nil stream.
var errMatmulNilStream = errors.New("vkc: Matmul: nil stream")
