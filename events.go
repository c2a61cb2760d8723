package vkc

import (
	"context"
	"time"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// Event is a point in a stream's work, as CUDA's events are: Stream.Record
// marks the point after everything queued on the stream so far, another
// stream's Wait orders its later work after that point on the device (no
// host wait), and Sync and Done look at it from the host. A timed event
// (Stream.RecordTimed) also reads the device's clock there, so Since gives
// the device time between two points. An untimed event costs nothing on
// the device.
//
// Events recorded inside a capture window are points of the graph: a Wait
// on the same stream's slot inside the same window orders the recorded
// work there; any other use is refused with ErrEventInCapture. A stream
// recording a window may Wait on an eager event of another slot: the
// order holds for every replay.
//
// An event belongs to the Device whose stream recorded it. Two Opens of
// one GPU are two devices (as for Copy): Wait and Since refuse an event of
// the other with ErrEventForeign, and nothing orders the two devices' work
// but the host (a Sync, a read).
//
// An Event is safe for concurrent use. Close releases a timed event's
// timestamp query (Device.Close releases those left open).
type Event struct {
	dev *Device
	ev  *recorder.Event
}

// Record marks the point after the work queued on s so far.
func (s *Stream) Record() (*Event, error) { return s.record(false) }

// RecordTimed is Record that also writes the device clock at the point,
// for Since. On a device whose queue takes no timestamps it fails with
// ErrUnsupported.
func (s *Stream) RecordTimed() (*Event, error) { return s.record(true) }

func (s *Stream) record(timed bool) (*Event, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	ev, err := s.dev.rec.Record(s.id, timed)
	if err != nil {
		return nil, publicOp("Stream.Record", err)
	}
	return &Event{dev: s.dev, ev: ev}, nil
}

// Wait makes the work queued on s from now on run after ev's point, on the
// device: the host does not wait. ev may belong to any stream of s's
// device; a nil or zero Event is ErrEventUnrecorded, one of another device
// (another Open of the same GPU included) ErrEventForeign, a closed one
// ErrClosed.
func (s *Stream) Wait(ev *Event) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	rev, err := s.dev.eventOf(ev)
	if err != nil {
		return err
	}
	return publicOp("Stream.Wait", s.dev.rec.Wait(s.id, rev))
}

// eventOf is ev's recorder event, refusing a nil or zero Event and one of
// another device.
func (d *Device) eventOf(ev *Event) (*recorder.Event, error) {
	switch {
	case ev == nil || ev.ev == nil:
		return nil, ErrEventUnrecorded
	case ev.dev != d:
		return nil, errs.EventForeign
	}
	return ev.ev, nil
}

// enter holds the event's device in use for a call.
func (ev *Event) enter() error {
	if ev == nil || ev.ev == nil || ev.dev == nil {
		return ErrEventUnrecorded
	}
	return ev.dev.enter()
}

// Sync waits on the host until the work before ev's point has run. Failed
// work before it is reported, and what it would have written reads as
// ErrUnwritten. A nil ctx is an error.
func (ev *Event) Sync(ctx context.Context) error {
	if err := ev.enter(); err != nil {
		return err
	}
	defer ev.dev.leave()
	if ctx == nil {
		return errNilContext
	}
	return publicOp("Event.Sync", ev.dev.rec.SyncEvent(ctx, ev.ev))
}

// Done reports, without waiting, whether the work before ev's point has
// run. Work still only queued on the host is not done.
func (ev *Event) Done() (bool, error) {
	if err := ev.enter(); err != nil {
		return false, err
	}
	defer ev.dev.leave()
	ok, err := ev.dev.rec.EventDone(ev.ev)
	return ok, publicOp("Event.Done", err)
}

// Since is the device time from start's point to ev's, both timed events
// of one device, read from the device's clock (its timestamp period
// scales the ticks). It waits until both points have run. An untimed
// event is ErrEventUntimed; events of two devices (two Opens of one GPU
// too, whose clocks are one) are ErrEventForeign. Where two streams' work overlaps on the
// device, the time between their points may be negative.
func (ev *Event) Since(start *Event) (time.Duration, error) {
	if err := ev.enter(); err != nil {
		return 0, err
	}
	defer ev.dev.leave()
	sev, err := ev.dev.eventOf(start)
	if err != nil {
		return 0, err
	}
	d, err := ev.dev.rec.Since(context.Background(), ev.ev, sev)
	return d, publicOp("Event.Since", err)
}

// Close releases the event; a timed event's query goes once the work
// before its point has run (Close waits for it). Idempotent; a closed
// event is refused by every call (ErrClosed).
func (ev *Event) Close() error {
	if ev == nil || ev.ev == nil || ev.dev == nil {
		return nil
	}
	if err := ev.dev.enter(); err != nil {
		return nil // the device's Close released it
	}
	defer ev.dev.leave()
	return publicOp("Event.Close", ev.ev.Close())
}
