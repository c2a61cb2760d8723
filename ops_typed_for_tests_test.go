package vkc

import "math"

// kernelSuffix is the catalogue suffix of T's op kernels, after checking
// the device computes with T.
func kernelSuffix[T Float](d *Device, op string) (string, error) {
	switch kindOf[T]() {
	case elemFloat16:
		return "_f16", d.unsupported(op+" on Float16", FeatureStorage16)
	case elemFloat64:
		return "_f64", d.unsupported(op+" on float64", FeatureFloat64)
	}
	return "", nil
}

// streamDevice is s's device, nil for a nil or zero stream (whose calls
// then fail as every call on it does).
func streamDevice(s *Stream) *Device {
	if s == nil {
		return nil
	}
	return s.dev
}

// prepare runs the checks every typed op shares: no nil buffer, a stream
// with a device, and the kernel suffix of T on it.
func prepare[T Float](s *Stream, op string, bufs ...Arg) (string, error) {
	if err := present(op, bufs...); err != nil {
		return "", err
	}
	d := streamDevice(s)
	if d == nil {
		return "", errNilStream
	}
	return kernelSuffix[T](d, op)
}

// Binary ops of the typed binary kernels: the word their push constants
// (and dynamic variants) take before the length.
const (
	binaryAdd uint32 = iota
	binarySub
	binaryMul
	binaryDiv
)

// binaryKernels are the float32 kernels of the binary ops.
var binaryKernels = [...]string{binaryAdd: "add", binarySub: "sub", binaryMul: "mul", binaryDiv: "div"}

// binaryOf is the binary op which on T, over the first n elements (nil:
// all): the float32 op's own kernel, else the typed binary kernel told
// which op it runs.
func binaryOf[T Float](s *Stream, op string, which uint32, x, y, z *Buffer[T], n *Param[uint32]) error {
	sfx, err := prepare[T](s, op, x, y, z)
	if err != nil {
		return err
	}
	if sfx == "" {
		return binary3(s, op, binaryKernels[which], nil, x, y, z, n)
	}
	return binary3(s, op, "binary"+sfx, []scalar{known(which)}, x, y, z, n)
}

// AddOf is Add for any Float type.
func AddOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "Add", binaryAdd, x, y, z, nil)
}

// SubOf is Sub for any Float type.
func SubOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "Sub", binarySub, x, y, z, nil)
}

// MulOf is Mul for any Float type.
func MulOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "Mul", binaryMul, x, y, z, nil)
}

// DivOf is Div for any Float type.
func DivOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "Div", binaryDiv, x, y, z, nil)
}

// scaled is AxpyOf (kernel "axpy") and ScaleOf (kernel "scale"): the
// float32 op's kernel, else the typed kernel of that name with a in its
// type's words (a float32 for Float16, two words for float64). Scale's
// kernels bind y write-only, so its launch neither reads nor inherits the
// failure of what y held.
func scaled[T Float](s *Stream, op, kernel string, a float64, x, y *Buffer[T]) error {
	sfx, err := prepare[T](s, op, x, y)
	if err != nil {
		return err
	}
	if sfx == "_f64" {
		bits := math.Float64bits(a)
		return vector2(s, op, kernel+sfx, []scalar{known(uint32(bits)), known(uint32(bits >> 32))}, x, y, nil)
	}
	return vector2(s, op, kernel+sfx, []scalar{known(math.Float32bits(float32(a)))}, x, y, nil)
}

// AxpyOf is Axpy for any Float type: y = a*x + y, with a rounded to the
// type the kernel computes in (float32 for Float16).
func AxpyOf[T Float](s *Stream, a float64, x, y *Buffer[T]) error {
	return scaled(s, "Axpy", "axpy", a, x, y)
}

// ScaleOf is Scale for any Float type: y = a*x.
func ScaleOf[T Float](s *Stream, a float64, x, y *Buffer[T]) error {
	return scaled(s, "Scale", "scale", a, x, y)
}

// SumOf is Sum for any Float type, accumulated in float32 for Float16 and
// float64 for float64.
func SumOf[T Float](s *Stream, x, out *Buffer[T]) error {
	return sumOf(s, "Sum", x, out, nil)
}

// SumDynOf is SumDyn for any Float type, accumulated as SumOf.
func SumDynOf[T Float](s *Stream, x, out *Buffer[T], n *Param[uint32]) error {
	return sumOf(s, "SumDyn", x, out, n)
}

func sumOf[T Float](s *Stream, op string, x, out *Buffer[T], n *Param[uint32]) error {
	sfx, err := prepare[T](s, op, x, out)
	if err != nil {
		return err
	}
	return sum(s, op, sfx, x, out, n)
}

// DotOf is Dot for any Float type, accumulated as SumOf.
func DotOf[T Float](s *Stream, x, y, out *Buffer[T]) error {
	return dotOf(s, "Dot", x, y, out, nil)
}

// DotDynOf is DotDyn for any Float type, accumulated as SumOf.
func DotDynOf[T Float](s *Stream, x, y, out *Buffer[T], n *Param[uint32]) error {
	return dotOf(s, "DotDyn", x, y, out, n)
}

func dotOf[T Float](s *Stream, op string, x, y, out *Buffer[T], n *Param[uint32]) error {
	sfx, err := prepare[T](s, op, x, y, out)
	if err != nil {
		return err
	}
	return dot(s, op, sfx, x, y, out, n)
}

// SoftmaxOf is Softmax for any Float type, computed in float32 for
// Float16 and float64 for float64 (its exp computed to float64 precision).
func SoftmaxOf[T Float](s *Stream, src, dst *Buffer[T], rows, cols int) error {
	sfx, err := prepare[T](s, "Softmax", src, dst)
	if err != nil {
		return err
	}
	return softmaxStatic(s, "Softmax", sfx, src, dst, rows, cols)
}

// SoftmaxDynOf is SoftmaxDyn for any Float type.
func SoftmaxDynOf[T Float](s *Stream, src, dst *Buffer[T], rows *Param[uint32], cols int) error {
	sfx, err := prepare[T](s, "SoftmaxDyn", src, dst)
	if err != nil {
		return err
	}
	return softmax(s, "SoftmaxDyn", sfx, src, dst, rows, cols)
}

// MatmulOf is Matmul for any Float type, accumulated in float32 for
// Float16 (each C element rounded to Float16 once, at the store) and
// float64 for float64.
func MatmulOf[T Float](s *Stream, a, b, c *Buffer[T], m, n, k int) error {
	sfx, err := prepare[T](s, "Matmul", a, b, c)
	if err != nil {
		return err
	}
	return matmulStatic(s, "Matmul", sfx, a, b, c, m, n, k)
}

// MatmulDynOf is MatmulDyn for any Float type.
func MatmulDynOf[T Float](s *Stream, a, b, c *Buffer[T], m *Param[uint32], n, k int) error {
	sfx, err := prepare[T](s, "MatmulDyn", a, b, c)
	if err != nil {
		return err
	}
	return matmul(s, "MatmulDyn", sfx, a, b, c, m, n, k)
}

// AddDynOf is AddDyn for any Float type.
func AddDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryOf(s, "AddDyn", binaryAdd, x, y, z, n)
}

// SubDynOf is SubDyn for any Float type.
func SubDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryOf(s, "SubDyn", binarySub, x, y, z, n)
}

// MulDynOf is MulDyn for any Float type.
func MulDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryOf(s, "MulDyn", binaryMul, x, y, z, n)
}

// DivDynOf is DivDyn for any Float type.
func DivDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryOf(s, "DivDyn", binaryDiv, x, y, z, n)
}
