package vkc

import (
	"context"
	"errors"

	"github.com/vkcompute/vkc/recorder"
)

var errNilPendingRead = errors.New("vkc: nil PendingRead (use Buffer.ReadAsync)")

// PendingRead is a buffer's contents on their way to the host: the copy
// is on the device's queue, and the goroutine that queued it goes on
// (queueing more work, which runs behind the copy). Wait gives the data
// once. A read never waited for leaks nothing: Close gives it up, and
// Device.Close reclaims those left open.
type PendingRead[T Element] struct {
	dev *Device
	pr  *recorder.PendingRead
	n   int
}

// ReadAsync queues a copy of the buffer's contents after stream s's work
// and returns at once; the returned read's Wait gives them. Other streams'
// work already issued that writes the buffer runs before the copy. A
// buffer that holds bytes no executed work wrote fails now with
// ErrUnwritten, and a read inside s's recording capture window fails with
// ErrSyncInCapture, as ReadOn does. Closing the buffer before Wait is
// safe: the copy holds its own memory.
func (b *Buffer[T]) ReadAsync(s *Stream) (*PendingRead[T], error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	c := b.core
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := c.use(s); err != nil {
		return nil, err
	}
	defer c.done()
	size := uint64(c.n) * c.elem.size()
	pr, err := c.dev.rec.ReadAsync(s.id, c.claim, size)
	if err != nil {
		return nil, publicOp("Buffer.ReadAsync", err)
	}
	return &PendingRead[T]{dev: c.dev, pr: pr, n: c.n}, nil
}

// Wait waits for the copy and returns the buffer's contents as they were
// when ReadAsync queued it. Work that was to write the buffer and failed
// makes it ErrUnwritten. If ctx ends first the read stays pending and may
// be waited for again; after any other outcome a second Wait fails with
// ErrReadTaken. A nil ctx is an error.
//
// After Device.Close, Wait fails with ErrClosed, whether or not the copy
// had completed and whether or not the read was already waited for or
// closed: Close reclaimed the copy's memory, so the data is not kept for
// a read nobody waited for in time.
func (p *PendingRead[T]) Wait(ctx context.Context) ([]T, error) {
	if p == nil || p.pr == nil {
		return nil, errNilPendingRead
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if err := p.dev.enter(); err != nil {
		return nil, err
	}
	defer p.dev.leave()
	out := make([]T, p.n)
	if err := p.pr.Wait(ctx, bytesOf(out)); err != nil {
		return nil, publicOp("PendingRead.Wait", err)
	}
	return out, nil
}

// Close gives the read up without its data; its memory goes back once the
// copy is done. Idempotent, and a no-op after Wait.
func (p *PendingRead[T]) Close() error {
	if p == nil || p.pr == nil {
		return nil
	}
	if err := p.dev.enter(); err != nil {
		return nil // Device.Close reclaimed it
	}
	defer p.dev.leave()
	return publicOp("PendingRead.Close", p.pr.Close())
}
