package vkc

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
)

// View returns a buffer aliasing elements [offset, offset+n) of b: the
// same memory, usable everywhere a buffer is (ops, Kernel.Launch, Copy,
// reads and writes, capture windows, the dynamic forms). Ordering and the
// unwritten rule follow the bytes, not the buffer: work on disjoint views
// of one buffer does not wait for each other, work on overlapping ones
// does, a write through a view makes exactly its range written, and a
// launch that fails taints exactly the ranges it was given.
//
// A view holds its buffer's memory: Close of the buffer frees it only
// once every view of it is closed too (Device.Close frees everything).
// Close each view when done, as you close a buffer.
//
// Binding a view to a launch needs its byte offset to be a multiple of
// the device's MinStorageBufferOffsetAlignment (and its size a whole
// number of 32-bit words); a view that is not is bound through an aligned
// stand-in: its bytes are copied into temporary memory before the launch
// and, when the launch writes it, back after it, all on the launch's
// stream (and into graphs). That costs two copies of the view, where an
// aligned view costs nothing; launches sized by a length param refuse
// such views. Reads, writes and Copy take any view as it is.
func (b *Buffer[T]) View(offset, n int) (*Buffer[T], error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	c := b.core
	if offset < 0 || n <= 0 || offset > c.n || n > c.n-offset {
		return nil, fmt.Errorf("%w: elements [%d, %d+%d) of a buffer of %d", ErrOutOfRange, offset, offset, n, c.n)
	}
	v, err := c.view(uint64(offset)*c.elem.size(), c.elem, n)
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{core: v}, nil
}

// ViewAs returns n elements of type U over b's bytes from byteOffset on:
// the same memory read as another element type (a float32 buffer's bits
// as uint32, one allocation carved into tensors of several types). The
// bytes must lie inside b's elements, and the byte offset from the start
// of the buffer's memory must be a multiple of U's size. Everything View
// says holds for it.
func ViewAs[U, T Element](b *Buffer[T], byteOffset, n int) (*Buffer[U], error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	c, to := b.core, kindOf[U]()
	total, size := uint64(c.n)*c.elem.size(), to.size()
	if byteOffset < 0 || n <= 0 || uint64(byteOffset) > total || uint64(n) > (total-uint64(byteOffset))/size {
		return nil, fmt.Errorf("%w: %d elements of %s from byte %d of a buffer of %d bytes", ErrOutOfRange, n, to, byteOffset, total)
	}
	if at := c.claim.Offset - c.memory().claim.Offset + uint64(byteOffset); at%size != 0 {
		return nil, fmt.Errorf("%w: %s elements at byte %d of the buffer's memory, not a multiple of their %d bytes", ErrOutOfRange, to, at, size)
	}
	if err := c.dev.unsupported("a view of "+to.String(), to.needs()); err != nil {
		return nil, err
	}
	v, err := c.view(uint64(byteOffset), to, n)
	if err != nil {
		return nil, err
	}
	return &Buffer[U]{core: v}, nil
}

// view makes the core of a view of n elements of kind elem, byteOff bytes
// into c, holding c's memory.
func (c *bufferCore) view(byteOff uint64, elem elemKind, n int) (*bufferCore, error) {
	d := c.dev
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	if !c.life.enter() {
		return nil, closedError("buffer")
	}
	defer c.done()
	m := c.memory()
	claim := alloc.Claim{Page: c.claim.Page, Offset: c.claim.Offset + byteOff, Size: uint64(n) * elem.size()}
	// A view that reaches the end of the buffer's elements takes the
	// padding to the end of the claim too, as the buffer does, so one
	// over all of a buffer of 8- or 16-bit elements binds directly.
	if claim.End() == m.claim.Offset+uint64(m.n)*m.elem.size() {
		claim.Size = m.claim.End() - claim.Offset
	}
	m.holds.Add(1) // m is open or held by c, which is open: never zero here
	v := newBufferCore(d, claim, n, elem, m)
	d.mu.Lock()
	d.buffers[v] = struct{}{}
	d.mu.Unlock()
	return v, nil
}

// overlaps reports whether two open buffers share memory: on one device,
// and their claims share a byte (claims of two devices may look alike). A
// closed buffer overlaps nothing: its claim may already be another
// buffer's, and the call using it fails with ErrClosed anyway.
func (c *bufferCore) overlaps(o *bufferCore) bool {
	return c.dev == o.dev && c.claim.Overlaps(o.claim) && !c.life.closing() && !o.life.closing()
}

// bindable reports whether a launch can bind the buffer's claim as it is:
// at an offset the device accepts for a storage buffer, and a whole
// number of 32-bit words, which the catalogue's kernels address. Every
// buffer owning its claim is; a view may not be.
func (c *bufferCore) bindable() bool {
	align := max(c.dev.info.Limits.MinStorageBufferOffsetAlignment, elemSize)
	return c.claim.Offset%align == 0 && c.claim.Size%elemSize == 0
}

// bounces are one launch's aligned stand-ins for the views it binds that
// are not bindable: per binding, a temporary claim the view's bytes are
// copied into before the launch and, if the launch writes the binding,
// copied back from after it. The copies are ordinary recorder copies on
// the launch's stream, so ordering, the unwritten rule and capture
// windows treat them like any work: a view never written taints its
// stand-in, and a launch that fails or is skipped leaves its stand-in
// tainted, which the copy back carries to exactly the view's range.
type bounces struct {
	temps [recorder.MaxBindings]alloc.Claim
	used  uint32 // bit i: binding i goes through temps[i]
}

// in copies every unbindable view among cores into a stand-in and points
// its binding at it. On error nothing is left behind.
func (bs *bounces) in(s *Stream, k *Kernel, cores []*bufferCore, binds []capture.Binding, dynamic bool) error {
	rec := s.dev.rec
	for i, c := range cores {
		if c.bindable() {
			continue
		}
		if dynamic {
			bs.drop(s)
			return fmt.Errorf("%w: kernel %q: buffer %d is a view at byte %d, not a multiple of the device's storage-buffer offset alignment (%d) or not whole 32-bit words, and a launch sized by a length param takes only views it can bind as they are",
				ErrUnsupported, k.name, i, c.claim.Offset-c.memory().claim.Offset, s.dev.info.Limits.MinStorageBufferOffsetAlignment)
		}
		// The view's bytes (with the buffer's padding when it reaches the
		// end) rounded up to whole words, which word kernels address.
		tmp, err := rec.AllocOn(s.id, alloc.DeviceLocal, (c.claim.Size+elemSize-1)&^(elemSize-1))
		if err != nil {
			bs.drop(s)
			return public(err)
		}
		bs.temps[i], bs.used = tmp, bs.used|1<<i
		if err := rec.Copy(s.id, c.claim, bs.head(i, c), c.claim.Size); err != nil {
			bs.drop(s)
			return public(err)
		}
		binds[i].Claim = tmp
	}
	return nil
}

// out copies the stand-ins of written bindings back into their views and
// lets every stand-in go once the work using it is done.
func (bs *bounces) out(s *Stream, cores []*bufferCore, binds []capture.Binding) error {
	if bs.used == 0 {
		return nil
	}
	var err error
	for i, c := range cores {
		if bs.used&(1<<i) == 0 || !binds[i].Write {
			continue
		}
		if cerr := s.dev.rec.Copy(s.id, bs.head(i, c), c.claim, c.claim.Size); cerr != nil {
			// The launch's result for the view is lost with the stand-in:
			// the view must not read as its old bytes.
			s.dev.rec.Taint([]alloc.Claim{c.claim}, cerr)
			if err == nil {
				err = public(cerr)
			}
		}
	}
	bs.drop(s)
	return err
}

// head is the part of binding i's stand-in that mirrors view c: its
// bytes, without the padding that rounds the stand-in to whole words.
func (bs *bounces) head(i int, c *bufferCore) alloc.Claim {
	return alloc.Claim{Page: bs.temps[i].Page, Offset: bs.temps[i].Offset, Size: c.claim.Size}
}

// drop lets the stand-ins go after the stream's work that uses them.
func (bs *bounces) drop(s *Stream) {
	for i := range bs.temps {
		if bs.used&(1<<i) != 0 {
			_ = s.dev.rec.Drop(s.id, bs.temps[i])
		}
	}
	bs.used = 0
}

// checkAliasing refuses bindings of one launch that share memory in a way
// the launch cannot honour. A catalogue kernel's invocations read inputs
// other invocations write, so two of its buffers, one of them written,
// must be the same range (an op that allows it runs in place) or
// disjoint. A user kernel may alias as it likes, except with a view bound
// through a stand-in, whose copy back would undo what the other binding
// wrote.
func (k *Kernel) checkAliasing(cores []*bufferCore) error {
	for i, a := range cores {
		for j := i + 1; j < len(cores); j++ {
			b := cores[j]
			if !a.overlaps(b) || !(k.access[i].Writes() || k.access[j].Writes()) {
				continue
			}
			switch {
			case !k.user && a.claim != b.claim:
				return fmt.Errorf("%w: %s: buffers %d and %d overlap in part (views of one buffer given to one op must be the same range or disjoint)", ErrOverlap, k.name, i, j)
			case k.user && (!a.bindable() || !b.bindable()):
				return fmt.Errorf("%w: kernel %q: buffers %d and %d overlap, one written, and one is a view bound through a copy (see View): give it an aligned view", ErrOverlap, k.name, i, j)
			}
		}
	}
	return nil
}
