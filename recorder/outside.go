package recorder

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// Sharing the device with outside Vulkan code: a program that created the
// device hands it to the recorder (vkdev.Adopt, in the Vulkan adapter), reads and writes its
// pages with its own commands (BufferHandle, WaitOutside) and orders its
// submissions after a stream's work (SignalOutside), or exchanges events
// with it (SignalEvent exports one, ImportEvent imports one). Every exchange of
// order is a semaphore or fence of the program's: the recorder never
// creates one for it, so nothing it hands out outlives its Close.

// Outsider is what a Vulkan device offers outside Vulkan code on the same
// device, an optional capability the recorder finds by type assertion
// like Presenter.
type Outsider interface {
	// BufferHandle is the VkBuffer spanning page m, as an integer.
	BufferHandle(m Memory) uint64
	// SubmitSync makes an empty submission that waits on the outside
	// semaphore wait (0: none) and signals the outside semaphore signal and
	// fence, or the device's fence f (each 0: none). Submissions made after
	// it run after wait signaled; signal and fence signal once every
	// submission made before it completed.
	SubmitSync(wait, signal, fence uint64, f Fence) error
}

// outsider is the device's Outsider, or errs.NotShared.
func (r *Recorder) outsider() (Outsider, error) {
	o, ok := r.dev.(Outsider)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", errs.NotShared, r.dev)
	}
	return o, nil
}

// BufferHandle returns the VkBuffer of c's page and c's offset in it.
func (r *Recorder) BufferHandle(c alloc.Claim) (handle, offset uint64, err error) {
	o, err := r.outsider()
	if err != nil {
		return 0, 0, err
	}
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return 0, 0, err
	}
	m := r.memoryOf(c)
	if m == 0 {
		return 0, 0, fmt.Errorf("claim %s names no live page: %w", c, errs.Closed)
	}
	return o.BufferHandle(m), c.Offset, nil
}

// SignalOutside submits stream s's pending work, then signals the outside
// semaphore and fence (each 0: none) once every submission made so far
// completed: the stream's work, and what other streams submitted before.
// On an error neither is signaled. Inside the stream's recording window
// it dooms the window, as a sync does: a signal cannot be recorded.
func (r *Recorder) SignalOutside(s StreamID, semaphore, fence uint64) error {
	if semaphore == 0 && fence == 0 {
		return fmt.Errorf("%w: a signal with neither a semaphore nor a fence", errs.NullHandle)
	}
	o, err := r.outsider()
	if err != nil {
		return err
	}
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.checkWait(s, "signal"); err != nil {
		return err
	}
	if err := b.subs.submitOpen(); err != nil {
		return err
	}
	return r.observe(o.SubmitSync(0, semaphore, fence, 0))
}

// WaitOutside declares outside work on stream s: every submission made
// after it waits for the outside semaphore (0: the outside work already
// completed, and nothing waits), writes are marked written, and until the
// semaphore signaled the slot counts reads and writes as its pending work,
// so a host access to them from any stream, and Close of their buffers,
// waits for it. It returns the ledger's failure for reads that no executed
// work wrote (what the outside work read was not data), after declaring.
// On a failed submission writes are tainted with the error.
func (r *Recorder) WaitOutside(s StreamID, semaphore uint64, reads, writes []alloc.Claim) (err error) {
	o, err := r.outsider()
	if err != nil {
		return err
	}
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.checkWait(s, "outside access"); err != nil {
		return err
	}
	if semaphore != 0 {
		defer r.taintIfFailed(&err, writes)
		wait := func(f Fence) error { return r.observe(o.SubmitSync(semaphore, 0, 0, f)) }
		if err := b.submitBeside(wait, reads, writes); err != nil {
			return err
		}
	}
	if len(writes) > 0 {
		r.ledger.Written(writes)
	}
	return r.ledger.Check(reads)
}

// SignalEvent signals the outside semaphore and fence (each 0: none, not
// both) once ev's point has run: ev's submission is submitted if it is
// still open, then an empty submission signals them after every
// submission made so far, ev's among them. An event recorded inside a
// window is refused (its point lies in a graph), and so is one whose
// submission never ran: nothing is signaled then.
func (r *Recorder) SignalEvent(ev *Event, semaphore, fence uint64) error {
	if semaphore == 0 && fence == 0 {
		return fmt.Errorf("%w: an event signals neither a semaphore nor a fence", errs.NullHandle)
	}
	o, err := r.outsider()
	if err != nil {
		return err
	}
	b, err := r.eagerSlot(ev)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if ev.serial > b.subs.serial && b.subs.open != nil {
		if err := b.subs.submitOpen(); err != nil {
			return err
		}
	}
	if err := b.subs.submitErr(ev.serial); err != nil {
		return err
	}
	return r.observe(o.SubmitSync(0, semaphore, fence, 0))
}

// ImportEvent turns an outside semaphore, whose signal the outside code
// has already submitted, into an event of stream s: a submission waits on
// it, and the event names that submission, so the host's waits on the
// event wait for its fence and other slots' waits order after it (as
// every submission made after it does: one queue). Inside s's recording
// window it dooms the window, as WaitOutside does.
func (r *Recorder) ImportEvent(s StreamID, semaphore uint64) (*Event, error) {
	if semaphore == 0 {
		return nil, fmt.Errorf("%w: an event imported from a null semaphore", errs.NullHandle)
	}
	o, err := r.outsider()
	if err != nil {
		return nil, err
	}
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return nil, err
	}
	if err := b.checkWait(s, "event import"); err != nil {
		return nil, err
	}
	wait := func(f Fence) error { return r.observe(o.SubmitSync(semaphore, 0, 0, f)) }
	if err := b.submitBeside(wait, nil, nil); err != nil {
		return nil, err
	}
	ev := &Event{r: r, slot: b.index, serial: b.subs.serial}
	ev.mu.SetRank(lockrank.Event, 0)
	return ev, nil
}

// submitBeside submits the open batch, then a batch of no command buffer
// that submit submits with the batch's fence, in flight on the slot with
// reads and writes as its own, so waits for work on those claims wait for
// it. It is the slot's only part in sharing a device.
func (b *slot) submitBeside(submit func(f Fence) error, reads, writes []alloc.Claim) error {
	if err := b.subs.submitOpen(); err != nil {
		return err
	}
	x, err := b.subs.take(false)
	if err != nil {
		return err
	}
	if err := submit(x.fence); err != nil {
		b.subs.recycle(x)
		return err
	}
	x.reads = append(x.reads, reads...)
	x.writes = append(x.writes, writes...)
	if err := b.subs.enqueue(x); err != nil {
		return err
	}
	return b.subs.bound()
}
