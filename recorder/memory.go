package recorder

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
)

// Memory pressure: what the recorder does when a request finds no room,
// under the limit (Options.MemoryLimit) or in the driver. Every allocation
// site that can run out (pages, staging and readback memory, which are
// pages too, descriptor pools, command buffers and their fences) goes
// through retryOutOfMemory: reclaim, retry once, then the failure, which
// matches ErrOutOfDeviceMemory and keeps the driver's result or the
// limit's numbers in its chain.

// outOfMemory reports whether err says memory ran out, in the device, in
// the host or under the limit: the failures reclaiming may cure.
func outOfMemory(err error) bool {
	return err != nil && (errors.Is(err, ErrOutOfDeviceMemory) || errors.Is(err, alloc.ErrOverLimit))
}

// memoryError makes the allocator's limit refusal the recorder's
// out-of-memory, keeping the allocator's message and chain, so a caller
// tests one sentinel whether the driver or the limit said no.
func memoryError(err error) error {
	if err != nil && errors.Is(err, alloc.ErrOverLimit) && !errors.Is(err, ErrOutOfDeviceMemory) {
		return fmt.Errorf("%w: %w", ErrOutOfDeviceMemory, err)
	}
	return err
}

// retryOutOfMemory runs make, and when it fails for want of memory,
// reclaims what nothing uses and runs it once more. self is the slot whose
// lock the caller holds (nil: none), which bounds what may be reclaimed.
func retryOutOfMemory[T any](r *Recorder, self *slot, make func() (T, error)) (T, error) {
	v, err := make()
	if !outOfMemory(err) {
		return v, err
	}
	r.reclaim(self)
	v, err = make()
	return v, memoryError(err)
}

// reclaim gives back memory nothing live uses: the claims submitted work
// dropped (an op's temporaries), once that work's fences signal, and then
// every empty page. It waits for the device, never for a window: a slot
// whose window records has no eager work, and pages a window holds stay
// (alloc's Trim keeps them while growth or pages are locked). The caller
// holding a slot's lock (self) reclaims that slot's drops only, since a
// call never waits for a second slot lock while it holds one; a caller
// holding none reclaims every slot's.
func (r *Recorder) reclaim(self *slot) {
	if self != nil {
		self.reclaimDrops()
	} else {
		for _, b := range r.slots {
			b.mu.Lock()
			b.reclaimDrops()
			b.mu.Unlock()
		}
	}
	r.mem.Trim()
}

// reclaimDrops submits the open eager batch when it holds drops and waits
// for the submissions holding drops, which frees them. A failure is not
// reported here: it taints what that work writes, as it would have at the
// stream's next sync, and a failed fence wait keeps its drops.
func (b *slot) reclaimDrops() {
	if b.r.usable() != nil || b.win.IsRecording() {
		return
	}
	q := &b.subs
	if q.open != nil && len(q.open.drops) > 0 {
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
