package recorder

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/vk"
)

// maxInflight bounds the submissions a backend stream keeps in flight
// before it waits for the oldest, so memory held by the drop queue stays bounded.
const maxInflight = 16

// batch is one submission: an eager command buffer, or a graph replay.
type batch struct {
	cb       *vk.CommandBuffer
	owned    bool // the batch owns cb (eager); a replay borrows the graph's
	fence    *vk.Fence
	serial   uint64
	launches int
	writes   []alloc.Claim // write set of the launches in it, tainted if it fails
	drops    []alloc.Claim // staging returned to the pools when the fence signals
}

// backend is one pooled backend stream: a command pool, the open command
// buffer, the in-flight submissions, the descriptor cache and one capture
// window. Every field is guarded by mu.
type backend struct {
	r     *Recorder
	index int
	mu    sync.Mutex

	pool        *vk.CommandPool
	open        *batch
	inflight    []*batch
	spareEager  []*batch
	spareReplay []*batch
	failed      []*batch            // fence wait failed: may still be pending, kept until Close
	orphans     []*vk.CommandBuffer // closed graphs' buffers a failed batch may still use
	serial      uint64              // last submitted
	done        uint64              // highest serial known complete
	haz         hazards
	cache       *setCache
	disp        vk.Dispatch // scratch for CmdDispatch, so no launch allocates
	push        [256]byte   // copy of a launch's push constants, so the caller's bytes never escape
	reads       []alloc.Claim
	writes      []alloc.Claim

	win     capture.StreamCapture
	winGen  uint64
	capCB   *vk.CommandBuffer
	capHaz  hazards
	touched map[alloc.ClaimKey]struct{}
	early   []alloc.Claim // claims freed inside the window, guarded at once
	pins    []*setEntry
}

func newBackend(r *Recorder, index int) (*backend, error) {
	pool, err := r.dev.NewCommandPool()
	if err != nil {
		return nil, err
	}
	b := &backend{r: r, index: index, pool: pool, touched: map[alloc.ClaimKey]struct{}{}}
	b.cache = newSetCache(r.dev, r.opts.CacheSize)
	return b, nil
}

// newBatch takes a recycled batch or makes one: an eager batch owns a
// command buffer, a replay batch only a fence (it borrows the graph's buffer).
func (b *backend) newBatch(owned bool) (*batch, error) {
	spare := &b.spareReplay
	if owned {
		spare = &b.spareEager
	}
	if n := len(*spare); n > 0 {
		x := (*spare)[n-1]
		*spare = (*spare)[:n-1]
		return x, nil
	}
	f, err := b.r.dev.NewFence()
	if err != nil {
		return nil, err
	}
	x := &batch{fence: f, owned: owned}
	if owned {
		cb, err := b.pool.Allocate()
		if err != nil {
			f.Destroy()
			return nil, err
		}
		x.cb = cb
	}
	return x, nil
}

// recycle returns a finished (or never submitted) batch to the spares. An
// eager buffer that cannot be reset is dropped with its fence.
func (b *backend) recycle(x *batch) {
	x.launches = 0
	x.writes = x.writes[:0]
	x.drops = x.drops[:0]
	if !x.owned {
		x.cb = nil
		b.spareReplay = append(b.spareReplay, x)
		return
	}
	if err := b.r.dev.Reset(x.cb); err != nil {
		x.cb.Free()
		x.fence.Destroy()
		return
	}
	b.spareEager = append(b.spareEager, x)
}

// ensureOpen begins an eager command buffer if none is open.
func (b *backend) ensureOpen() error {
	if b.open != nil {
		return nil
	}
	x, err := b.newBatch(true)
	if err != nil {
		return err
	}
	if err := b.r.dev.Begin(x.cb, vk.OneTimeSubmit); err != nil {
		b.recycle(x)
		return err
	}
	b.open = x
	b.haz.reset()
	return nil
}

// submitOpen ends and submits the open command buffer. On failure its
// launches never run: their writes are tainted with the error and its
// staging goes straight back.
func (b *backend) submitOpen() error {
	x := b.open
	if x == nil {
		return nil
	}
	b.open = nil
	d := b.r.dev
	err := b.r.lostErr()
	if err == nil {
		d.CmdBarrier(x.cb, vk.BarrierToHost)
		err = b.r.observe(d.End(x.cb))
	}
	if err == nil {
		err = b.r.observe(d.Submit(x.cb, x.fence))
	}
	if err != nil {
		if len(x.writes) > 0 {
			b.r.ledger.Taint(x.writes, err)
		}
		b.releaseDrops(x)
		b.recycle(x)
		return err
	}
	b.serial++
	x.serial = b.serial
	b.inflight = append(b.inflight, x)
	if len(b.inflight) > maxInflight {
		return b.waitOldest(context.Background())
	}
	return nil
}

func (b *backend) releaseDrops(x *batch) {
	for _, c := range x.drops {
		_ = b.r.mem.Free(c)
	}
}

// waitFence waits for f, giving up when ctx ends. A context without a
// Done channel waits in one call.
func (b *backend) waitFence(ctx context.Context, f *vk.Fence) error {
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
// buffer, fence and staging are not recycled: after a wait that failed
// without a loss the work may still be pending, so they stay in b.failed
// until Close has waited for the device.
func (b *backend) waitOldest(ctx context.Context) error {
	x := b.inflight[0]
	if err := b.r.observe(b.waitFence(ctx, x.fence)); err != nil {
		if ctx.Err() != nil {
			return err
		}
		if len(x.writes) > 0 {
			b.r.ledger.Taint(x.writes, err)
		}
		b.popOldest()
		b.failed = append(b.failed, x)
		return err
	}
	b.popOldest()
	b.retire(x)
	return nil
}

// popOldest drops inflight[0] by shifting the rest down in place: reslicing
// from the front would walk the slice off its array and make every
// maxInflight-th submission reallocate it, so replays would not be
// allocation-free in steady state.
func (b *backend) popOldest() {
	n := copy(b.inflight, b.inflight[1:])
	b.inflight[n] = nil
	b.inflight = b.inflight[:n]
}

func (b *backend) retire(x *batch) {
	b.done = x.serial
	_ = b.r.dev.ResetFence(x.fence)
	b.releaseDrops(x)
	b.recycle(x)
}

// drain submits the open buffer and waits for every submission.
func (b *backend) drain(ctx context.Context) error {
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
	return err
}

// mayBePending reports whether cb belongs to a submission whose fence wait
// failed, so it must not be freed before Close waits for the device.
func (b *backend) mayBePending(cb *vk.CommandBuffer) bool {
	for _, x := range b.failed {
		if x.cb == cb {
			return true
		}
	}
	return false
}

// holds reports whether batch x is still in flight or failed its fence
// wait, so memory its commands use must stay out of the pools for now.
func (b *backend) holds(x *batch) bool {
	return slices.Contains(b.inflight, x) || slices.Contains(b.failed, x)
}

// refuseNeighbour fails a call from stream s when another stream owns this
// slot's window.
func (b *backend) refuseNeighbour(s StreamID, what string) error {
	if owner, ok := b.win.Owner(); ok && owner != s {
		return fmt.Errorf("%w: stream %d %s refused while stream %d captures on slot %d", ErrStreamCapturing, s, what, owner, b.index)
	}
	return nil
}

// refuseNeighbourWrite is refuseNeighbour for a call that would write
// writes: a refused call taints them, so nobody reads what it never wrote.
func (b *backend) refuseNeighbourWrite(s StreamID, what string, writes []alloc.Claim) error {
	err := b.refuseNeighbour(s, what)
	if err != nil && len(writes) > 0 {
		b.r.ledger.Taint(writes, err)
	}
	return err
}

// checkWait is the gate of every host wait (sync, read): a neighbour is
// refused; the owner of a recording window dooms it.
func (b *backend) checkWait(s StreamID, what string) error {
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

// Sync submits stream s's pending work and waits for all of it.
func (r *Recorder) Sync(ctx context.Context, s StreamID) error {
	b := r.backendOf(s)
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
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if b.win.IsRecording() {
		return nil
	}
	return b.submitOpen()
}

// Quiesce waits for the eager work of the given backend slots (a bit mask)
// so that memory they used can be freed. A slot whose window is recording is
// skipped: its eager work was drained when the window began and nothing
// recorded runs until a replay.
func (r *Recorder) Quiesce(slots uint64) error {
	var first error
	for i, b := range r.backends {
		if slots&(1<<uint(i%64)) == 0 {
			continue
		}
		b.mu.Lock()
		if !b.win.IsRecording() {
			if err := b.drain(context.Background()); err != nil && first == nil {
				first = err
			}
		}
		b.mu.Unlock()
	}
	return first
}

// Slot returns the backend slot index of stream s, for Quiesce masks.
func (r *Recorder) Slot(s StreamID) int { return int(s % uint64(len(r.backends))) }

// failWindow dooms this slot's window if it is recording.
func (b *backend) failWindow(err error) {
	b.mu.Lock()
	b.win.Fail(err)
	b.mu.Unlock()
}

// destroy releases everything the backend holds; the device is idle.
func (b *backend) destroy() {
	b.mu.Lock()
	defer b.mu.Unlock()
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
		cb.Free()
	}
	b.orphans = nil
	if b.capCB != nil {
		b.capCB.Free()
		b.capCB = nil
	}
	for _, x := range append(b.spareEager, b.spareReplay...) {
		if x.owned {
			x.cb.Free()
		}
		x.fence.Destroy()
	}
	b.spareEager, b.spareReplay = nil, nil
	b.cache.destroy()
	b.pool.Destroy()
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
