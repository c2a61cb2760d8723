package recorder

import (
	"context"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/vk"
)

// PrepareCapture arms slot s's window for stream s: the warmup that follows
// executes, with the descriptor cache pinned and host writes given their
// persistent staging, so the recorded run reuses exactly what warmup grew.
func (r *Recorder) PrepareCapture(s StreamID) error {
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	return b.win.Prepare(s)
}

// BeginCapture starts recording: eager work on the slot is drained first,
// the graph's command buffer is opened (SIMULTANEOUS_USE, a barrier first)
// and allocator growth is locked. A driver refusal returns the slot to Idle.
func (r *Recorder) BeginCapture(s StreamID) error {
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: stream %d cannot begin the window stream %d prepared", capture.ErrCaptureState, s, owner)
	}
	if b.win.State() != capture.Prepared {
		return b.win.Begin() // the state machine says what is wrong
	}
	if err := b.drain(context.Background()); err != nil {
		_ = b.win.Abort()
		return err
	}
	cb, err := b.pool.Allocate()
	if err != nil {
		_ = b.win.Abort()
		return err
	}
	if err := r.observe(r.dev.Begin(cb, vk.SimultaneousUse)); err != nil {
		cb.Free()
		_ = b.win.Abort()
		return err
	}
	if err := b.win.Begin(); err != nil {
		cb.Free()
		return err
	}
	r.dev.CmdBarrier(cb, vk.BarrierAll)
	b.capCB = cb
	b.capHaz.reset()
	b.winGen++
	clear(b.touched)
	b.early, b.pins = b.early[:0], b.pins[:0]
	r.mem.LockGrowth()
	r.recording.Add(1)
	return nil
}

// AbortCapture drops slot s's window from Prepared (or Recording, whose
// recorded writes are then tainted: those launches never ran).
func (r *Recorder) AbortCapture(s StreamID) error {
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: stream %d cannot abort the window of stream %d", capture.ErrCaptureState, s, owner)
	}
	if !b.win.IsRecording() {
		err := b.win.Abort()
		if err == nil {
			b.cache.trim(b.done)
		}
		return err
	}
	sealed, _ := b.win.Seal(s)
	r.refuse(b, sealed, fmt.Errorf("%w: capture aborted", capture.ErrCaptureState))
	return nil
}

// endRecording undoes what BeginCapture locked.
func (r *Recorder) endRecording(b *backend) {
	r.mem.UnlockGrowth()
	r.recording.Add(-1)
}

// refuse is every path where a window does not seal: the command buffer is
// freed, pins and early guards dropped, and the recorded writes tainted.
func (r *Recorder) refuse(b *backend, sealed capture.Sealed, cause error) {
	r.endRecording(b)
	b.capCB.Free()
	b.capCB = nil
	for _, e := range b.pins {
		e.pins--
	}
	b.pins = b.pins[:0]
	if len(sealed.Writes) > 0 {
		r.ledger.Taint(sealed.Writes, cause)
	}
	r.mem.Unguard(b.early)
	b.early = b.early[:0]
	clear(b.touched)
	b.cache.trim(b.done)
}

// EndCapture closes slot s's window. Only the owner's end of a window that
// recorded everything seals a Graph; any other end (a non-owner, a doomed
// window, a driver error) frees the recording and taints its write set.
func (r *Recorder) EndCapture(s StreamID) (*Graph, error) {
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.win.IsRecording() {
		if owner, ok := b.win.Owner(); ok && owner != s {
			return nil, fmt.Errorf("%w: stream %d cannot end the window stream %d prepared", capture.ErrCaptureState, s, owner)
		}
		_, err := b.win.End(s)
		if err == nil {
			err = fmt.Errorf("%w: nothing recording", capture.ErrCaptureState)
		}
		b.cache.trim(b.done)
		return nil, err
	}
	sealed, err := b.win.Seal(s)
	if err == nil {
		r.dev.CmdBarrier(b.capCB, vk.BarrierToHost)
		err = r.observe(r.dev.End(b.capCB))
	}
	if err != nil {
		r.refuse(b, sealed, err)
		return nil, err
	}
	early := make(map[alloc.ClaimKey]struct{}, len(b.early))
	for _, c := range b.early {
		early[c] = struct{}{}
	}
	guards := make([]alloc.Claim, 0, len(sealed.Touched))
	for _, c := range sealed.Touched {
		if _, ok := early[c]; !ok {
			guards = append(guards, c)
		}
	}
	if gerr := r.mem.Guard(guards); gerr != nil {
		r.refuse(b, sealed, gerr)
		return nil, gerr
	}
	r.endRecording(b)
	g := &Graph{r: r, b: b, owner: s, cb: b.capCB, writes: sealed.Writes,
		guards: append(guards, b.early...), pins: append([]*setEntry(nil), b.pins...)}
	b.capCB = nil
	b.early, b.pins = b.early[:0], b.pins[:0]
	clear(b.touched)
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
	r      *Recorder
	b      *backend
	owner  StreamID
	cb     *vk.CommandBuffer
	writes []alloc.Claim
	guards []alloc.Claim
	pins   []*setEntry
	host   []*Staging

	lastSerial uint64
	closed     bool
}

// Writes is the graph's write set.
func (g *Graph) Writes() []alloc.Claim { return g.writes }

// Owner is the logical stream that captured the graph.
func (g *Graph) Owner() StreamID { return g.owner }

// Replay submits the graph once on its slot, after the slot's eager work.
// All or none: a replay that does not enqueue (a failed submit, a slot
// that is recording) taints the whole write set with the error, an
// enqueued one marks it written. Consecutive replays need no host wait.
func (g *Graph) Replay() error {
	b := g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if g.closed {
		return vk.ErrClosed
	}
	r := g.r
	if err := r.usable(); err != nil {
		return err
	}
	if b.win.IsRecording() {
		err := fmt.Errorf("%w: replay on slot %d while it records", ErrStreamCapturing, b.index)
		r.ledger.Taint(g.writes, err)
		return err
	}
	if err := b.submitOpen(); err != nil {
		r.ledger.Taint(g.writes, err)
		return err
	}
	x, err := b.newBatch(false)
	if err != nil {
		r.ledger.Taint(g.writes, err)
		return err
	}
	x.cb = g.cb
	if err := r.observe(r.dev.Submit(g.cb, x.fence)); err != nil {
		r.ledger.Taint(g.writes, err)
		b.recycle(x)
		return err
	}
	r.ledger.Written(g.writes)
	x.writes = append(x.writes, g.writes...)
	b.serial++
	x.serial = b.serial
	g.lastSerial = x.serial
	b.inflight = append(b.inflight, x)
	if len(b.inflight) > maxInflight {
		return b.waitOldest(context.Background())
	}
	return nil
}

// Close waits for the graph's last replay, then frees its command buffer
// and lets go of its guards, pinned sets and host staging. Idempotent.
func (g *Graph) Close() error {
	b := g.b
	b.mu.Lock()
	if g.closed {
		b.mu.Unlock()
		return nil
	}
	g.closed = true
	var err error
	for len(b.inflight) > 0 && b.inflight[0].serial <= g.lastSerial {
		if werr := b.waitOldest(context.Background()); werr != nil && err == nil {
			err = werr
		}
	}
	switch {
	case g.r.closed.Load():
	case b.mayBePending(g.cb):
		// A failed wait left the buffer possibly pending: it and the sets it
		// names stay until Close has waited for the device.
		b.orphans = append(b.orphans, g.cb)
		g.pins = nil
	default:
		g.cb.Free()
	}
	for _, e := range g.pins {
		e.pins--
	}
	g.r.mem.Unguard(g.guards)
	host := g.host
	g.pins, g.guards, g.host = nil, nil, nil
	b.mu.Unlock()
	for _, st := range host {
		if g.r.unrefStaging(st) {
			_ = g.r.Free(st.Claim)
		}
	}
	return err
}
