package vkc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// Every catalogue op is implemented once. Its static form (Axpy) and its
// Dyn form (AxpyDyn) are thin doors into the same function, which takes
// the op's scalars as scalar values (known on the host, or a param's
// device value) and its length as a *Param[uint32] (nil: the buffers'
// whole length). That function checks the arguments and launches: with
// every scalar known and no length param it runs the static kernel with
// its scalars as push constants — what the static forms always do, with
// nothing allocated — and otherwise the kernel's dynamic variant, which
// reads every scalar from device memory (see dynamic.go).

// groups1D spreads ceil(n/local) workgroups over x and, past the device's x
// limit, y (the kernels fold y back into the element index).
func (d *Device) groups1D(n int, local uint32) [3]uint32 {
	g := spread((uint64(n)+uint64(local)-1)/uint64(local), uint64(d.info.Limits.MaxComputeWorkGroupCount[0]))
	return [3]uint32{uint32(g[0]), uint32(g[1]), uint32(g[2])}
}

// pushWords packs 32-bit push-constant words into buf.
func pushWords(buf *[16]byte, words ...uint32) []byte {
	for i, w := range words {
		binary.LittleEndian.PutUint32(buf[4*i:], w)
	}
	return buf[:4*len(words)]
}

// present refuses nil buffers (a nil *Buffer, or a zero Buffer), which
// would otherwise panic on their first use.
func present(op string, bufs ...Arg) error {
	for i, b := range bufs {
		if b == nil || b.arg() == nil {
			return fmt.Errorf("vkc: %s: buffer %d is nil", op, i)
		}
	}
	return nil
}

// distinct refuses a buffer bound both as an input and as the output of an
// op whose invocations read inputs that other invocations write (or, for
// Copy, a transfer whose regions Vulkan forbids to overlap).
func distinct(op string, out *bufferCore, what string, ins ...*bufferCore) error {
	for _, in := range ins {
		if in == out {
			return fmt.Errorf("vkc: %s: the output is also %s (the op cannot run in place; use another buffer)", op, what)
		}
	}
	return nil
}

// product is a*b for shape dimensions already known positive, or an error
// when it overflows int (the product would wrap to a small length that
// some buffer matches).
func product(op string, a, b int) (int, error) {
	if a > math.MaxInt/b {
		return 0, fmt.Errorf("vkc: %s: shape %d x %d overflows", op, a, b)
	}
	return a * b, nil
}

func sameLen(op string, want int, bufs ...*bufferCore) error {
	for _, b := range bufs {
		if b.n != want {
			return fmt.Errorf("vkc: %s: buffer of %d elements, want %d", op, b.n, want)
		}
	}
	return nil
}

// Fill sets every element of buf to v.
func Fill[T Element](s *Stream, buf *Buffer[T], v T) error {
	return fill(s, "Fill", buf, known(bitsOf(v)), nil)
}

// FillDyn is Fill with a device value and a device length: elements from
// n on are left untouched. A nil n covers the whole buffer.
func FillDyn[T Element](s *Stream, buf *Buffer[T], v Value[T], n *Param[uint32]) error {
	return fill(s, "FillDyn", buf, scalarOf(v), n)
}

func fill[T Element](s *Stream, op string, buf *Buffer[T], v scalar, n *Param[uint32]) error {
	if err := present(op, buf); err != nil {
		return err
	}
	scalars := [1]scalar{v}
	return launch1D(s, op, "fill", []*bufferCore{buf.core}, scalars[:], n)
}

// Copy copies src into dst (same length) with a transfer command, at
// memory speed. src and dst must be different buffers: Vulkan forbids a
// copy whose source and destination overlap.
func Copy[T Element](s *Stream, src, dst *Buffer[T]) error {
	return copyOp(s, "Copy", src, dst, nil)
}

// CopyDyn copies the first n elements of src into dst (same length) with a
// kernel, leaving the rest of dst untouched. A nil n copies everything, as
// Copy does.
func CopyDyn[T Element](s *Stream, src, dst *Buffer[T], n *Param[uint32]) error {
	return copyOp(s, "CopyDyn", src, dst, n)
}

// copyOp copies whole buffers with a transfer command; a device length
// needs the copy kernel, whose dynamic variant reads it.
func copyOp[T Element](s *Stream, op string, src, dst *Buffer[T], n *Param[uint32]) error {
	if err := present(op, src, dst); err != nil {
		return err
	}
	if err := distinct(op, dst.core, "the source", src.core); err != nil {
		return err
	}
	if err := sameLen(op, src.core.n, dst.core); err != nil {
		return err
	}
	if n != nil {
		return launch1D(s, op, "copy", []*bufferCore{src.core, dst.core}, nil, n)
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := src.core.use(s); err != nil {
		return err
	}
	defer src.core.done()
	if err := dst.core.use(s); err != nil {
		return err
	}
	defer dst.core.done()
	return public(s.dev.rec.Copy(s.id, src.core.claim, dst.core.claim, uint64(src.core.n)*elemSize))
}

// Axpy computes y = a*x + y. x may be y (y = (a+1)*y): each element is
// read and written by the same invocation.
func Axpy(s *Stream, a float32, x, y *Buffer[float32]) error {
	return vector2(s, "Axpy", "axpy", known(math.Float32bits(a)), x, y, nil)
}

// AxpyDyn is Axpy with a device scalar and a device length: y[i] = a*x[i]
// + y[i] for i < n, the rest of y untouched. A nil n covers the buffers.
func AxpyDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	return vector2(s, "AxpyDyn", "axpy", scalarOf(a), x, y, n)
}

// Scale computes y = a*x; x may be y (in place).
func Scale(s *Stream, a float32, x, y *Buffer[float32]) error {
	return vector2(s, "Scale", "scale", known(math.Float32bits(a)), x, y, nil)
}

// ScaleDyn is Scale with a device scalar and a device length: y[i] =
// a*x[i] for i < n, the rest of y untouched.
func ScaleDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	return vector2(s, "ScaleDyn", "scale", scalarOf(a), x, y, n)
}

// vector2 is an op over x and y (same length) with one scalar a.
func vector2(s *Stream, op, name string, a scalar, x, y *Buffer[float32], n *Param[uint32]) error {
	if err := present(op, x, y); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core); err != nil {
		return err
	}
	scalars := [1]scalar{a}
	return launch1D(s, op, name, []*bufferCore{x.core, y.core}, scalars[:], n)
}

// Add computes z = x + y elementwise. Any of x, y, z may be the same
// buffer, as for Sub, Mul and Div: each invocation reads and writes only
// its own element.
func Add(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "Add", "add", x, y, z, nil) }

// Sub computes z = x - y elementwise.
func Sub(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "Sub", "sub", x, y, z, nil) }

// Mul computes z = x * y elementwise.
func Mul(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "Mul", "mul", x, y, z, nil) }

// Div computes z = x / y elementwise (IEEE: x/0 is ±Inf or NaN).
func Div(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "Div", "div", x, y, z, nil) }

// AddDyn is Add over the first n elements (the rest of z untouched).
func AddDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "AddDyn", "add", x, y, z, n)
}

// SubDyn is Sub over the first n elements (the rest of z untouched).
func SubDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "SubDyn", "sub", x, y, z, n)
}

// MulDyn is Mul over the first n elements (the rest of z untouched).
func MulDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "MulDyn", "mul", x, y, z, n)
}

// DivDyn is Div over the first n elements (the rest of z untouched).
func DivDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "DivDyn", "div", x, y, z, n)
}

func binary3(s *Stream, op, name string, x, y, z *Buffer[float32], n *Param[uint32]) error {
	if err := present(op, x, y, z); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core, z.core); err != nil {
		return err
	}
	return launch1D(s, op, name, []*bufferCore{x.core, y.core, z.core}, nil, n)
}

// Sum writes the sum of x's elements into out, a one-element buffer. out
// may be x only when x has one element (the sum is then x itself).
func Sum(s *Stream, x, out *Buffer[float32]) error { return sum(s, "Sum", x, out, nil) }

// SumDyn writes the sum of the first n elements of x into out, a
// one-element buffer. A nil n sums all of x.
func SumDyn(s *Stream, x, out *Buffer[float32], n *Param[uint32]) error {
	return sum(s, "SumDyn", x, out, n)
}

func sum(s *Stream, op string, x, out *Buffer[float32], n *Param[uint32]) error {
	if err := present(op, x, out); err != nil {
		return err
	}
	if err := sameLen(op, 1, out.core); err != nil {
		return err
	}
	return reduceOp(s, op, []*bufferCore{x.core}, out.core, n)
}

// Dot writes the dot product of x and y into out, a one-element buffer.
// x may be y (the sum of squares).
func Dot(s *Stream, x, y, out *Buffer[float32]) error { return dot(s, "Dot", x, y, out, nil) }

// DotDyn writes the dot product of the first n elements of x and y into
// out, a one-element buffer. A nil n covers the buffers.
func DotDyn(s *Stream, x, y, out *Buffer[float32], n *Param[uint32]) error {
	return dot(s, "DotDyn", x, y, out, n)
}

func dot(s *Stream, op string, x, y, out *Buffer[float32], n *Param[uint32]) error {
	if err := present(op, x, y, out); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core); err != nil {
		return err
	}
	if err := sameLen(op, 1, out.core); err != nil {
		return err
	}
	return reduceOp(s, op, []*bufferCore{x.core, y.core}, out.core, n)
}

// sumKernel picks the subgroup reduction where the device has it.
func (d *Device) sumKernel() string {
	if d.subgroupReductions() {
		return "sum_subgroup"
	}
	return "sum"
}

// dotKernel picks the subgroup dot product where the device has it.
func (d *Device) dotKernel() string {
	if d.subgroupReductions() {
		return "dot_subgroup"
	}
	return "dot"
}

// softmaxKernel picks the subgroup softmax where the device has it.
func (d *Device) softmaxKernel() string {
	if d.subgroupReductions() {
		return "softmax_subgroup"
	}
	return "softmax"
}

// subgroupReductions reports whether the subgroup reductions run here:
// subgroup arithmetic in compute, with subgroups that fill their groups
// (lavapipe mis-sums a partial subgroup).
func (d *Device) subgroupReductions() bool {
	sg := d.info.Subgroup
	return sg.Arithmetic && sg.Size > 0 && 256%sg.Size == 0
}

// temp allocates scratch that a launch about to be recorded on s writes.
func (d *Device) temp(s *Stream, n int) (*bufferCore, error) {
	c, err := d.rec.AllocOn(s.id, alloc.DeviceLocal, uint64(n)*elemSize)
	if err != nil {
		return nil, public(err)
	}
	return &bufferCore{dev: d, claim: c, n: n, elem: elemFloat}, nil
}

func ceilDiv(a, b int) uint32 { return uint32((a + b - 1) / b) }

func check2D(d *Device, op string, gx, gy uint32) error {
	lim := d.info.Limits.MaxComputeWorkGroupCount
	if gx > lim[0] || gy > lim[1] {
		return fmt.Errorf("vkc: %s: %d x %d workgroups exceed the device limit %v", op, gx, gy, lim)
	}
	return nil
}

// Matmul computes C[m x n] = A[m x k] · B[k x n], row-major. A may be B
// (A·A for a square A), but C must be neither: every workgroup reads rows
// of A and columns of B that others write into C, so in place it would
// compute garbage. A shape whose products overflow is refused.
func Matmul(s *Stream, a, b, c *Buffer[float32], m, n, k int) error {
	if err := present("Matmul", a, b, c); err != nil {
		return err
	}
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("vkc: Matmul: shape %dx%dx%d must be positive", m, n, k)
	}
	mk, err := product("Matmul", m, k)
	if err != nil {
		return err
	}
	if a.core.n != mk {
		return fmt.Errorf("vkc: Matmul: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			a.core.n, b.core.n, c.core.n, m, k, k, n, m, n)
	}
	return matmul(s, "Matmul", a, b, c, nil, n, k) // A's m rows: the whole buffer
}

// MatmulDyn is Matmul whose row count m is a device length: C's first m
// rows are written from A's first m rows, the rest of C untouched. The
// buffers hold A (len/k rows) and C for that many rows.
func MatmulDyn(s *Stream, a, b, c *Buffer[float32], m *Param[uint32], n, k int) error {
	if err := present("MatmulDyn", a, b, c); err != nil {
		return err
	}
	return matmul(s, "MatmulDyn", a, b, c, m, n, k)
}

// matmul multiplies A (len/k rows) by B into C, over the first m rows (nil:
// all of them).
func matmul(s *Stream, op string, a, b, c *Buffer[float32], m *Param[uint32], n, k int) error {
	if n <= 0 || k <= 0 || a.core.n%k != 0 {
		return fmt.Errorf("vkc: %s: k=%d and n=%d must be positive and k divide A's %d elements", op, k, n, a.core.n)
	}
	rows := a.core.n / k
	kn, err := product(op, k, n)
	if err != nil {
		return err
	}
	mn, err := product(op, rows, n)
	if err != nil {
		return err
	}
	if b.core.n != kn || c.core.n != mn {
		return fmt.Errorf("vkc: %s: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			op, a.core.n, b.core.n, c.core.n, rows, k, k, n, rows, n)
	}
	if err := distinct(op, c.core, "an input", a.core, b.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var p pins
	defer p.release()
	d := s.dev
	l, err := lengthOf(s, op, m, rows)
	if err != nil {
		return err
	}
	kern, err := d.kernelFor("matmul", l.p == nil)
	if err != nil {
		return err
	}
	gx, gy := ceilDiv(n, int(kern.tile[0])), ceilDiv(rows, int(kern.tile[1]))
	if err := check2D(d, op, gx, gy); err != nil {
		return err
	}
	cores := [3]*bufferCore{a.core, b.core, c.core}
	if l.p == nil {
		var push [16]byte
		return kern.launch(s, [3]uint32{gx, gy, 1}, pushWords(&push, uint32(rows), uint32(n), uint32(k)), cores[:])
	}
	indirect, err := l.p.view(s, lengthView{groups: true, local: kern.tile[1], fixedX: gx})
	if err != nil {
		return err
	}
	words := []scalar{l.word(), known(uint32(n)), known(uint32(k))} // push order: m, n, k
	extents := []capture.Extent{l.prefix(l.p.buf, uint64(k)*elemSize), {}, l.prefix(l.p.buf, uint64(n)*elemSize)}
	return launchDyn(s, kern, cores[:], words, extents, l, indirect, [3]uint32{gx, gy, 1}, &p)
}

// Transpose writes dst[cols x rows] = src[rows x cols]ᵀ, row-major. dst
// must not be src: an invocation writes the element another one reads.
// It has no Dyn form: no graph changes a transpose's shape.
func Transpose(s *Stream, src, dst *Buffer[float32], rows, cols int) error {
	if err := present("Transpose", src, dst); err != nil {
		return err
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("vkc: Transpose: shape %dx%d must be positive", rows, cols)
	}
	size, err := product("Transpose", rows, cols)
	if err != nil {
		return err
	}
	if err := sameLen("Transpose", size, src.core, dst.core); err != nil {
		return err
	}
	if err := distinct("Transpose", dst.core, "the source", src.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	kern, err := s.dev.builtin("transpose")
	if err != nil {
		return err
	}
	gx, gy := ceilDiv(cols, int(kern.tile[0])), ceilDiv(rows, int(kern.tile[1]))
	if err := check2D(s.dev, "Transpose", gx, gy); err != nil {
		return err
	}
	var p [16]byte
	return kern.launch(s, [3]uint32{gx, gy, 1}, pushWords(&p, uint32(rows), uint32(cols)), []*bufferCore{src.core, dst.core})
}

// Softmax writes the row-wise softmax of src (rows x cols) into dst. dst
// may be src (in place): each element is read and written by one
// invocation, after its row's reductions.
func Softmax(s *Stream, src, dst *Buffer[float32], rows, cols int) error {
	if err := present("Softmax", src, dst); err != nil {
		return err
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("vkc: Softmax: shape %dx%d must be positive", rows, cols)
	}
	size, err := product("Softmax", rows, cols)
	if err != nil {
		return err
	}
	if err := sameLen("Softmax", size, src.core); err != nil {
		return err
	}
	return softmax(s, "Softmax", src, dst, nil, cols) // src's rows: the whole buffer
}

// SoftmaxDyn is Softmax over the first rows rows of src (rows x cols,
// row-major): the rows of dst past them are left untouched. The buffers
// hold len/cols rows.
func SoftmaxDyn(s *Stream, src, dst *Buffer[float32], rows *Param[uint32], cols int) error {
	if err := present("SoftmaxDyn", src, dst); err != nil {
		return err
	}
	return softmax(s, "SoftmaxDyn", src, dst, rows, cols)
}

// softmax runs the row-wise softmax over the first rows rows (nil: all the
// len/cols rows src holds).
func softmax(s *Stream, op string, src, dst *Buffer[float32], rows *Param[uint32], cols int) error {
	if cols <= 0 || src.core.n%cols != 0 {
		return fmt.Errorf("vkc: %s: %d columns do not divide a buffer of %d elements", op, cols, src.core.n)
	}
	if err := sameLen(op, src.core.n, dst.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var p pins
	defer p.release()
	d := s.dev
	l, err := lengthOf(s, op, rows, src.core.n/cols)
	if err != nil {
		return err
	}
	kern, err := d.kernelFor(d.softmaxKernel(), l.p == nil)
	if err != nil {
		return err
	}
	cores := [2]*bufferCore{src.core, dst.core}
	if l.p == nil {
		var push [16]byte
		return kern.launch(s, d.groups1D(l.capacity, 1), pushWords(&push, uint32(l.capacity), uint32(cols)), cores[:])
	}
	indirect, err := l.p.view(s, lengthView{groups: true, local: 1, spread: true})
	if err != nil {
		return err
	}
	words := []scalar{l.word(), known(uint32(cols))} // push order: rows, cols
	row := l.prefix(l.p.buf, uint64(cols)*elemSize)
	return launchDyn(s, kern, cores[:], words, []capture.Extent{row, row}, l, indirect, [3]uint32{}, &p)
}
