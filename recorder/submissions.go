package recorder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
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

// submissions is one slot's work on its way through the device, like
// wgpu-core's lifetime tracker of active submissions: the open eager batch
// (recording, not yet submitted), the batches in flight in submission
// order, those whose fence wait failed (they may still run, so what they
// use stays until a wait succeeds or Close), and the spares. A batch moves
// open → in flight → retired (back to the spares, its drops freed), or in
// flight → failed → retired; one that does not submit is tainted and
// recycled, and still consumes its serial, remembered with why in
// unsubmitted (an event or profile in it reports that error instead of
// waiting for timestamps never written). Serials number submissions (an
// Event names one); done is the highest known complete. The slot's lock
// guards it.
type submissions struct {
	r     *Recorder
	pool  CommandPool
	index int // the slot's, for the recorder's busy mask

	open        *batch
	haz         hazards // what the open batch did since its last barrier
	inflight    []*batch
	failed      []*batch        // fence wait failed: may still be pending, kept until Close
	orphans     []CommandBuffer // closed graphs' buffers a failed batch may still use
	spareEager  []*batch
	spareReplay []*batch
	serial      uint64           // last submitted
	done        uint64           // highest serial known complete
	unsubmitted map[uint64]error // serials whose submit failed, with why (events.go)
}

var (
	// errBatchOpen refuses a batch submitted beside the open one: it would
	// run before work recorded earlier on the same stream.
	errBatchOpen = errors.New("a batch submitted while the slot's open batch is not")
	// errNothingInFlight refuses a wait for the oldest submission when none
	// is in flight.
	errNothingInFlight = errors.New("no submission in flight")
)

// take hands out a recycled batch or makes one for a submission beside the
// eager stream (a replay borrows the graph's buffer; a frame owns one). It
// refuses while a batch is open: that batch must be submitted first.
func (q *submissions) take(owned bool) (*batch, error) {
	if q.open != nil {
		return nil, errBatchOpen
	}
	return q.newBatch(owned)
}

// newBatch takes a recycled batch or makes one: an eager batch owns a
// command buffer, a replay batch only a fence (it borrows the graph's
// buffer). Out of memory, it reclaims (retiring the slot's finished work,
// which recycles batches) and tries once more.
func (q *submissions) newBatch(owned bool) (*batch, error) {
	if q.index >= len(q.r.slots) {
		return q.makeBatch(owned) // the slot is still being made: nothing to reclaim
	}
	return retryOutOfMemory(q.r, q.r.slots[q.index], false, func() (*batch, error) { return q.makeBatch(owned) })
}

// makeBatch is one try of newBatch.
func (q *submissions) makeBatch(owned bool) (*batch, error) {
	spare := &q.spareReplay
	if owned {
		spare = &q.spareEager
	}
	if n := len(*spare); n > 0 {
		x := (*spare)[n-1]
		*spare = (*spare)[:n-1]
		return x, nil
	}
	d := q.r.dev
	f, err := d.NewFence()
	if err != nil {
		return nil, q.r.observe(err)
	}
	x := &batch{fence: f, owned: owned}
	if owned {
		cb, err := d.AllocateCommandBuffer(q.pool)
		if err != nil {
			d.DestroyFence(f)
			return nil, q.r.observe(err)
		}
		x.cb = cb
	}
	return x, nil
}

// recycle returns a finished (or never submitted) batch to the spares. An
// eager buffer that cannot be reset is dropped with its fence.
func (q *submissions) recycle(x *batch) {
	x.launches = 0
	x.writes = x.writes[:0]
	x.reads = x.reads[:0]
	x.drops = x.drops[:0]
	if !x.owned {
		x.cb = 0
		q.spareReplay = append(q.spareReplay, x)
		return
	}
	d := q.r.dev
	if err := q.r.observe(d.Reset(x.cb)); err != nil {
		d.FreeCommandBuffer(q.pool, x.cb)
		d.DestroyFence(x.fence)
		return
	}
	q.spareEager = append(q.spareEager, x)
}

// ensureOpen begins an eager command buffer if none is open.
func (q *submissions) ensureOpen() error {
	if q.open != nil {
		return nil
	}
	x, err := q.newBatch(true)
	if err != nil {
		return err
	}
	if err := q.r.observe(q.r.dev.Begin(x.cb, Eager)); err != nil {
		q.recycle(x)
		return err
	}
	q.open = x
	q.haz.reset()
	q.markBusy()
	return nil
}

// wrote records that the open batch writes c: the ledger counts it written
// from here (claims cover enqueue).
func (q *submissions) wrote(c alloc.Claim) { addTo(&q.open.writes, c) }

// read records that the open batch reads c.
func (q *submissions) read(c alloc.Claim) { addTo(&q.open.reads, c) }

// markBusy sets the slot's bit in the recorder's busy mask: it has work
// another slot (or the host) may have to wait for.
func (q *submissions) markBusy() { q.r.busy.Or(1 << uint(q.index)) }

// idleCheck clears the slot's busy bit once it has no work another slot
// (or the host) might have to wait for.
func (q *submissions) idleCheck() {
	if q.open == nil && len(q.inflight) == 0 && len(q.failed) == 0 {
		q.r.busy.And(^(uint64(1) << uint(q.index)))
	}
}

// submitOpen ends and submits the open command buffer, then keeps the
// number of submissions in flight bounded.
func (q *submissions) submitOpen() error {
	if err := q.submit(); err != nil {
		return err
	}
	return q.bound()
}

// submit ends and submits the open command buffer. If that fails its
// launches never run: their writes are tainted with the error (the write
// scope of the batch) and its drops go straight back.
func (q *submissions) submit() (err error) {
	x := q.open
	if x == nil {
		return nil
	}
	q.open = nil
	defer q.idleCheck()
	defer q.r.taintIfFailed(&err, x.writes)
	d := q.r.dev
	if err = q.r.lostErr(); err == nil {
		d.CmdBarrier(x.cb, BarrierToHost)
		err = q.r.observe(d.End(x.cb))
	}
	if err == nil {
		err = q.r.observe(d.Submit(x.cb, x.fence))
	}
	if err != nil {
		q.serial++ // consumed: an event recorded in the batch names no later work
		q.neverRan(err)
		q.releaseDrops(x)
		q.recycle(x)
		return err
	}
	q.enqueued(x)
	return nil
}

// enqueue puts a batch submitted beside the eager stream (a replay, a
// frame) in flight; like take it refuses while a batch is open.
func (q *submissions) enqueue(x *batch) error {
	if q.open != nil {
		return errBatchOpen
	}
	q.markBusy()
	q.enqueued(x)
	return nil
}

// enqueued puts a submitted batch in flight.
func (q *submissions) enqueued(x *batch) {
	q.serial++
	x.serial = q.serial
	q.inflight = append(q.inflight, x)
}

// bound waits for the oldest submission once more than maxInflight are in
// flight, so memory held by their drop queues stays bounded.
func (q *submissions) bound() error {
	if len(q.inflight) > maxInflight {
		return q.waitOldest(context.Background())
	}
	return nil
}

func (q *submissions) releaseDrops(x *batch) {
	for _, c := range x.drops {
		q.r.free(c)
	}
}

// waitFence waits for f, giving up when ctx ends. A context without a Done
// channel waits in one call.
func (q *submissions) waitFence(ctx context.Context, f Fence) error {
	d := q.r.dev
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
// without a loss the work may still be pending, so they stay in q.failed
// until a later drain waits for them again, or Close for the device.
func (q *submissions) waitOldest(ctx context.Context) (err error) {
	if len(q.inflight) == 0 {
		return errNothingInFlight
	}
	x := q.inflight[0]
	err = q.r.observe(q.waitFence(ctx, x.fence))
	if err != nil && ctx.Err() != nil {
		return err // still in flight: the caller gave up waiting, not the device
	}
	defer q.idleCheck()
	q.popOldest()
	if err != nil {
		q.r.taintIfFailed(&err, x.writes)
		q.failed = append(q.failed, x)
		return err
	}
	q.retire(x)
	return nil
}

// waitThrough waits for every submission up to serial.
func (q *submissions) waitThrough(ctx context.Context, serial uint64) error {
	for len(q.inflight) > 0 && q.inflight[0].serial <= serial {
		if err := q.waitOldest(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitAllThrough waits for every submission up to serial, going on past
// a wait that fails (that submission moves to failed); it returns the
// first error.
func (q *submissions) waitAllThrough(ctx context.Context, serial uint64) error {
	var first error
	for len(q.inflight) > 0 && q.inflight[0].serial <= serial {
		if err := q.waitOldest(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// popOldest drops inflight[0] by shifting the rest down in place: reslicing
// from the front would walk the slice off its array and make every
// maxInflight-th submission reallocate it, so replays would not be
// allocation-free in steady state.
func (q *submissions) popOldest() {
	n := copy(q.inflight, q.inflight[1:])
	q.inflight[n] = nil
	q.inflight = q.inflight[:n]
}

// completeThrough is the serial up to which every submission is known
// complete: below the oldest one in flight and below the oldest whose
// fence wait failed, which may still be pending and use its sets.
func (q *submissions) completeThrough() uint64 {
	done := q.serial
	if len(q.inflight) > 0 {
		done = q.inflight[0].serial - 1
	}
	if len(q.failed) > 0 {
		done = min(done, q.failed[0].serial-1)
	}
	return done
}

func (q *submissions) retire(x *batch) {
	q.done = q.completeThrough()
	if err := q.r.observe(q.r.dev.ResetFence(x.fence)); err != nil {
		// A fence that cannot be reset cannot be reused: destroy it and let
		// the batch make a new one next time.
		q.r.dev.DestroyFence(x.fence)
		if x.owned {
			q.r.dev.FreeCommandBuffer(q.pool, x.cb)
		}
		q.releaseDrops(x)
		return
	}
	q.releaseDrops(x)
	q.recycle(x)
}

// drain submits the open buffer and waits for every submission, then once
// more for submissions whose fence wait failed earlier. The first error is
// returned; every failed submission's writes are tainted.
func (q *submissions) drain(ctx context.Context) error {
	earlier := len(q.failed) // a wait that fails now is reported now; the next drain waits again
	err := q.submitOpen()
	for len(q.inflight) > 0 {
		if werr := q.waitOldest(ctx); werr != nil {
			if ctx.Err() != nil {
				return werr
			}
			if err == nil {
				err = werr
			}
		}
	}
	if ferr := q.retryFailed(ctx, earlier); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// errMayStillRun marks a drain that left a submission whose fence could not
// be waited for: its work may still run and write what it was to write.
var errMayStillRun = errors.New("a submission whose fence wait failed may still run")

// retryFailed waits again for the first n submissions whose fence wait
// failed. One that completes is retired, so its memory can be reused and
// what it wrote (tainted when its wait failed) can be written again
// safely; one that still fails stays, and the error says its work may
// still run, so a caller about to write memory through the host must not.
// On a lost device there is nothing to wait for.
func (q *submissions) retryFailed(ctx context.Context, n int) error {
	if q.r.lostErr() != nil {
		return nil
	}
	var first error
	kept := q.failed[:0]
	for i, x := range q.failed {
		if i >= n {
			kept = append(kept, x)
			continue
		}
		if err := q.r.observe(q.waitFence(ctx, x.fence)); err != nil {
			kept = append(kept, x)
			if first == nil {
				first = fmt.Errorf("%w: %w", errMayStillRun, err)
			}
			continue
		}
		q.retire(x)
	}
	clear(q.failed[len(kept):])
	q.failed = kept
	q.done = q.completeThrough()
	return first
}

// settleFor makes this slot's pending work on claims safe for a call of
// kind a on another slot (or the host): submitted for an ordered call,
// finished for a host access. A failed submission taints what it wrote,
// which the caller's own ledger check then sees; only a lost device, work
// that may still run under a host write, or ctx ending the wait (the work
// stays in flight) is an error. The open batch is left alone while the
// slot records (recording says so): its window's buffer is not submitted.
func (q *submissions) settleFor(ctx context.Context, claims []alloc.Claim, a access, recording bool) error {
	if q.open != nil && !recording && a.uses(q.open, claims) {
		if err := q.submitOpen(); err != nil && errors.Is(err, errs.DeviceLost) {
			return err
		}
	}
	if a == ordered || a == orderedWrite {
		return nil
	}
	if err := q.waitInflightFor(ctx, claims, a); err != nil {
		return err
	}
	return q.retryFailedFor(ctx, claims, a)
}

// waitInflightFor waits for the submissions in flight up to the newest
// that uses claims as a must wait for.
func (q *submissions) waitInflightFor(ctx context.Context, claims []alloc.Claim, a access) error {
	last := -1
	for i, x := range q.inflight {
		if a.uses(x, claims) {
			last = i
		}
	}
	for ; last >= 0; last-- {
		if err := q.waitOldest(ctx); err != nil && (ctx.Err() != nil || errors.Is(err, errs.DeviceLost)) {
			return err
		}
	}
	return nil
}

// retryFailedFor waits again for failed submissions when one uses claims:
// such work may still be pending, and the host must not change what it
// reads or writes until the device says it completed.
func (q *submissions) retryFailedFor(ctx context.Context, claims []alloc.Claim, a access) error {
	for _, x := range q.failed {
		if !a.uses(x, claims) {
			continue
		}
		err := q.retryAllFailed(ctx)
		if err != nil && (a == hostWrites || ctx.Err() != nil || errors.Is(err, errs.DeviceLost)) {
			return err
		}
		return nil
	}
	return nil
}

// anyFailed reports whether a submission whose fence wait failed may
// still be pending.
func (q *submissions) anyFailed() bool { return len(q.failed) > 0 }

// retryAllFailed is retryFailed of every failed submission.
func (q *submissions) retryAllFailed(ctx context.Context) error {
	return q.retryFailed(ctx, len(q.failed))
}

// mayBePending reports whether cb belongs to a submission whose fence wait
// failed, so it must not be freed before Close waits for the device.
func (q *submissions) mayBePending(cb CommandBuffer) bool {
	for _, x := range q.failed {
		if x.cb == cb {
			return true
		}
	}
	return false
}

// failedAt reports whether the submission numbered serial failed its
// fence wait (and so may still be pending).
func (q *submissions) failedAt(serial uint64) bool {
	for _, x := range q.failed {
		if x.serial == serial {
			return true
		}
	}
	return false
}

// holds reports whether batch x is still in flight or failed its fence
// wait, so memory its commands use must stay out of the pools for now.
func (q *submissions) holds(x *batch) bool {
	return slices.Contains(q.inflight, x) || slices.Contains(q.failed, x)
}

// queueDrop puts c on the drop queue of the newest eager work, which may
// still use it: the open batch, else the last submission in flight, so c
// returns to the pools when that work's fence signals. With no eager work
// pending it reports false, and the caller frees c now.
func (q *submissions) queueDrop(c alloc.Claim) bool {
	switch {
	case q.open != nil:
		q.open.drops = append(q.open.drops, c)
	case len(q.inflight) > 0:
		last := q.inflight[len(q.inflight)-1]
		last.drops = append(last.drops, c)
	default:
		return false
	}
	return true
}

// deviceIdle reports whether every submission of the slot has completed
// (or none is in flight): then the open batch is submitted early, so the
// device works on it while the host records the rest of the chain instead
// of waiting for the whole batch. Only the newest fence is polled: one
// queue completes its submissions in order. A poll that fails says busy;
// the wait that retires the batch reports the error.
func (q *submissions) deviceIdle() bool {
	if len(q.inflight) == 0 {
		return true
	}
	ok, err := q.r.dev.WaitFence(q.inflight[len(q.inflight)-1].fence, 0)
	return ok && err == nil
}

// orphan keeps a closed graph's command buffer that a failed submission
// may still use, until Close has waited for the device.
func (q *submissions) orphan(cb CommandBuffer) { q.orphans = append(q.orphans, cb) }

// destroy releases every batch and orphaned buffer; the device is idle.
func (q *submissions) destroy() {
	d := q.r.dev
	if q.open != nil {
		q.recycle(q.open)
		q.open = nil
	}
	for _, x := range append(q.inflight, q.failed...) {
		q.releaseDrops(x)
		q.recycle(x)
	}
	q.inflight, q.failed = nil, nil
	for _, cb := range q.orphans {
		d.FreeCommandBuffer(q.pool, cb)
	}
	q.orphans = nil
	for _, x := range append(q.spareEager, q.spareReplay...) {
		if x.owned {
			d.FreeCommandBuffer(q.pool, x.cb)
		}
		d.DestroyFence(x.fence)
	}
	q.spareEager, q.spareReplay = nil, nil
}
