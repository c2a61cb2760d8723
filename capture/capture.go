package capture

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
)

// State is where a stream's capture window is in its lifecycle. The zero value
// is Idle, so a zero StreamCapture needs no constructor.
type State uint8

const (
	// Idle: no window. Launches execute; what the last window left waits to
	// be taken.
	Idle State = iota
	// Prepared: a window is claimed by its owner and the warmup run executes,
	// growing the pools to the working set before anything is recorded.
	Prepared
	// Recording: launches are recorded into the graph's command buffer
	// instead of executed, and the memory they were given is remembered here.
	Recording
)

// String names the state for error messages and logs.
func (s State) String() string {
	switch s {
	case Idle:
		return "Idle"
	case Prepared:
		return "Prepared"
	case Recording:
		return "Recording"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// CacheMode tells the descriptor-set cache whether it may evict. A recorded
// command buffer references its descriptor sets, so updating or freeing one
// while a graph could still be sealed from it would invalidate the graph.
type CacheMode uint8

const (
	// CacheLRU is the normal mode: least recently used sets are evicted.
	CacheLRU CacheMode = iota
	// CachePinned holds from Prepare until the window closes: nothing is
	// evicted and every set a recorded launch used is pinned to the graph.
	CachePinned
)

// String names the mode for logs.
func (m CacheMode) String() string {
	switch m {
	case CacheLRU:
		return "LRU"
	case CachePinned:
		return "Pinned"
	}
	return fmt.Sprintf("CacheMode(%d)", uint8(m))
}

// Binding is memory one recorded launch was given. Write says whether the
// launch writes it, which decides what a failed replay taints and what a
// successful one marks written.
type Binding struct {
	Claim alloc.Claim
	Write bool
	// Read, on a written binding, says the launch also reads the old
	// contents (like Axpy's y): the binding is then an input too. A binding
	// that is not written is always read.
	Read bool
	// Extent says the launch reads and writes only a prefix of the claim
	// whose length a device value decides when it runs; the zero Extent
	// means the whole claim.
	Extent Extent
}

// Extent is the prefix of a claim a launch reads or writes, whose length
// is known only when the work runs: Scale bytes per unit of the uint32 the host keeps at Param (a
// dynamic length), at most the claim.
type Extent struct {
	Param alloc.Claim
	Scale uint64
	// Elements, when set, is the bytes the claim's elements take from its
	// start. A claim of 8- or 16-bit elements is rounded up to whole
	// words, and no kernel writes that padding on its own: a prefix
	// covering every element covers the whole claim, so a length equal to
	// the buffer's leaves none of it looking unwritten.
	Elements uint64
}

// Dynamic reports whether the extent depends on a device value.
func (e Extent) Dynamic() bool { return e.Scale != 0 }

// Prefix is the part of c written when the value at e.Param is n.
func (e Extent) Prefix(c alloc.Claim, n uint32) alloc.Claim {
	if !e.Dynamic() {
		return c
	}
	size := e.Scale * uint64(n)
	if size < c.Size && (e.Elements == 0 || size < e.Elements) {
		c.Size = size
	}
	return c
}

// Reads reports whether the launch reads the binding's old contents.
func (b Binding) Reads() bool { return !b.Write || b.Read }

// CaptureEnd reports who owned the window that End closed. Only an end whose
// caller was the owner may seal: a window closed from another stream is
// missing whatever the owner would still have issued.
type CaptureEnd struct {
	Owner uint64
	Owned bool
}

// StreamCapture is one slot's capture window and what its
// recorded launches were given. The zero value is Idle and ready to use. It is
// not safe for concurrent use; the slot's lock guards it.
//
// Its buffers are reused from one window to the next, so Record allocates
// nothing once the working set of a window has been seen before.
type StreamCapture struct {
	state State
	owner uint64

	// recorded holds each claim once in first-seen order; recordedAt maps a
	// claim to its index there so that Record deduplicates as it goes and a
	// long window over the same buffers stays small.
	recorded   []Binding
	recordedAt map[alloc.ClaimKey]int

	// steps is every Record call in order, flat: the number of claims read,
	// the number written, the indexes of those read into recorded, then for
	// each written claim its index and the index of its extent in extents
	// (-1: the whole claim). inputs marks the claims whose first access was
	// a read.
	steps   []int32
	extents []Extent
	inputs  []bool

	// last, lastAt and lastN memo the previous step's bindings and their
	// indexes (see sameAsLast); lastValid is false after drop.
	last      [maxStepBindings]Binding
	lastAt    [maxStepBindings]int32
	lastN     int
	lastValid bool

	host   []alloc.Claim
	hostAt map[alloc.ClaimKey]struct{}

	failure error
}

// stateError is the error of a call refused in the current state.
func (c *StreamCapture) stateError(call string) error {
	if c.state == Idle {
		return fmt.Errorf("%w: %s called while %s", errs.CaptureState, call, c.state)
	}
	return fmt.Errorf("%w: %s called while %s (owner stream %d)", errs.CaptureState, call, c.state, c.owner)
}

// drop forgets everything a window recorded, retained or failed with, keeping
// the buffers' capacity for the next window.
func (c *StreamCapture) drop() {
	c.recorded = c.recorded[:0]
	clear(c.recordedAt)
	c.steps = c.steps[:0]
	c.extents = c.extents[:0]
	c.inputs = c.inputs[:0]
	c.lastValid = false
	c.host = c.host[:0]
	clear(c.hostAt)
	c.failure = nil
}

// toIdle closes the window without touching what it recorded.
func (c *StreamCapture) toIdle() {
	c.state = Idle
	c.owner = 0
}

// Prepare claims the window for owner and arms it for the warmup run. It
// starts from an empty recording: anything a previous window left untaken
// (recorded claims, retained host staging, a failure) is dropped, so one
// window's leftovers can never leak into the next graph.
func (c *StreamCapture) Prepare(owner uint64) error {
	if c.state != Idle {
		return c.stateError(fmt.Sprintf("Prepare(%d)", owner))
	}
	c.drop()
	c.state = Prepared
	c.owner = owner
	return nil
}

// Begin starts recording: from here launches are remembered, not executed.
// It is refused unless the window is Prepared, so a window cannot record
// without the warmup that sized the pools.
func (c *StreamCapture) Begin() error {
	if c.state != Prepared {
		return c.stateError("Begin")
	}
	c.state = Recording
	return nil
}

// End closes the window. From Recording it always returns to Idle, even when
// caller is not the owner, so that the slot shared by several
// logical streams never wedges; the result says whether caller owned the
// window, and only an owned end may seal. What was recorded stays to be taken
// with TakeRecorded, TakeRetainedHost and TakeFailure.
//
// From Prepared (a warmup that failed before Begin) End aborts the window,
// returns to Idle and returns the CaptureEnd together with an error wrapping
// errs.CaptureState, since there is nothing to seal. From Idle it returns an
// error and changes nothing.
func (c *StreamCapture) End(caller uint64) (CaptureEnd, error) {
	return c.end(fmt.Sprintf("End(%d)", caller), caller)
}

// end is End with the name of the call to report, so that Seal's refusals
// name Seal.
func (c *StreamCapture) end(call string, caller uint64) (CaptureEnd, error) {
	switch c.state {
	case Recording:
		end := CaptureEnd{Owner: c.owner, Owned: caller == c.owner}
		c.toIdle()
		return end, nil
	case Prepared:
		end := CaptureEnd{Owner: c.owner, Owned: caller == c.owner}
		err := c.stateError(call)
		c.drop()
		c.toIdle()
		return end, fmt.Errorf("%w; the window was aborted, nothing was recorded", err)
	default:
		return CaptureEnd{}, c.stateError(call)
	}
}

// Abort closes an open window, Prepared or Recording, and drops what it
// recorded, retained and failed with; the caller releases the command buffer
// and taints nothing, since Abort is for windows whose work is discarded.
// From Idle it is an error and changes nothing.
func (c *StreamCapture) Abort() error {
	if c.state == Idle {
		return c.stateError("Abort")
	}
	c.drop()
	c.toIdle()
	return nil
}

// Record remembers the memory one recorded launch (or copy) was given, as
// one step of the recording. Each claim is kept once, in first-seen order,
// with Write set if any occurrence writes it; the step keeps which claims it
// read and which it wrote, so a replay can tell which outputs depend on an
// input that is unwritten at replay time. Outside Recording it does
// nothing, so the recorder may call it on every launch without checking the
// state. It allocates nothing once the window's claims and steps have been
// seen by an earlier window on this stream.
func (c *StreamCapture) Record(bindings ...Binding) {
	if c.state != Recording {
		return
	}
	if c.recordedAt == nil {
		c.recordedAt = make(map[alloc.ClaimKey]int, len(bindings))
	}
	var at [maxStepBindings]int32
	if len(bindings) > len(at) || !c.sameAsLast(bindings) {
		seen := int32(len(c.recorded)) // claims from here on are new in this step
		for j, b := range bindings {   // claims are numbered in binding order
			i := c.index(b)
			if j < len(at) {
				at[j] = i
			}
			if b.Reads() && i >= seen {
				c.inputs[i] = true // new in this step and read: an input of the recording
			}
		}
		c.remember(bindings, at[:min(len(bindings), len(at))])
	} else {
		copy(at[:], c.lastAt[:len(bindings)])
	}
	head := len(c.steps)
	c.steps = append(c.steps, 0, 0)
	for j, b := range bindings { // reads first: a step reads before it writes
		if b.Reads() {
			c.steps = append(c.steps, c.indexAt(at[:], j, b), c.extentIndex(b))
			c.steps[head]++
		}
	}
	for j, b := range bindings {
		if b.Write {
			c.steps = append(c.steps, c.indexAt(at[:], j, b), c.extentIndex(b))
			c.steps[head+1]++
		}
	}
}

// extentIndex is where the step encoding finds b's extent: -1 for the
// whole claim, else an index into c.extents (one entry per use, so a
// read-write binding appears twice).
func (c *StreamCapture) extentIndex(b Binding) int32 {
	if !b.Extent.Dynamic() {
		return -1
	}
	c.extents = append(c.extents, b.Extent)
	return int32(len(c.extents) - 1)
}

// maxStepBindings is how many bindings of one step Record keeps on the
// stack (a launch binds at most 16, plus its indirect group counts).
const maxStepBindings = 20

// indexAt is the index of bindings[j] computed above, or looked up for a
// step too large to keep on the stack.
func (c *StreamCapture) indexAt(at []int32, j int, b Binding) int32 {
	if j < len(at) {
		return at[j]
	}
	return c.index(b)
}

// sameAsLast reports whether bindings repeat the previous step's exactly
// (claims and Write flags): a chain records the same launch over and over,
// and its indexes are then known without a map lookup.
func (c *StreamCapture) sameAsLast(bindings []Binding) bool {
	if !c.lastValid || len(bindings) != c.lastN {
		return false
	}
	for j, b := range bindings {
		if c.last[j].Claim != b.Claim || c.last[j].Write != b.Write {
			return false
		}
	}
	return true
}

// remember keeps the step's bindings and indexes for sameAsLast. A claim
// already recorded with Write keeps it, so a repeat of the step changes
// nothing index can change.
func (c *StreamCapture) remember(bindings []Binding, at []int32) {
	c.lastValid = len(bindings) <= len(c.last)
	if !c.lastValid {
		return
	}
	c.lastN = len(bindings)
	for j, b := range bindings {
		c.last[j] = Binding{Claim: b.Claim, Write: b.Write}
	}
	copy(c.lastAt[:], at)
}

// index returns b's claim's index in recorded, adding it on first sight.
func (c *StreamCapture) index(b Binding) int32 {
	key := b.Claim.Key()
	if i, ok := c.recordedAt[key]; ok {
		c.recorded[i].Write = c.recorded[i].Write || b.Write
		return int32(i)
	}
	i := len(c.recorded)
	c.recordedAt[key] = i
	c.recorded = append(c.recorded, Binding{Claim: b.Claim, Write: b.Write})
	c.inputs = append(c.inputs, false)
	return int32(i)
}

// TakeRecorded returns what the closed window's launches were given, each
// claim once in first-seen order with Write OR-ed across its uses, and
// forgets it. The slice belongs to the caller (the next window does not reuse
// it). Outside Idle it returns nil and keeps the recording, since a window in
// progress is not finished.
func (c *StreamCapture) TakeRecorded() []Binding {
	if c.state != Idle || len(c.recorded) == 0 {
		return nil
	}
	taken := append([]Binding(nil), c.recorded...)
	c.recorded = c.recorded[:0]
	clear(c.recordedAt)
	c.steps = c.steps[:0]
	c.extents = c.extents[:0]
	c.inputs = c.inputs[:0]
	c.lastValid = false
	return taken
}

// Fail dooms the recording window: it misses work (a refused sync, an
// allocation that needed a new page, a driver error) and must not seal. The
// first failure wins because later ones are usually its consequences. It does
// nothing when not recording or when err is nil.
func (c *StreamCapture) Fail(err error) {
	if c.state != Recording || err == nil || c.failure != nil {
		return
	}
	c.failure = err
}

// TakeFailure returns why the closed window was doomed, or nil, and forgets
// it. Non-nil means the recording misses work and must not seal. Outside Idle
// it returns nil and keeps the failure.
func (c *StreamCapture) TakeFailure() error {
	if c.state != Idle {
		return nil
	}
	err := c.failure
	c.failure = nil
	return err
}

// RetainHost keeps host staging that a recorded copy reads alive with the
// graph: every replay re-reads it, so it may not return to a pool while the
// graph lives. Each claim is kept once. It does nothing when not recording.
func (c *StreamCapture) RetainHost(staging alloc.Claim) {
	if c.state != Recording {
		return
	}
	if c.hostAt == nil {
		c.hostAt = make(map[alloc.ClaimKey]struct{})
	}
	key := staging.Key()
	if _, seen := c.hostAt[key]; seen {
		return
	}
	c.hostAt[key] = struct{}{}
	c.host = append(c.host, staging)
}

// TakeRetainedHost returns the host staging the closed window retained, in
// first-seen order, and forgets it; the slice belongs to the caller. Outside
// Idle it returns nil and keeps the claims.
func (c *StreamCapture) TakeRetainedHost() []alloc.Claim {
	if c.state != Idle || len(c.host) == 0 {
		return nil
	}
	taken := append([]alloc.Claim(nil), c.host...)
	c.host = c.host[:0]
	clear(c.hostAt)
	return taken
}

// State returns where the window is in its lifecycle.
func (c *StreamCapture) State() State { return c.state }

// IsRecording reports whether launches are recorded instead of executed.
func (c *StreamCapture) IsRecording() bool { return c.state == Recording }

// IsActive reports whether a window is open (Prepared or Recording), in which
// case only its owner may use the slot.
func (c *StreamCapture) IsActive() bool { return c.state != Idle }

// Owner returns the logical stream that owns the open window; ok is false
// when no window is open.
func (c *StreamCapture) Owner() (owner uint64, ok bool) {
	if c.state == Idle {
		return 0, false
	}
	return c.owner, true
}

// CacheMode returns how the descriptor cache must behave now: pinned while a
// window is open (from Prepare, so the warmup already creates the sets the
// recording will reference), least-recently-used otherwise.
func (c *StreamCapture) CacheMode() CacheMode {
	if c.state == Idle {
		return CacheLRU
	}
	return CachePinned
}
