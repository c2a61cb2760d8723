package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// slot is one pooled command stream, which logical streams share by
// id % slots: a command pool, its submissions (the open batch and the ones
// in flight), the descriptor-set cache and one capture window. The two
// state machines live in their own types (submissions, window); the slot
// runs calls across them and the device. Every field is guarded by mu.
type slot struct {
	r     *Recorder
	index int
	mu    lockrank.Mutex

	pool  CommandPool
	subs  submissions
	win   window
	cache *setCache

	// A launch's scratch, so none allocates.
	disp   Dispatch          // for CmdDispatch
	push   [MaxPushSize]byte // a copy of the push constants, so the caller's bytes never escape
	args   []capture.Binding // the bindings and the indirect group counts
	reads  []alloc.Claim
	writes []alloc.Claim

	prof             *profiling   // a profile in progress (profile.go), or nil
	orphanTimestamps []Timestamps // ended profiles' pools work that may still run writes
}

func newSlot(r *Recorder, index int) (*slot, error) {
	pool, err := r.dev.NewCommandPool()
	if err != nil {
		return nil, r.observe(err)
	}
	b := &slot{r: r, index: index, pool: pool, win: newWindow(r.owner),
		subs: submissions{r: r, pool: pool, index: index}}
	b.mu.SetRank(lockrank.Slot, index)
	b.cache = newSetCache(r, r.opts.CacheSize)
	b.cache.self = b
	return b, nil
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
// kind a on another slot (or the host); see submissions.settleFor. A
// closed recorder has nothing to settle.
func (b *slot) settleFor(ctx context.Context, claims []alloc.Claim, a access) error {
	if b.r.closed.Load() {
		return nil
	}
	return b.subs.settleFor(ctx, claims, a, b.win.IsRecording())
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

// alloc reserves memory for work on this slot. Only a recording window of
// this slot restricts growth; its failure dooms the window.
func (b *slot) alloc(kind alloc.Kind, size uint64) (alloc.Claim, error) {
	if b.win.IsRecording() {
		// The warmup's own claim first: freed and allocated again, the
		// allocator's good fit could give a smaller request a range a
		// larger one after it needed, and no page may be added now.
		if c, ok := b.reservedFor(kind, size); ok {
			return c, nil
		}
		c, err := b.r.mem.Alloc(kind, size)
		if errors.Is(err, errs.AllocInCapture) && b.releaseReserved() {
			c, err = b.r.mem.Alloc(kind, size) // a request the warmup did not make
		}
		b.win.Fail(err)
		return c, b.r.observe(err)
	}
	c, err := retryOutOfMemory(b.r, b, false, func() (alloc.Claim, error) { return b.r.mem.AllocOutsideWindow(kind, size) })
	return c, b.r.observe(err)
}

// reservedFor takes from the slot's recording window a claim its warmup
// freed, of kind and size bytes, for an allocation of the recorded run;
// the claim is as clean as one freed and allocated again. The caller
// holds b.mu.
func (b *slot) reservedFor(kind alloc.Kind, size uint64) (alloc.Claim, bool) {
	if !b.win.IsRecording() {
		return alloc.Claim{}, false
	}
	c, ok := b.win.takeReserved(size, func(c alloc.Claim) bool {
		_, k, ok := b.r.mem.Page(c.Page)
		return ok && k == kind
	})
	if ok {
		b.r.ledger.Written([]alloc.Claim{c})
	}
	return c, ok
}

// refuseNeighbour fails a call from stream s when another stream owns this
// slot's window.
func (b *slot) refuseNeighbour(s StreamID, what string) error {
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: stream %d %s refused while stream %d captures on slot %d", errs.StreamCapturing, s, what, owner, b.index)
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
		err := fmt.Errorf("%w: stream %d %s", errs.SyncInCapture, s, what)
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
	return b.subs.drain(ctx)
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
	return b.subs.submitOpen()
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
	b.subs.destroy()
	if b.win.cb != 0 {
		d.FreeCommandBuffer(b.pool, b.win.cb)
		b.win.cb = 0
	}
	b.win.times.destroyPools(d)
	b.win.times = nil
	b.destroyGraphTimes()
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
