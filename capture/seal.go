package capture

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
)

// Sealed is what a graph built from a finished window holds, apart from its
// command buffer and descriptor pins. Its slices belong to the caller.
type Sealed struct {
	// Owner is the logical stream that owned the window.
	Owner uint64
	// Touched is every claim the recorded launches were given, once each in
	// first-seen order: the graph guards them so none is reused while it can
	// replay.
	Touched []alloc.Claim
	// Writes is the part of Touched some launch writes, in the same order: a
	// replay that fails to enqueue taints it, one that enqueues clears it.
	Writes []alloc.Claim
	// Host is the host staging recorded copies read, which the graph keeps
	// alive until it closes.
	Host []alloc.Claim
	// Inputs is the part of Touched whose first recorded access reads it:
	// what the recording consumes from before the replay, in Touched order.
	Inputs []alloc.Claim
	// Steps is every recorded launch or copy in order, naming what it read
	// and wrote by index into Touched. A replay whose inputs hold unwritten
	// bytes walks them to taint exactly the outputs that depend on those
	// bytes, as the same launches done one by one would.
	Steps []Step
}

// Step is one recorded launch or copy: indexes into Sealed.Touched of the
// claims it read and of those it wrote. ReadExtents and Extents, when not
// nil, hold for each read and each write its extent (the zero Extent: the
// whole claim).
type Step struct {
	Reads, Writes []int32
	ReadExtents   []Extent
	Extents       []Extent
}

// Seal closes the window on behalf of caller and turns what it recorded into
// a Sealed, draining the recording, the retained host staging and the failure
// in every case where a window was closed, so the stream is left Idle and
// empty for the next one. Exactly:
//
//   - Idle (nothing open): returns a zero Sealed and an error wrapping
//     errs.CaptureState; nothing changes (not even what an earlier window left
//     untaken), and there is nothing to taint or release.
//   - Prepared (warmup failed before Begin): the window is aborted; returns a
//     Sealed with only Owner set (nothing was recorded) and an error wrapping
//     errs.CaptureState.
//   - Recording, caller is not the owner: the window is closed anyway and an
//     error wrapping errs.CaptureState names both streams; if the window was
//     also doomed the error wraps that failure too.
//   - Recording, owner, window doomed by Fail: the error wraps the failure.
//   - Recording, owner, no failure: the Sealed and nil.
//
// In the last three cases the Sealed is filled even when the error is not
// nil: on error it is not a graph, but its Writes are what the caller must
// taint (those launches never ran) and its Host what it must release. Only
// Steps, which nothing but a graph uses, are left nil on error.
func (c *StreamCapture) Seal(caller uint64) (Sealed, error) {
	end, err := c.end(fmt.Sprintf("Seal(%d)", caller), caller)
	if err != nil {
		return Sealed{Owner: end.Owner}, err
	}
	failure := c.failure
	sealed := c.drainSealed(end.Owner, end.Owned && failure == nil)
	failure = c.TakeFailure()
	switch {
	case !end.Owned && failure != nil:
		return sealed, fmt.Errorf("%w: stream %d ended a capture owned by stream %d, which was also doomed: %w",
			errs.CaptureState, caller, end.Owner, failure)
	case !end.Owned:
		return sealed, fmt.Errorf("%w: stream %d ended a capture owned by stream %d",
			errs.CaptureState, caller, end.Owner)
	case failure != nil:
		return sealed, fmt.Errorf("the window owned by stream %d cannot seal: %w", end.Owner, failure)
	}
	return sealed, nil
}

// drainSealed takes the closed window's recording and host staging into a
// Sealed for owner.
func (c *StreamCapture) drainSealed(owner uint64, steps bool) Sealed {
	sealed := Sealed{Owner: owner, Host: c.TakeRetainedHost()}
	if steps {
		sealed.Steps = decodeSteps(c.steps, c.extents)
	}
	inputs := append([]bool(nil), c.inputs...)
	recorded := c.TakeRecorded()
	if len(recorded) == 0 {
		return sealed
	}
	sealed.Touched = make([]alloc.Claim, 0, len(recorded))
	for i, b := range recorded {
		sealed.Touched = append(sealed.Touched, b.Claim)
		if b.Write {
			sealed.Writes = append(sealed.Writes, b.Claim)
		}
		if inputs[i] {
			sealed.Inputs = append(sealed.Inputs, b.Claim)
		}
	}
	return sealed
}

// Abandon closes a recording window its owner gives up (an abort): like
// Seal, it leaves the stream Idle and empty and hands back what must be
// tainted (Writes) and released (Host), but no Steps, which only a graph
// needs. doomed is the failure that doomed the window, if one did, so the
// taint can name it. It fails with errs.CaptureState, changing nothing,
// unless the window is Recording.
func (c *StreamCapture) Abandon() (sealed Sealed, doomed error, err error) {
	if c.state != Recording {
		return Sealed{}, nil, c.stateError("Abandon")
	}
	owner := c.owner
	c.toIdle()
	sealed = c.drainSealed(owner, false)
	return sealed, c.TakeFailure(), nil
}

// decodeSteps turns the flat step encoding (per step: the read and write
// counts, then an index and an extent index for each read and each write)
// into Steps whose index slices share one array.
func decodeSteps(flat []int32, extents []Extent) []Step {
	if len(flat) == 0 {
		return nil
	}
	count := 0
	for i := 0; i < len(flat); count++ {
		i += 2 + 2*int(flat[i]) + 2*int(flat[i+1])
	}
	data := make([]int32, 0, len(flat)/2)
	steps := make([]Step, 0, count)
	for i := 0; i < len(flat); {
		r, w := int(flat[i]), int(flat[i+1])
		i += 2
		start := len(data)
		var readExt, writeExt []Extent
		i = decodeUses(flat, i, r, extents, &data, &readExt)
		i = decodeUses(flat, i, w, extents, &data, &writeExt)
		steps = append(steps, Step{Reads: data[start : start+r : start+r], Writes: data[start+r : start+r+w : start+r+w],
			ReadExtents: readExt, Extents: writeExt})
	}
	return steps
}

// decodeUses appends the n claim indexes encoded from flat[i] to data and,
// if any of them has a dynamic extent, sets ext to one extent per use.
// It returns the index past them.
func decodeUses(flat []int32, i, n int, extents []Extent, data *[]int32, ext *[]Extent) int {
	for j := 0; j < n; j++ {
		*data = append(*data, flat[i])
		if e := flat[i+1]; e >= 0 {
			if *ext == nil {
				*ext = make([]Extent, n)
			}
			(*ext)[j] = extents[e]
		}
		i += 2
	}
	return i
}
