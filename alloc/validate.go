package alloc

import (
	"errors"
	"fmt"
)

// ErrCorrupt wraps what Validate finds: the allocator's or the ledger's
// internal structure broke one of its invariants.
var ErrCorrupt = errors.New("internal structure corrupt")

// Validate checks the allocator's internal structure, as VMA's
// vmaCheckCorruption and the TLSF's own checks do: each live page is
// covered exactly by its chain of ranges, no two free ranges touch, every
// free range is in the right bucket of its kind's index and every other
// range is a claim in the claim map, and the counters add up. A failure
// wraps ErrCorrupt and says where; it means a bug in the allocator or a
// caller racing it without its lock, never bad input. It walks every range
// under the allocator's lock, so it is for tests, fuzz targets and
// debugging, not a hot path.
func (a *Allocator[B]) Validate() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// validate is Validate under the lock: the free index first, which gives
// the set of free nodes the pages' chains are then checked against.
func (a *Allocator[B]) validate() error {
	inIndex, err := a.validateFreeIndex()
	if err != nil {
		return err
	}
	var t pageTotals
	for id, pg := range a.pages {
		if !pg.live {
			continue
		}
		if err := a.validatePage(PageID(id), &a.pages[id], inIndex, &t); err != nil {
			return err
		}
	}
	if t.reserved != a.reserved || t.used != a.used || t.guarded != a.guarded || t.pages != a.livePageCount || t.live != a.liveClaims {
		return errors.New("counters disagree with the pages")
	}
	if a.cfg.Limit != 0 && t.reserved > a.cfg.Limit {
		return fmt.Errorf("%d bytes reserved past the limit of %d", t.reserved, a.cfg.Limit)
	}
	if t.emptyShared != a.emptyShared {
		return fmt.Errorf("empty shared bytes %v, counted %v", t.emptyShared, a.emptyShared)
	}
	return nil
}

// validateFreeIndex checks every kind's free index: each bucket's list
// agrees with the bitmaps, holds free nodes of its size class and kind,
// and is linked both ways. It returns the nodes it found.
func (a *Allocator[B]) validateFreeIndex() (map[int32]bool, error) {
	inIndex := map[int32]bool{}
	for k := range a.free {
		ix := &a.free[k]
		for fl := range ix.heads {
			for sl := range ix.heads[fl] {
				if err := a.validateBucket(Kind(k), ix, fl, sl, inIndex); err != nil {
					return nil, err
				}
			}
			if (ix.slBitmap[fl] != 0) != (ix.flBitmap&(1<<fl) != 0) {
				return nil, fmt.Errorf("kind %d level %d: bitmaps disagree", k, fl)
			}
		}
	}
	return inIndex, nil
}

// validateBucket checks one bucket's free list, adding its nodes to inIndex.
func (a *Allocator[B]) validateBucket(k Kind, ix *freeIndex, fl, sl int, inIndex map[int32]bool) error {
	head := ix.heads[fl][sl]
	if (head != nilNode) != (ix.slBitmap[fl]&(1<<sl) != 0) {
		return fmt.Errorf("kind %d bucket %d/%d: bitmap disagrees with list", k, fl, sl)
	}
	prev := nilNode
	for n := head; n != nilNode; n = a.nodes[n].nextFree {
		nd := a.nodes[n]
		if f, s := bucketOf(nd.size); f != fl || s != sl {
			return fmt.Errorf("node %d of size %d in bucket %d/%d", n, nd.size, fl, sl)
		}
		if !nd.free || nd.prevFree != prev || inIndex[n] {
			return fmt.Errorf("node %d: bad free list link", n)
		}
		if a.pages[nd.page].kind != k {
			return fmt.Errorf("node %d indexed under the wrong kind", n)
		}
		inIndex[n] = true
		prev = n
	}
	return nil
}

// pageTotals are the counters the allocator keeps, as the pages add them up.
type pageTotals struct {
	reserved, used, guarded uint64
	pages, live             int
	emptyShared             [numKinds]uint64
}

// validatePage checks that one live page is covered exactly by its chain of
// ranges, that free ranges are coalesced and indexed and claims are in the
// claim map, and adds the page to t.
func (a *Allocator[B]) validatePage(id PageID, pg *page[B], inIndex map[int32]bool, t *pageTotals) error {
	t.pages++
	t.reserved += pg.size
	var pageUsed, offset uint64
	claimNodes := 0
	prev := nilNode
	for n := pg.first; n != nilNode; n = a.nodes[n].nextPhys {
		nd := a.nodes[n]
		switch {
		case nd.page != id, nd.offset != offset, nd.prevPhys != prev, nd.size == 0:
			return fmt.Errorf("page %d: broken chain at node %d", id, n)
		case nd.offset%a.cfg.Alignment != 0 || nd.size%a.cfg.Alignment != 0:
			return fmt.Errorf("page %d: node %d unaligned", id, n)
		case nd.free && prev != nilNode && a.nodes[prev].free:
			return fmt.Errorf("page %d: free ranges at %d not coalesced", id, nd.offset)
		case nd.free != inIndex[n]:
			return fmt.Errorf("page %d: node %d free=%v but indexed=%v", id, n, nd.free, inIndex[n])
		}
		if !nd.free {
			claimNodes++
			if err := a.validateClaim(id, n, t); err != nil {
				return err
			}
			pageUsed += nd.size
		}
		offset += nd.size
		prev = n
	}
	if claimNodes != len(pg.claims) {
		return fmt.Errorf("page %d: claim map holds %d claims, chain %d", id, len(pg.claims), claimNodes)
	}
	if offset != pg.size || pageUsed != pg.used {
		return fmt.Errorf("page %d: chain covers %d of %d bytes, used %d vs %d", id, offset, pg.size, pageUsed, pg.used)
	}
	if pg.used == 0 && !pg.dedicated {
		t.emptyShared[pg.kind] += pg.size
	}
	return nil
}

// validateClaim checks the claimed node n of page id: in the claim map,
// reserving its size rounded up to the alignment and no more, and guarded
// if its release is deferred; it adds the node to t.
func (a *Allocator[B]) validateClaim(id PageID, n int32, t *pageTotals) error {
	nd := a.nodes[n]
	c := Claim{Page: nd.page, Offset: nd.offset, Size: nd.claimSize}
	if m, ok := a.lookup(c); !ok || m != n {
		return fmt.Errorf("page %d: claim %s missing from the claim map", id, c)
	}
	if nd.claimSize > nd.size || nd.claimSize+a.cfg.Alignment <= nd.size {
		return fmt.Errorf("claim %s reserves %d bytes", c, nd.size)
	}
	if !nd.deferred {
		t.used += nd.size
		t.live++
		return nil
	}
	t.guarded += nd.size
	if nd.guards == 0 {
		return fmt.Errorf("claim %s deferred without a guard", c)
	}
	return nil
}

// Validate checks the ledger's ranges: sorted, disjoint, non-empty, equal
// neighbours merged, counted, and each failure's range count exact. A
// failure wraps ErrCorrupt. Like Allocator.Validate it walks everything
// under the lock: for tests, fuzz targets and debugging.
func (l *Ledger) Validate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// validate is Validate under the lock.
func (l *Ledger) validate() error {
	total := 0
	perFailure := map[FailureID]int{}
	for id, rs := range l.pages {
		if len(rs) == 0 {
			return fmt.Errorf("page %d kept with no ranges", id)
		}
		for i, r := range rs {
			if r.start >= r.end || r.failure == 0 {
				return fmt.Errorf("page %d: bad range %+v", id, r)
			}
			if i > 0 && (rs[i-1].end > r.start || rs[i-1].end == r.start && rs[i-1].failure == r.failure) {
				return fmt.Errorf("page %d: ranges %+v and %+v overlap or are unmerged", id, rs[i-1], r)
			}
			perFailure[r.failure]++
		}
		total += len(rs)
	}
	if total != l.count || int64(total) != l.ranges.Load() {
		return fmt.Errorf("%d ranges, counted %d", total, l.count)
	}
	if len(perFailure) != len(l.failures) {
		return fmt.Errorf("%d failures carried, %d recorded", len(perFailure), len(l.failures))
	}
	for id, n := range perFailure {
		if rec := l.failures[id]; rec == nil || rec.ranges != n {
			return fmt.Errorf("failure %d carried by %d ranges, recorded %v", id, n, rec)
		}
	}
	return nil
}
