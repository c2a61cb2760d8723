package vkc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vkcompute/vkc/alloc"
)

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

// run launches catalogue kernel name on s over bufs with a 1-D geometry of n.
func run1D(s *Stream, name string, n int, push []byte, bufs ...*bufferCore) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	k, err := s.dev.builtin(name)
	if err != nil {
		return err
	}
	return k.launch(s, s.dev.groups1D(n, k.local[0]), push, bufs)
}

// Fill sets every element of buf to v, for every element type: elements
// of up to 32 bits as whole words holding v repeated, 64-bit ones as word
// pairs.
func Fill[T Element](s *Stream, buf *Buffer[T], v T) error {
	if err := present("Fill", buf); err != nil {
		return err
	}
	var p [16]byte
	if kindOf[T]().size() == 8 {
		bits := bitsOf(v)
		return run1D(s, "fill64", buf.core.n, pushWords(&p, uint32(bits), uint32(bits>>32), uint32(buf.core.n)), buf.core)
	}
	words := buf.core.words()
	return run1D(s, "fill", words, pushWords(&p, wordPattern(v), uint32(words)), buf.core)
}

// Copy copies src into dst (same length) with a transfer command, at
// memory speed. src and dst must be different buffers: Vulkan forbids a
// copy whose source and destination overlap.
//
// src and dst may belong to two devices (two Opens of one GPU are two
// devices too). The copy then goes through host memory, on s, which must
// be a stream of one of them: src is read as ReadOn reads it, on s if s
// is src's device's (else on its default stream), so after every write
// issued to it on any of its streams; dst is written as WriteOn writes it,
// on s if s is dst's device's (else on its default stream). The copy is
// done when Copy returns. The unwritten rule carries over: a src that
// reads as ErrUnwritten leaves dst unwritten with the same cause, as a
// copy on one device does, and Copy returns nil. It cannot be captured: a
// window would record only the write of what src held then, so inside a
// window on s it fails with ErrSyncInCapture, and while the other device's
// default stream records a window it is refused with ErrStreamCapturing.
func Copy[T Element](s *Stream, src, dst *Buffer[T]) error {
	if err := present("Copy", src, dst); err != nil {
		return err
	}
	if err := distinct("Copy", dst.core, "the source", src.core); err != nil {
		return err
	}
	if err := sameLen("Copy", src.core.n, dst.core); err != nil {
		return err
	}
	if src.core.dev != dst.core.dev {
		return copyAcross(s, src.core, dst.core)
	}
	return copyCores(s, "Copy", src.core, dst.core)
}

// copyAcross copies src into dst, buffers of one type and length on two
// devices, through host memory (see Copy).
func copyAcross(s *Stream, src, dst *bufferCore) error {
	if s == nil || s.dev == nil {
		return errNilStream
	}
	reader, writer := src.dev.def, dst.dev.def
	switch s.dev {
	case src.dev:
		reader = s
	case dst.dev:
		writer = s
	default:
		return fmt.Errorf("vkc: Copy: a stream of device %q copying between devices %q and %q", s.dev.info.Name, src.dev.info.Name, dst.dev.info.Name)
	}
	if s == writer && s.capturing() {
		return fmt.Errorf("vkc: Copy between devices inside a capture window on the destination's stream: %w", ErrSyncInCapture)
	}
	// The other device's side runs on its default stream, whose window
	// (if one records there) must not take it in or be doomed by it.
	other := reader
	if s == reader {
		other = writer
	}
	if other.capturing() {
		return fmt.Errorf("vkc: Copy between devices: device %q's default stream, which does the other side, is capturing: %w", other.dev.info.Name, ErrStreamCapturing)
	}
	data := make([]byte, uint64(src.n)*src.elem.size())
	err := src.read(context.Background(), reader, data)
	if errors.Is(err, ErrUnwritten) {
		return dst.taint(err)
	}
	if err != nil {
		return err
	}
	return dst.write(writer, data)
}

// copyCores copies src's elements into dst, buffers of one element type
// and length, on s.
func copyCores(s *Stream, op string, src, dst *bufferCore) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := src.use(s); err != nil {
		return err
	}
	defer src.done()
	if err := dst.use(s); err != nil {
		return err
	}
	defer dst.done()
	return public(s.dev.rec.Copy(s.id, src.claim, dst.claim, uint64(src.n)*src.elem.size()))
}

// Axpy computes y = a*x + y. x may be y (y = (a+1)*y): each element is
// read and written by the same invocation.
func Axpy(s *Stream, a float32, x, y *Buffer[float32]) error {
	if err := present("Axpy", x, y); err != nil {
		return err
	}
	if err := sameLen("Axpy", x.core.n, y.core); err != nil {
		return err
	}
	var p [16]byte
	return run1D(s, "axpy", x.core.n, pushWords(&p, math.Float32bits(a), uint32(x.core.n)), x.core, y.core)
}

// Scale computes y = a*x; x may be y (in place).
func Scale(s *Stream, a float32, x, y *Buffer[float32]) error {
	if err := present("Scale", x, y); err != nil {
		return err
	}
	if err := sameLen("Scale", x.core.n, y.core); err != nil {
		return err
	}
	var p [16]byte
	return run1D(s, "scale", x.core.n, pushWords(&p, math.Float32bits(a), uint32(x.core.n)), x.core, y.core)
}

func binary3(s *Stream, name string, x, y, z *Buffer[float32]) error {
	if err := present(name, x, y, z); err != nil {
		return err
	}
	if err := sameLen(name, x.core.n, y.core, z.core); err != nil {
		return err
	}
	var p [16]byte
	return run1D(s, name, x.core.n, pushWords(&p, uint32(x.core.n)), x.core, y.core, z.core)
}

// Add computes z = x + y elementwise. Any of x, y, z may be the same
// buffer, as for Sub, Mul and Div: each invocation reads and writes only
// its own element.
func Add(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "add", x, y, z) }

// Sub computes z = x - y elementwise.
func Sub(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "sub", x, y, z) }

// Mul computes z = x * y elementwise.
func Mul(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "mul", x, y, z) }

// Div computes z = x / y elementwise (IEEE: x/0 is ±Inf or NaN).
func Div(s *Stream, x, y, z *Buffer[float32]) error { return binary3(s, "div", x, y, z) }

// sumKernel picks the subgroup reduction where the device has it.
func (d *Device) sumKernel() string {
	sg := d.info.Subgroup
	if sg.Arithmetic && sg.Size > 0 && 256%sg.Size == 0 {
		return "sum_subgroup"
	}
	return "sum"
}

// temp allocates scratch that a launch about to be recorded on s writes.
func (d *Device) temp(s *Stream, n int) (*bufferCore, error) {
	c, err := d.rec.AllocOn(s.id, alloc.DeviceLocal, uint64(n)*elemSize)
	if err != nil {
		return nil, public(err)
	}
	return &bufferCore{dev: d, claim: c, n: n, elem: elemFloat}, nil
}

// reduce sums the first pass's inputs into out[0], through partials as
// needed: n values of srcs[0] (the sum kernel), or with two sources the
// products of their n pairs (the dot kernel), then sums of the partials.
func reduce(s *Stream, srcs []*bufferCore, n int, out *bufferCore) error {
	d := s.dev
	var prev *bufferCore
	defer func() {
		if prev != nil {
			_ = d.rec.Drop(s.id, prev.claim)
		}
	}()
	for {
		name := d.sumKernel()
		if len(srcs) == 2 {
			name = "dot"
		}
		k, err := d.builtin(name)
		if err != nil {
			return err
		}
		w := int(k.local[0])
		var p [16]byte
		push := pushWords(&p, uint32(n))
		var bound [3]*bufferCore
		cores := append(bound[:0], srcs...)
		if n <= w {
			return k.launch(s, [3]uint32{1, 1, 1}, push, append(cores, out))
		}
		parts := (n + w - 1) / w
		t, err := d.temp(s, parts)
		if err != nil {
			return err
		}
		if err := k.launch(s, d.groups1D(n, uint32(w)), push, append(cores, t)); err != nil {
			_ = d.rec.Drop(s.id, t.claim)
			return err
		}
		if prev != nil {
			_ = d.rec.Drop(s.id, prev.claim)
		}
		prev, n = t, parts
		srcs = []*bufferCore{t}
	}
}

// Sum writes the sum of x's elements into out, a one-element buffer. out
// may be x only when x has one element (the sum is then x itself).
func Sum(s *Stream, x, out *Buffer[float32]) error {
	if err := present("Sum", x, out); err != nil {
		return err
	}
	if err := sameLen("Sum", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return reduce(s, []*bufferCore{x.core}, x.core.n, out.core)
}

// Dot writes the dot product of x and y into out, a one-element buffer.
// x may be y (the sum of squares).
func Dot(s *Stream, x, y, out *Buffer[float32]) error {
	if err := present("Dot", x, y, out); err != nil {
		return err
	}
	if err := sameLen("Dot", x.core.n, y.core); err != nil {
		return err
	}
	if err := sameLen("Dot", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return reduce(s, []*bufferCore{x.core, y.core}, x.core.n, out.core)
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
	kn, err := product("Matmul", k, n)
	if err != nil {
		return err
	}
	mn, err := product("Matmul", m, n)
	if err != nil {
		return err
	}
	if a.core.n != mk || b.core.n != kn || c.core.n != mn {
		return fmt.Errorf("vkc: Matmul: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			a.core.n, b.core.n, c.core.n, m, k, k, n, m, n)
	}
	if err := distinct("Matmul", c.core, "an input", a.core, b.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	kern, err := s.dev.builtin("matmul")
	if err != nil {
		return err
	}
	gx, gy := ceilDiv(n, int(kern.tile[0])), ceilDiv(m, int(kern.tile[1]))
	if err := check2D(s.dev, "Matmul", gx, gy); err != nil {
		return err
	}
	var p [16]byte
	return kern.launch(s, [3]uint32{gx, gy, 1}, pushWords(&p, uint32(m), uint32(n), uint32(k)), []*bufferCore{a.core, b.core, c.core})
}

// Transpose writes dst[cols x rows] = src[rows x cols]ᵀ, row-major. dst
// must not be src: an invocation writes the element another one reads.
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
	if err := sameLen("Softmax", size, src.core, dst.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	kern, err := s.dev.builtin("softmax")
	if err != nil {
		return err
	}
	var p [16]byte
	return kern.launch(s, s.dev.groups1D(rows, 1), pushWords(&p, uint32(rows), uint32(cols)), []*bufferCore{src.core, dst.core})
}
