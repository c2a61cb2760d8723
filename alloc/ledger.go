package alloc

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// FailureID names one failure in a Ledger. IDs are 64-bit and never reused,
// so a stale ID can never be confused with a later failure.
type FailureID uint64

// UnwrittenError is the error of a read of tainted memory. It matches
// errs.Unwritten with errors.Is and unwraps to the failure's original cause,
// so the caller sees both that the data is missing and why.
type UnwrittenError struct {
	Failure FailureID
	Claim   Claim // the claim that was checked
	Cause   error
}

// Error names the claim, what to do, and the cause.
func (e *UnwrittenError) Error() string {
	cause := "cause unknown"
	if e.Cause != nil {
		cause = e.Cause.Error()
	}
	return fmt.Sprintf("%s: %s, left so by failure %d (deal with its cause, then write the memory again): %s", errs.Unwritten, e.Claim, e.Failure, cause)
}

// Is makes errors.Is(err, errs.Unwritten) true.
func (e *UnwrittenError) Is(target error) bool { return target == errs.Unwritten }

// Unwrap returns the original cause.
func (e *UnwrittenError) Unwrap() error { return e.Cause }

// taintRange is a run of bytes [start, end) of one page carrying a failure.
type taintRange struct {
	start, end uint64
	failure    FailureID
}

// failureRecord is a failure's cause and how many ranges carry it; the
// record goes when the count reaches zero.
type failureRecord struct {
	cause  error
	ranges int
}

// Ledger records which bytes hold data that no executed work wrote. It is
// byte-exact: tainting a claim never taints an adjacent claim of the same
// page. It is safe for concurrent use, and Check and Written on a clean
// ledger (the common case) cost one atomic load.
type Ledger struct {
	ranges atomic.Int64 // mirror of count, read without the lock

	mu       lockrank.Mutex
	count    int                     // taint ranges held; 0 takes the fast path
	pages    map[PageID][]taintRange // sorted, disjoint, same-failure neighbours merged
	failures map[FailureID]*failureRecord
	lastID   FailureID
}

// NewLedger returns a clean ledger.
func NewLedger() *Ledger {
	l := &Ledger{pages: make(map[PageID][]taintRange), failures: make(map[FailureID]*failureRecord)}
	l.mu.SetRank(lockrank.Ledger, 0)
	return l
}

// Taint marks exactly the claims' bytes as carrying a new failure with the
// given cause, and returns its ID.
func (l *Ledger) Taint(claims []Claim, cause error) FailureID {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastID++
	id := l.lastID
	l.failures[id] = &failureRecord{cause: cause}
	l.assignAll(claims, id)
	return id
}

// Inherit marks the claims' bytes with an existing failure, so that the
// outputs of a launch skipped because of a tainted input carry the input's
// cause down the chain. If no byte carries id any more its cause is gone;
// the bytes are still tainted, with a cause saying so. ID 0 is no failure
// and is ignored.
func (l *Ledger) Inherit(claims []Claim, id FailureID) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.failures[id]; !ok {
		l.failures[id] = &failureRecord{cause: fmt.Errorf("failure %d, whose cause was already dropped", id)}
	}
	l.assignAll(claims, id)
}

// Written clears exactly the claims' bytes: work that wrote them executed.
func (l *Ledger) Written(claims []Claim) {
	if l.ranges.Load() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.assignAll(claims, 0)
}

// Check returns nil when no byte of the claims is tainted, else an
// *UnwrittenError for the first tainted byte (claims in order, bytes in
// order).
func (l *Ledger) Check(claims []Claim) error {
	if l.ranges.Load() == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, id, ok := l.first(claims)
	if !ok {
		return nil
	}
	return &UnwrittenError{Failure: id, Claim: c, Cause: l.failures[id].cause}
}

// Failure returns the failure of the first tainted byte of the claims, for
// a launch to skip and let its outputs Inherit it.
func (l *Ledger) Failure(claims []Claim) (FailureID, bool) {
	if l.ranges.Load() == 0 {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, id, ok := l.first(claims)
	return id, ok
}

// Live returns how many failures some byte still carries; a failure and its
// cause are dropped when no byte does.
func (l *Ledger) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.failures)
}

// first finds the first tainted byte of the claims.
func (l *Ledger) first(claims []Claim) (Claim, FailureID, bool) {
	for _, c := range claims {
		if c.Size == 0 {
			continue
		}
		rs := l.pages[c.Page]
		i := firstEndingAfter(rs, c.Offset)
		if i < len(rs) && rs[i].start < c.End() {
			return c, rs[i].failure, true
		}
	}
	return Claim{}, 0, false
}

// firstEndingAfter returns the index of the first range ending after off.
func firstEndingAfter(rs []taintRange, off uint64) int {
	i, _ := slices.BinarySearchFunc(rs, off, func(r taintRange, off uint64) int {
		if r.end <= off {
			return -1
		}
		return 1
	})
	return i
}

func (l *Ledger) assignAll(claims []Claim, id FailureID) {
	for _, c := range claims {
		if c.Size != 0 {
			l.assign(c.Page, c.Offset, c.End(), id)
		}
	}
	if id != 0 && l.failures[id].ranges == 0 {
		delete(l.failures, id)
	}
	l.ranges.Store(int64(l.count))
}

// assign makes bytes [start, end) of a page carry failure id (0: clean),
// splitting the ranges it partly overlaps and merging equal neighbours.
func (l *Ledger) assign(pageID PageID, start, end uint64, id FailureID) {
	rs := l.pages[pageID]
	i := firstEndingAfter(rs, start)
	j := i
	for j < len(rs) && rs[j].start < end {
		j++
	}
	if i == j && id == 0 {
		return
	}
	var pieces [3]taintRange
	replacement := pieces[:0]
	if i < j && rs[i].start < start {
		replacement = append(replacement, taintRange{rs[i].start, start, rs[i].failure})
	}
	if id != 0 {
		replacement = append(replacement, taintRange{start, end, id})
	}
	if i < j && rs[j-1].end > end {
		replacement = append(replacement, taintRange{end, rs[j-1].end, rs[j-1].failure})
	}
	for _, r := range replacement {
		l.failures[r.failure].ranges++
	}
	for _, r := range rs[i:j] {
		l.release(r.failure, id)
	}
	rs = slices.Replace(rs, i, j, replacement...)
	l.count += len(replacement) - (j - i)
	// Merge equal, touching neighbours around what changed.
	lo, hi := max(i-1, 0), min(i+len(replacement), len(rs)-1)
	for k := lo; k < hi; {
		if rs[k].end == rs[k+1].start && rs[k].failure == rs[k+1].failure {
			rs[k].end = rs[k+1].end
			l.failures[rs[k].failure].ranges--
			rs = slices.Delete(rs, k+1, k+2)
			l.count--
			hi--
			continue
		}
		k++
	}
	if len(rs) == 0 {
		delete(l.pages, pageID)
		return
	}
	l.pages[pageID] = rs
}

// release drops one range of failure f, and the failure with it when it was
// the last and is not the one being assigned (which assignAll settles).
func (l *Ledger) release(f, assigning FailureID) {
	rec := l.failures[f]
	rec.ranges--
	if rec.ranges == 0 && f != assigning {
		delete(l.failures, f)
	}
}
