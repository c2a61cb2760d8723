package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// PendingRead is a read queued on a slot and not waited for yet: a copy
// of the source into a readback claim of its own, carried by the slot's
// submission serial. The copy is submitted when queued, so the device
// runs it while the host goes on; Wait waits for that submission alone.
// Its readback claim goes back to the pools once: at Wait, at Close (with
// the batch that copies into it, if that may still run), or with the
// allocator when the recorder closes.
type PendingRead struct {
	r      *Recorder
	slot   int
	serial uint64
	src    alloc.Claim
	rb     alloc.Claim
	n      uint64

	mu    lockrank.Mutex // serialises Wait and Close of this read
	taken bool
}

// ReadAsync queues a copy of the first n bytes of src on stream s and
// submits it, returning at once. Other streams' pending work that writes
// src is submitted first, so the one queue runs it before the copy. A
// source that holds bytes no executed work wrote fails now, as Read does.
// Inside the stream's recording window it is refused (nothing recorded
// runs before a replay), and it dooms the window, as a read does.
func (r *Recorder) ReadAsync(s StreamID, src alloc.Claim, n uint64) (*PendingRead, error) {
	if n > src.Size {
		return nil, fmt.Errorf("read of %d bytes from %d", n, src.Size)
	}
	b := r.slotOf(s)
	srcSet := []alloc.Claim{src}
	if err := r.settleOthers(context.Background(), b.index, srcSet, ordered); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return nil, err
	}
	if err := b.checkWait(s, "read"); err != nil {
		return nil, err
	}
	if err := r.ledger.Check(srcSet); err != nil {
		return nil, err
	}
	rb, err := b.alloc(alloc.Readback, max(n, 4))
	if err != nil {
		return nil, err
	}
	if err := b.subs.ensureOpen(); err != nil {
		r.free(rb)
		return nil, err
	}
	b.recordCopy(b.subs.open.cb, &b.subs.haz, src, rb, n)
	b.subs.read(src)
	before := b.subs.serial
	if err := b.subs.submitOpen(); err != nil {
		if x := b.subs.lastBatch(before + 1); x != nil {
			x.drops = append(x.drops, rb) // submitted: rb goes back with it
		} else {
			r.free(rb) // never submitted: nothing copies into rb
		}
		return nil, err
	}
	p := &PendingRead{r: r, slot: b.index, serial: before + 1, src: src, rb: rb, n: n}
	p.mu.SetRank(lockrank.PendingRead, 0)
	return p, nil
}

// lastBatch is the in-flight (or failed) submission with the given serial, or nil.
func (q *submissions) lastBatch(serial uint64) *batch {
	for _, x := range q.inflight {
		if x.serial == serial {
			return x
		}
	}
	for _, x := range q.failed {
		if x.serial == serial {
			return x
		}
	}
	return nil
}

// Wait waits for the copy and stores its bytes in out (at most n). It
// fails with an error wrapping errs.Unwritten when the work that was
// to write the source failed; an ended ctx leaves the read pending, to be
// waited for again. After a Wait that returned the bytes (or any error
// but ctx's), the read is taken: a second Wait is errs.ReadTaken.
func (p *PendingRead) Wait(ctx context.Context, out []byte) error {
	if p == nil || p.r == nil {
		return fmt.Errorf("wait of a nil pending read")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return errs.ReadTaken
	}
	r := p.r
	srcSet := []alloc.Claim{p.src}
	// Work of other slots that wrote the source ran before the copy (one
	// queue); waiting for it here lets its failure, if any, taint the
	// source before the check below.
	if err := r.settleOthers(ctx, p.slot, srcSet, hostReads); err != nil && ctx.Err() != nil {
		return err
	}
	b := r.slots[p.slot]
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	err := b.syncThrough(ctx, p.serial)
	if ctx.Err() != nil {
		return err
	}
	p.taken = true
	if x := b.subs.lastBatch(p.serial); x != nil {
		x.drops = append(x.drops, p.rb) // may still copy into rb
		return errors.Join(err, errMayStillRun)
	}
	defer r.free(p.rb)
	if err != nil && errors.Is(err, errs.DeviceLost) {
		return err
	}
	if err := r.ledger.Check(srcSet); err != nil {
		return err
	}
	if err := r.invalidate(p.rb, p.n); err != nil {
		return err
	}
	copy(out, r.mapped(p.rb)[:p.n])
	return nil
}

// Close gives the read up without its bytes: its readback claim goes back
// now, or with the submission that copies into it if that may still run.
// Idempotent, and a no-op once taken or once the recorder closed (whose
// allocator took the claim with it).
func (p *PendingRead) Close() error {
	if p == nil || p.r == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return nil
	}
	p.taken = true
	r := p.r
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if r.closed.Load() {
		return nil
	}
	b := r.slots[p.slot]
	b.mu.Lock()
	defer b.mu.Unlock()
	if x := b.subs.lastBatch(p.serial); x != nil {
		x.drops = append(x.drops, p.rb)
		return nil
	}
	r.free(p.rb)
	return nil
}
