package recorder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// maxInflight bounds the submissions a slot keeps in flight before it waits
// for the oldest, so memory held by the drop queue stays bounded.
const maxInflight = 16

// batch is one submission: an eager command buffer, or a graph replay.
type batch struct {
	cb       CommandBuffer
	owned    bool // the batch owns cb (eager); a replay borrows the graph's
	fence    Fence
	serial   uint64
	launches int
	writes   []alloc.Claim // what the batch writes, tainted if it fails
	reads    []alloc.Claim // what it reads, which the host must not change under it
	drops    []alloc.Claim // claims returned to the pools when the fence signals
}

// addTo appends c to a batch's read or write set, skipping a claim one of
// the last few launches named: chains use the same claims over and over.
func addTo(set *[]alloc.Claim, c alloc.Claim) {
	n := len(*set)
	for i := n - 1; i >= 0 && i >= n-8; i-- {
		if (*set)[i] == c {
			return
		}
	}
	*set = append(*set, c)
}

// slot is one pooled command stream, which logical streams share by
// id % slots: a command pool, the open command buffer, the in-flight
// submissions, the descriptor-set cache and one capture window. Every
// field is guarded by mu.
type slot struct {
	r     *Recorder
	index int
	mu    sync.Mutex

	pool        CommandPool
	open        *batch
	inflight    []*batch
	spareEager  []*batch
	spareReplay []*batch
	failed      []*batch        // fence wait failed: may still be pending, kept until Close
	orphans     []CommandBuffer // closed graphs' buffers a failed batch may still use
	serial      uint64          // last submitted
	done        uint64          // highest serial known complete
	haz         hazards
	cache       *setCache
	disp        Dispatch          // scratch for CmdDispatch, so no launch allocates
	push        [MaxPushSize]byte // copy of a launch's push constants, so the caller's bytes never escape
	args        []capture.Binding // a launch's bindings and indirect group counts
	reads       []alloc.Claim
	writes      []alloc.Claim

	win     capture.StreamCapture
	winGen  uint64
	capCB   CommandBuffer
	capHaz  hazards
	touched map[alloc.ClaimKey]struct{} // claims the open window (warmup or recording) used
	// lastTouch memos touch's previous claims; it is forgotten whenever
	// touched loses entries (a claim freed, a window opened or closed).
	lastTouch  [MaxBindings + 1]alloc.Claim
	lastTouchN int
	early      []alloc.Claim // claims freed inside the recording, guarded at once
	parked     []alloc.Claim // claims freed during the warmup, released when it ends
	pins       []*setEntry   // sets the recording used, pinned for the graph
	kernels    []*Kernel     // kernels the recording used, kept for the graph
	limits     []Limit       // device lengths the recording is sized by

	prof             *profiling       // a profile in progress (profile.go), or nil
	unsubmitted      map[uint64]error // serials whose submit failed, with why (events.go)
	orphanTimestamps []Timestamps     // ended profiles' pools work that may still run writes
}

func newSlot(r *Recorder, index int) (*slot, error) {
	pool, err := r.dev.NewCommandPool()
	if err != nil {
		return nil, r.observe(err)
	}
	b := &slot{r: r, index: index, pool: pool, touched: map[alloc.ClaimKey]struct{}{}}
	b.cache = newSetCache(r, r.opts.CacheSize)
	return b, nil
}

// alloc reserves memory for work on this slot. Only a recording window of
// this slot restricts growth; its failure dooms the window.
func (b *slot) alloc(kind alloc.Kind, size uint64) (alloc.Claim, error) {
	if b.win.IsRecording() {
		c, err := b.r.mem.Alloc(kind, size)
		b.win.Fail(err)
		return c, b.r.observe(err)
	}
	c, err := b.r.mem.AllocOutsideWindow(kind, size)
	return c, b.r.observe(err)
}

// newBatch takes a recycled batch or makes one: an eager batch owns a
// command buffer, a replay batch only a fence (it borrows the graph's buffer).
func (b *slot) newBatch(owned bool) (*batch, error) {
	spare := &b.spareReplay
	if owned {
		spare = &b.spareEager
	}
	if n := len(*spare); n > 0 {
		x := (*spare)[n-1]
		*spare = (*spare)[:n-1]
		return x, nil
	}
	d := b.r.dev
	f, err := d.NewFence()
	if err != nil {
		return nil, b.r.observe(err)
	}
	x := &batch{fence: f, owned: owned}
	if owned {
		cb, err := d.AllocateCommandBuffer(b.pool)
		if err != nil {
			d.DestroyFence(f)
			return nil, b.r.observe(err)
		}
		x.cb = cb
	}
	return x, nil
}

// recycle returns a finished (or never submitted) batch to the spares. An
// eager buffer that cannot be reset is dropped with its fence.
func (b *slot) recycle(x *batch) {
	x.launches = 0
	x.writes = x.writes[:0]
	x.reads = x.reads[:0]
	x.drops = x.drops[:0]
	if !x.owned {
		x.cb = 0
		b.spareReplay = append(b.spareReplay, x)
		return
	}
	d := b.r.dev
	if err := b.r.observe(d.Reset(x.cb)); err != nil {
		d.FreeCommandBuffer(b.pool, x.cb)
		d.DestroyFence(x.fence)
		return
	}
	b.spareEager = append(b.spareEager, x)
}

// ensureOpen begins an eager command buffer if none is open.
func (b *slot) ensureOpen() error {
	if b.open != nil {
		return nil
	}
	x, err := b.newBatch(true)
	if err != nil {
		return err
	}
	if err := b.r.observe(b.r.dev.Begin(x.cb, Eager)); err != nil {
		b.recycle(x)
		return err
	}
	b.open = x
	b.haz.reset()
	b.r.busy.Or(1 << uint(b.index))
	return nil
}

// wrote records that the open batch writes c: the ledger counts it written
// from here (claims cover enqueue).
func (b *slot) wrote(c alloc.Claim) { addTo(&b.open.writes, c) }

// read records that the open batch reads c.
func (b *slot) read(c alloc.Claim) { addTo(&b.open.reads, c) }

// idleCheck clears the slot's busy bit once it has no work another slot
// (or the host) might have to wait for.
func (b *slot) idleCheck() {
	if b.open == nil && len(b.inflight) == 0 && len(b.failed) == 0 {
		b.r.busy.And(^(uint64(1) << uint(b.index)))
	}
}

// submitOpen ends and submits the open command buffer, then keeps the
// number of submissions in flight bounded.
func (b *slot) submitOpen() error {
	if err := b.submit(); err != nil {
		return err
	}
	return b.bound()
}

// submit ends and submits the open command buffer. If that fails its
// launches never run: their writes are tainted with the error (the write
// scope of the batch) and its drops go straight back.
func (b *slot) submit() (err error) {
	x := b.open
	if x == nil {
		return nil
	}
	b.open = nil
	defer b.idleCheck()
	defer b.r.taintIfFailed(&err, x.writes)
	d := b.r.dev
	if err = b.r.lostErr(); err == nil {
		d.CmdBarrier(x.cb, BarrierToHost)
		err = b.r.observe(d.End(x.cb))
	}
	if err == nil {
		err = b.r.observe(d.Submit(x.cb, x.fence))
	}
	if err != nil {
		b.serial++ // consumed: an event recorded in the batch names no later work
		b.neverRan(err)
		b.releaseDrops(x)
		b.recycle(x)
		return err
	}
	b.enqueued(x)
	return nil
}

// enqueued puts a submitted batch in flight.
func (b *slot) enqueued(x *batch) {
	b.serial++
	x.serial = b.serial
	b.inflight = append(b.inflight, x)
}

// bound waits for the oldest submission once more than maxInflight are in
// flight, so memory held by their drop queues stays bounded.
func (b *slot) bound() error {
	if len(b.inflight) > maxInflight {
		return b.waitOldest(context.Background())
	}
	return nil
}

func (b *slot) releaseDrops(x *batch) {
	for _, c := range x.drops {
		b.r.free(c)
	}
}

// waitFence waits for f, giving up when ctx ends. A context without a Done
// channel waits in one call.
func (b *slot) waitFence(ctx context.Context, f Fence) error {
	d := b.r.dev
	if ctx.Done() == nil {
		_, err := d.WaitFence(f, -1)
		return err
	}
	for {
		ok, err := d.WaitFence(f, 2*time.Millisecond)
		if err != nil || ok {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// waitOldest retires the oldest in-flight submission. A fence that reports
// an error (device loss) taints that submission's writes. Its command
// buffer, fence and drops are not recycled: after a wait that failed
// without a loss the work may still be pending, so they stay in b.failed
// until a later drain waits for them again, or Close for the device.
func (b *slot) waitOldest(ctx context.Context) (err error) {
	x := b.inflight[0]
	err = b.r.observe(b.waitFence(ctx, x.fence))
	if err != nil && ctx.Err() != nil {
		return err // still in flight: the caller gave up waiting, not the device
	}
	defer b.idleCheck()
	b.popOldest()
	if err != nil {
		b.r.taintIfFailed(&err, x.writes)
		b.failed = append(b.failed, x)
		return err
	}
	b.retire(x)
	return nil
}

// popOldest drops inflight[0] by shifting the rest down in place: reslicing
// from the front would walk the slice off its array and make every
// maxInflight-th submission reallocate it, so replays would not be
// allocation-free in steady state.
func (b *slot) popOldest() {
	n := copy(b.inflight, b.inflight[1:])
	b.inflight[n] = nil
	b.inflight = b.inflight[:n]
}

// completeThrough is the serial up to which every submission is known
// complete: below the oldest one in flight and below the oldest whose
// fence wait failed, which may still be pending and use its sets.
func (b *slot) completeThrough() uint64 {
	done := b.serial
	if len(b.inflight) > 0 {
		done = b.inflight[0].serial - 1
	}
	if len(b.failed) > 0 {
		done = min(done, b.failed[0].serial-1)
	}
	return done
}

func (b *slot) retire(x *batch) {
	b.done = b.completeThrough()
	if err := b.r.observe(b.r.dev.ResetFence(x.fence)); err != nil {
		// A fence that cannot be reset cannot be reused: destroy it and let
		// the batch make a new one next time.
		b.r.dev.DestroyFence(x.fence)
		if x.owned {
			b.r.dev.FreeCommandBuffer(b.pool, x.cb)
		}
		b.releaseDrops(x)
		return
	}
	b.releaseDrops(x)
	b.recycle(x)
}

// drain submits the open buffer and waits for every submission, then once
// more for submissions whose fence wait failed earlier. The first error is
// returned; every failed submission's writes are tainted.
func (b *slot) drain(ctx context.Context) error {
	earlier := len(b.failed) // a wait that fails now is reported now; the next drain waits again
	err := b.submitOpen()
	for len(b.inflight) > 0 {
		if werr := b.waitOldest(ctx); werr != nil {
			if ctx.Err() != nil {
				return werr
			}
			if err == nil {
				err = werr
			}
		}
	}
	if ferr := b.retryFailed(ctx, earlier); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// errMayStillRun marks a drain that left a submission whose fence could not
// be waited for: its work may still run and write what it was to write.
var errMayStillRun = errors.New("recorder: a submission whose fence wait failed may still run")

// retryFailed waits again for the first n submissions whose fence wait
// failed. One that completes is retired, so its memory can be reused and
// what it wrote (tainted when its wait failed) can be written again
// safely; one that still fails stays, and the error says its work may
// still run, so a caller about to write memory through the host must not.
// On a lost device there is nothing to wait for.
func (b *slot) retryFailed(ctx context.Context, n int) error {
	if b.r.lostErr() != nil {
		return nil
	}
	var first error
	kept := b.failed[:0]
	for i, x := range b.failed {
		if i >= n {
			kept = append(kept, x)
			continue
		}
		if err := b.r.observe(b.waitFence(ctx, x.fence)); err != nil {
			kept = append(kept, x)
			if first == nil {
				first = fmt.Errorf("%w: %w", errMayStillRun, err)
			}
			continue
		}
		b.retire(x)
	}
	clear(b.failed[len(kept):])
	b.failed = kept
	b.done = b.completeThrough()
	return first
}

// access says what a call about to use memory needs of other slots' work.
type access uint8

const (
	// ordered: pending writes submitted, so the queue runs them first
	// (every batch ends with BarrierToHost): a launch or copy.
	ordered access = iota
	// orderedWrite: pending reads and writes submitted, so the queue runs
	// them first: the claims a launch or copy writes, which work issued
	// earlier on another stream must read (or write) before.
	orderedWrite
	// hostReads: pending writes finished: the host reads the bytes.
	hostReads
	// hostWrites: pending reads and writes finished: the host changes the
	// bytes, which earlier work must not see.
	hostWrites
)

// uses reports whether batch x's work touches claims in a way a access must wait for.
func (a access) uses(x *batch, claims []alloc.Claim) bool {
	return overlapsAnyOf(x.writes, claims) || ((a == hostWrites || a == orderedWrite) && overlapsAnyOf(x.reads, claims))
}

// settleFor makes this slot's pending work on claims safe for a call of
// kind a on another slot (or the host): submitted for an ordered call,
// finished for a host access. A failed submission taints what it wrote,
// which the caller's own ledger check then sees; only a lost device, work
// that may still run under a host write, or ctx ending the wait (the work
// stays in flight) is an error.
func (b *slot) settleFor(ctx context.Context, claims []alloc.Claim, a access) error {
	if b.r.closed.Load() {
		return nil
	}
	if b.open != nil && !b.win.IsRecording() && a.uses(b.open, claims) {
		if err := b.submitOpen(); err != nil && errors.Is(err, ErrDeviceLost) {
			return err
		}
	}
	if a == ordered || a == orderedWrite {
		return nil
	}
	last := -1
	for i, x := range b.inflight {
		if a.uses(x, claims) {
			last = i
		}
	}
	for ; last >= 0; last-- {
		if err := b.waitOldest(ctx); err != nil && (ctx.Err() != nil || errors.Is(err, ErrDeviceLost)) {
			return err
		}
	}
	// Work whose fence wait failed may still be pending: the host must not
	// change what it reads or writes until the device says it completed.
	for _, x := range b.failed {
		if a.uses(x, claims) {
			if err := b.retryFailed(ctx, len(b.failed)); err != nil && (a == hostWrites || ctx.Err() != nil || errors.Is(err, ErrDeviceLost)) {
				return err
			}
			break
		}
	}
	return nil
}

// settleOthers runs settleFor on every other slot with pending work,
// before the caller takes its own slot's lock (a call never holds two);
// self < 0 settles every slot. It is how a read (or launch) on one stream
// of memory another stream's pending work writes waits for that work
// instead of seeing stale bytes. With one busy slot, the common case, it
// costs one atomic load. ctx bounds the waits of a host access (a read
// gives up as it would waiting for its own stream).
func (r *Recorder) settleOthers(ctx context.Context, self int, claims []alloc.Claim, a access) error {
	mask := r.busy.Load()
	if len(claims) == 0 {
		return nil
	}
	if self >= 0 {
		mask &^= uint64(1) << uint(self)
	}
	for i := range r.slots {
		if mask&(uint64(1)<<uint(i)) == 0 {
			continue
		}
		b := r.slots[i]
		b.mu.Lock()
		err := b.settleFor(ctx, claims, a)
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func overlapsAnyOf(set, claims []alloc.Claim) bool {
	for _, c := range claims {
		if overlapsAny(c, set) {
			return true
		}
	}
	return false
}

// mayBePending reports whether cb belongs to a submission whose fence wait
// failed, so it must not be freed before Close waits for the device.
func (b *slot) mayBePending(cb CommandBuffer) bool {
	for _, x := range b.failed {
		if x.cb == cb {
			return true
		}
	}
	return false
}

// holds reports whether batch x is still in flight or failed its fence
// wait, so memory its commands use must stay out of the pools for now.
func (b *slot) holds(x *batch) bool {
	return slices.Contains(b.inflight, x) || slices.Contains(b.failed, x)
}

// refuseNeighbour fails a call from stream s when another stream owns this
// slot's window.
func (b *slot) refuseNeighbour(s StreamID, what string) error {
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: stream %d %s refused while stream %d captures on slot %d", ErrStreamCapturing, s, what, owner, b.index)
	}
	return nil
}

// checkWait is the gate of every host wait (sync, read): a neighbour is
// refused; the owner of a recording window dooms it.
func (b *slot) checkWait(s StreamID, what string) error {
	if err := b.refuseNeighbour(s, what); err != nil {
		return err
	}
	if b.win.IsRecording() {
		err := fmt.Errorf("%w: stream %d %s", ErrSyncInCapture, s, what)
		b.win.Fail(err)
		return err
	}
	return nil
}

// Sync submits stream s's pending work and waits for all of its slot's work.
func (r *Recorder) Sync(ctx context.Context, s StreamID) error {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.checkWait(s, "sync"); err != nil {
		return err
	}
	return b.drain(ctx)
}

// Flush submits stream s's open command buffer without waiting.
func (r *Recorder) Flush(s StreamID) error {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.refuseNeighbour(s, "flush"); err != nil {
		return err
	}
	if b.win.IsRecording() {
		return nil
	}
	return b.submitOpen()
}

// failWindow dooms this slot's window if it is recording.
func (b *slot) failWindow(err error) {
	b.mu.Lock()
	b.win.Fail(err)
	b.mu.Unlock()
}

// destroy releases everything the slot holds; the device is idle.
func (b *slot) destroy() {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.r.dev
	if b.open != nil {
		b.recycle(b.open)
		b.open = nil
	}
	for _, x := range append(b.inflight, b.failed...) {
		b.releaseDrops(x)
		b.recycle(x)
	}
	b.inflight, b.failed = nil, nil
	for _, cb := range b.orphans {
		d.FreeCommandBuffer(b.pool, cb)
	}
	b.orphans = nil
	if b.capCB != 0 {
		d.FreeCommandBuffer(b.pool, b.capCB)
		b.capCB = 0
	}
	for _, x := range append(b.spareEager, b.spareReplay...) {
		if x.owned {
			d.FreeCommandBuffer(b.pool, x.cb)
		}
		d.DestroyFence(x.fence)
	}
	b.spareEager, b.spareReplay = nil, nil
	b.destroyTimestamps()
	// The pool frees the buffers of graphs still open, which name cached
	// sets: they go before the sets do.
	d.DestroyCommandPool(b.pool)
	b.cache.destroy()
	b.r.busy.And(^(uint64(1) << uint(b.index)))
}

// hazards tracks what the open command buffer read and wrote since its last
// barrier, so a barrier is recorded only where a launch depends on earlier
// work in the same buffer and independent launches overlap.
type hazards struct{ reads, writes []alloc.Claim }

// hazardLimit caps the tracked sets: past it a barrier is cheaper than the scan.
const hazardLimit = 64

func overlapsAny(c alloc.Claim, set []alloc.Claim) bool {
	for _, o := range set {
		if c.Overlaps(o) {
			return true
		}
	}
	return false
}

// needBarrier reports a read-after-write, write-after-read or
// write-after-write against the work since the last barrier.
func (h *hazards) needBarrier(args []capture.Binding) bool {
	if len(h.reads)+len(h.writes) > hazardLimit {
		return true
	}
	for _, a := range args {
		if overlapsAny(a.Claim, h.writes) || (a.Write && overlapsAny(a.Claim, h.reads)) {
			return true
		}
	}
	return false
}

func (h *hazards) add(args []capture.Binding) {
	for _, a := range args {
		if a.Write {
			h.writes = append(h.writes, a.Claim)
		} else {
			h.reads = append(h.reads, a.Claim)
		}
	}
}

func (h *hazards) reset() {
	h.reads = h.reads[:0]
	h.writes = h.writes[:0]
}
