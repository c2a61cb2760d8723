package recorder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// Event is a point on one slot's queue: after every command the recording
// stream had queued when it was recorded. It names the slot's submission
// that carries the point (its serial), so waiting for it on the host is
// waiting for that submission's fence, and ordering another slot's work
// after it is submitting that submission first: the device has one queue,
// and every submission ends with a barrier that orders it before every
// later one, so submission order is device order with no semaphore and no
// host wait.
//
// An event recorded inside a capture window (window != 0) names a point
// of the graph being recorded: only a wait on the same slot inside the
// same window may use it (a barrier in the recorded buffer).
type Event struct {
	r      *Recorder
	slot   int
	serial uint64 // the slot's submission that carries the point; 0: before all
	window uint64 // the recording window's generation it was recorded in; 0: eager

	// mu guards closed and the timestamp pool's destruction against a
	// Since reading it.
	mu     lockrank.Mutex
	closed bool
	stamp  Timestamps // one query written at the point; 0: untimed
}

// Record marks the point after the work stream s has queued so far. A
// timed event also writes the device clock there (one timestamp query,
// which Close, or the recorder's Close, destroys); an untimed one costs
// nothing on the device. Inside the stream's recording window the event
// names a point of the graph, and a timed one is refused.
func (r *Recorder) Record(s StreamID, timed bool) (*Event, error) {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return nil, err
	}
	if err := b.refuseNeighbour(s, "event record"); err != nil {
		return nil, err
	}
	ev := &Event{r: r, slot: b.index}
	ev.mu.SetRank(lockrank.Event, 0)
	if b.win.IsRecording() {
		if timed {
			return nil, fmt.Errorf("%w: a timed event inside stream %d's window (time the replay from outside it)", errs.EventInCapture, s)
		}
		ev.window = b.win.gen
		return ev, nil
	}
	if timed {
		q, err := r.dev.NewTimestamps(1)
		if err != nil {
			return nil, r.observe(err)
		}
		if err := b.subs.ensureOpen(); err != nil {
			r.dev.DestroyTimestamps(q)
			return nil, err
		}
		r.dev.CmdTimestamp(b.subs.open.cb, q, 0)
		ev.stamp = q
		r.eventsMu.Lock()
		r.timed[ev] = struct{}{}
		r.eventsMu.Unlock()
	}
	ev.serial = b.subs.serial
	if b.subs.open != nil {
		ev.serial++ // the open batch carries the point; it takes the next serial
	}
	return ev, nil
}

// neverRan remembers that the submission taking the current serial failed
// to submit: its timestamps are never written (a wait for them would never
// return), and an event in it reports why.
func (q *submissions) neverRan(err error) {
	if q.unsubmitted == nil {
		q.unsubmitted = map[uint64]error{}
	}
	q.unsubmitted[q.serial] = err
}

// submitErr is why the submission with the given serial never ran, or nil.
func (q *submissions) submitErr(serial uint64) error {
	if err, ok := q.unsubmitted[serial]; ok {
		return fmt.Errorf("the work before the event was never submitted: %w", err)
	}
	return nil
}

// check refuses an event that is nil, of another recorder or closed.
func (r *Recorder) checkEvent(ev *Event) error {
	switch {
	case ev == nil || ev.r == nil:
		return errs.EventUnrecorded
	case ev.r != r:
		return errs.EventForeign
	}
	ev.mu.Lock()
	closed := ev.closed
	ev.mu.Unlock()
	if closed {
		return fmt.Errorf("event: %w", errs.Closed)
	}
	return nil
}

// Wait orders stream s's later work after ev's point on the device,
// without a host wait. On ev's own slot that is a barrier in the buffer
// that holds both; across slots, ev's submission is submitted now if it
// is still open, so the queue runs it before anything s submits later.
// A wait inside s's recording window on an eager event of another slot
// holds for every replay: the event's submission is on the queue before
// the graph exists.
func (r *Recorder) Wait(s StreamID, ev *Event) error {
	if err := r.checkEvent(ev); err != nil {
		return err
	}
	b := r.slotOf(s)
	if ev.window == 0 && ev.slot != b.index {
		e := r.slots[ev.slot]
		e.mu.Lock()
		err := r.usable()
		if err == nil && ev.serial > e.subs.serial && e.subs.open != nil {
			err = e.subs.submitOpen()
		}
		e.mu.Unlock()
		if err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.refuseNeighbour(s, "event wait"); err != nil {
		return err
	}
	if ev.window != 0 {
		if ev.slot != b.index || !b.win.IsRecording() || b.win.gen != ev.window {
			return fmt.Errorf("%w: stream %d waits for it outside its window", errs.EventInCapture, s)
		}
		r.dev.CmdBarrier(b.win.cb, BarrierBetween)
		b.win.haz.reset()
		return nil
	}
	if ev.slot == b.index && b.subs.open != nil && ev.serial > b.subs.serial {
		// The point lies in the open batch: later launches go behind a barrier.
		r.dev.CmdBarrier(b.subs.open.cb, BarrierBetween)
		b.subs.haz.reset()
	}
	return nil
}

// eagerSlot is the slot of an eager event, refusing one recorded inside a
// window.
func (r *Recorder) eagerSlot(ev *Event) (*slot, error) {
	if err := r.checkEvent(ev); err != nil {
		return nil, err
	}
	if ev.window != 0 {
		return nil, fmt.Errorf("%w: the host cannot wait for a point of a graph", errs.EventInCapture)
	}
	return r.slots[ev.slot], nil
}

// SyncEvent waits on the host until ev's point has run: its submission is
// submitted if still open, then the slot's submissions up to it are
// retired. A failed submission taints what it wrote and is reported.
func (r *Recorder) SyncEvent(ctx context.Context, ev *Event) error {
	b, err := r.eagerSlot(ev)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.syncThrough(ctx, ev.serial); err != nil {
		return err
	}
	return b.subs.submitErr(ev.serial)
}

// syncThrough submits the open batch if it carries serial and retires
// every submission up to serial.
func (b *slot) syncThrough(ctx context.Context, serial uint64) error {
	var first error
	if serial > b.subs.serial && b.subs.open != nil && !b.win.IsRecording() {
		first = b.subs.submitOpen()
	}
	for len(b.subs.inflight) > 0 && b.subs.inflight[0].serial <= serial {
		if err := b.subs.waitOldest(ctx); err != nil {
			if ctx.Err() != nil || errors.Is(err, errs.DeviceLost) {
				return err
			}
			if first == nil {
				first = err
			}
		}
	}
	for _, x := range b.subs.failed {
		if x.serial <= serial {
			if err := b.subs.retryFailed(ctx, len(b.subs.failed)); err != nil && first == nil {
				first = err
			}
			break
		}
	}
	return first
}

// EventDone reports, without waiting, whether ev's point has run.
func (r *Recorder) EventDone(ev *Event) (bool, error) {
	b, err := r.eagerSlot(ev)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return false, err
	}
	if ev.serial > b.subs.serial {
		return false, nil // not even submitted
	}
	for _, x := range append(b.subs.inflight[:len(b.subs.inflight):len(b.subs.inflight)], b.subs.failed...) {
		if x.serial >= ev.serial {
			// One queue completes in order: the first submission at or
			// after the point says for it.
			ok, err := r.dev.WaitFence(x.fence, 0)
			return ok && err == nil, r.observe(err)
		}
	}
	return true, nil
}

// Since is the device time from start's point to end's, both timed
// events of this recorder. It waits until both points have run.
func (r *Recorder) Since(ctx context.Context, end, start *Event) (time.Duration, error) {
	var ticks [2]uint64
	for i, ev := range [2]*Event{start, end} {
		if err := r.SyncEvent(ctx, ev); err != nil {
			return 0, err
		}
		ev.mu.Lock()
		var err error
		switch {
		case ev.closed:
			err = fmt.Errorf("event: %w", errs.Closed)
		case ev.stamp == 0:
			err = errs.EventUntimed
		default:
			err = r.observe(r.dev.ReadTimestamps(ev.stamp, 0, ticks[i:i+1]))
		}
		ev.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return r.ticksToDuration(int64(ticks[1]) - int64(ticks[0])), nil
}

// ticksToDuration scales device clock ticks by the timestamp period.
func (r *Recorder) ticksToDuration(ticks int64) time.Duration {
	return time.Duration(float64(ticks) * float64(r.info.Limits.TimestampPeriod))
}

// Close releases the event's timestamp query once no pending work writes
// it (at once if its point has run, else after waiting for it).
// Idempotent; a closed event is refused by every call.
func (ev *Event) Close() error {
	if ev == nil || ev.r == nil {
		return nil
	}
	r := ev.r
	ev.mu.Lock()
	if ev.closed {
		ev.mu.Unlock()
		return nil
	}
	ev.closed = true
	stamp := ev.stamp
	ev.mu.Unlock()
	if stamp == 0 {
		return nil
	}
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	r.eventsMu.Lock()
	_, live := r.timed[ev]
	delete(r.timed, ev)
	r.eventsMu.Unlock()
	if !live || r.closed.Load() {
		return nil // the recorder's Close destroyed it
	}
	b := r.slots[ev.slot]
	b.mu.Lock()
	err := b.syncThrough(context.Background(), ev.serial)
	pending := len(b.subs.failed) > 0
	b.mu.Unlock()
	if pending {
		// Work whose fence wait failed may still write the query: the
		// recorder's Close, after the device is idle, destroys it.
		r.eventsMu.Lock()
		r.timed[ev] = struct{}{}
		r.eventsMu.Unlock()
		return err
	}
	r.dev.DestroyTimestamps(stamp)
	return err
}

// closeEvents destroys the timestamp queries of events still open; the
// device is idle.
func (r *Recorder) closeEvents() {
	r.eventsMu.Lock()
	defer r.eventsMu.Unlock()
	for ev := range r.timed {
		r.dev.DestroyTimestamps(ev.stamp)
	}
	clear(r.timed)
}
