package vkc

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/recorder"
)

// Stream is a logical stream: launches on one stream run in order. Streams
// map onto slots by ID() % Device.Slots(); two streams on one slot
// share its command pool and its capture window.
type Stream struct {
	dev *Device
	id  uint64
}

var (
	errNilStream      = errors.New("vkc: nil stream (use Device.Stream or Device.NewStream)")
	errNilContext     = errors.New("vkc: nil context.Context (use context.Background())")
	errNilCaptureFunc = errors.New("vkc: Capture of a nil function")
)

// ID is the stream's logical id (0 for a nil Stream).
func (s *Stream) ID() uint64 {
	if s == nil {
		return 0
	}
	return s.id
}

// Device is the device the stream belongs to (nil for a nil Stream).
func (s *Stream) Device() *Device {
	if s == nil {
		return nil
	}
	return s.dev
}

// enter holds the stream's device in use for a call; it fails for a nil
// or zero Stream and for a stream of a nil, zero or closed Device. A nil
// error must be paired with leave.
func (s *Stream) enter() error {
	if s == nil || s.dev == nil {
		return errNilStream
	}
	return s.dev.enter()
}

// leave ends a call begun by enter.
func (s *Stream) leave() { s.dev.leave() }

// Sync submits the stream's pending work and waits for all of it (on its
// slot). Asynchronous faults surface here: what the failed work would have
// written then reads as ErrUnwritten. A nil ctx is an error.
func (s *Stream) Sync(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if ctx == nil {
		return errNilContext
	}
	return publicOp("Stream.Sync", s.dev.rec.Sync(ctx, s.id))
}

// Flush submits the stream's pending work without waiting.
func (s *Stream) Flush() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.Flush", s.dev.rec.Flush(s.id))
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
// with ErrSyncInCapture and the capture with it), and its work may use
// only buffers that existed before the window and those its warmup run
// prepared: a NewBuffer the warmup made and closed is served again to the
// same NewBuffer in the recorded run; work on any other buffer made in the
// window fails with ErrAllocInCapture and dooms the capture, whatever the
// memory pages hold (see NewBuffer). A launch's temporaries (a copied
// view's stand-in, GroupsFrom's bounded counts) are served from what the
// same launch freed in the warmup run.
//
// A nil fn is an error. If fn panics (in the warmup or the recorded run),
// Capture aborts the window first — the slot is idle again, what was
// recorded reads as ErrUnwritten, new pages are no longer refused — and
// then lets the panic continue with its original value: a panic is a
// programming error, which Capture does not turn into an error value, but
// it must not leave the slot stuck behind it.
func (s *Stream) Capture(fn func(*Stream) error) (*Graph, error) {
	return s.CaptureWith(CaptureOptions{}, fn)
}

// CaptureOptions are what a capture records besides the work. The zero
// value, Capture's, records the work alone.
type CaptureOptions struct {
	// Profile times every recorded launch on the device at every replay:
	// the graph's command buffer writes a timestamp before and after each
	// launch, and Graph.LastProfile reads the latest replay's. A graph
	// captured without it holds no timestamp and replays with no timing
	// cost at all. A device without timestamps refuses it
	// (ErrUnsupported) before the warmup runs.
	Profile bool
}

// CaptureWith is Capture with options: CaptureWith(CaptureOptions{Profile:
// true}, fn) captures a graph whose replays each leave their per-launch
// device times, the measurement an autotuner compares candidates by
// without paying for timestamps outside the graph.
func (s *Stream) CaptureWith(opts CaptureOptions, fn func(*Stream) error) (*Graph, error) {
	if s == nil || s.dev == nil {
		return nil, errNilStream
	}
	if fn == nil {
		return nil, errNilCaptureFunc
	}
	if opts.Profile && s.dev.Info().Limits.TimestampPeriod <= 0 {
		return nil, fmt.Errorf("vkc: a profiled capture on %q, which takes no timestamps: %w", s.dev.Info().Name, ErrUnsupported)
	}
	if err := s.PrepareCapture(); err != nil {
		return nil, err
	}
	if err := s.runInWindow(fn); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	if err := s.Sync(context.Background()); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	if err := s.BeginCaptureWith(opts); err != nil {
		if aerr := s.abortIfPrepared(); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, err
	}
	if err := s.runInWindow(fn); err != nil {
		return nil, errors.Join(err, s.AbortCapture())
	}
	return s.EndCapture()
}

// runInWindow runs fn inside s's window. When fn does not return (it
// panics, or exits its goroutine) the window is aborted on the way out,
// so the panic goes on with the slot already idle.
func (s *Stream) runInWindow(fn func(*Stream) error) error {
	returned := false
	defer func() {
		if !returned {
			_ = s.AbortCapture()
		}
	}()
	err := fn(s)
	returned = true
	return err
}

// PrepareCapture arms the stream's slot for a capture owned by this
// stream; the warmup that follows executes normally.
func (s *Stream) PrepareCapture() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.PrepareCapture", s.dev.rec.PrepareCapture(s.id))
}

// BeginCapture starts recording: from here launches and host writes on this
// stream are recorded, not executed.
func (s *Stream) BeginCapture() error { return s.BeginCaptureWith(CaptureOptions{}) }

// BeginCaptureWith is BeginCapture with options (see CaptureOptions). A
// profiled capture on a device without timestamps is refused with
// ErrUnsupported and leaves the window prepared, for AbortCapture or a
// plain BeginCapture.
func (s *Stream) BeginCaptureWith(opts CaptureOptions) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.BeginCaptureWith", s.dev.rec.BeginCaptureWith(s.id, recorder.CaptureOptions{Profile: opts.Profile}))
}

// abortIfPrepared aborts s's window when a begin refused left it
// prepared; a window the refusal already closed needs nothing.
func (s *Stream) abortIfPrepared() error {
	if err := s.AbortCapture(); err != nil && !errors.Is(err, ErrCaptureState) {
		return err
	}
	return nil
}

// EndCapture closes the window and seals it into a Graph. A window that was
// doomed (a read or sync inside it, an allocation that needed a page, a
// driver error), or an end from a stream that does not own it, seals
// nothing: the recorded outputs then read as ErrUnwritten. A window
// prepared but not begun is aborted (ErrCaptureState).
func (s *Stream) EndCapture() (*Graph, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	rg, err := s.dev.rec.EndCapture(s.id)
	if err != nil {
		return nil, publicOp("Stream.EndCapture", err)
	}
	g := &Graph{g: rg, dev: s.dev}
	s.dev.mu.Lock()
	s.dev.graphs[g] = struct{}{}
	s.dev.mu.Unlock()
	return g, nil
}

// AbortCapture drops a prepared (or recording) window owned by this stream.
func (s *Stream) AbortCapture() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.AbortCapture", s.dev.rec.AbortCapture(s.id))
}

// capturing reports whether a capture window records on s's slot.
func (s *Stream) capturing() bool { return s.dev.rec.Recording(s.id) }
