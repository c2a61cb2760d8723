package recorder

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// StreamID names a logical stream. Logical streams map onto slots by
// id % Slots(), so two ids that share a slot share its command pool and its
// capture window.
type StreamID = uint64

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	Slots     int    // slots (pooled command streams); default 4, at most 64
	BatchSize int    // most launches per eager command buffer; default 1024 (it is submitted earlier when the slot's device work has run out)
	PageSize  uint64 // suballocator page; default 64 MiB
	CacheSize int    // descriptor sets cached per slot; default 512
	// MemoryLimit caps the bytes of all pages together (device-local,
	// upload and readback); 0: no cap. A request past it reclaims first
	// and then fails with ErrOutOfMemory.
	MemoryLimit uint64
}

// maxSlots bounds Options.Slots: slot sets are 64-bit masks.
const maxSlots = 64

func (o Options) withDefaults() Options {
	if o.Slots <= 0 {
		o.Slots = 4
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1024
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 512
	}
	return o
}

// Recorder owns one device: its memory, the taint ledger, the slots and the
// kernels. It is safe for concurrent use; each slot serialises its own calls.
//
// Locks: a call holds at most one slot lock at a time, except setHost and
// LengthLimit, which take every slot's lock in index order and wait for
// nothing but the device while they hold them (no call waits for a second
// slot lock while holding one, so this cannot deadlock). devMu is taken before
// any slot lock, never under one: calls that reach the device outside a
// slot (pages, pipelines) hold it shared, and Close holds it exclusively,
// so the device is never destroyed under a call. The whole order is
// package lockrank's ranks (devMu, Presentation.mu, slot locks, stagingMu,
// kernelsMu, graphsMu, guardMu, presMu), checked under the vkc_lockrank tag.
type Recorder struct {
	dev    Device
	info   DeviceInfo
	opts   Options
	mem    *alloc.Allocator[*page]
	ledger *alloc.Ledger
	slots  []*slot

	devMu  lockrank.RWMutex
	closed atomic.Bool
	lost   atomic.Bool // the device reported its loss to the recorder

	stagingMu lockrank.Mutex // guards staging and every Staging's refs
	staging   map[alloc.ClaimKey]*Staging

	kernelsMu lockrank.Mutex
	kernels   map[*Kernel]struct{} // every kernel not yet destroyed

	graphsMu lockrank.Mutex
	graphs   map[*Graph]struct{} // every graph not yet closed, for LengthLimit

	guardMu lockrank.Mutex
	guarded map[alloc.ClaimKey]int      // guards the recorder holds, by claim
	freed   map[alloc.ClaimKey]struct{} // guarded claims already freed

	eventsMu lockrank.Mutex
	timed    map[*Event]struct{} // timed events not yet closed, whose queries Close destroys (events.go)

	presMu        lockrank.Mutex
	presentations map[*Presentation]struct{} // swapchains not yet closed (present.go)

	active atomic.Int32  // windows prepared or recording, for Free's fast path
	busy   atomic.Uint64 // slots with writes not yet submitted or completed

	// bornMu guards the buffers allocated while windows record (born, by
	// claim: the slots whose windows recorded at the allocation, which
	// refuse work on it) and recordingSlots, the slots recording now,
	// changed under it so a birth and a window's end never interleave.
	bornMu         lockrank.Mutex
	born           map[alloc.ClaimKey]uint64
	bornCount      atomic.Int64 // len(born), read without the lock
	recordingSlots atomic.Uint64
}

// rankLocks gives the recorder's own locks their ranks (slots and
// presentations rank theirs where they are made).
func (r *Recorder) rankLocks() {
	r.devMu.SetRank(lockrank.Device, 0)
	r.stagingMu.SetRank(lockrank.Staging, 0)
	r.kernelsMu.SetRank(lockrank.Kernels, 0)
	r.graphsMu.SetRank(lockrank.Graphs, 0)
	r.guardMu.SetRank(lockrank.Guards, 0)
	r.presMu.SetRank(lockrank.Presentations, 0)
	r.eventsMu.SetRank(lockrank.Events, 0)
	r.bornMu.SetRank(lockrank.Born, 0)
}

// page is one block of device memory as the allocator sees it.
type page struct {
	dev    Device
	mem    Memory
	mapped []byte // nil unless host-visible
}

// Release frees the page's memory; the allocator calls it once.
func (p *page) Release() { p.dev.FreeMemory(p.mem) }

// pageSource adapts the device to alloc's consumer-side BlockSource.
type pageSource struct{ r *Recorder }

// NewBlock allocates a page and maps it when it is host-visible: staging
// always, device-local memory on unified-memory devices.
func (s pageSource) NewBlock(kind alloc.Kind, size uint64) (*page, error) {
	r := s.r
	m, err := r.dev.AllocateMemory(kind, size)
	if err != nil {
		return nil, r.observe(err)
	}
	p := &page{dev: r.dev, mem: m}
	if kind != alloc.DeviceLocal || r.info.UnifiedMemory {
		mapped, err := r.dev.MapMemory(m)
		if err != nil {
			r.dev.FreeMemory(m)
			return nil, r.observe(err)
		}
		p.mapped = mapped
	}
	return p, nil
}

// New builds a recorder that owns dev: Close closes it, and so does a
// failing New.
func New(dev Device, o Options) (*Recorder, error) {
	o = o.withDefaults()
	if o.Slots > maxSlots {
		_ = dev.Close()
		return nil, fmt.Errorf("%d slots: at most %d", o.Slots, maxSlots)
	}
	info := dev.Info()
	align := max(info.Limits.MinStorageBufferOffsetAlignment, info.Limits.NonCoherentAtomSize, 16)
	r := &Recorder{dev: dev, info: info, opts: o, ledger: alloc.NewLedger(),
		staging: map[alloc.ClaimKey]*Staging{}, kernels: map[*Kernel]struct{}{}, graphs: map[*Graph]struct{}{},
		guarded: map[alloc.ClaimKey]int{}, freed: map[alloc.ClaimKey]struct{}{}, timed: map[*Event]struct{}{},
		born: map[alloc.ClaimKey]uint64{}}
	r.rankLocks()
	mem, err := alloc.New[*page](pageSource{r}, alloc.Config{
		PageSize:  o.PageSize,
		Alignment: align,
		MaxClaim:  uint64(info.Limits.MaxStorageBufferRange),
		Limit:     o.MemoryLimit,
	})
	if err != nil {
		_ = dev.Close()
		return nil, fmt.Errorf("memory allocator: %w", err)
	}
	r.mem = mem
	for i := 0; i < o.Slots; i++ {
		b, err := newSlot(r, i)
		if err != nil {
			_ = r.Close()
			return nil, err
		}
		r.slots = append(r.slots, b)
	}
	return r, nil
}

// Device is the device the recorder drives.
func (r *Recorder) Device() Device { return r.dev }

// Info describes the device.
func (r *Recorder) Info() DeviceInfo { return r.info }

// Stats reports the suballocator's statistics.
func (r *Recorder) Stats() alloc.Stats { return r.mem.Stats() }

// Slots is the number of slots.
func (r *Recorder) Slots() int { return len(r.slots) }

// Slot returns the slot index of stream s.
func (r *Recorder) Slot(s StreamID) int { return int(s % uint64(len(r.slots))) }

// Live counts the device's live objects by kind.
func (r *Recorder) Live() map[string]int64 { return r.dev.Live() }

// Diagnostics reports what the device's checker found.
func (r *Recorder) Diagnostics() Diagnostics { return r.dev.Diagnostics() }

func (r *Recorder) slotOf(s StreamID) *slot { return r.slots[s%uint64(len(r.slots))] }

// usable fails once the recorder is closed or the device lost.
func (r *Recorder) usable() error {
	if r.closed.Load() {
		return errs.Closed
	}
	return r.lostErr()
}

// lostErr is errs.DeviceLost once the device is lost, else nil.
func (r *Recorder) lostErr() error {
	if r.lost.Load() || r.dev.Lost() {
		return errs.DeviceLost
	}
	return nil
}

// observe latches device loss from any error a device call returned and
// passes the error on: a loss is unrecoverable, so one result that says so
// makes every later call fail with errs.DeviceLost and no more work reach
// the queue, whichever layer reported it.
func (r *Recorder) observe(err error) error {
	if err != nil && errors.Is(err, errs.DeviceLost) {
		r.lost.Store(true)
	}
	return err
}

// taintIfFailed is the write scope of a call or a submission: deferred with
// the call's error and the memory it was to write, it taints exactly that
// memory with the error when the call fails, so no failure path can leave
// bytes that look written by work that never ran.
func (r *Recorder) taintIfFailed(err *error, writes []alloc.Claim) {
	if *err != nil && len(writes) > 0 {
		r.ledger.Taint(writes, *err)
	}
}

// Validate checks the invariants of the recorder's allocator and taint
// ledger (alloc.Allocator.Validate, alloc.Ledger.Validate): an error wraps
// alloc.ErrCorrupt and means a bug, never bad input. Fuzz targets call it
// after every step; it walks every range, so it is not for hot paths.
func (r *Recorder) Validate() error {
	if err := r.mem.Validate(); err != nil {
		return fmt.Errorf("allocator: %w", err)
	}
	if err := r.ledger.Validate(); err != nil {
		return fmt.Errorf("taint ledger: %w", err)
	}
	return nil
}

// Taint marks claims as unwritten with cause: a buffer allocated and not
// yet written, say.
func (r *Recorder) Taint(claims []alloc.Claim, cause error) { r.ledger.Taint(claims, cause) }

// Check fails with an error wrapping errs.Unwritten when a byte of the
// claims holds data no executed work wrote.
func (r *Recorder) Check(claims []alloc.Claim) error { return r.ledger.Check(claims) }

// SetHost writes data[i] into claims[i], host-visible memory that work
// reads as device values (a scalar, indirect group counts), and marks them
// written. It first waits for pending work on any slot that reads or
// writes them, so work issued before the call sees the old values and work
// issued after sees the new ones; with nothing pending (a replay whose
// results were read, say) it waits for nothing and costs a few copies. It
// is not recorded into capture windows: a graph reads the values current
// when each replay runs.
func (r *Recorder) SetHost(claims []alloc.Claim, data [][]byte) error {
	return r.setHost(claims, data, alloc.Claim{}, 0)
}

// SetLength is SetHost for a device length: claims[0] holds the length n,
// the others values derived from it. It refuses an n above what the
// buffers of a live graph, or of launches a recording window recorded,
// sized by claims[0] hold (*LengthLimitError), checked while no launch can
// record, so no replay or launch runs with a length past its buffers.
func (r *Recorder) SetLength(claims []alloc.Claim, data [][]byte, n uint32) error {
	if len(claims) == 0 {
		return fmt.Errorf("SetLength with no length claim")
	}
	return r.setHost(claims, data, claims[0], n)
}

// setHost writes the values with every slot's lock held and none of their
// pending work using the claims: a launch computes from the values now
// what it reads and writes (dynamic extents) while the device reads them
// when it runs, so no launch may be recorded between the wait for earlier
// work and the write. It settles without the locks first (the wait, in the
// common case), then settles again under them what came in between: that
// second pass waits only for the device, and no new work can come in. A
// zero length claim means no length to check.
func (r *Recorder) setHost(claims []alloc.Claim, data [][]byte, length alloc.Claim, n uint32) error {
	if len(claims) != len(data) {
		return fmt.Errorf("SetHost of %d claims with %d values", len(claims), len(data))
	}
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := r.settleOthers(context.Background(), -1, claims, hostWrites); err != nil {
		return err
	}
	for _, b := range r.slots {
		b.mu.Lock()
	}
	defer r.unlockSlots()
	for _, b := range r.slots {
		if err := b.settleFor(context.Background(), claims, hostWrites); err != nil {
			return err
		}
	}
	if length.Size != 0 {
		if max, limited := r.lengthLimit(length); limited && n > max {
			return &LengthLimitError{Length: n, Max: max}
		}
	}
	for i, c := range claims {
		m := r.mapped(c)
		if m == nil || uint64(len(data[i])) > c.Size {
			return fmt.Errorf("SetHost of %d bytes into %s, which is not mapped host memory of that size", len(data[i]), c)
		}
		copy(m, data[i])
		if err := r.flush(c, uint64(len(data[i]))); err != nil {
			return err
		}
	}
	r.ledger.Written(claims)
	return nil
}

func (r *Recorder) unlockSlots() {
	for _, b := range r.slots {
		b.mu.Unlock()
	}
}

// Alloc reserves size bytes of the given kind for a buffer, which belongs
// to no stream. While a window records, a request of the kind and size a
// warmup allocated and freed gets that claim (the recorded run asks for
// what the warmup did, in the same order). Any other request is served
// as usual, growing the pools if it must, and remembered as born inside
// the windows recording now: those windows refuse work on it
// (refuseBorn), since their graph would name memory the warmup never
// prepared. So a buffer allocated by another goroutine during a window
// works, and one the recorded run did not prepare fails at its first use
// in the window, whatever the pages hold. A request past the limit, or
// one the driver refuses for want of memory, reclaims and is retried once.
func (r *Recorder) Alloc(kind alloc.Kind, size uint64) (alloc.Claim, error) {
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return alloc.Claim{}, err
	}
	if r.recordingSlots.Load() != 0 {
		for _, b := range r.slots {
			b.mu.Lock()
			c, ok := b.reservedFor(kind, size)
			b.mu.Unlock()
			if ok {
				return c, nil
			}
		}
	}
	c, err := retryOutOfMemory(r, nil, false, func() (alloc.Claim, error) { return r.mem.AllocOutsideWindow(kind, size) })
	if err != nil {
		return alloc.Claim{}, r.observe(err)
	}
	r.markBorn(c)
	if r.active.Load() > 0 {
		// A warmup's buffer, if it frees it, is parked for the recorded run.
		for _, b := range r.slots {
			b.mu.Lock()
			if b.win.IsActive() && !b.win.IsRecording() {
				b.win.touchClaims(c)
			}
			b.mu.Unlock()
		}
	}
	return c, nil
}

// AllocOn reserves size bytes for work on stream s: an op's temporary.
// Only the stream's own recording window restricts it: inside that window
// a request that needs a new page fails and dooms the window (its warmup
// should have grown the pools); any other stream gets pages as usual.
func (r *Recorder) AllocOn(s StreamID, kind alloc.Kind, size uint64) (alloc.Claim, error) {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return alloc.Claim{}, err
	}
	return b.alloc(kind, size)
}

// Mapped returns the claim's bytes when its page is mapped, else nil.
func (r *Recorder) mapped(c alloc.Claim) []byte {
	p, _, ok := r.mem.Page(c.Page)
	if !ok || p.mapped == nil {
		return nil
	}
	return p.mapped[c.Offset:c.End():c.End()]
}

// memoryOf returns the device memory behind a claim.
func (r *Recorder) memoryOf(c alloc.Claim) Memory {
	p, _, ok := r.mem.Page(c.Page)
	if !ok {
		return 0
	}
	return p.mem
}

// flush makes host writes to the first n bytes of c visible to the device.
func (r *Recorder) flush(c alloc.Claim, n uint64) error {
	return r.observe(r.dev.FlushMemory(r.memoryOf(c), c.Offset, n))
}

// invalidate makes device writes to the first n bytes of c visible to the host.
func (r *Recorder) invalidate(c alloc.Claim, n uint64) error {
	return r.observe(r.dev.InvalidateMemory(r.memoryOf(c), c.Offset, n))
}

// Free releases a claim and clears its taint. The caller has quiesced
// every slot that used it. A claim that a recording window touched is
// guarded first, so its range stays out of reuse until the graph (or the
// refusal) lets it go; one a prepared window's warmup used is parked until
// the window begins, so the warmup needs every range the recorded run will.
// A guarded claim keeps its taint until the last guard goes: a replay
// still reads its bytes, and unwritten ones must stay unwritten.
func (r *Recorder) Free(c alloc.Claim) error {
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if r.closed.Load() {
		return nil
	}
	r.forgetBorn(c)
	if r.active.Load() > 0 {
		for _, b := range r.slots {
			held, err := b.holdIfWindowUsed(c)
			if err != nil || held {
				return err
			}
		}
	}
	if !r.freeGuarded(c) {
		r.ledger.Written([]alloc.Claim{c})
	}
	return r.mem.Free(c)
}

// guard keeps claims out of reuse for a graph or a recording window.
func (r *Recorder) guard(claims []alloc.Claim) error {
	if err := r.mem.Guard(claims); err != nil {
		return err
	}
	r.guardMu.Lock()
	for _, c := range claims {
		r.guarded[c]++
	}
	r.guardMu.Unlock()
	return nil
}

// unguard drops one guard of each claim. A claim freed while guarded is
// released with its last guard, and only then does the ledger forget its
// bytes.
func (r *Recorder) unguard(claims []alloc.Claim) {
	var released []alloc.Claim
	r.guardMu.Lock()
	for _, c := range claims {
		if r.guarded[c]--; r.guarded[c] > 0 {
			continue
		}
		delete(r.guarded, c)
		if _, ok := r.freed[c]; ok {
			delete(r.freed, c)
			released = append(released, c)
		}
	}
	r.guardMu.Unlock()
	r.mem.Unguard(claims)
	r.ledger.Written(released)
}

// freeGuarded reports whether a claim being freed is guarded, and then
// remembers it: its bytes stay what a graph reads, so the ledger keeps
// what it knows of them (unwritten bytes stay unwritten) until the last
// guard goes.
func (r *Recorder) freeGuarded(c alloc.Claim) bool {
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	if r.guarded[c] == 0 {
		return false
	}
	r.freed[c] = struct{}{}
	return true
}

// free releases c where the caller holds a slot lock (so devMu is already
// held off by that lock). A claim that reaches it through a drop queue or
// the warmup's parked claims may be guarded by a live graph (one Free
// parked because a warmup touched it, say): it keeps its taint until the
// last guard goes, as Free's claims do.
func (r *Recorder) free(c alloc.Claim) {
	r.forgetBorn(c)
	if !r.freeGuarded(c) {
		r.ledger.Written([]alloc.Claim{c})
	}
	_ = r.mem.Free(c)
}

// Drop frees a temporary claim that work just recorded on stream s still
// uses: eagerly it joins the open submission's drop queue (released when
// its fence signals); during the slot's warmup it is parked until the
// window begins; inside the recording window it is freed at once, guarded
// for the graph like any claim freed inside a window.
func (r *Recorder) Drop(s StreamID, c alloc.Claim) error {
	b := r.slotOf(s)
	b.mu.Lock()
	switch {
	case r.closed.Load():
		b.mu.Unlock()
		return nil
	case b.win.IsRecording():
		b.mu.Unlock()
		return r.Free(c)
	case b.win.IsActive():
		b.win.park(c)
	default:
		if !b.subs.queueDrop(c) {
			b.mu.Unlock()
			return r.Free(c)
		}
	}
	b.mu.Unlock()
	r.ledger.Written([]alloc.Claim{c})
	return nil
}

// Close waits for all work, destroys every kernel, command buffer, set and
// page, and closes the device. Idempotent; after it every call fails with
// errs.Closed and releases (Free, Graph.Close, Kernel.Release) do nothing.
func (r *Recorder) Close() error {
	r.devMu.Lock()
	defer r.devMu.Unlock()
	if r.closed.Swap(true) {
		return nil
	}
	// Every slot call checks closed under its slot's lock: taking each lock
	// once waits out a call already past that check, so nothing is
	// submitted after the device goes idle below.
	for _, b := range r.slots {
		b.mu.Lock()
		b.mu.Unlock()
	}
	err := r.dev.WaitIdle()
	for _, b := range r.slots {
		b.destroy()
	}
	r.kernelsMu.Lock()
	for k := range r.kernels {
		r.dev.DestroyPipeline(k.pipe)
	}
	clear(r.kernels)
	r.kernelsMu.Unlock()
	r.closePresentations()
	r.closeEvents()
	if r.mem != nil {
		r.mem.Close()
	}
	if cerr := r.dev.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, errs.DeviceLost) {
		return fmt.Errorf("closing the device: %w", err)
	}
	return nil
}

// Quiesce waits for the eager work of the slots in mask (bit i: slot i) so
// memory they used can be freed. A slot whose window records is skipped:
// its eager work was drained when the window began and nothing recorded
// runs until a replay.
func (r *Recorder) Quiesce(mask uint64) error {
	var first error
	for ; mask != 0; mask &= mask - 1 {
		i := bits.TrailingZeros64(mask)
		if i >= len(r.slots) {
			break
		}
		b := r.slots[i]
		b.mu.Lock()
		if !r.closed.Load() && !b.win.IsRecording() {
			if err := b.subs.drain(context.Background()); err != nil && first == nil {
				first = err
			}
		}
		b.mu.Unlock()
	}
	return first
}

// owner is the claim the allocator handed out that holds c: c itself, or
// for a view's range its buffer's claim. Whatever holds memory back from
// reuse (a window's touched set, a graph's guards) holds owners, which
// Free names; c itself when no claim holds it.
func (r *Recorder) owner(c alloc.Claim) alloc.Claim {
	if o, ok := r.mem.Owner(c); ok {
		return o
	}
	return c
}
