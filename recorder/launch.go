package recorder

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/shaders"
)

// Kernel is a pipeline the recorder tracks. Launches name it; a graph that
// recorded it keeps it alive; it is destroyed once its owner released it
// and the last such graph closed, after the work using it.
type Kernel struct {
	r        *Recorder
	pipe     Pipeline
	desc     PipelineDesc
	released atomic.Bool
	refs     int // guarded by r.kernelsMu: 1 for the owner until Release, 1 per window or graph
}

// Desc is the interface the kernel was built with.
func (k *Kernel) Desc() PipelineDesc { return k.desc }

// NewKernel builds a kernel from SPIR-V, which package shaders reads first
// (a module that is not whole never reaches the device) and the device
// validates before its driver sees it. A kernel built while Close runs either completes
// first (and Close destroys it) or fails with ErrClosed.
func (r *Recorder) NewKernel(code []byte, desc PipelineDesc) (*Kernel, error) {
	if desc.Bindings < 0 || desc.Bindings > MaxBindings {
		return nil, fmt.Errorf("recorder: kernel %q: %d bindings (at most %d)", desc.Name, desc.Bindings, MaxBindings)
	}
	limit := min(r.info.Limits.MaxPushConstantsSize, MaxPushSize)
	if desc.PushSize%4 != 0 || desc.PushSize > limit {
		return nil, fmt.Errorf("recorder: kernel %q: %d bytes of push constants (a multiple of 4, at most %d on this device)", desc.Name, desc.PushSize, limit)
	}
	if _, err := shaders.Inspect(code); err != nil {
		if errors.Is(err, ErrBadSPIRV) {
			return nil, fmt.Errorf("recorder: kernel %q: %w", desc.Name, err)
		}
		return nil, fmt.Errorf("recorder: kernel %q: %w: %w", desc.Name, ErrBadSPIRV, err)
	}
	if desc.SpecIDs != nil {
		if len(desc.SpecIDs) != len(desc.Spec) {
			return nil, fmt.Errorf("recorder: kernel %q: %d specialization-constant IDs for %d values", desc.Name, len(desc.SpecIDs), len(desc.Spec))
		}
		for i, id := range desc.SpecIDs {
			if slices.Contains(desc.SpecIDs[:i], id) {
				return nil, fmt.Errorf("recorder: kernel %q: specialization constant %d set twice", desc.Name, id)
			}
		}
		desc.SpecIDs = append([]uint32{}, desc.SpecIDs...)
	}
	desc.Spec = slices.Clone(desc.Spec)
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return nil, err
	}
	p, err := r.dev.NewPipeline(code, desc)
	if err != nil {
		return nil, r.observe(err)
	}
	k := &Kernel{r: r, pipe: p, desc: desc, refs: 1}
	r.kernelsMu.Lock()
	r.kernels[k] = struct{}{}
	r.kernelsMu.Unlock()
	return k, nil
}

// Release gives up the owner's hold on the kernel: no launch may name it
// afterwards. It is destroyed now, after the work using it, unless a graph
// recorded it; then when the last such graph closes. Idempotent.
func (k *Kernel) Release() error {
	if k == nil || k.released.Swap(true) {
		return nil
	}
	return k.r.unrefKernels([]*Kernel{k})
}

// refKernel takes a hold on k for a recording window or graph.
func (r *Recorder) refKernel(k *Kernel) {
	r.kernelsMu.Lock()
	k.refs++
	r.kernelsMu.Unlock()
}

// unrefKernels drops one hold on each kernel and destroys the ones nobody
// holds. The caller holds no slot lock: destruction drains every slot.
func (r *Recorder) unrefKernels(ks []*Kernel) error {
	var first error
	for _, k := range ks {
		r.kernelsMu.Lock()
		k.refs--
		dead := k.refs == 0
		r.kernelsMu.Unlock()
		if dead {
			if err := r.destroyKernel(k); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// destroyKernel waits for every slot's eager work (which may use k), drops
// k's cached descriptor sets and destroys its pipeline. No recording or
// graph holds k: a recording slot's window does not use it.
func (r *Recorder) destroyKernel(k *Kernel) error {
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	r.kernelsMu.Lock()
	_, live := r.kernels[k]
	delete(r.kernels, k)
	r.kernelsMu.Unlock()
	if !live || r.closed.Load() {
		return nil // Close destroyed it
	}
	var first error
	mayBePending := false
	for _, b := range r.slots {
		b.mu.Lock()
		if !b.win.IsRecording() {
			if err := b.drain(context.Background()); err != nil && first == nil {
				first = err
			}
		}
		mayBePending = mayBePending || len(b.failed) > 0
		b.cache.forgetKernel(k, b.done)
		b.mu.Unlock()
	}
	if mayBePending {
		// A batch whose fence wait failed may still run k: Close, which
		// waits for the device, destroys it.
		r.kernelsMu.Lock()
		r.kernels[k] = struct{}{}
		r.kernelsMu.Unlock()
		return first
	}
	r.dev.DestroyPipeline(k.pipe)
	return first
}

// Launch is one kernel launch's arguments: the memory bound at bindings
// 0..len(Args)-1 (Write, Read and Extent say how each is used), the group
// counts and the push-constant bytes. Nothing is retained after
// Recorder.Launch returns, so a caller may keep Args and Push on its stack.
// The kernel is a separate parameter of Recorder.Launch because the
// recorder keeps it: Go's escape analysis does not tell one field from
// another, so a retained pointer field would move every launch's Args and
// Push to the heap.
type Launch struct {
	Args   []capture.Binding
	Groups [3]uint32
	Push   []byte
	// Indirect, when its Size is not zero, holds the group counts (three
	// uint32 the host sets with SetHost) read when the launch runs; Groups
	// is then ignored. It counts as an input of the launch.
	Indirect alloc.Claim
	// Limits name the device lengths (see capture.Extent) that size this
	// launch, each with the largest value its buffers hold: the launch is
	// refused if a length is larger now, and a graph or window that
	// recorded it makes SetLength refuse larger values.
	Limits []Limit
}

// Limit bounds a device length: a graph that launches work sized by the
// uint32 at Param holds buffers for at most Max units of it.
type Limit struct {
	Param alloc.Claim
	Max   uint32
}

// valueAt is the uint32 the host keeps at a host-visible claim (a device
// length), which work reading it sees when it runs.
func (r *Recorder) valueAt(c alloc.Claim) uint32 {
	m := r.mapped(c)
	if len(m) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(m)
}

// splitArgs fills the slot's scratch sets: b.args, the bindings plus the
// indirect group counts as a read; b.writes, what the launch writes, and
// b.reads, the inputs whose taint skips the launch (read-only and
// read-write bindings, the group counts), each the prefix a dynamic
// extent covers now.
func (b *slot) splitArgs(l *Launch) {
	b.args = append(b.args[:0], l.Args...)
	if l.Indirect.Size != 0 {
		b.args = append(b.args, capture.Binding{Claim: l.Indirect})
	}
	b.reads, b.writes = b.reads[:0], b.writes[:0]
	for _, a := range b.args {
		c := a.Claim
		if a.Extent.Dynamic() {
			c = a.Extent.Prefix(c, b.r.valueAt(a.Extent.Param))
		}
		if a.Write {
			b.writes = append(b.writes, c)
		}
		if a.Reads() {
			b.reads = append(b.reads, c)
		}
	}
}

// Launch records kernel k with arguments l on stream s. Eagerly it is
// appended to the open command buffer (submitted at the batch size, on
// Sync or on a read); a launch whose input is tainted is skipped and its
// outputs inherit that failure. Inside the owner's recording window it is
// recorded into the graph instead and runs only on replay. A neighbour of
// a capturing stream is refused. A launch that fails leaves its outputs
// tainted with the error.
func (r *Recorder) Launch(s StreamID, k *Kernel, l *Launch) (err error) {
	if len(l.Args) != k.desc.Bindings {
		return fmt.Errorf("recorder: kernel %q: %d bindings, want %d", k.desc.Name, len(l.Args), k.desc.Bindings)
	}
	if len(l.Push) != int(k.desc.PushSize) {
		return fmt.Errorf("recorder: kernel %q: %d bytes of push constants, want %d", k.desc.Name, len(l.Push), k.desc.PushSize)
	}
	if l.Indirect.Size != 0 && l.Indirect.Size < 12 {
		return fmt.Errorf("recorder: kernel %q: indirect group counts in %d bytes (need 12)", k.desc.Name, l.Indirect.Size)
	}
	b := r.slotOf(s)
	if r.busy.Load()&^(uint64(1)<<uint(b.index)) != 0 {
		var claims, written [MaxBindings + 1]alloc.Claim
		n, w := 0, 0
		if l.Indirect.Size != 0 {
			claims[0], n = l.Indirect, 1
		}
		for _, a := range l.Args {
			claims[n] = a.Claim
			n++
			if a.Write {
				written[w] = a.Claim
				w++
			}
		}
		if err := r.settleOthers(context.Background(), b.index, claims[:n], ordered); err != nil {
			return err
		}
		if err := r.settleOthers(context.Background(), b.index, written[:w], orderedWrite); err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	b.splitArgs(l)
	defer r.taintIfFailed(&err, b.writes)
	if err := b.refuseNeighbour(s, "launch"); err != nil {
		return err
	}
	if k.released.Load() {
		return fmt.Errorf("recorder: kernel %q: %w", k.desc.Name, ErrClosed)
	}
	if err := r.checkLimits(l.Limits); err != nil {
		return err
	}
	if b.win.IsRecording() {
		return b.recordLaunch(k, l)
	}
	if id, bad := r.ledger.Failure(b.reads); bad {
		if len(b.writes) > 0 {
			r.ledger.Inherit(b.writes, id)
		}
		return nil
	}
	if err := b.ensureOpen(); err != nil {
		return err
	}
	e, err := b.cache.get(k, l.Args, b.done, b.win.IsActive())
	if err != nil {
		return err
	}
	timed := b.profileBefore(s, k, l)
	b.dispatch(b.open.cb, &b.haz, k, e, l)
	b.profileAfter(timed)
	e.lastSerial = b.serial + 1
	if b.win.IsActive() {
		b.touch(b.args)
		b.touchLimits(l.Limits)
	}
	if len(b.writes) > 0 {
		r.ledger.Written(b.writes)
		for _, c := range b.writes {
			b.wrote(c)
		}
	}
	for _, c := range b.reads {
		b.read(c)
	}
	b.open.launches++
	if b.open.launches >= r.opts.BatchSize || b.open.launches%feedEvery == 0 && b.deviceIdle() {
		return b.submitOpen()
	}
	return nil
}

// feedEvery is how many launches the open batch takes between checks of
// whether the slot's earlier work has finished.
const feedEvery = 64

// deviceIdle reports whether every submission of the slot has completed
// (or none is in flight): then the open batch is submitted early, so the
// device works on it while the host records the rest of the chain instead
// of waiting for the whole batch. Only the newest fence is polled: one
// queue completes its submissions in order. A poll that fails says busy;
// the wait that retires the batch reports the error.
func (b *slot) deviceIdle() bool {
	if len(b.inflight) == 0 {
		return true
	}
	ok, err := b.r.dev.WaitFence(b.inflight[len(b.inflight)-1].fence, 0)
	return ok && err == nil
}

// recordLaunch records a launch into the recording window's buffer: it
// remembers the memory and the limits, pins the set and holds the kernel
// for the graph. A failure dooms the window.
func (b *slot) recordLaunch(k *Kernel, l *Launch) error {
	e, err := b.cache.get(k, l.Args, b.done, true)
	if err != nil {
		b.win.Fail(err)
		return err
	}
	b.dispatch(b.capCB, &b.capHaz, k, e, l)
	b.win.Record(b.args...)
	b.touch(b.args)
	b.touchLimits(l.Limits)
	b.limits = append(b.limits, l.Limits...)
	if e.pinGen != b.winGen {
		e.pinGen = b.winGen
		e.pins++
		b.pins = append(b.pins, e)
	}
	if !slices.Contains(b.kernels, k) {
		b.r.refKernel(k)
		b.kernels = append(b.kernels, k)
	}
	return nil
}

// dispatch records the launch into cb with a barrier first where the
// hazard tracker h says it depends on earlier work (b.args: the bindings
// and the indirect group counts).
func (b *slot) dispatch(cb CommandBuffer, h *hazards, k *Kernel, e *setEntry, l *Launch) {
	x := &b.disp
	x.Pipeline, x.Set, x.Groups = k.pipe, e.set, l.Groups
	x.Push = b.push[:copy(b.push[:], l.Push)]
	x.Indirect, x.IndirectOffset = 0, 0
	if l.Indirect.Size != 0 {
		x.Indirect, x.IndirectOffset = b.r.memoryOf(l.Indirect), l.Indirect.Offset
	}
	x.Barrier = h.needBarrier(b.args)
	if x.Barrier {
		h.reset()
	}
	h.add(b.args)
	b.r.dev.CmdDispatch(cb, x)
	x.Push = nil
}

// touch remembers the claims the open window (warmup or recording) used,
// for Free.
func (b *slot) touch(args []capture.Binding) {
	if len(args) == b.lastTouchN && len(args) <= len(b.lastTouch) {
		same := true
		for i, a := range args {
			same = same && b.lastTouch[i] == a.Claim
		}
		if same {
			return // a chain touches the same claims launch after launch
		}
	}
	for _, a := range args {
		b.touched[a.Claim] = struct{}{}
	}
	b.lastTouchN = 0
	if len(args) <= len(b.lastTouch) {
		for i, a := range args {
			b.lastTouch[i] = a.Claim
		}
		b.lastTouchN = len(args)
	}
}

// touchLimits marks the lengths that size a launch as used by the window,
// bound or not: a graph reads their values at every replay (checkLimits)
// and holds them by claim, so one freed during the window must be held
// back like any memory the window touched, not reused by a new length.
func (b *slot) touchLimits(lims []Limit) {
	for _, lim := range lims {
		b.touched[lim.Param] = struct{}{}
	}
}

// holdIfWindowUsed is Free's check of one slot while windows are open. A
// claim the recording touched is guarded at once, so its range survives
// until the graph closes or is refused (Free then frees it, deferred by
// the guard). One the warmup touched is parked, not freed, until the
// window begins: the warmup then grows the pools to what the recorded run
// needs, freed temporaries included; held reports that.
func (b *slot) holdIfWindowUsed(c alloc.Claim) (held bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.touched[c]; !ok {
		return false, nil
	}
	delete(b.touched, c)
	b.lastTouchN = 0
	switch b.win.State() {
	case capture.Recording:
		if err := b.r.guard([]alloc.Claim{c}); err != nil {
			return false, err
		}
		b.early = append(b.early, c)
		return false, nil
	case capture.Prepared:
		b.parked = append(b.parked, c)
		return true, nil
	}
	return false, nil
}

// releaseParked frees what the warmup parked, through the drop queue when
// eager work that may still use it is pending.
func (b *slot) releaseParked() {
	for _, c := range b.parked {
		if !b.queueDrop(c) {
			b.r.free(c)
		}
	}
	b.parked = b.parked[:0]
}

// queueDrop puts c on the drop queue of the newest eager work, which may
// still use it: the open batch, else the last submission in flight, so c
// returns to the pools when that work's fence signals. With no eager work
// pending it reports false, and the caller frees c now.
func (b *slot) queueDrop(c alloc.Claim) bool {
	switch {
	case b.open != nil:
		b.open.drops = append(b.open.drops, c)
	case len(b.inflight) > 0:
		last := b.inflight[len(b.inflight)-1]
		last.drops = append(last.drops, c)
	default:
		return false
	}
	return true
}

// forgetTouched empties the window's touched set (and touch's memo of it).
func (b *slot) forgetTouched() {
	clear(b.touched)
	b.lastTouchN = 0
}
