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
	"github.com/vkcompute/vkc/internal/errs"
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
// first (and Close destroys it) or fails with errs.Closed.
func (r *Recorder) NewKernel(code []byte, desc PipelineDesc) (*Kernel, error) {
	if err := checkBindingKinds(desc); err != nil {
		return nil, err
	}
	limit := min(r.info.Limits.MaxPushConstantsSize, MaxPushSize)
	if desc.PushSize%4 != 0 || desc.PushSize > limit {
		return nil, fmt.Errorf("kernel %q: %d bytes of push constants (a multiple of 4, at most %d on this device)", desc.Name, desc.PushSize, limit)
	}
	if _, err := shaders.Inspect(code); err != nil {
		if errors.Is(err, errs.BadSPIRV) {
			return nil, fmt.Errorf("kernel %q: %w", desc.Name, err)
		}
		return nil, fmt.Errorf("kernel %q: %w: %w", desc.Name, errs.BadSPIRV, err)
	}
	if err := ownSpecialization(&desc); err != nil {
		return nil, err
	}
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

// checkBindingKinds refuses a desc whose binding count is out of range or
// whose texel, storage texel and uniform masks name bindings it does not
// have, a written binding as texel or uniform, or one binding as two
// kinds: the device builds its descriptor layout from these masks.
func checkBindingKinds(desc PipelineDesc) error {
	if desc.Bindings < 0 || desc.Bindings > MaxBindings {
		return fmt.Errorf("kernel %q: %d bindings (at most %d)", desc.Name, desc.Bindings, MaxBindings)
	}
	if (desc.Texels|desc.Uniforms)>>uint(desc.Bindings) != 0 || (desc.Texels|desc.Uniforms)&desc.Writes != 0 {
		return fmt.Errorf("kernel %q: texel bindings %#x and uniform bindings %#x must be read-only bindings of its %d", desc.Name, desc.Texels, desc.Uniforms, desc.Bindings)
	}
	if desc.StorageTexels>>uint(desc.Bindings) != 0 || desc.Texels&desc.StorageTexels != 0 || desc.Texels&desc.Uniforms != 0 || desc.StorageTexels&desc.Uniforms != 0 {
		return fmt.Errorf("kernel %q: storage texel bindings %#x must be bindings of its %d, and no binding of two kinds", desc.Name, desc.StorageTexels, desc.Bindings)
	}
	return nil
}

// ownSpecialization checks desc's specialization values (IDs matching
// values, no constant set twice, sizes of 1, 2, 4 or 8 bytes) and gives
// desc its own copies of them, so the kernel keeps what it was built with
// whatever the caller later does to its slices.
func ownSpecialization(desc *PipelineDesc) error {
	if desc.SpecIDs != nil {
		if len(desc.SpecIDs) != len(desc.Spec) {
			return fmt.Errorf("kernel %q: %d specialization-constant IDs for %d values", desc.Name, len(desc.SpecIDs), len(desc.Spec))
		}
		for i, id := range desc.SpecIDs {
			if slices.Contains(desc.SpecIDs[:i], id) {
				return fmt.Errorf("kernel %q: specialization constant %d set twice", desc.Name, id)
			}
		}
		desc.SpecIDs = append([]uint32{}, desc.SpecIDs...)
	}
	desc.Spec = slices.Clone(desc.Spec)
	for i, c := range desc.Constants {
		if c.Size != 1 && c.Size != 2 && c.Size != 4 && c.Size != 8 {
			return fmt.Errorf("kernel %q: specialization constant %d of %d bytes (1, 2, 4 or 8)", desc.Name, c.ID, c.Size)
		}
		if _, set := desc.SpecValue(c.ID); set || slices.ContainsFunc(desc.Constants[:i], func(o SpecConstant) bool { return o.ID == c.ID }) {
			return fmt.Errorf("kernel %q: specialization constant %d set twice", desc.Name, c.ID)
		}
	}
	desc.Constants = slices.Clone(desc.Constants)
	return nil
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
			if err := b.subs.drain(context.Background()); err != nil && first == nil {
				first = err
			}
		}
		mayBePending = mayBePending || b.subs.anyFailed()
		b.cache.forgetKernel(k, b.subs.done)
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
	// Formats are the formats this launch's texel bindings view their
	// claims as, where not zero; a zero entry is the pipeline's
	// (PipelineDesc.Formats).
	Formats [MaxBindings]TexelFormat
	// TexelBytes are the bytes of data each texel binding holds, where not
	// zero: its view stops there. A claim is rounded up to whole 32-bit
	// words, and a view over the padding would show texels no element is
	// (textureSize one too large for an odd-length 16-bit buffer).
	TexelBytes [MaxBindings]uint64
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
	if err := k.check(l); err != nil {
		return err
	}
	b := r.slotOf(s)
	if err := r.settleLaunch(b, l); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	b.splitArgs(l)
	defer r.taintIfFailed(&err, b.writes)
	if err := b.admitLaunch(s, k, l); err != nil {
		return err
	}
	if b.win.IsRecording() {
		if err := b.refuseBornArgs(b.args); err != nil {
			return err
		}
		return b.recordLaunch(k, l)
	}
	return b.enqueueLaunch(s, k, l)
}

// check refuses arguments that do not fit the kernel's interface.
func (k *Kernel) check(l *Launch) error {
	if len(l.Args) != k.desc.Bindings {
		return fmt.Errorf("kernel %q: %d bindings, want %d", k.desc.Name, len(l.Args), k.desc.Bindings)
	}
	if len(l.Push) != int(k.desc.PushSize) {
		return fmt.Errorf("kernel %q: %d bytes of push constants, want %d", k.desc.Name, len(l.Push), k.desc.PushSize)
	}
	if l.Indirect.Size != 0 && l.Indirect.Size < 12 {
		return fmt.Errorf("kernel %q: indirect group counts in %d bytes (need 12)", k.desc.Name, l.Indirect.Size)
	}
	return nil
}

// settleLaunch submits other slots' pending work that writes what the
// launch on b binds, or reads what it writes, before b's lock is taken (one busy slot, the common
// case, costs one atomic load).
func (r *Recorder) settleLaunch(b *slot, l *Launch) error {
	if r.busy.Load()&^(uint64(1)<<uint(b.index)) == 0 {
		return nil
	}
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
	// Work issued earlier on other slots that reads (or writes) what this
	// launch writes goes first too: write-after-read ordered on the device.
	return r.settleOthers(context.Background(), b.index, written[:w], orderedWrite)
}

// admitLaunch is Launch's gate under the slot's lock: no neighbour's
// window, a kernel not released, and every length within its limit.
func (b *slot) admitLaunch(s StreamID, k *Kernel, l *Launch) error {
	if err := b.refuseNeighbour(s, "launch"); err != nil {
		return err
	}
	if k.released.Load() {
		return fmt.Errorf("kernel %q: %w", k.desc.Name, errs.Closed)
	}
	return b.r.checkLimits(l.Limits)
}

// enqueueLaunch appends an admitted launch to the open eager batch, or
// skips it when an input is tainted (its outputs inherit the failure). The
// batch is submitted when full, and early when the device has run out of
// the slot's earlier work.
func (b *slot) enqueueLaunch(s StreamID, k *Kernel, l *Launch) error {
	r := b.r
	if id, bad := r.ledger.Failure(b.reads); bad {
		if len(b.writes) > 0 {
			r.ledger.Inherit(b.writes, id)
		}
		return nil
	}
	if err := b.subs.ensureOpen(); err != nil {
		return err
	}
	e, err := b.cache.get(k, l, b.subs.done, b.win.IsActive())
	if err != nil {
		return err
	}
	q := &b.subs
	timed := b.profileBefore(s, k, l)
	b.dispatch(q.open.cb, &q.haz, k, e, l)
	b.profileAfter(timed)
	e.lastSerial = q.serial + 1
	if b.win.IsActive() {
		b.win.touch(b.args)
		b.win.touchLimits(l.Limits)
	}
	if len(b.writes) > 0 {
		r.ledger.Written(b.writes)
		for _, c := range b.writes {
			q.wrote(c)
		}
	}
	for _, c := range b.reads {
		q.read(c)
	}
	q.open.launches++
	if q.open.launches >= r.opts.BatchSize || q.open.launches%feedEvery == 0 && q.deviceIdle() {
		return q.submitOpen()
	}
	return nil
}

// feedEvery is how many launches the open batch takes between checks of
// whether the slot's earlier work has finished.
const feedEvery = 64

// recordLaunch records a launch into the recording window's buffer (between
// two timestamps when the window profiles): the window remembers the
// memory and the limits and pins the set, and the kernel is held for the
// graph. A failure dooms the window.
func (b *slot) recordLaunch(k *Kernel, l *Launch) error {
	e, err := b.cache.get(k, l, b.subs.done, true)
	if err != nil {
		b.win.Fail(err)
		return err
	}
	if b.win.times == nil {
		b.dispatch(b.win.cb, &b.win.haz, k, e, l)
	} else {
		if err := b.stampBefore(k, l); err != nil {
			b.win.Fail(err)
			return err
		}
		b.dispatch(b.win.cb, &b.win.haz, k, e, l)
		if err := b.stampAfter(); err != nil {
			b.win.Fail(err)
			return err
		}
	}
	newKernel, err := b.win.recordLaunch(b.args, l.Limits, e, k)
	if newKernel {
		b.r.refKernel(k)
	}
	return err
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

// holdIfWindowUsed is Free's check of one slot while windows are open. A
// claim the recording touched is guarded at once, so its range survives
// until the graph closes or is refused (Free then frees it, deferred by
// the guard). One the warmup touched is parked, not freed, until the
// window begins: the warmup then grows the pools to what the recorded run
// needs, freed temporaries included; held reports that.
func (b *slot) holdIfWindowUsed(c alloc.Claim) (held bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.win.untouch(c) {
		return false, nil
	}
	switch b.win.State() {
	case capture.Recording:
		if err := b.r.guard([]alloc.Claim{c}); err != nil {
			return false, err
		}
		return false, b.win.freedEarly(c)
	case capture.Prepared:
		b.win.park(c)
		return true, nil
	}
	return false, nil
}

// releaseReserved frees what the recording was given of the warmup's
// claims and did not take (nothing uses them) and reports whether there
// was any.
func (b *slot) releaseReserved() bool {
	cs := b.win.takeAllReserved()
	for _, c := range cs {
		b.r.free(c)
	}
	return len(cs) > 0
}

// releaseParked frees what the warmup parked, through the drop queue when
// eager work that may still use it is pending.
func (b *slot) releaseParked() {
	for _, c := range b.win.takeParked() {
		if !b.subs.queueDrop(c) {
			b.r.free(c)
		}
	}
}
