package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
)

// Staging is a buffer's persistent host staging: the host-visible claim
// recorded copies read on every replay. The buffer holds one reference and
// every graph that recorded a copy from it holds one; the claim returns to
// the pool only when the last is released.
type Staging struct {
	Claim alloc.Claim
	refs  int
}

// Write copies data (len(data) <= dst.Size) into dst on stream s.
//
//   - Eagerly on a unified-memory device it waits for the slot's pending
//     work, then writes through the mapping; elsewhere it fills temporary
//     upload staging and records a copy (the staging is dropped when the
//     copy's submission completes).
//   - While the slot's window is prepared (the warmup) the buffer gets its
//     persistent staging, so the recorded run needs no new page.
//   - Inside the owner's recording window the bytes go into the persistent
//     staging and a copy from it is recorded: every replay copies what the
//     staging holds then. A buffer with persistent staging keeps it fresh on
//     every eager write too, so feeding a graph is a plain write.
//
// Work on other streams that writes dst is ordered before the write. A
// batch that writes dst and whose fence wait failed is waited for again;
// while the device does not answer, the write fails with that error rather
// than land under work that may still run. *st is the buffer's staging
// (nil before its first capture); Write may set it. A write that fails
// after the checks taints dst: its old bytes are not what the caller meant
// to be there.
func (r *Recorder) Write(s StreamID, dst alloc.Claim, st **Staging, data []byte) error {
	return r.writeOn(r.slotOf(s), s, false, dst, st, data)
}

// WriteFresh fills dst, the claim of a new buffer that no stream has used
// yet, on the first slot from prefer's on that has no capture window open.
// Which slot does the write does not matter to anyone (every stream that
// uses the buffer next is ordered after it), but no window may record it:
// the check and the write happen under the chosen slot's lock, so a window
// opening meanwhile on that slot cannot take the write into its graph, as
// it would if the write borrowed a stream that then opened one. With a
// window open on every slot it is refused with errs.StreamCapturing (a write
// as prefer could be its own window's). It returns the slot that took the write, which the buffer must wait for
// before its memory is reused.
func (r *Recorder) WriteFresh(prefer StreamID, dst alloc.Claim, st **Staging, data []byte) (slot int, err error) {
	first := r.slotOf(prefer).index
	for i := range r.slots {
		b := r.slots[(first+i)%len(r.slots)]
		if err := r.writeOn(b, 0, true, dst, st, data); !errors.Is(err, errWindowOpen) {
			return b.index, err
		}
	}
	return first, fmt.Errorf("%w: a new buffer is not filled while every slot has a capture window open", errs.StreamCapturing)
}

// errWindowOpen is writeOn's refusal of a fresh write on a slot with a
// window open, before it changed anything; WriteFresh tries the next slot.
var errWindowOpen = errors.New("a capture window is open on the slot")

// writeOn is Write on slot b as stream s, or, when fresh, as no stream:
// then it is refused with errWindowOpen, changing nothing, if b has a
// window open.
func (r *Recorder) writeOn(b *slot, s StreamID, fresh bool, dst alloc.Claim, st **Staging, data []byte) (err error) {
	if uint64(len(data)) > dst.Size {
		return fmt.Errorf("write of %d bytes into %d", len(data), dst.Size)
	}
	dstSet := []alloc.Claim{dst}
	// The host writes dst itself when it is mapped, and the persistent
	// staging when there is one, which a replay pending on another slot may
	// be copying into dst: work on other slots that reads or writes either
	// must have completed, not only been submitted.
	a, claims := orderedWrite, dstSet
	if *st != nil {
		claims = []alloc.Claim{dst, (*st).Claim}
	}
	if r.mapped(dst) != nil || *st != nil {
		a = hostWrites
	}
	if err := r.settleOthers(context.Background(), b.index, claims, a); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if fresh && b.win.IsActive() {
		return errWindowOpen
	}
	defer r.taintIfFailed(&err, dstSet)
	defer func() {
		// The staging too: a replay copying it must not pass off what a
		// failed write left there (all of it, part, or none) as written.
		if err != nil && *st != nil {
			r.ledger.Taint([]alloc.Claim{(*st).Claim}, err)
		}
	}()
	if !fresh {
		if err := b.refuseNeighbour(s, "write"); err != nil {
			return err
		}
	}
	return b.write(dst, st, data)
}

// write is Write past its checks, under the slot's lock.
func (b *slot) write(dst alloc.Claim, st **Staging, data []byte) error {
	if b.win.IsRecording() {
		if err := b.refuseBorn(dst); err != nil {
			return err
		}
	}
	if err := b.stageForWindow(dst, st); err != nil {
		return err
	}
	if b.win.IsRecording() {
		return b.recordWrite(dst, *st, data)
	}
	if b.win.IsActive() {
		b.win.touchClaims(dst)
	}
	// A failed submission was tainted and reported by the wait that saw it,
	// earlier or in this drain; but its work may still run and overwrite
	// what the host writes now, so it is waited for again, and while it
	// does not answer the write fails. A lost device stops the write too.
	if err := b.subs.drain(context.Background()); err != nil && errors.Is(err, errs.DeviceLost) {
		return err
	}
	if err := b.subs.retryAllFailed(context.Background()); err != nil {
		return err
	}
	if err := b.writeHost(dst, *st, data); err != nil || b.r.mapped(dst) != nil {
		return err
	}
	return b.uploadCopy(dst, *st, data)
}

// stageForWindow gives a buffer written while a window is open its
// persistent staging, which every replay's copy reads.
func (b *slot) stageForWindow(dst alloc.Claim, st **Staging) error {
	if !b.win.IsActive() || *st != nil {
		return nil
	}
	c, err := b.alloc(alloc.Upload, dst.Size)
	if err != nil {
		return err
	}
	r := b.r
	*st = &Staging{Claim: c, refs: 1}
	r.stagingMu.Lock()
	r.staging[c] = *st
	r.stagingMu.Unlock()
	return nil
}

// writeHost writes data through the mappings the host has: the staging,
// when the buffer has one, and dst itself when it is mapped. Each counts
// as written.
func (b *slot) writeHost(dst alloc.Claim, st *Staging, data []byte) error {
	r := b.r
	n := uint64(len(data))
	if st != nil {
		copy(r.mapped(st.Claim), data)
		if err := r.flush(st.Claim, n); err != nil {
			return err
		}
		r.ledger.Written([]alloc.Claim{st.Claim})
	}
	if m := r.mapped(dst); m != nil {
		copy(m, data)
		if err := r.flush(dst, n); err != nil {
			return err
		}
		r.ledger.Written([]alloc.Claim{dst})
	}
	return nil
}

// uploadCopy copies data into dst, which the host cannot map, from the
// staging (already written) or from temporary upload memory the open
// batch drops when it completes.
func (b *slot) uploadCopy(dst alloc.Claim, st *Staging, data []byte) error {
	r := b.r
	n := uint64(len(data))
	src, temp := alloc.Claim{}, false
	if st != nil {
		src = st.Claim
	} else {
		c, err := b.alloc(alloc.Upload, dst.Size)
		if err != nil {
			return err
		}
		src, temp = c, true
		copy(r.mapped(c), data)
		if err := r.flush(c, n); err != nil {
			r.free(c)
			return err
		}
	}
	if err := b.subs.ensureOpen(); err != nil {
		if temp {
			r.free(src)
		}
		return err
	}
	if temp {
		b.subs.open.drops = append(b.subs.open.drops, src)
	}
	b.enqueueCopy(src, dst, n)
	return nil
}

// recordCopy records src -> dst with a barrier where the hazard tracker h
// says it depends on earlier work in cb.
func (b *slot) recordCopy(cb CommandBuffer, h *hazards, src, dst alloc.Claim, size uint64) {
	args := [2]capture.Binding{{Claim: src}, {Claim: dst, Write: true}}
	if h.needBarrier(args[:]) {
		b.r.dev.CmdBarrier(cb, BarrierBetween)
		h.reset()
	}
	h.add(args[:])
	b.r.dev.CmdCopy(cb, b.r.memoryOf(src), src.Offset, b.r.memoryOf(dst), dst.Offset, size)
}

// captureCopy records src -> dst into the recording window's buffer and
// remembers both claims, as every launch recorded in a window does.
func (b *slot) captureCopy(src, dst alloc.Claim, size uint64) {
	b.recordCopy(b.win.cb, &b.win.haz, src, dst, size)
	b.win.times.cut() // the copy's time is no launch's
	args := [2]capture.Binding{{Claim: src}, {Claim: dst, Write: true}}
	b.win.Record(args[:]...)
	b.win.touch(args[:])
}

// enqueueCopy records src -> dst into the open eager buffer; dst counts as
// written from here, and is tainted with the batch if its submit fails.
func (b *slot) enqueueCopy(src, dst alloc.Claim, size uint64) {
	b.recordCopy(b.subs.open.cb, &b.subs.haz, src, dst, size)
	b.r.ledger.Written([]alloc.Claim{dst})
	b.subs.wrote(dst)
	b.subs.read(src)
}

// recordWrite puts a host write inside the recording window into the
// buffer's persistent staging and records the copy every replay makes.
func (b *slot) recordWrite(dst alloc.Claim, st *Staging, data []byte) error {
	r := b.r
	copy(r.mapped(st.Claim), data)
	if err := r.flush(st.Claim, uint64(len(data))); err != nil {
		b.win.Fail(err)
		return err
	}
	r.ledger.Written([]alloc.Claim{st.Claim})
	b.captureCopy(st.Claim, dst, uint64(len(data)))
	b.win.RetainHost(st.Claim)
	return nil
}

// ReleaseStaging drops the buffer's reference to its staging. The last
// reference frees it through Free, so a window recording on another slot
// that copied from it keeps its range guarded.
func (r *Recorder) ReleaseStaging(st *Staging) {
	if st == nil {
		return
	}
	if r.unrefStaging(st) {
		_ = r.Free(st.Claim)
	}
}

// unrefStaging drops one reference and reports whether it was the last;
// the caller then frees the claim, outside any slot lock (Free takes them).
func (r *Recorder) unrefStaging(st *Staging) bool {
	r.stagingMu.Lock()
	defer r.stagingMu.Unlock()
	st.refs--
	if st.refs == 0 {
		delete(r.staging, st.Claim)
		return true
	}
	return false
}

func (r *Recorder) refStaging(st *Staging) {
	r.stagingMu.Lock()
	st.refs++
	r.stagingMu.Unlock()
}

func (r *Recorder) stagingOf(c alloc.Claim) *Staging {
	r.stagingMu.Lock()
	defer r.stagingMu.Unlock()
	return r.staging[c]
}

// LiveStaging counts host staging claims still referenced (by buffers or
// graphs).
func (r *Recorder) LiveStaging() int {
	r.stagingMu.Lock()
	defer r.stagingMu.Unlock()
	return len(r.staging)
}

// Read copies src into out (len(out) <= src.Size) on stream s once the
// work that writes src has completed: the slot's own, and pending work of
// other streams that writes src (waited for, never read stale). It fails
// with an error wrapping errs.Unwritten when no executed work wrote
// those bytes, or with the driver's error when its own readback did not
// surely run.
func (r *Recorder) Read(ctx context.Context, s StreamID, src alloc.Claim, out []byte) error {
	if uint64(len(out)) > src.Size {
		return fmt.Errorf("read of %d bytes from %d", len(out), src.Size)
	}
	b := r.slotOf(s)
	if err := r.settleOthers(ctx, b.index, []alloc.Claim{src}, hostReads); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.checkWait(s, "read"); err != nil {
		return err
	}
	if m := r.mapped(src); m != nil {
		return b.readMapped(ctx, src, m, out)
	}
	if err := r.ledger.Check([]alloc.Claim{src}); err != nil {
		return err
	}
	return b.readBack(ctx, src, out)
}

// readMapped reads mapped memory once the slot's work is done.
func (b *slot) readMapped(ctx context.Context, src alloc.Claim, m, out []byte) error {
	r := b.r
	if err := drainForRead(ctx, b); err != nil {
		return err
	}
	if err := r.ledger.Check([]alloc.Claim{src}); err != nil {
		return err
	}
	if err := r.invalidate(src, uint64(len(out))); err != nil {
		return err
	}
	copy(out, m)
	return nil
}

// readBack copies src into readback memory on the slot, waits, and reads
// it. Readback memory the copy may still write (a wait that gave up or
// failed) goes back only with its batch.
func (b *slot) readBack(ctx context.Context, src alloc.Claim, out []byte) error {
	r := b.r
	n := uint64(len(out))
	rb, err := b.alloc(alloc.Readback, src.Size)
	if err != nil {
		return err
	}
	if err := b.subs.ensureOpen(); err != nil {
		r.free(rb)
		return err
	}
	x, before := b.subs.open, b.subs.serial
	b.recordCopy(x.cb, &b.subs.haz, src, rb, n)
	err = b.subs.drain(ctx)
	switch {
	case x.serial <= before:
		// The copy was never submitted: rb holds nothing of src.
		r.free(rb)
		return err
	case b.subs.holds(x):
		// The context ended or the fence wait failed: the copy may still
		// write rb, so rb goes back only with its batch.
		x.drops = append(x.drops, rb)
		return err
	}
	defer r.free(rb)
	if err != nil && (ctx.Err() != nil || errors.Is(err, errs.DeviceLost)) {
		return err
	}
	if err := r.ledger.Check([]alloc.Claim{src}); err != nil {
		return err
	}
	if err := r.invalidate(rb, n); err != nil {
		return err
	}
	copy(out, r.mapped(rb))
	return nil
}

// Copy records a device-to-device copy of size bytes from src to dst on
// stream s (a transfer, at memory speed). It follows Launch's rules:
// refused for a neighbour of a capturing stream, skipped when src is
// tainted, recorded into the graph inside the owner's window. src and dst
// must not overlap.
func (r *Recorder) Copy(s StreamID, src, dst alloc.Claim, size uint64) (err error) {
	if size > src.Size || size > dst.Size {
		return fmt.Errorf("copy of %d bytes between claims of %d and %d", size, src.Size, dst.Size)
	}
	if src.Overlaps(dst) {
		return fmt.Errorf("copy between overlapping ranges %s and %s", src, dst)
	}
	b := r.slotOf(s)
	both := []alloc.Claim{src, dst}
	if err := r.settleOthers(context.Background(), b.index, both, ordered); err != nil {
		return err
	}
	if err := r.settleOthers(context.Background(), b.index, both[1:], orderedWrite); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	dstSet := both[1:]
	defer r.taintIfFailed(&err, dstSet)
	if err := b.refuseNeighbour(s, "copy"); err != nil {
		return err
	}
	if b.win.IsRecording() {
		if err := b.refuseBorn(src, dst); err != nil {
			return err
		}
		b.captureCopy(src, dst, size)
		return nil
	}
	if b.win.IsActive() {
		b.win.touchClaims(src, dst)
	}
	if id, bad := r.ledger.Failure(both[:1]); bad {
		r.ledger.Inherit(dstSet, id)
		return nil
	}
	if err := b.subs.ensureOpen(); err != nil {
		return err
	}
	b.enqueueCopy(src, dst, size)
	b.subs.open.launches++
	if b.subs.open.launches >= r.opts.BatchSize {
		return b.subs.submitOpen()
	}
	return nil
}

// drainForRead waits for the slot before a read. A failure of other work
// was tainted where it happened and does not fail this read (the ledger
// decides whether these bytes were written); a cancelled context or a lost
// device does.
func drainForRead(ctx context.Context, b *slot) error {
	err := b.subs.drain(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, errs.DeviceLost) {
		return err
	}
	return nil
}
