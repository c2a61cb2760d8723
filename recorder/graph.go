package recorder

import (
	"context"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
)

// PrepareCapture arms slot s's window for stream s: the warmup that follows
// executes, with the descriptor cache pinned, host writes given their
// persistent staging, and every page that empties kept (and every claim
// the warmup used and frees parked) so that the recorded run finds all the
// memory the warmup needed. A neighbour of an open window is refused with
// errs.StreamCapturing.
func (r *Recorder) PrepareCapture(s StreamID) error {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if owner, ok := b.win.Owner(); ok && owner != s {
		// Both: another stream owns the slot's window, and a capture call
		// met a window in a state it cannot take.
		return fmt.Errorf("%w: %w: stream %d cannot prepare a capture while stream %d captures on slot %d",
			errs.StreamCapturing, errs.CaptureState, s, owner, b.index)
	}
	if err := b.win.Prepare(s); err != nil {
		return err
	}
	b.win.forgetTouched()
	r.mem.KeepPages()
	r.active.Add(1)
	return nil
}

// windowClosed undoes what PrepareCapture armed, once the window is back to
// Idle by any path.
func (b *slot) windowClosed() {
	b.releaseParked()
	b.releaseReserved()
	b.win.forgetTouched()
	b.r.mem.UnkeepPages()
	b.r.active.Add(-1)
	b.cache.trim(b.subs.done)
}

// BeginCapture starts recording with the zero CaptureOptions.
func (r *Recorder) BeginCapture(s StreamID) error { return r.BeginCaptureWith(s, CaptureOptions{}) }

// BeginCaptureWith starts recording: eager work on the slot is drained,
// what the warmup parked is released for the recorded run, the graph's
// command buffer is opened (Replayable, a barrier first) and allocator
// growth is locked. A driver refusal returns the slot to Idle; profiling
// on a device without timestamps is refused (errs.Unsupported) with the
// window still prepared.
func (r *Recorder) BeginCaptureWith(s StreamID, o CaptureOptions) error {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: %w: stream %d cannot begin the window stream %d prepared", errs.StreamCapturing, errs.CaptureState, s, owner)
	}
	if b.win.State() != capture.Prepared {
		return b.win.Begin() // the state machine says what is wrong
	}
	if o.Profile && r.info.Limits.TimestampPeriod <= 0 {
		return fmt.Errorf("a profiled capture on %q, which takes no timestamps: %w", r.info.Name, errs.Unsupported)
	}
	cb, err := b.openRecording()
	if err != nil {
		_ = b.win.Abort()
		b.windowClosed()
		return err
	}
	if err := b.win.startRecording(cb); err != nil {
		r.dev.FreeCommandBuffer(b.pool, cb)
		return err
	}
	if o.Profile {
		b.win.times = &graphTimes{}
	}
	r.dev.CmdBarrier(cb, BarrierBetween)
	r.mem.LockGrowth()
	r.recordingBegins(b.index)
	return nil
}

// openRecording drains the slot's eager work, reserves what the warmup
// parked for the recorded run (see slot.alloc) and begins the graph's
// command buffer.
func (b *slot) openRecording() (CommandBuffer, error) {
	r := b.r
	if err := b.subs.drain(context.Background()); err != nil {
		return 0, err
	}
	b.win.reserveParked()
	cb, err := retryOutOfMemory(r, b, false, func() (CommandBuffer, error) {
		cb, err := r.dev.AllocateCommandBuffer(b.pool)
		return cb, r.observe(err)
	})
	if err != nil {
		return 0, err
	}
	if err := r.observe(r.dev.Begin(cb, Replayable)); err != nil {
		r.dev.FreeCommandBuffer(b.pool, cb)
		return 0, err
	}
	return cb, nil
}

// AbortCapture drops slot s's window from Prepared (or Recording, whose
// recorded writes are then tainted: those launches never ran).
func (r *Recorder) AbortCapture(s StreamID) error {
	var dropped []*Kernel
	defer func() { _ = r.unrefKernels(dropped) }()
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.closed.Load() {
		return errs.Closed
	}
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: %w: stream %d cannot abort the window of stream %d", errs.StreamCapturing, errs.CaptureState, s, owner)
	}
	if !b.win.IsRecording() {
		if err := b.win.Abort(); err != nil {
			return err
		}
		b.windowClosed()
		return nil
	}
	// A window doomed before the abort taints what it recorded with the
	// failure that doomed it.
	cause := fmt.Errorf("%w: capture aborted", errs.CaptureState)
	sealed, doomed, err := b.win.Abandon()
	if err != nil {
		return err
	}
	if doomed != nil {
		cause = fmt.Errorf("%w: capture aborted: %w", errs.CaptureState, doomed)
	}
	dropped = b.refuse(sealed, cause)
	return nil
}

// endRecording undoes what BeginCapture locked.
func (b *slot) endRecording() {
	b.r.recordingEnds(b.index)
	b.r.mem.UnlockGrowth()
	b.windowClosed()
}

// refuse is every path where a recording window does not seal, once its
// state machine has left Recording: the command buffer is freed, pins and
// early guards dropped, and the recorded writes tainted with cause (those
// launches never ran). It returns the kernels the recording held, which
// the caller releases once it holds no slot lock.
func (b *slot) refuse(sealed capture.Sealed, cause error) []*Kernel {
	rec, err := b.win.takeRecording()
	if err != nil {
		b.endRecording()
		return nil
	}
	return b.refuseRecording(rec, sealed, cause)
}

// refuseRecording is refuse with the recording already taken.
func (b *slot) refuseRecording(rec recording, sealed capture.Sealed, cause error) []*Kernel {
	r := b.r
	r.dev.FreeCommandBuffer(b.pool, rec.cb)
	rec.times.destroyPools(r.dev)
	for _, e := range rec.pins {
		e.pins--
	}
	r.taintIfFailed(&cause, sealed.Writes)
	r.unguard(rec.early)
	b.endRecording()
	return rec.kernels
}

// EndCapture closes slot s's window. Only the owner's end of a window that
// recorded everything seals a Graph; any other end (a non-owner, a doomed
// window, a driver error) frees the recording and taints its write set.
func (r *Recorder) EndCapture(s StreamID) (g *Graph, err error) {
	var dropped []*Kernel
	defer func() { _ = r.unrefKernels(dropped) }()
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.closed.Load() {
		return nil, errs.Closed
	}
	if !b.win.IsRecording() {
		return nil, b.endUnrecorded(s)
	}
	sealed, err := b.win.Seal(s)
	if err == nil {
		r.dev.CmdBarrier(b.win.cb, BarrierToHost)
		err = r.observe(r.dev.End(b.win.cb))
	}
	if err == nil {
		err = r.usable()
	}
	if err != nil {
		dropped = b.refuse(sealed, err)
		return nil, err
	}
	rec, err := b.win.takeRecording()
	if err != nil {
		b.endRecording()
		return nil, err
	}
	if g, err = b.newGraph(s, sealed, rec); err != nil {
		dropped = b.refuseRecording(rec, sealed, err)
		return nil, err
	}
	b.endRecording()
	return g, nil
}

// endUnrecorded is EndCapture of a window that is not recording: refused,
// and a prepared window the owner ends is closed.
func (b *slot) endUnrecorded(s StreamID) error {
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: %w: stream %d cannot end the window stream %d prepared", errs.StreamCapturing, errs.CaptureState, s, owner)
	}
	wasActive := b.win.IsActive()
	_, err := b.win.End(s)
	if err == nil {
		err = fmt.Errorf("%w: nothing recording", errs.CaptureState)
	}
	if wasActive {
		b.windowClosed()
	}
	return err
}

// graphGuards is what a sealed recording keeps out of reuse besides the
// claims freed inside it (already guarded): everything it touched, and
// every length that sizes it, bound or not (the graph reads its value at
// every replay and LengthLimit matches limits by claim, so a freed one
// reused by another param would be checked against this graph's buffers).
func graphGuards(sealed capture.Sealed, early []alloc.Claim, limits []Limit, owner func(alloc.Claim) alloc.Claim) []alloc.Claim {
	skip := make(map[alloc.ClaimKey]struct{}, len(early)+len(sealed.Touched))
	for _, c := range early {
		skip[c] = struct{}{}
	}
	guards := make([]alloc.Claim, 0, len(sealed.Touched))
	for _, c := range sealed.Touched {
		// A view's range is held by guarding its buffer's claim, once.
		o := owner(c)
		if _, ok := skip[o]; !ok {
			skip[o] = struct{}{}
			guards = append(guards, o)
		}
	}
	for _, lim := range limits {
		if _, ok := skip[lim.Param]; !ok {
			skip[lim.Param] = struct{}{}
			guards = append(guards, lim.Param)
		}
	}
	return guards
}

// newGraph guards what the sealed recording uses and builds its graph,
// registered with the recorder and holding the host staging it copies
// from. A guard that fails builds nothing.
func (b *slot) newGraph(s StreamID, sealed capture.Sealed, rec recording) (*Graph, error) {
	r := b.r
	limits := tightestLimits(rec.limits)
	guards := graphGuards(sealed, rec.early, limits, r.owner)
	if err := r.guard(guards); err != nil {
		return nil, err
	}
	g := &Graph{r: r, b: b, owner: s, cb: rec.cb, writes: sealed.Writes, touched: sealed.Touched,
		inputs: sealed.Inputs, steps: sealed.Steps,
		guards: append(guards, rec.early...), pins: slices.Clone(rec.pins), kernels: rec.kernels, limits: limits,
		times: rec.times}
	for _, st := range g.steps {
		g.dynamic = g.dynamic || st.Extents != nil || st.ReadExtents != nil
	}
	r.graphsMu.Lock()
	r.graphs[g] = struct{}{}
	r.graphsMu.Unlock()
	for _, h := range sealed.Host {
		if st := r.stagingOf(h); st != nil {
			r.refStaging(st)
			g.host = append(g.host, st)
		}
	}
	return g, nil
}

// Graph is a sealed capture: one command buffer that replays every recorded
// launch or none.
type Graph struct {
	r       *Recorder
	b       *slot
	owner   StreamID
	cb      CommandBuffer
	writes  []alloc.Claim  // what the recording writes
	touched []alloc.Claim  // everything it reads or writes, indexed by steps
	inputs  []alloc.Claim  // what it reads from before the replay
	steps   []capture.Step // each recorded launch's reads and writes
	guards  []alloc.Claim  // claims kept out of reuse while the graph lives
	pins    []*setEntry    // descriptor sets its command buffer names
	host    []*Staging     // host staging its copies re-read on every replay
	kernels []*Kernel      // kernels it launches, kept alive until Close
	limits  []Limit        // device lengths it is sized by
	dynamic bool           // some step reads or writes a prefix a device length decides
	scratch []alloc.Claim  // settleLedger's, reused under the slot's lock
	times   *graphTimes    // per-launch timestamps of a profiled capture; nil: none

	replayErr error // why the last replay of a profiled graph did not enqueue

	lastSerial uint64
	closed     bool
}

// Writes is the graph's write set.
func (g *Graph) Writes() []alloc.Claim { return g.writes }

// Owner is the logical stream that captured the graph.
func (g *Graph) Owner() StreamID { return g.owner }

// Launches is the number of launches the graph recorded (each is one step
// of its ledger settling), fixed when the window sealed.
func (g *Graph) Launches() int { return len(g.steps) }

// Replay submits the graph once on its slot, after the slot's eager work and
// after pending work of other streams that writes what it touches. All or
// none: a replay that does not enqueue (a failed submit, a slot that is
// recording) taints the whole write set with the error. One that enqueues
// settles the ledger as the same launches done eagerly would: outputs of
// launches that (transitively) read bytes unwritten at replay time inherit
// that failure; every other output counts as written. Consecutive replays
// need no host wait.
func (g *Graph) Replay() (err error) {
	r, b := g.r, g.b
	if err := r.settleOthers(context.Background(), b.index, g.touched, ordered); err != nil {
		g.replayRefused(err)
		return err
	}
	if err := r.settleOthers(context.Background(), b.index, g.writes, orderedWrite); err != nil {
		g.replayRefused(err)
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g.closed {
		return fmt.Errorf("replay of a closed graph: %w", errs.Closed)
	}
	if err := r.usable(); err != nil {
		return err
	}
	defer r.taintIfFailed(&err, g.writes)
	if g.times != nil {
		defer g.noteReplay(&err)
	}
	if b.win.IsRecording() {
		return fmt.Errorf("%w: replay on slot %d while it records", errs.StreamCapturing, b.index)
	}
	if err := r.checkLimits(g.limits); err != nil {
		return err
	}
	if at := b.profileReplayBefore(len(g.steps)); at >= 0 {
		defer b.profileAfter(at)
	}
	if err := b.subs.submit(); err != nil {
		return err
	}
	x, err := b.subs.take(false)
	if err != nil {
		return err
	}
	x.cb = g.cb
	if err := r.observe(r.dev.Submit(g.cb, x.fence)); err != nil {
		b.subs.recycle(x)
		return err
	}
	g.settleLedger()
	x.writes = append(x.writes, g.writes...)
	x.reads = append(x.reads, g.inputs...)
	if err := b.subs.enqueue(x); err != nil {
		return err
	}
	g.lastSerial = x.serial
	return b.subs.bound()
}

// settleLedger marks what an enqueued replay writes. When no input holds
// unwritten bytes and every step covers whole claims (the common case, one
// ledger lookup) every output is written. When some step's extent a device
// length decides but no byte the graph touches is unwritten (the common
// case of a dynamic graph, one lookup too) nothing changes: every step
// reads written bytes and writes bytes already written. Otherwise it does
// to the ledger what the launches done one by one would have, step by
// step: a step that reads a tainted byte passes that failure to what it
// writes, one that reads none marks what it writes as written — for a
// step whose extent a device length decides, the prefix that length
// covers now, so a later step that reads past it still sees the bytes no
// work wrote.
func (g *Graph) settleLedger() {
	l := g.r.ledger
	if !g.dynamic {
		if _, tainted := l.Failure(g.inputs); !tainted {
			l.Written(g.writes)
			return
		}
	} else if _, tainted := l.Failure(g.touched); !tainted {
		return
	}
	for _, st := range g.steps {
		id, failed := l.Failure(g.uses(st.Reads, st.ReadExtents))
		writes := g.uses(st.Writes, st.Extents)
		if failed {
			// id is live: the step's reads carry it, and inheriting it
			// keeps it carried.
			l.Inherit(writes, id)
		} else {
			l.Written(writes)
		}
	}
}

// uses is the claims a step names by index into touched, each the prefix
// its extent (when extents is not nil) covers now, in the graph's scratch:
// valid until the next call.
func (g *Graph) uses(idx []int32, extents []capture.Extent) []alloc.Claim {
	g.scratch = g.scratch[:0]
	for j, i := range idx {
		c := g.touched[i]
		if extents != nil {
			c = extents[j].Prefix(c, g.r.valueAt(extents[j].Param))
		}
		g.scratch = append(g.scratch, c)
	}
	return g.scratch
}

// tightestLimits reduces the limits a recording collected, one per
// launch and so mostly the same few lengths over and over, to the
// smallest Max per Param: all LengthLimit needs, which then scans a few
// entries per graph on every length Set instead of every recorded launch's.
func tightestLimits(all []Limit) []Limit {
	var out []Limit
next:
	for _, l := range all {
		for i := range out {
			if out[i].Param == l.Param {
				out[i].Max = min(out[i].Max, l.Max)
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// LengthLimit is the largest value the device length at param may take:
// the smallest Max of the limits of every live graph, and of every window
// recording now, that recorded work sized by it (limited is false when
// none did). A larger value would make a replay run past its buffers.
func (r *Recorder) LengthLimit(param alloc.Claim) (max uint32, limited bool) {
	for _, b := range r.slots {
		b.mu.Lock()
	}
	defer r.unlockSlots()
	return r.lengthLimit(param)
}

// lengthLimit is LengthLimit with every slot's lock held.
func (r *Recorder) lengthLimit(param alloc.Claim) (max uint32, limited bool) {
	tighten := func(lims []Limit) {
		for _, lim := range lims {
			if lim.Param == param && (!limited || lim.Max < max) {
				max, limited = lim.Max, true
			}
		}
	}
	for _, b := range r.slots {
		if b.win.IsRecording() {
			tighten(b.win.limits)
		}
	}
	r.graphsMu.Lock()
	defer r.graphsMu.Unlock()
	for g := range r.graphs {
		tighten(g.limits)
	}
	return max, limited
}

// LengthLimitError is a device length above what the buffers of work sized
// by it hold: refused by SetLength, and by a launch or replay that finds
// the length it would run with too large.
type LengthLimitError struct {
	Length, Max uint32
}

func (e *LengthLimitError) Error() string {
	return fmt.Sprintf("length %d above %d, what the buffers of the work sized by it hold", e.Length, e.Max)
}

// checkLimits refuses work sized by a length whose value now is above the
// limit the work was recorded with. SetLength refuses such values, but a
// launch checks its length before it records (outside the slot's lock), so
// a Set in between could otherwise slip a larger one under it. The caller
// holds the slot's lock, which SetLength also takes to write.
func (r *Recorder) checkLimits(lims []Limit) error {
	for _, lim := range lims {
		if v := r.valueAt(lim.Param); v > lim.Max {
			return &LengthLimitError{Length: v, Max: lim.Max}
		}
	}
	return nil
}

// Close waits for the graph's last replay, then frees its command buffer
// and lets go of its guards, pinned sets, host staging and kernels.
// Idempotent.
func (g *Graph) Close() error {
	r, b := g.r, g.b
	b.mu.Lock()
	if g.closed {
		b.mu.Unlock()
		return nil
	}
	g.closed = true
	err := b.subs.waitAllThrough(context.Background(), g.lastSerial)
	switch {
	case r.closed.Load():
	case b.subs.mayBePending(g.cb):
		// A failed wait left the buffer possibly pending: it and the sets it
		// names stay until Close has waited for the device.
		b.subs.orphan(g.cb)
		g.pins = nil
	default:
		r.dev.FreeCommandBuffer(b.pool, g.cb)
	}
	g.releaseTimes()
	for _, e := range g.pins {
		e.pins--
	}
	if !r.closed.Load() {
		r.unguard(g.guards)
	}
	host, kernels := g.host, g.kernels
	g.pins, g.guards, g.host, g.kernels = nil, nil, nil, nil
	b.mu.Unlock()
	r.graphsMu.Lock()
	delete(r.graphs, g)
	r.graphsMu.Unlock()
	for _, st := range host {
		if r.unrefStaging(st) {
			_ = r.Free(st.Claim)
		}
	}
	if kerr := r.unrefKernels(kernels); kerr != nil && err == nil {
		err = kerr
	}
	return err
}
