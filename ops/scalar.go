package ops

import (
	"errors"

	"github.com/vkcompute/vkc"
)

// Scalar is an op's scalar argument (Scale's factor, Axpy's a, a norm's
// epsilon): either a value known now (Const), which a kernel receives as a
// push constant, or a param (ParamOf), which the kernel reads from device
// memory when it runs, so a captured graph sees every Set with no
// re-capture. One type for both, whatever the element type of the
// tensors: a constant is rounded to the type the op computes in (float32
// for float32, Float16 and BFloat16; float64 for float64).
type Scalar struct {
	value float64
	param any // *vkc.Param[float32] or *vkc.Param[float64]; nil: value
	err   error
}

// Const is a scalar known now.
func Const(v float64) Scalar { return Scalar{value: v} }

// ParamOf is a scalar the device reads from p when the work runs. An op
// computing in float32 takes a *vkc.Param[float32], one computing in
// float64 a *vkc.Param[float64]; another pairing is refused by the op.
func ParamOf[P float32 | float64](p *vkc.Param[P]) Scalar {
	if p == nil {
		return Scalar{err: errors.New("vkc: ParamOf a nil param")}
	}
	return Scalar{param: p}
}

// IsParam reports whether the scalar is read from a param on the device.
func (s Scalar) IsParam() bool { return s.param != nil }

// Value is a constant's value (0 for a param scalar).
func (s Scalar) Value() float64 { return s.value }
