package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/vk"
)

// Staging is a buffer's persistent host staging: the host-visible claim
// recorded copies read on every replay. The buffer holds one reference and
// every graph that recorded a copy from it holds one; the claim returns to
// the pool only when the last is released.
type Staging struct {
	Claim alloc.Claim
	refs  int
}

// Write copies data (len == dst.Size or less) into dst on stream s.
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
// *st is the buffer's staging (nil before its first capture); Write may set it.
//
// A write that fails after the checks taints dst: its old bytes are not what
// the caller meant to be there.
func (r *Recorder) Write(s StreamID, dst alloc.Claim, st **Staging, data []byte) error {
	if uint64(len(data)) > dst.Size {
		return fmt.Errorf("vkc: write of %d bytes into %d", len(data), dst.Size)
	}
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	dstSet := []alloc.Claim{dst}
	if err := b.refuseNeighbourWrite(s, "write", dstSet); err != nil {
		return err
	}
	if err := r.write(b, dst, st, data); err != nil {
		r.ledger.Taint(dstSet, err)
		return err
	}
	return nil
}

// write is Write past its checks, under the slot's lock.
func (r *Recorder) write(b *backend, dst alloc.Claim, st **Staging, data []byte) error {
	dstSet := []alloc.Claim{dst}
	if b.win.IsActive() && *st == nil {
		c, err := r.mem.Alloc(alloc.Upload, dst.Size)
		if err != nil {
			b.win.Fail(err)
			return err
		}
		*st = &Staging{Claim: c, refs: 1}
		r.stagingMu.Lock()
		r.staging[c] = *st
		r.stagingMu.Unlock()
	}
	if b.win.IsRecording() {
		return r.recordWrite(b, dst, *st, data)
	}
	// A failed earlier submission was already tainted and reported by the
	// wait that saw it; only a lost device stops a write.
	if err := b.drain(context.Background()); err != nil && errors.Is(err, vk.ErrDeviceLost) {
		return err
	}
	if *st != nil {
		copy(r.Mapped((*st).Claim), data)
		if err := r.Block((*st).Claim).FlushRange((*st).Claim.Offset, uint64(len(data))); err != nil {
			return err
		}
	}
	if m := r.Mapped(dst); m != nil {
		copy(m, data)
		if err := r.Block(dst).FlushRange(dst.Offset, uint64(len(data))); err != nil {
			return err
		}
		r.ledger.Written(dstSet)
		return nil
	}
	src, temp := alloc.Claim{}, false
	if *st != nil {
		src = (*st).Claim
	} else {
		c, err := r.mem.Alloc(alloc.Upload, dst.Size)
		if err != nil {
			return err
		}
		src, temp = c, true
		copy(r.Mapped(c), data)
		if err := r.Block(c).FlushRange(c.Offset, uint64(len(data))); err != nil {
			_ = r.mem.Free(c)
			return err
		}
	}
	if err := b.ensureOpen(); err != nil {
		if temp {
			_ = r.mem.Free(src)
		}
		return err
	}
	if temp {
		b.open.drops = append(b.open.drops, src)
	}
	b.enqueueCopy(src, dst, uint64(len(data)))
	return nil
}

// recordCopy records src -> dst with a barrier where the open buffer has a hazard.
func (b *backend) recordCopy(cb *vk.CommandBuffer, h *hazards, src, dst alloc.Claim, size uint64) {
	args := [2]capture.Binding{{Claim: src}, {Claim: dst, Write: true}}
	if h.needBarrier(args[:]) {
		b.r.dev.CmdBarrier(cb, vk.BarrierAll)
		h.reset()
	}
	h.add(args[:])
	b.r.dev.CmdCopy(cb, b.r.Block(src), src.Offset, b.r.Block(dst), dst.Offset, size)
}

// captureCopy records src -> dst into the recording window's buffer and
// remembers both claims, as every launch recorded in a window does.
func (b *backend) captureCopy(src, dst alloc.Claim, size uint64) {
	b.recordCopy(b.capCB, &b.capHaz, src, dst, size)
	args := [2]capture.Binding{{Claim: src}, {Claim: dst, Write: true}}
	b.win.Record(args[:]...)
	b.touch(args[:])
}

// enqueueCopy records src -> dst into the open eager buffer; dst counts as
// written from here, and is tainted with the batch if its submit fails.
func (b *backend) enqueueCopy(src, dst alloc.Claim, size uint64) {
	b.recordCopy(b.open.cb, &b.haz, src, dst, size)
	b.r.ledger.Written([]alloc.Claim{dst})
	b.open.writes = append(b.open.writes, dst)
}

func (r *Recorder) recordWrite(b *backend, dst alloc.Claim, st *Staging, data []byte) error {
	copy(r.Mapped(st.Claim), data)
	if err := r.Block(st.Claim).FlushRange(st.Claim.Offset, uint64(len(data))); err != nil {
		b.win.Fail(err)
		return err
	}
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

// Read copies src into out (len(out) <= src.Size) on stream s after all of
// the slot's work has completed, failing with an error that is
// alloc.ErrUnwritten when no executed work wrote those bytes, or with the
// driver's error when its own readback copy did not surely run.
func (r *Recorder) Read(ctx context.Context, s StreamID, src alloc.Claim, out []byte) error {
	if uint64(len(out)) > src.Size {
		return fmt.Errorf("vkc: read of %d bytes from %d", len(out), src.Size)
	}
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.checkWait(s, "read"); err != nil {
		return err
	}
	srcSet := []alloc.Claim{src}
	if m := r.Mapped(src); m != nil {
		if err := drainForRead(ctx, b); err != nil {
			return err
		}
		if err := r.ledger.Check(srcSet); err != nil {
			return err
		}
		if err := r.Block(src).InvalidateRange(src.Offset, uint64(len(out))); err != nil {
			return err
		}
		copy(out, m)
		return nil
	}
	if err := r.ledger.Check(srcSet); err != nil {
		return err
	}
	rb, err := r.mem.Alloc(alloc.Readback, src.Size)
	if err != nil {
		return err
	}
	if err := b.ensureOpen(); err != nil {
		_ = r.mem.Free(rb)
		return err
	}
	x, before := b.open, b.serial
	b.recordCopy(x.cb, &b.haz, src, rb, uint64(len(out)))
	err = b.drain(ctx)
	switch {
	case x.serial <= before:
		// The copy was never submitted: rb holds nothing of src.
		_ = r.mem.Free(rb)
		return err
	case b.holds(x):
		// The context ended or the fence wait failed: the copy may still
		// write rb, so rb goes back only with its batch.
		x.drops = append(x.drops, rb)
		return err
	}
	defer func() { _ = r.mem.Free(rb) }()
	if err != nil && (ctx.Err() != nil || errors.Is(err, vk.ErrDeviceLost)) {
		return err
	}
	if err := r.ledger.Check(srcSet); err != nil {
		return err
	}
	if err := r.Block(rb).InvalidateRange(rb.Offset, uint64(len(out))); err != nil {
		return err
	}
	copy(out, r.Mapped(rb))
	return nil
}

func (r *Recorder) stagingOf(c alloc.Claim) *Staging {
	r.stagingMu.Lock()
	defer r.stagingMu.Unlock()
	return r.staging[c]
}

// LiveStaging counts host staging claims still referenced (by buffers or
// graphs), for tests that check the staging is released exactly when the
// buffer and every graph copying from it are closed.
func (r *Recorder) LiveStaging() int {
	r.stagingMu.Lock()
	defer r.stagingMu.Unlock()
	return len(r.staging)
}

// Copy records a device-to-device copy of size bytes from src to dst on
// stream s with vkCmdCopyBuffer (a transfer, at memory speed). It follows
// Launch's rules: refused for a neighbour of a capturing stream, skipped
// when src is tainted, recorded into the graph inside the owner's window.
func (r *Recorder) Copy(s StreamID, src, dst alloc.Claim, size uint64) error {
	if size > src.Size || size > dst.Size {
		return fmt.Errorf("vkc: copy of %d bytes between claims of %d and %d", size, src.Size, dst.Size)
	}
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	dstSet := []alloc.Claim{dst}
	if err := b.refuseNeighbourWrite(s, "copy", dstSet); err != nil {
		return err
	}
	if b.win.IsRecording() {
		b.captureCopy(src, dst, size)
		return nil
	}
	if id, bad := r.ledger.Failure([]alloc.Claim{src}); bad {
		r.ledger.Inherit(dstSet, id)
		return nil
	}
	if err := b.ensureOpen(); err != nil {
		r.ledger.Taint(dstSet, err)
		return err
	}
	b.enqueueCopy(src, dst, size)
	b.open.launches++
	if b.open.launches >= r.opts.BatchSize {
		return b.submitOpen()
	}
	return nil
}

// drainForRead waits for the slot before a read. A failure of other work
// was tainted where it happened and does not fail this read (the ledger
// decides whether these bytes were written); a cancelled context or a lost
// device does.
func drainForRead(ctx context.Context, b *backend) error {
	err := b.drain(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, vk.ErrDeviceLost) {
		return err
	}
	return nil
}
