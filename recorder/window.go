package recorder

import (
	"errors"
	"slices"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// window is one slot's capture window: its state machine (Idle → Prepared
// → Recording → Idle, capture.StreamCapture) and what the window gathers
// on the way. While prepared (the warmup) it remembers the claims work
// used, and parks those freed, so the recorded run finds every range the
// warmup needed; while recording it owns the graph's command buffer and
// collects what the graph will keep: the claims freed inside it (guarded at
// once), the descriptor sets it pinned, the kernels it holds, the lengths
// that size it. The slot's lock guards it; the slot does the device and
// allocator work around it.
type window struct {
	capture.StreamCapture

	gen uint64        // recordings begun, so a set is pinned once per recording
	cb  CommandBuffer // the recording's command buffer; zero outside one
	haz hazards       // what cb did since its last barrier
	// touched holds the claims the open window used: what the allocator
	// handed out, never a range inside one (owner maps a view's range to
	// its buffer's claim), since Free names claims and a window holds
	// back what it used.
	touched map[alloc.ClaimKey]struct{}
	owner   func(alloc.Claim) alloc.Claim
	// lastTouch memos touch's previous claims; it is forgotten whenever
	// touched loses entries (a claim freed, a window opened or closed).
	lastTouch  [MaxBindings + 1]alloc.Claim
	lastTouchN int
	early      []alloc.Claim // claims freed inside the recording, guarded at once
	parked     []alloc.Claim // claims freed during the warmup, released when it ends
	// reserved holds what the warmup parked, from the recording's start:
	// each goes to the recording's first allocation of its kind and size
	// (the recorded run asks for what the warmup did, in the same order),
	// so a request never takes by good fit a range a later one needed.
	reserved []alloc.Claim
	pins     []*setEntry // sets the recording used, pinned for the graph
	kernels  []*Kernel   // kernels the recording used, kept for the graph
	limits   []Limit     // device lengths the recording is sized by
	times    *graphTimes // a profiled recording's timestamps; nil: none
}

// recording is what a recording window hands over when it ends: to a
// graph when it seals, back to the pools when it is refused. kernels is
// the recording's own (a caller releases them after the slot's lock);
// early, pins and limits share the window's arrays, valid until it records
// again (the caller holds the slot's lock and copies what it keeps), so
// ending a window allocates no more than it must.
type recording struct {
	cb      CommandBuffer
	early   []alloc.Claim
	pins    []*setEntry
	kernels []*Kernel
	limits  []Limit
	times   *graphTimes
}

var (
	// errNotRecording refuses what only a recording window takes.
	errNotRecording = errors.New("the slot's window is not recording")
	// errNothingRecorded refuses taking a recording no window began.
	errNothingRecorded = errors.New("no recording to hand over")
)

// newWindow is an idle window; owner maps a range to the claim holding it
// (nil: every range is a claim of its own).
func newWindow(owner func(alloc.Claim) alloc.Claim) window {
	if owner == nil {
		owner = func(c alloc.Claim) alloc.Claim { return c }
	}
	return window{touched: map[alloc.ClaimKey]struct{}{}, owner: owner}
}

// startRecording moves a prepared window to Recording with cb as the
// graph's command buffer (untimed: the caller adds times to profile).
// Refused (by the state machine) unless prepared, leaving the window as
// it was.
func (w *window) startRecording(cb CommandBuffer) error {
	if err := w.Begin(); err != nil {
		return err
	}
	w.cb = cb
	w.times = nil
	w.haz.reset()
	w.gen++
	w.forgetTouched()
	w.early, w.pins, w.kernels, w.limits = w.early[:0], w.pins[:0], w.kernels[:0], w.limits[:0]
	return nil
}

// recordLaunch notes a launch recorded into cb: its bindings (args, the
// indirect counts included) and limits, the set e it binds, pinned once
// per recording, and kernel k. It reports whether k is new to the
// recording, so the caller takes a hold on it. Refused outside a recording.
func (w *window) recordLaunch(args []capture.Binding, lims []Limit, e *setEntry, k *Kernel) (newKernel bool, err error) {
	if !w.IsRecording() {
		return false, errNotRecording
	}
	w.Record(args...)
	w.touch(args)
	w.touchLimits(lims)
	w.limits = append(w.limits, lims...)
	if e.pinGen != w.gen {
		e.pinGen = w.gen
		e.pins++
		w.pins = append(w.pins, e)
	}
	if slices.Contains(w.kernels, k) {
		return false, nil
	}
	w.kernels = append(w.kernels, k)
	return true, nil
}

// touch remembers the claims the open window (warmup or recording) used,
// for Free.
func (w *window) touch(args []capture.Binding) {
	if len(args) == w.lastTouchN && len(args) <= len(w.lastTouch) {
		same := true
		for i, a := range args {
			same = same && w.lastTouch[i] == a.Claim
		}
		if same {
			return // a chain touches the same claims launch after launch
		}
	}
	for _, a := range args {
		w.touched[w.owner(a.Claim)] = struct{}{}
	}
	w.lastTouchN = 0
	if len(args) <= len(w.lastTouch) {
		for i, a := range args {
			w.lastTouch[i] = a.Claim
		}
		w.lastTouchN = len(args)
	}
}

// touchClaims marks claims as used by the open window (a copy, a write).
func (w *window) touchClaims(cs ...alloc.Claim) {
	for _, c := range cs {
		w.touched[w.owner(c)] = struct{}{}
	}
}

// touchLimits marks the lengths that size a launch as used by the window,
// bound or not: a graph reads their values at every replay (checkLimits)
// and holds them by claim, so one freed during the window must be held
// back like any memory the window touched, not reused by a new length.
func (w *window) touchLimits(lims []Limit) {
	for _, lim := range lims {
		w.touched[lim.Param] = struct{}{}
	}
}

// untouch forgets c if the window used it and reports whether it did.
func (w *window) untouch(c alloc.Claim) bool {
	if _, ok := w.touched[c]; !ok {
		return false
	}
	delete(w.touched, c)
	w.lastTouchN = 0
	return true
}

// forgetTouched empties the window's touched set (and touch's memo of it).
func (w *window) forgetTouched() {
	clear(w.touched)
	w.lastTouchN = 0
}

// freedEarly notes a claim freed inside the recording, which the caller
// guarded: the graph (or the refusal) lets the guard go.
func (w *window) freedEarly(c alloc.Claim) error {
	if !w.IsRecording() {
		return errNotRecording
	}
	w.early = append(w.early, c)
	return nil
}

// park keeps a claim the warmup freed until the window begins or closes.
func (w *window) park(c alloc.Claim) { w.parked = append(w.parked, c) }

// reserveParked moves the parked claims to reserved, for the recording.
func (w *window) reserveParked() {
	w.reserved = append(w.reserved, w.parked...)
	w.parked = w.parked[:0]
}

// takeReserved hands over the first reserved claim that fits: of size
// bytes, on a page of kind (as kindOf reports it).
func (w *window) takeReserved(size uint64, fits func(alloc.Claim) bool) (alloc.Claim, bool) {
	for i, c := range w.reserved {
		if c.Size == size && fits(c) {
			w.reserved = slices.Delete(w.reserved, i, i+1)
			return c, true
		}
	}
	return alloc.Claim{}, false
}

// takeAllReserved hands over the reserved claims; the window keeps none.
func (w *window) takeAllReserved() []alloc.Claim {
	r := w.reserved
	w.reserved = w.reserved[:0]
	return r
}

// takeParked hands over the parked claims; the window keeps none.
func (w *window) takeParked() []alloc.Claim {
	p := w.parked
	w.parked = w.parked[:0]
	return p
}

// takeRecording hands over what the recording gathered, once its state
// machine has left Recording (sealed or abandoned), and forgets it.
// Refused, changing nothing, while it still records or when no recording
// began.
func (w *window) takeRecording() (recording, error) {
	if w.IsRecording() {
		return recording{}, errNotRecording
	}
	if w.cb == 0 {
		return recording{}, errNothingRecorded
	}
	rec := recording{cb: w.cb, early: w.early, pins: w.pins, kernels: slices.Clone(w.kernels), limits: w.limits, times: w.times}
	w.cb, w.times = 0, nil
	w.early, w.pins, w.kernels, w.limits = w.early[:0], w.pins[:0], w.kernels[:0], w.limits[:0]
	return rec, nil
}
