package vkc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
	"github.com/vkcompute/vkc/recorder"
)

// elemSize is the bytes of a 32-bit word, the unit the catalogue's
// kernels address memory in (and the size of float32, int32, uint32).
const elemSize = 4

// bufferCore is the untyped part of a buffer, and of a param.
type bufferCore struct {
	dev   *Device
	claim alloc.Claim
	n     int
	elem  elemKind
	param bool // the value of a Param: no kernel may bind it where it writes

	// life is held by every call using the buffer; Close waits for them.
	life    lifetime
	slots   atomic.Uint64     // slots that used the buffer (bit mask): Close waits for them
	mu      lockrank.Mutex    // guards staging
	staging *recorder.Staging // persistent host staging, once captured

	// owner is the buffer whose memory a view aliases (View, ViewAs); nil
	// for a buffer that owns its claim. A view's claim is a range inside
	// its owner's.
	owner *bufferCore
	// holds counts, on a buffer owning its claim, the buffer itself until
	// its Close and every open view of it: the last to close frees the
	// memory.
	holds atomic.Int64
}

// newBufferCore is a bufferCore with its lock ranked: every buffer, view,
// temporary and cached constant is made here. owner is the buffer a view
// aliases, nil for one owning its claim.
func newBufferCore(d *Device, c alloc.Claim, n int, elem elemKind, owner *bufferCore) *bufferCore {
	b := &bufferCore{dev: d, claim: c, n: n, elem: elem, owner: owner}
	b.mu.SetRank(lockrank.Buffer, 0)
	return b
}

// memory is the buffer that owns c's memory: c, or a view's owner.
func (c *bufferCore) memory() *bufferCore {
	if c.owner != nil {
		return c.owner
	}
	return c
}

// Buffer is n elements of device memory. Its contents are unwritten until
// something writes them (Write, FromSlice, a kernel): reading unwritten
// memory fails with ErrUnwritten rather than returning stale bytes.
type Buffer[T Element] struct{ core *bufferCore }

// newCore allocates n elements of kind elem in memory of the given kind
// and registers the buffer with the device, which frees it at Close. The
// caller has entered the device.
func newCore(d *Device, n int, elem elemKind, kind alloc.Kind) (*bufferCore, error) {
	return newCoreOn(d, nil, n, elem, kind)
}

// newCoreOn is newCore for memory that work on s is about to use (a
// param's derived value): it is allocated as s's own work, which only s's
// own capture window restricts. A nil s allocates for no stream.
func newCoreOn(d *Device, s *Stream, n int, elem elemKind, kind alloc.Kind) (*bufferCore, error) {
	if n <= 0 {
		return nil, fmt.Errorf("vkc: buffer length %d (must be positive)", n)
	}
	if err := d.unsupported("a buffer of "+elem.String(), elem.needs()); err != nil {
		return nil, err
	}
	// Compare element counts, not byte sizes: n*size can overflow 64
	// bits and wrap to a size every limit accepts.
	limit := uint64(d.info.Limits.MaxStorageBufferRange)
	if limit == 0 {
		limit = math.MaxUint64
	}
	size := elem.size()
	if uint64(n) > (limit&^3)/size {
		return nil, fmt.Errorf("vkc: buffer of %d elements of %d bytes exceeds maxStorageBufferRange (%d bytes): %w", n, size, limit, alloc.ErrTooLarge)
	}
	bytes := bytesFor(elem, n)
	var c alloc.Claim
	var err error
	if s == nil {
		c, err = d.rec.Alloc(kind, bytes)
	} else {
		c, err = d.rec.AllocOn(s.id, kind, bytes)
	}
	if err != nil {
		return nil, publicOp("NewBuffer", err)
	}
	d.rec.Taint([]alloc.Claim{c}, ErrNeverWritten)
	b := newBufferCore(d, c, n, elem, nil)
	b.holds.Store(1)
	d.mu.Lock()
	d.buffers[b] = struct{}{}
	d.mu.Unlock()
	return b, nil
}

// NewBuffer allocates n elements. The contents are unwritten until written.
//
// Inside a capture window's recorded run, a buffer the warmup run
// allocated and closed is handed to the recorded run's NewBuffer of the
// same type and length; any other buffer made while the window records
// is served too (another goroutine's, say), but the window refuses to
// record work on it: that work fails with ErrAllocInCapture and dooms the
// window, whether or not a memory page had room, so the same program
// captures or fails the same way whatever the allocator holds. Allocate
// buffers before Capture, or inside its function and close them there.
// Past WithMemoryLimit, or when the driver runs out, NewBuffer fails with
// ErrOutOfMemory once memory nothing uses was reclaimed.
func NewBuffer[T Element](d *Device, n int) (*Buffer[T], error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	c, err := newCore(d, n, kindOf[T](), alloc.DeviceLocal)
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{core: c}, nil
}

// FromSlice allocates a buffer holding a copy of xs. A new buffer belongs
// to no stream: the copy runs on the default stream's slot or, while a
// capture window is open there, on a slot with none, so no window records
// it and a window on the default stream does not refuse it. Streams that
// use the buffer next are ordered after the copy.
func FromSlice[T Element](d *Device, xs []T) (*Buffer[T], error) {
	b, err := NewBuffer[T](d, len(xs))
	if err != nil {
		return nil, err
	}
	if err := b.core.fill(bytesOf(xs)); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// fill is FromSlice's copy into the new buffer (see Recorder.WriteFresh).
func (c *bufferCore) fill(data []byte) error {
	if err := c.dev.enter(); err != nil {
		return err
	}
	defer c.dev.leave()
	if !c.life.enter() {
		return closedError("buffer")
	}
	defer c.done()
	c.mu.Lock()
	defer c.mu.Unlock()
	slot, err := c.dev.rec.WriteFresh(c.dev.def.id, c.claim, &c.staging, data)
	c.slots.Or(uint64(1) << uint(slot%64))
	return publicOp("Buffer.Write", err)
}

// words is the 32-bit words the buffer's elements take, rounded up to a
// whole word (a buffer's claim holds that padding; a view bound through a
// stand-in gets it there, see bounces).
func (c *bufferCore) words() int { return int(bytesFor(c.elem, c.n) / elemSize) }

// Len is the number of elements.
func (b *Buffer[T]) Len() int {
	if b == nil || b.core == nil {
		return 0
	}
	return b.core.n
}

// errNilBuffer is returned by methods of a nil or zero Buffer.
var errNilBuffer = fmt.Errorf("vkc: nil buffer (use NewBuffer or FromSlice)")

func (b *Buffer[T]) valid() error {
	if b == nil || b.core == nil {
		return errNilBuffer
	}
	return nil
}

// Device is the device the buffer lives on.
func (b *Buffer[T]) Device() *Device {
	if b == nil || b.core == nil {
		return nil
	}
	return b.core.dev
}

// bytesOf is xs's memory as bytes: exactly what a buffer of len(xs)
// elements holds, without its padding.
func bytesOf[T Element](xs []T) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
}

// use holds the buffer in use for a call on stream s, whose device the
// caller has entered: it checks that the buffer is open and of that device
// and marks the stream's slot as a user of it (Close waits for those
// slots). A nil error holds the buffer open until done: Close waits for
// the call to reach the recorder, so a launch that passed this check
// cannot be recorded on memory Close already freed.
func (c *bufferCore) use(s *Stream) error {
	if s.dev != c.dev {
		return fmt.Errorf("vkc: buffer of device %q used on a stream of another device", c.dev.info.Name)
	}
	if !c.life.enter() {
		return closedError("buffer")
	}
	// The slots are the memory's: its owner's Close waits for the work
	// of every view.
	if m, bit := c.memory(), uint64(1)<<uint(c.dev.rec.Slot(s.id)%64); m.slots.Load()&bit == 0 {
		m.slots.Or(bit)
	}
	return nil
}

// done ends a use.
func (c *bufferCore) done() { c.life.leave() }

// Write copies xs (exactly Len elements) into the buffer on the default stream.
func (b *Buffer[T]) Write(xs []T) error {
	if err := b.valid(); err != nil {
		return err
	}
	return b.WriteOn(b.core.dev.def, xs)
}

// WriteOn copies xs into the buffer on stream s. Inside s's capture window
// the write is recorded: every replay copies what the buffer's host staging
// holds then, and later writes outside the window refresh that staging, so
// feeding new inputs to a graph is a plain WriteOn with no re-capture.
func (b *Buffer[T]) WriteOn(s *Stream, xs []T) error {
	if err := b.valid(); err != nil {
		return err
	}
	c := b.core
	if len(xs) != c.n {
		return fmt.Errorf("vkc: write of %d elements into a buffer of %d", len(xs), c.n)
	}
	return c.write(s, bytesOf(xs))
}

// write is WriteOn of data, the buffer's bytes, past its checks.
func (c *bufferCore) write(s *Stream, data []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := c.use(s); err != nil {
		return err
	}
	defer c.done()
	c.mu.Lock()
	defer c.mu.Unlock()
	return publicOp("Buffer.Write", c.dev.rec.Write(s.id, c.claim, &c.staging, data))
}

// Read returns the buffer's contents after the default stream's work.
func (b *Buffer[T]) Read(ctx context.Context) ([]T, error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	return b.ReadOn(ctx, b.core.dev.def)
}

// ReadOn returns the buffer's contents after stream s's work completes. It
// fails with ErrUnwritten when no executed work wrote the bytes. A nil ctx
// is an error.
func (b *Buffer[T]) ReadOn(ctx context.Context, s *Stream) ([]T, error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errNilContext
	}
	out := make([]T, b.core.n)
	if err := b.ReadInto(ctx, s, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadInto is ReadOn into a caller's slice of exactly Len elements.
func (b *Buffer[T]) ReadInto(ctx context.Context, s *Stream, out []T) error {
	if err := b.valid(); err != nil {
		return err
	}
	if ctx == nil {
		return errNilContext
	}
	c := b.core
	if len(out) != c.n {
		return fmt.Errorf("vkc: read of %d elements into a slice of %d", c.n, len(out))
	}
	return c.read(ctx, s, bytesOf(out))
}

// read is ReadInto of out, the buffer's bytes, past its checks.
func (c *bufferCore) read(ctx context.Context, s *Stream, out []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := c.use(s); err != nil {
		return err
	}
	defer c.done()
	return publicOp("Buffer.Read", c.dev.rec.Read(ctx, s.id, c.claim, out))
}

// Close waits for calls using the buffer on other goroutines and for the
// streams that used it, then frees it. Graphs that recorded it keep its
// memory (and host staging) until they close, and so do its open views:
// the memory of a buffer and its views is freed when the last of them
// closes (or with the Device). Closing a view closes only the view.
// Idempotent.
func (b *Buffer[T]) Close() error {
	if b == nil || b.core == nil {
		return nil
	}
	return b.core.close()
}

// close is Close of a buffer or param: a Close racing Device.Close leaves
// the freeing to the device.
func (c *bufferCore) close() error {
	d := c.dev
	if d.enter() != nil {
		return nil // the device is closing, and frees the buffer
	}
	defer d.leave()
	d.mu.Lock()
	delete(d.buffers, c)
	d.mu.Unlock()
	return c.free()
}

// free waits for calls using the buffer and lets go of its hold on the
// memory (and of its host staging, once the slots that used the memory are
// done with it): the last hold frees the memory.
func (c *bufferCore) free() error {
	if !c.life.close() {
		return nil
	}
	defer c.life.finish()
	m := c.memory()
	var err error
	if c.staging != nil {
		err = c.dev.rec.Quiesce(m.slots.Load())
		c.dev.rec.ReleaseStaging(c.staging)
		c.staging = nil
	}
	if rerr := m.release(); err == nil {
		err = rerr
	}
	return publicOp("Buffer.Close", err)
}

// release drops one hold on the memory of m, a buffer owning its claim.
// The last waits for the slots that used the memory, through m or any of
// its views, and frees it.
func (m *bufferCore) release() error {
	if m.holds.Add(-1) > 0 {
		return nil
	}
	err := m.dev.rec.Quiesce(m.slots.Load())
	if ferr := m.dev.rec.Free(m.claim); ferr != nil && err == nil && !errors.Is(ferr, errs.Closed) {
		err = ferr // a closed allocator went with the device, and the claim with it
	}
	return err
}

// taint marks the buffer unwritten with cause, as work that should have
// written it and did not: a copy from another device's unwritten buffer.
func (c *bufferCore) taint(cause error) error {
	if err := c.dev.enter(); err != nil {
		return err
	}
	defer c.dev.leave()
	if !c.life.enter() {
		return closedError("buffer")
	}
	defer c.done()
	c.dev.rec.Taint([]alloc.Claim{c.claim}, cause)
	return nil
}
