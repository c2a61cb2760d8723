package capture

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
)

// snapshot is everything a StreamCapture holds, copied, so a refused call can
// be shown to have changed nothing at all.
type snapshot struct {
	State    State
	Owner    uint64
	Recorded []Binding
	Host     []alloc.Claim
	Failure  error
}

func snap(c *StreamCapture) snapshot {
	return snapshot{
		State:    c.state,
		Owner:    c.owner,
		Recorded: append([]Binding(nil), c.recorded...),
		Host:     append([]alloc.Claim(nil), c.host...),
		Failure:  c.failure,
	}
}

var (
	claimA     = alloc.Claim{Page: 0, Offset: 0, Size: 256}
	claimB     = alloc.Claim{Page: 0, Offset: 256, Size: 256} // adjacent to A on the same page
	claimC     = alloc.Claim{Page: 1, Offset: 0, Size: 256}
	stagingA   = alloc.Claim{Page: 2, Offset: 0, Size: 64}
	stagingB   = alloc.Claim{Page: 2, Offset: 64, Size: 64}
	errDoomedA = errors.New("first failure")
	errDoomedB = errors.New("second failure")
)

const (
	ownerStream    = uint64(7)
	neighbourStrm  = uint64(9)
	leftoverStream = uint64(3)
)

// Starting points for the transition table; each builds its state through the
// public API only.
func startIdle(t *testing.T) *StreamCapture { return &StreamCapture{} }

func startIdleWithLeftovers(t *testing.T) *StreamCapture {
	c := &StreamCapture{}
	require.NoError(t, c.Prepare(leftoverStream))
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimC, Write: true})
	c.RetainHost(stagingB)
	c.Fail(errDoomedB)
	_, err := c.End(leftoverStream)
	require.NoError(t, err)
	return c
}

func startPrepared(t *testing.T) *StreamCapture {
	c := &StreamCapture{}
	require.NoError(t, c.Prepare(ownerStream))
	return c
}

func startRecording(t *testing.T) *StreamCapture {
	c := startPrepared(t)
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimA}, Binding{Claim: claimB, Write: true})
	c.RetainHost(stagingA)
	return c
}

func TestIllegalTransitionsChangeNothing(t *testing.T) {
	type row struct {
		from  string
		start func(*testing.T) *StreamCapture
		call  string
		do    func(*StreamCapture) error
	}
	prepare := func(c *StreamCapture) error { return c.Prepare(neighbourStrm) }
	begin := func(c *StreamCapture) error { return c.Begin() }
	end := func(c *StreamCapture) error { _, err := c.End(ownerStream); return err }
	abort := func(c *StreamCapture) error { return c.Abort() }
	seal := func(c *StreamCapture) error { _, err := c.Seal(ownerStream); return err }
	rows := []row{
		{"Prepared", startPrepared, "Prepare", prepare},
		{"Recording", startRecording, "Prepare", prepare},
		{"Idle", startIdle, "Begin", begin},
		{"Idle", startIdleWithLeftovers, "Begin", begin},
		{"Recording", startRecording, "Begin", begin},
		{"Idle", startIdle, "End", end},
		{"Idle", startIdleWithLeftovers, "End", end},
		{"Idle", startIdle, "Abort", abort},
		{"Idle", startIdleWithLeftovers, "Abort", abort},
		{"Idle", startIdleWithLeftovers, "Seal", seal},
	}
	for _, r := range rows {
		t.Run(r.call+"From"+r.from, func(t *testing.T) {
			c := r.start(t)
			before := snap(c)
			err := r.do(c)
			require.ErrorIs(t, err, errs.CaptureState)
			assert.Contains(t, err.Error(), r.call)
			assert.Contains(t, err.Error(), r.from)
			assert.Equal(t, before, snap(c))
		})
	}
}

func TestNoOpsOutsideRecordingChangeNothing(t *testing.T) {
	starts := map[string]func(*testing.T) *StreamCapture{
		"Idle":              startIdle,
		"IdleWithLeftovers": startIdleWithLeftovers,
		"Prepared":          startPrepared,
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			c := start(t)
			before := snap(c)
			c.Record(Binding{Claim: claimA, Write: true})
			c.RetainHost(stagingA)
			c.Fail(errDoomedA)
			assert.Equal(t, before, snap(c))
		})
	}
}

func TestTakeWhileActiveReturnsNilAndKeepsRecording(t *testing.T) {
	for name, start := range map[string]func(*testing.T) *StreamCapture{
		"Prepared":  startPrepared,
		"Recording": startRecording,
	} {
		t.Run(name, func(t *testing.T) {
			c := start(t)
			c.Fail(errDoomedA)
			before := snap(c)
			assert.Nil(t, c.TakeRecorded())
			assert.Nil(t, c.TakeRetainedHost())
			assert.NoError(t, c.TakeFailure())
			assert.Equal(t, before, snap(c))
		})
	}
}

func TestLegalTransitions(t *testing.T) {
	t.Run("PrepareFromIdle", func(t *testing.T) {
		c := startIdle(t)
		require.NoError(t, c.Prepare(ownerStream))
		assert.Equal(t, Prepared, c.State())
		owner, ok := c.Owner()
		assert.True(t, ok)
		assert.Equal(t, ownerStream, owner)
		assert.True(t, c.IsActive())
		assert.False(t, c.IsRecording())
		assert.Equal(t, CachePinned, c.CacheMode())
	})
	t.Run("BeginFromPrepared", func(t *testing.T) {
		c := startPrepared(t)
		require.NoError(t, c.Begin())
		assert.Equal(t, Recording, c.State())
		owner, ok := c.Owner()
		assert.True(t, ok)
		assert.Equal(t, ownerStream, owner)
		assert.True(t, c.IsActive())
		assert.True(t, c.IsRecording())
		assert.Equal(t, CachePinned, c.CacheMode())
	})
	t.Run("OwnedEndFromRecording", func(t *testing.T) {
		c := startRecording(t)
		end, err := c.End(ownerStream)
		require.NoError(t, err)
		assert.Equal(t, CaptureEnd{Owner: ownerStream, Owned: true}, end)
		assertIdle(t, c)
		assert.Equal(t, []Binding{{Claim: claimA}, {Claim: claimB, Write: true}}, c.TakeRecorded())
		assert.Equal(t, []alloc.Claim{stagingA}, c.TakeRetainedHost())
		assert.NoError(t, c.TakeFailure())
	})
	t.Run("AbortFromPrepared", func(t *testing.T) {
		c := startPrepared(t)
		require.NoError(t, c.Abort())
		assertIdle(t, c)
		assertEmpty(t, c)
	})
	t.Run("AbortFromRecording", func(t *testing.T) {
		c := startRecording(t)
		c.Fail(errDoomedA)
		require.NoError(t, c.Abort())
		assertIdle(t, c)
		assertEmpty(t, c)
	})
}

func assertIdle(t *testing.T, c *StreamCapture) {
	t.Helper()
	assert.Equal(t, Idle, c.State())
	_, ok := c.Owner()
	assert.False(t, ok)
	assert.False(t, c.IsActive())
	assert.False(t, c.IsRecording())
	assert.Equal(t, CacheLRU, c.CacheMode())
}

func assertEmpty(t *testing.T, c *StreamCapture) {
	t.Helper()
	assert.Nil(t, c.TakeRecorded())
	assert.Nil(t, c.TakeRetainedHost())
	assert.NoError(t, c.TakeFailure())
}

func TestEndFromPreparedAbortsAndFails(t *testing.T) {
	c := startPrepared(t)
	end, err := c.End(ownerStream)
	require.ErrorIs(t, err, errs.CaptureState)
	assert.Equal(t, CaptureEnd{Owner: ownerStream, Owned: true}, end)
	assertIdle(t, c)
	assertEmpty(t, c)
	require.NoError(t, c.Prepare(ownerStream), "a failed warmup must leave the slot usable")
}

func TestNonOwnerEndClosesWindow(t *testing.T) {
	c := startRecording(t)
	end, err := c.End(neighbourStrm)
	require.NoError(t, err)
	assert.Equal(t, CaptureEnd{Owner: ownerStream, Owned: false}, end)
	assertIdle(t, c)

	_, err = c.End(ownerStream)
	require.ErrorIs(t, err, errs.CaptureState, "the owner's later End finds nothing recording")
	assert.Equal(t, []Binding{{Claim: claimA}, {Claim: claimB, Write: true}}, c.TakeRecorded(),
		"the owner's failed End must not lose what the closed window recorded")
}

func TestFirstFailureWins(t *testing.T) {
	c := startRecording(t)
	c.Fail(nil)
	c.Fail(errDoomedA)
	c.Fail(errDoomedB)
	c.Fail(nil)
	_, err := c.End(ownerStream)
	require.NoError(t, err)
	assert.Equal(t, errDoomedA, c.TakeFailure())
	assert.NoError(t, c.TakeFailure(), "TakeFailure clears")
}

func TestRecordDeduplicatesInFirstSeenOrder(t *testing.T) {
	c := startPrepared(t)
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimB}, Binding{Claim: claimA})
	c.Record(Binding{Claim: claimC, Write: true}, Binding{Claim: claimB, Write: true})
	c.Record(Binding{Claim: claimB}, Binding{Claim: claimA}, Binding{Claim: claimA})
	_, err := c.End(ownerStream)
	require.NoError(t, err)

	assert.Equal(t, []Binding{
		{Claim: claimB, Write: true},
		{Claim: claimA},
		{Claim: claimC, Write: true},
	}, c.TakeRecorded())
	assert.Nil(t, c.TakeRecorded(), "TakeRecorded empties")
}

func TestAdjacentClaimsOnOnePageStayTwo(t *testing.T) {
	require.Equal(t, claimA.Page, claimB.Page)
	require.Equal(t, claimA.End(), claimB.Offset)
	c := startPrepared(t)
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimA, Write: true}, Binding{Claim: claimB})
	c.RetainHost(stagingA)
	c.RetainHost(stagingB)
	c.RetainHost(stagingA)
	_, err := c.End(ownerStream)
	require.NoError(t, err)
	assert.Equal(t, []Binding{{Claim: claimA, Write: true}, {Claim: claimB}}, c.TakeRecorded())
	assert.Equal(t, []alloc.Claim{stagingA, stagingB}, c.TakeRetainedHost())
	assert.Nil(t, c.TakeRetainedHost(), "TakeRetainedHost empties")
}

func TestPrepareStartsFromEmptyRecording(t *testing.T) {
	c := startIdleWithLeftovers(t)
	require.NoError(t, c.Prepare(ownerStream))
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimA})
	_, err := c.End(ownerStream)
	require.NoError(t, err)
	assert.Equal(t, []Binding{{Claim: claimA}}, c.TakeRecorded())
	assert.Nil(t, c.TakeRetainedHost())
	assert.NoError(t, c.TakeFailure())
}

func TestTakenSlicesAreNotReused(t *testing.T) {
	c := startRecording(t)
	_, err := c.End(ownerStream)
	require.NoError(t, err)
	recorded := c.TakeRecorded()
	host := c.TakeRetainedHost()
	want := append([]Binding(nil), recorded...)

	require.NoError(t, c.Prepare(neighbourStrm))
	require.NoError(t, c.Begin())
	c.Record(Binding{Claim: claimC, Write: true}, Binding{Claim: claimC}, Binding{Claim: claimA, Write: true})
	c.RetainHost(stagingB)

	assert.Equal(t, want, recorded, "a graph's write set must survive the next window")
	assert.Equal(t, []alloc.Claim{stagingA}, host)
}

func TestSeal(t *testing.T) {
	wantTouched := []alloc.Claim{claimA, claimB}
	wantWrites := []alloc.Claim{claimB}
	wantHost := []alloc.Claim{stagingA}
	wantInputs := []alloc.Claim{claimA}
	wantSteps := []Step{{Reads: []int32{0}, Writes: []int32{1}}}

	t.Run("Owned", func(t *testing.T) {
		c := startRecording(t)
		sealed, err := c.Seal(ownerStream)
		require.NoError(t, err)
		assert.Equal(t, Sealed{Owner: ownerStream, Touched: wantTouched, Writes: wantWrites, Host: wantHost, Inputs: wantInputs, Steps: wantSteps}, sealed)
		assertIdle(t, c)
		assertEmpty(t, c)
	})
	t.Run("NotOwned", func(t *testing.T) {
		c := startRecording(t)
		sealed, err := c.Seal(neighbourStrm)
		require.ErrorIs(t, err, errs.CaptureState)
		assert.Contains(t, err.Error(), fmt.Sprintf("stream %d ended a capture owned by stream %d", neighbourStrm, ownerStream))
		assert.Equal(t, Sealed{Owner: ownerStream, Touched: wantTouched, Writes: wantWrites, Host: wantHost, Inputs: wantInputs}, sealed)
		assertIdle(t, c)
		assertEmpty(t, c)
	})
	t.Run("Doomed", func(t *testing.T) {
		c := startRecording(t)
		c.Fail(errDoomedA)
		sealed, err := c.Seal(ownerStream)
		require.ErrorIs(t, err, errDoomedA)
		assert.NotErrorIs(t, err, errs.CaptureState)
		assert.Equal(t, Sealed{Owner: ownerStream, Touched: wantTouched, Writes: wantWrites, Host: wantHost, Inputs: wantInputs}, sealed)
		assertIdle(t, c)
		assertEmpty(t, c)
	})
	t.Run("NotOwnedAndDoomed", func(t *testing.T) {
		c := startRecording(t)
		c.Fail(errDoomedA)
		sealed, err := c.Seal(neighbourStrm)
		require.ErrorIs(t, err, errs.CaptureState)
		require.ErrorIs(t, err, errDoomedA)
		assert.Equal(t, wantWrites, sealed.Writes)
		assert.Equal(t, wantHost, sealed.Host)
		assertEmpty(t, c)
	})
	t.Run("PreparedOnly", func(t *testing.T) {
		c := startPrepared(t)
		sealed, err := c.Seal(ownerStream)
		require.ErrorIs(t, err, errs.CaptureState)
		assert.Equal(t, Sealed{Owner: ownerStream}, sealed)
		assertIdle(t, c)
	})
	t.Run("Idle", func(t *testing.T) {
		c := startIdle(t)
		sealed, err := c.Seal(ownerStream)
		require.ErrorIs(t, err, errs.CaptureState)
		assert.Equal(t, Sealed{}, sealed)
		assertIdle(t, c)
	})
}

func TestAbandon(t *testing.T) {
	t.Run("Recording", func(t *testing.T) {
		c := startRecording(t)
		c.Fail(errDoomedA)
		sealed, doomed, err := c.Abandon()
		require.NoError(t, err)
		assert.Equal(t, errDoomedA, doomed)
		assert.Equal(t, Sealed{Owner: ownerStream, Touched: []alloc.Claim{claimA, claimB}, Writes: []alloc.Claim{claimB}, Host: []alloc.Claim{stagingA}, Inputs: []alloc.Claim{claimA}}, sealed,
			"an abandoned window hands back what to taint and release, but no steps")
		assertIdle(t, c)
		assertEmpty(t, c)
	})
	for name, start := range map[string]func(*testing.T) *StreamCapture{"Prepared": startPrepared, "Idle": startIdle} {
		t.Run(name, func(t *testing.T) {
			c := start(t)
			before := c.State()
			sealed, doomed, err := c.Abandon()
			require.ErrorIs(t, err, errs.CaptureState)
			assert.Equal(t, Sealed{}, sealed)
			assert.NoError(t, doomed)
			assert.Equal(t, before, c.State(), "a refused Abandon changes nothing")
		})
	}
}

func TestStringers(t *testing.T) {
	assert.Equal(t, "Idle", Idle.String())
	assert.Equal(t, "Prepared", Prepared.String())
	assert.Equal(t, "Recording", Recording.String())
	assert.Equal(t, "State(9)", State(9).String())
	assert.Equal(t, "LRU", CacheLRU.String())
	assert.Equal(t, "Pinned", CachePinned.String())
	assert.Equal(t, "CacheMode(9)", CacheMode(9).String())
}

func TestRecordAllocatesNothingInSteadyState(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector instruments allocations")
	}
	c := &StreamCapture{}
	launch := []Binding{{Claim: claimA}, {Claim: claimB, Write: true}, {Claim: claimC, Write: true}}
	window := func() {
		_ = c.Abort()
		_ = c.Prepare(ownerStream)
		_ = c.Begin()
		c.Record(launch...)
		c.Record(launch...)
		c.RetainHost(stagingA)
	}
	window()
	assert.Zero(t, testing.AllocsPerRun(100, window))
}

// A prefix is Scale bytes per unit, at most the claim; one that covers
// every element of a claim padded to whole words covers the padding too.
func TestExtentPrefixCoversThePaddingWithTheLastElement(t *testing.T) {
	claim := alloc.Claim{Page: 3, Offset: 256, Size: 76} // 37 two-byte elements, padded to 19 words
	halves := Extent{Param: alloc.Claim{Page: 1, Size: 4}, Scale: 2, Elements: 74}
	plain := Extent{Param: alloc.Claim{Page: 1, Size: 4}, Scale: 2}
	for n := uint32(0); n <= 40; n++ {
		want := min(uint64(n)*2, claim.Size)
		require.Equal(t, alloc.Claim{Page: 3, Offset: 256, Size: want}, plain.Prefix(claim, n), "n=%d without Elements", n)
		if n >= 37 {
			want = claim.Size
		}
		require.Equal(t, alloc.Claim{Page: 3, Offset: 256, Size: want}, halves.Prefix(claim, n), "n=%d", n)
	}
	require.Equal(t, claim, Extent{}.Prefix(claim, 0), "the zero Extent is the whole claim")
}
