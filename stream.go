package vkc

import (
	"context"
	"errors"
	"fmt"
)

// Stream is a logical stream: launches on one stream run in order. Streams
// map onto backend slots by ID() % Device.Slots(); two streams on one slot
// share its command pool and its capture window.
type Stream struct {
	dev *Device
	id  uint64
}

// ID is the stream's logical id.
func (s *Stream) ID() uint64 { return s.id }

// Device is the device the stream belongs to.
func (s *Stream) Device() *Device { return s.dev }

func (s *Stream) usable() error {
	if s == nil || s.dev == nil {
		return fmt.Errorf("vkc: nil stream")
	}
	if s.dev.isClosed() {
		return ErrClosed
	}
	return nil
}

// Sync submits the stream's pending work and waits for all of it (on its
// slot). Asynchronous faults surface here: what the failed work would have
// written then reads as ErrUnwritten.
func (s *Stream) Sync(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.dev.rec.Sync(ctx, s.id)
}

// Flush submits the stream's pending work without waiting.
func (s *Stream) Flush() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.dev.rec.Flush(s.id)
}

// Capture records fn's work into a Graph. fn runs twice: once as the warmup,
// which executes (so the memory pools grow to the working set and the
// results are real), then once recorded, which executes nothing. The graph
// then replays the recorded work for the cost of one submit.
//
// The contract: keep every buffer fn touches alive while the graph lives;
// feed new inputs by writing the same buffers on this stream between
// replays; read outputs after a replay. Shapes, scalars and group counts are
// baked in. Inside the recorded run fn must not read or sync (that fails
// with ErrSyncInCapture and the capture with it) and may not need new memory
// pages (ErrAllocInCapture).
func (s *Stream) Capture(fn func(*Stream) error) (*Graph, error) {
	if err := s.PrepareCapture(); err != nil {
		return nil, err
	}
	if err := fn(s); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	if err := s.dev.rec.Sync(context.Background(), s.id); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	if err := fn(s); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	return s.EndCapture()
}

// PrepareCapture arms the stream's slot for a capture owned by this
// stream; the warmup that follows executes normally.
func (s *Stream) PrepareCapture() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.dev.rec.PrepareCapture(s.id)
}

// BeginCapture starts recording: from here launches and host writes on this
// stream are recorded, not executed.
func (s *Stream) BeginCapture() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.dev.rec.BeginCapture(s.id)
}

// EndCapture closes the window and seals it into a Graph. A window that was
// doomed (a read or sync inside it, an allocation that needed a page, a
// driver error), or an end from a stream that does not own it, seals
// nothing: the recorded outputs then read as ErrUnwritten.
func (s *Stream) EndCapture() (*Graph, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	rg, err := s.dev.rec.EndCapture(s.id)
	if err != nil {
		return nil, err
	}
	g := &Graph{g: rg, dev: s.dev}
	s.dev.mu.Lock()
	s.dev.graphs[g] = struct{}{}
	s.dev.mu.Unlock()
	return g, nil
}

// AbortCapture drops a prepared (or recording) window owned by this stream.
func (s *Stream) AbortCapture() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.dev.rec.AbortCapture(s.id)
}
