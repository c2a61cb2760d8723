package vkc

import (
	"fmt"
	"math"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
)

// The first op library of vkc, which package ops has replaced: kept here,
// in test files only, as the work the runtime's tests (capture, taint,
// lifetime, views, faults) launch, under the names those tests call.

// Every catalogue op is implemented once. Its static form (Axpy) and its
// Dyn form (AxpyDyn) are thin doors into the same function, which takes
// the op's scalars as scalar values (known on the host, or a param's
// device value) and its length as a *Param[uint32] (nil: the buffers'
// whole length). That function checks the arguments and launches: with
// every scalar known and no length param it runs the static kernel with
// its scalars as push constants — what the static forms always do, with
// nothing allocated — and otherwise the kernel's dynamic variant, which
// reads every scalar from device memory (see dynamic.go).

// product is a*b for shape dimensions already known positive, or an error
// when it overflows int (the product would wrap to a small length that
// some buffer matches).
func product(op string, a, b int) (int, error) {
	if a > math.MaxInt/b {
		return 0, fmt.Errorf("vkc: %s: shape %d x %d overflows", op, a, b)
	}
	return a * b, nil
}

// words32 refuses a buffer whose elements are not 32 bits to an op whose
// length counts 32-bit words (the dynamic fill and copy).
func words32(op string, b *bufferCore) error {
	if b.elem.size() != elemSize {
		return fmt.Errorf("vkc: %s: buffers of %s (%d-byte elements): the dynamic forms take 32-bit elements; use Fill or Copy", op, b.elem, b.elem.size())
	}
	return nil
}

// FillDyn is Fill with a device value and a device length: elements from
// n on are left untouched. A nil n covers the whole buffer. It takes
// buffers of 32-bit elements (Fill takes every type).
func FillDyn[T Element](s *Stream, buf *Buffer[T], v Value[T], n *Param[uint32]) error {
	if err := present("FillDyn", buf); err != nil {
		return err
	}
	if err := words32("FillDyn", buf.core); err != nil {
		return err
	}
	return fill(s, "FillDyn", buf.core, scalarOf(v), n)
}

// fill is Fill and FillDyn of a buffer of 32-bit elements.
func fill(s *Stream, op string, buf *bufferCore, v scalar, n *Param[uint32]) error {
	scalars := [1]scalar{v}
	return launch1D(s, op, "fill", []*bufferCore{buf}, scalars[:], n)
}

// CopyDyn copies the first n elements of src into dst (same length) with a
// kernel, leaving the rest of dst untouched. A nil n copies everything, as
// Copy does (on one device). It takes buffers of 32-bit elements (Copy
// takes every type).
func CopyDyn[T Element](s *Stream, src, dst *Buffer[T], n *Param[uint32]) error {
	if err := copyArgs("CopyDyn", src, dst); err != nil {
		return err
	}
	if err := words32("CopyDyn", src.core); err != nil {
		return err
	}
	return copyOp(s, "CopyDyn", src.core, dst.core, n)
}

// copyOp copies whole buffers with a transfer command; a device length
// needs the copy kernel, whose dynamic variant reads it.
func copyOp(s *Stream, op string, src, dst *bufferCore, n *Param[uint32]) error {
	if n != nil {
		return launch1D(s, op, "copy", []*bufferCore{src, dst}, nil, n)
	}
	return copyCores(s, op, src, dst)
}

// Axpy computes y = a*x + y. x may be y (y = (a+1)*y): each element is
// read and written by the same invocation. y is an input too: where y
// reads as ErrUnwritten (never written, or tainted), the launch is
// skipped, Axpy returns nil and y stays unwritten with the same cause.
func Axpy(s *Stream, a float32, x, y *Buffer[float32]) error {
	return vector2(s, "Axpy", "axpy", []scalar{known(math.Float32bits(a))}, x, y, nil)
}

// AxpyDyn is Axpy with a device scalar and a device length: y[i] = a*x[i]
// + y[i] for i < n, the rest of y untouched. A nil n covers the buffers.
func AxpyDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	return vector2(s, "AxpyDyn", "axpy", []scalar{scalarOf(a)}, x, y, n)
}

// Scale computes y = a*x; x may be y (in place). y is only written: what
// it held before, unwritten or not, does not matter. Every op whose output
// is not also an input (all but Axpy's y) writes it the same way.
func Scale(s *Stream, a float32, x, y *Buffer[float32]) error {
	return vector2(s, "Scale", "scale", []scalar{known(math.Float32bits(a))}, x, y, nil)
}

// ScaleDyn is Scale with a device scalar and a device length: y[i] =
// a*x[i] for i < n, the rest of y untouched.
func ScaleDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	return vector2(s, "ScaleDyn", "scale", []scalar{scalarOf(a)}, x, y, n)
}

// vector2 is an op over x and y (same length) with scalars before its
// length (Axpy's and Scale's a; the typed kernels' a in its type's words).
func vector2[T Element](s *Stream, op, name string, scalars []scalar, x, y *Buffer[T], n *Param[uint32]) error {
	if err := present(op, x, y); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core); err != nil {
		return err
	}
	return launch1D(s, op, name, []*bufferCore{x.core, y.core}, scalars, n)
}

// Add computes z = x + y elementwise. Any of x, y, z may be the same
// buffer, as for Sub, Mul and Div: each invocation reads and writes only
// its own element.
func Add(s *Stream, x, y, z *Buffer[float32]) error {
	return binary3(s, "Add", "add", nil, x, y, z, nil)
}

// Sub computes z = x - y elementwise.
func Sub(s *Stream, x, y, z *Buffer[float32]) error {
	return binary3(s, "Sub", "sub", nil, x, y, z, nil)
}

// Mul computes z = x * y elementwise.
func Mul(s *Stream, x, y, z *Buffer[float32]) error {
	return binary3(s, "Mul", "mul", nil, x, y, z, nil)
}

// Div computes z = x / y elementwise (IEEE: x/0 is ±Inf or NaN).
func Div(s *Stream, x, y, z *Buffer[float32]) error {
	return binary3(s, "Div", "div", nil, x, y, z, nil)
}

// AddDyn is Add over the first n elements (the rest of z untouched).
func AddDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "AddDyn", "add", nil, x, y, z, n)
}

// SubDyn is Sub over the first n elements (the rest of z untouched).
func SubDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "SubDyn", "sub", nil, x, y, z, n)
}

// MulDyn is Mul over the first n elements (the rest of z untouched).
func MulDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "MulDyn", "mul", nil, x, y, z, n)
}

// DivDyn is Div over the first n elements (the rest of z untouched).
func DivDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binary3(s, "DivDyn", "div", nil, x, y, z, n)
}

// binary3 is an elementwise op z = x ∘ y with scalars before its length
// (none for the float32 kernels; which op for the typed binary kernel).
func binary3[T Element](s *Stream, op, name string, scalars []scalar, x, y, z *Buffer[T], n *Param[uint32]) error {
	if err := present(op, x, y, z); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core, z.core); err != nil {
		return err
	}
	return launch1D(s, op, name, []*bufferCore{x.core, y.core, z.core}, scalars, n)
}

// Sum writes the sum of x's elements into out, a one-element buffer. out
// may be x only when x has one element (the sum is then x itself).
func Sum(s *Stream, x, out *Buffer[float32]) error { return sum(s, "Sum", "", x, out, nil) }

// SumDyn writes the sum of the first n elements of x into out, a
// one-element buffer. A nil n sums all of x.
func SumDyn(s *Stream, x, out *Buffer[float32], n *Param[uint32]) error {
	return sum(s, "SumDyn", "", x, out, n)
}

// sum is Sum over the first n elements (nil: all) with the kernels of
// suffix sfx (see kernelSuffix).
func sum[T Element](s *Stream, op, sfx string, x, out *Buffer[T], n *Param[uint32]) error {
	if err := present(op, x, out); err != nil {
		return err
	}
	if err := sameLen(op, 1, out.core); err != nil {
		return err
	}
	return reduceOp(s, op, sfx, []*bufferCore{x.core}, out.core, n)
}

// Dot writes the dot product of x and y into out, a one-element buffer.
// x may be y (the sum of squares).
func Dot(s *Stream, x, y, out *Buffer[float32]) error { return dot(s, "Dot", "", x, y, out, nil) }

// DotDyn writes the dot product of the first n elements of x and y into
// out, a one-element buffer. A nil n covers the buffers.
func DotDyn(s *Stream, x, y, out *Buffer[float32], n *Param[uint32]) error {
	return dot(s, "DotDyn", "", x, y, out, n)
}

// dot is Dot over the first n elements (nil: all) with the kernels of
// suffix sfx (see kernelSuffix).
func dot[T Element](s *Stream, op, sfx string, x, y, out *Buffer[T], n *Param[uint32]) error {
	if err := present(op, x, y, out); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core); err != nil {
		return err
	}
	if err := sameLen(op, 1, out.core); err != nil {
		return err
	}
	return reduceOp(s, op, sfx, []*bufferCore{x.core, y.core}, out.core, n)
}

// reductionKernel picks the build of the reduction base ("sum", "dot"):
// the wide one on a CPU driver that can run it, else the subgroup one
// where the device has it.
func (d *Device) reductionKernel(base string) string {
	if d.wideReductions() {
		return base + "_wide"
	}
	if d.subgroupReductions() {
		return base + "_subgroup"
	}
	return base
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

// wideReductions reports whether Sum and Dot run sum_wide and dot_wide:
// on a CPU driver (where every load of a lane-varying address is a loop
// over the SIMD lanes, which 64-bit loads run once per two elements, and
// where starting a group costs what reading thousands of elements does)
// with the subgroup reductions and shaderInt64 enabled. A GPU keeps the
// subgroup reductions' 256-element groups, which fill its waves.
func (d *Device) wideReductions() bool {
	return d.info.Type == TypeCPU && d.subgroupReductions() && d.info.Features.Has(FeatureInt64)
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
	return matmulStatic(s, "Matmul", "", a, b, c, m, n, k)
}

// matmulStatic is Matmul with the kernel of suffix sfx (see kernelSuffix).
func matmulStatic[T Element](s *Stream, op, sfx string, a, b, c *Buffer[T], m, n, k int) error {
	if err := present(op, a, b, c); err != nil {
		return err
	}
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("vkc: %s: shape %dx%dx%d must be positive", op, m, n, k)
	}
	mk, err := product(op, m, k)
	if err != nil {
		return err
	}
	if a.core.n != mk {
		return fmt.Errorf("vkc: %s: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			op, a.core.n, b.core.n, c.core.n, m, k, k, n, m, n)
	}
	return matmul(s, op, sfx, a, b, c, nil, n, k) // A's m rows: the whole buffer
}

// MatmulDyn is Matmul whose row count m is a device length: C's first m
// rows are written from A's first m rows, the rest of C untouched. The
// buffers hold A (len/k rows) and C for that many rows.
func MatmulDyn(s *Stream, a, b, c *Buffer[float32], m *Param[uint32], n, k int) error {
	if err := present("MatmulDyn", a, b, c); err != nil {
		return err
	}
	return matmul(s, "MatmulDyn", "", a, b, c, m, n, k)
}

// matmul multiplies A (len/k rows) by B into C, over the first m rows (nil:
// all of them), with the kernel of suffix sfx (see kernelSuffix).
func matmul[T Element](s *Stream, op, sfx string, a, b, c *Buffer[T], m *Param[uint32], n, k int) error {
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
	kern, err := d.kernelFor(d.matmulKernel(sfx, n, k, a.core, b.core), l.p == nil)
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
	size := a.core.elem.size()
	extents := []capture.Extent{l.prefix(l.p.buf, uint64(k)*size, a.core), {}, l.prefix(l.p.buf, uint64(n)*size, c.core)}
	return launchDyn(s, kern, cores[:], words, extents, l, indirect, [3]uint32{gx, gy, 1}, &p)
}

// matmulKernel names the matmul kernel for suffix sfx, a k x n B and the
// inputs to bind. On a CPU driver, where n and k are multiples of 8 (its
// loads take eight elements at a time) and not for float64:
// matmul_texel where every input can be bound as texels (see
// texelBindable), which reads them with one vector load per lane, about
// 1.5x matmul_wide's speed on lavapipe; else matmul_wide where the device
// has 64-bit integers (its 64-bit loads make fewer per-lane loops, 2-3x
// the blocked kernel's speed). Elsewhere the register-blocked matmul,
// whose block ShapeFor picks per device. matmul_texel and matmul_wide
// compute each element of C in the same order (the same block and
// arithmetic), so bit for bit alike; the blocked matmul sums in another
// order, so its results may differ from theirs in the last bits.
func (d *Device) matmulKernel(sfx string, n, k int, inputs ...*bufferCore) string {
	if sfx == "_f64" || d.info.Type != TypeCPU || n%8 != 0 || k%8 != 0 {
		return "matmul" + sfx
	}
	if d.texelBindable(inputs...) {
		return "matmul_texel" + sfx
	}
	if d.info.Features.Has(FeatureInt64) {
		return "matmul_wide" + sfx
	}
	return "matmul" + sfx
}

// texelBindable reports whether every buffer can be bound as it is to a
// texel binding (shaders.Binding.Texel): bindable as a storage buffer, at
// an offset that is a multiple of minTexelBufferOffsetAlignment, and at
// least one and at most maxTexelBufferElements whole texels (the
// recorder binds the whole texels of a claim). A view that goes through a
// stand-in is not: the launcher then takes a kernel reading storage
// buffers.
func (d *Device) texelBindable(cores ...*bufferCore) bool {
	for _, c := range cores {
		if !c.bindable() || recorder.Limits(d.info.Limits).CheckTexelRange(c.claim.Offset, c.claim.Size&^(recorder.TexelSize-1)) != nil {
			return false
		}
	}
	return true
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
	return softmaxStatic(s, "Softmax", "", src, dst, rows, cols)
}

// softmaxStatic is Softmax with the kernel of suffix sfx (see kernelSuffix).
func softmaxStatic[T Element](s *Stream, op, sfx string, src, dst *Buffer[T], rows, cols int) error {
	if err := present(op, src, dst); err != nil {
		return err
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("vkc: %s: shape %dx%d must be positive", op, rows, cols)
	}
	size, err := product(op, rows, cols)
	if err != nil {
		return err
	}
	if err := sameLen(op, size, src.core); err != nil {
		return err
	}
	return softmax(s, op, sfx, src, dst, nil, cols) // src's rows: the whole buffer
}

// SoftmaxDyn is Softmax over the first rows rows of src (rows x cols,
// row-major): the rows of dst past them are left untouched. The buffers
// hold len/cols rows.
func SoftmaxDyn(s *Stream, src, dst *Buffer[float32], rows *Param[uint32], cols int) error {
	if err := present("SoftmaxDyn", src, dst); err != nil {
		return err
	}
	return softmax(s, "SoftmaxDyn", "", src, dst, rows, cols)
}

// softmax runs the row-wise softmax over the first rows rows (nil: all the
// len/cols rows src holds), with the kernel of suffix sfx (see
// kernelSuffix).
func softmax[T Element](s *Stream, op, sfx string, src, dst *Buffer[T], rows *Param[uint32], cols int) error {
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
	name := "softmax" + sfx
	if sfx == "" {
		name = d.softmaxKernel()
	}
	kern, err := d.kernelFor(name, l.p == nil)
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
	row := uint64(cols) * src.core.elem.size()
	extents := []capture.Extent{l.prefix(l.p.buf, row, src.core), l.prefix(l.p.buf, row, dst.core)}
	return launchDyn(s, kern, cores[:], words, extents, l, indirect, [3]uint32{}, &p)
}
