package vkc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/shaders"
)

// Fill and Copy are the root's two transfer-like calls: whole buffers,
// every element type, no shapes. Ops over shapes, layouts and dynamic
// row counts (ops.Fill, ops.Copy and the rest) are package ops.

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

// distinct refuses a buffer bound both as an input and as the output of a
// call whose regions may not overlap (Copy: a transfer whose regions
// Vulkan forbids to overlap).
func distinct(op string, out *bufferCore, what string, ins ...*bufferCore) error {
	for _, in := range ins {
		if in.overlaps(out) {
			return fmt.Errorf("%w: %s: the output overlaps %s (the op cannot run in place; use another buffer or a disjoint view)", ErrOverlap, op, what)
		}
	}
	return nil
}

// sameLen refuses a buffer whose length is not want.
func sameLen(op string, want int, bufs ...*bufferCore) error {
	for _, b := range bufs {
		if b.n != want {
			return fmt.Errorf("vkc: %s: buffer of %d elements, want %d", op, b.n, want)
		}
	}
	return nil
}

// run1D launches static catalogue kernel name on s over bufs with a 1-D
// geometry of n invocations.
func run1D(s *Stream, name string, n int, push []byte, bufs ...*bufferCore) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	k, err := s.dev.builtin(s.dev.elementwiseKernel(name))
	if err != nil {
		return err
	}
	return k.launch(s, s.dev.groups1D(n, k.local[0]), push, bufs)
}

// elementwiseKernel is the catalogue kernel a 1-D launch runs for the
// kernel name: its wide variant (shaders.Wide: eight elements per
// invocation as 64-bit words, the same groups) on a CPU driver with
// shaderInt64, where each lane-varying load and store is a loop over the
// SIMD lanes per component; name itself on a GPU, whose waves the vec4
// build's 64 invocations fill, and for every kernel without one.
func (d *Device) elementwiseKernel(name string) string {
	if d.info.Type == TypeCPU && d.info.Features.Has(FeatureInt64) {
		if wide, ok := shaders.Wide(name); ok {
			return wide
		}
	}
	return name
}

// temp allocates scratch of n elements of kind that a launch about to be
// recorded on s writes.
func (d *Device) temp(s *Stream, n int, kind elemKind) (*bufferCore, error) {
	c, err := d.rec.AllocOn(s.id, alloc.DeviceLocal, bytesFor(kind, n))
	if err != nil {
		return nil, public(err)
	}
	return newBufferCore(d, c, n, kind, nil), nil
}

// Fill sets every element of buf to v, for every element type: elements
// of up to 32 bits as whole words holding v repeated (a narrow type's
// padding too), 64-bit ones as word pairs. It covers the whole buffer;
// ops.Fill fills a tensor, a dynamic one up to its param's row count.
func Fill[T Element](s *Stream, buf *Buffer[T], v T) error {
	if err := present("Fill", buf); err != nil {
		return err
	}
	var p [16]byte
	c := buf.core
	if kindOf[T]().size() == 8 {
		bits := bitsOf(v)
		return run1D(s, "fill64", c.n, pushWords(&p, uint32(bits), uint32(bits>>32), uint32(c.n)), c)
	}
	words := c.words()
	return run1D(s, "fill", words, pushWords(&p, wordPattern(v), uint32(words)), c)
}

// Copy copies src into dst (same length) with a transfer command, at
// memory speed. src and dst must be different buffers: Vulkan forbids a
// copy whose source and destination overlap. It copies whole buffers;
// ops.Copy copies a tensor, a dynamic one up to its param's row count.
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
	if err := copyArgs("Copy", src, dst); err != nil {
		return err
	}
	if src.core.dev != dst.core.dev {
		return copyAcross(s, src.core, dst.core)
	}
	return copyCores(s, "Copy", src.core, dst.core)
}

// copyArgs checks the buffers of Copy.
func copyArgs[T Element](op string, src, dst *Buffer[T]) error {
	if err := present(op, src, dst); err != nil {
		return err
	}
	if err := distinct(op, dst.core, "the source", src.core); err != nil {
		return err
	}
	return sameLen(op, src.core.n, dst.core)
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
// and length on one device, with a transfer command on s.
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
	return publicOp(op, s.dev.rec.Copy(s.id, src.claim, dst.claim, uint64(src.n)*src.elem.size()))
}
