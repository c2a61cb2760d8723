package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
)

// Memory pressure: what the recorder does when a request finds no room,
// under the limit (Options.MemoryLimit) or in the driver. Every allocation
// site that can run out (pages, staging and readback memory, which are
// pages too, descriptor pools, command buffers and their fences) goes
// through retryOutOfMemory: reclaim, retry once, then the failure, which
// matches errs.OutOfMemory and keeps the driver's result or the
// limit's numbers in its chain.

// outOfMemory reports whether err says memory ran out, in the device, in
// the host or under the limit (the allocator's refusal wraps
// errs.OutOfMemory too): the failures reclaiming may cure.
func outOfMemory(err error) bool { return errors.Is(err, errs.OutOfMemory) }

// retryOutOfMemory runs make, and when it fails for want of memory,
// reclaims what nothing uses and runs it once more. self is the slot whose
// lock the caller holds (nil: none), which bounds what may be reclaimed;
// recording says the caller is recording into self's open eager batch,
// which must then stay open under it.
func retryOutOfMemory[T any](r *Recorder, self *slot, recording bool, make func() (T, error)) (T, error) {
	v, err := make()
	if !outOfMemory(err) {
		return v, err
	}
	r.reclaim(self, recording)
	v, err = make()
	return v, err
}

// reclaim gives back memory nothing live uses: the claims submitted work
// dropped (an op's temporaries), once that work's fences signal, and then
// every empty page. It waits for the device, never for a window: a slot
// whose window records has no eager work, and pages a window holds stay
// (alloc's Trim keeps them while growth or pages are locked). The caller
// holding a slot's lock (self) reclaims that slot's drops only, since a
// call never waits for a second slot lock while it holds one; a caller
// recording into that slot's open batch (recording) reclaims only the
// drops already submitted, so the batch stays open under it. A caller
// holding none reclaims every slot's, open batches included.
func (r *Recorder) reclaim(self *slot, recording bool) {
	if self != nil {
		self.reclaimDrops(!recording)
	} else {
		for _, b := range r.slots {
			b.mu.Lock()
			b.reclaimDrops(true)
			b.mu.Unlock()
		}
	}
	r.mem.Trim()
}

// reclaimDrops waits for the submissions holding drops, which frees them;
// with submitOpen it first submits the open eager batch when that holds
// drops. A caller recording into the open batch passes false, so the
// batch stays open under it. A failure is not reported here: it taints
// what that work writes, as it would have at the stream's next sync, and
// a failed fence wait keeps its drops.
func (b *slot) reclaimDrops(submitOpen bool) {
	if b.r.usable() != nil || b.win.IsRecording() {
		return
	}
	q := &b.subs
	if submitOpen && q.open != nil && len(q.open.drops) > 0 {
		if err := q.submit(); err != nil {
			return
		}
	}
	var last uint64
	for _, x := range q.inflight {
		if len(x.drops) > 0 {
			last = x.serial
		}
	}
	if last != 0 {
		_ = q.waitThrough(context.Background(), last)
	}
}

// retireCompleted retires, without waiting, the slot's submissions that
// have finished, so their drops go back to the pools.
func (b *slot) retireCompleted() {
	if b.r.usable() != nil {
		return
	}
	q := &b.subs
	for len(q.inflight) > 0 {
		done, err := b.r.dev.WaitFence(q.inflight[0].fence, 0)
		if err != nil || !done {
			return
		}
		if q.waitOldest(context.Background()) != nil {
			return
		}
	}
}

// Trim releases every empty page now and returns the bytes released.
// Submissions that have finished are retired first (without waiting), so
// the temporaries they dropped count as free. Live claims, claims a graph
// guards, work still in flight and the pages a capture window holds are
// never touched.
func (r *Recorder) Trim() (uint64, error) {
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return 0, err
	}
	for _, b := range r.slots {
		b.mu.Lock()
		b.retireCompleted()
		b.mu.Unlock()
	}
	return r.mem.Trim(), nil
}

// markBorn remembers c as born inside the windows recording now, if any.
func (r *Recorder) markBorn(c alloc.Claim) {
	if r.recordingSlots.Load() == 0 {
		return // a window beginning now did not see c born: it may use it
	}
	r.bornMu.Lock()
	if mask := r.recordingSlots.Load(); mask != 0 {
		r.born[c] = mask
		r.bornCount.Store(int64(len(r.born)))
	}
	r.bornMu.Unlock()
}

// forgetBorn drops c from the buffers born inside windows: it was freed.
func (r *Recorder) forgetBorn(c alloc.Claim) {
	if r.bornCount.Load() == 0 {
		return
	}
	r.bornMu.Lock()
	delete(r.born, c)
	r.bornCount.Store(int64(len(r.born)))
	r.bornMu.Unlock()
}

// recordingBegins and recordingEnds keep recordingSlots and the born
// buffers' slots in step, under bornMu: a buffer born after a window ends
// is not charged to it, nor to the next window of its slot.
func (r *Recorder) recordingBegins(slot int) {
	r.bornMu.Lock()
	r.recordingSlots.Or(uint64(1) << uint(slot))
	r.bornMu.Unlock()
}

func (r *Recorder) recordingEnds(slot int) {
	bit := uint64(1) << uint(slot)
	r.bornMu.Lock()
	r.recordingSlots.And(^bit)
	for c, mask := range r.born {
		if mask &^= bit; mask == 0 {
			delete(r.born, c)
		} else {
			r.born[c] = mask
		}
	}
	r.bornCount.Store(int64(len(r.born)))
	r.bornMu.Unlock()
}

// refuseBorn dooms the slot's recording window when work recorded in it
// uses a buffer allocated inside it that no warmup prepared: the graph
// would depend on memory the warmup never saw, so the same program would
// seal or not by what the pages held. The caller holds b.mu and the
// window records.
func (b *slot) refuseBorn(claims ...alloc.Claim) error {
	r := b.r
	if r.bornCount.Load() == 0 {
		return nil
	}
	for _, c := range claims {
		owner := r.owner(c)
		r.bornMu.Lock()
		mask := r.born[owner]
		r.bornMu.Unlock()
		if mask&(uint64(1)<<uint(b.index)) != 0 {
			err := fmt.Errorf("work recorded on %s, a buffer allocated while the window records that its warmup did not allocate and free (allocate buffers before Capture, or in its function and close them there): %w", owner, errs.AllocInCapture)
			b.win.Fail(err)
			return err
		}
	}
	return nil
}

// refuseBornArgs is refuseBorn for a launch's bindings.
func (b *slot) refuseBornArgs(args []capture.Binding) error {
	if b.r.bornCount.Load() == 0 {
		return nil
	}
	for _, a := range args {
		if err := b.refuseBorn(a.Claim); err != nil {
			return err
		}
	}
	return nil
}
