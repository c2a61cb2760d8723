package alloc

import "math/bits"

// The free ranges of every page of one kind live in one two-level segregated
// fit index (TLSF, as VMA uses): a first level by power of two and a second
// level splitting each power into slCount linear buckets, each bucket a list
// of free ranges, with one bitmap per level so that the smallest non-empty
// bucket that can serve a request is found with two bit scans.
const (
	slLog   = 5
	slCount = 1 << slLog
	// flCount covers sizes up to 1<<64: level 0 holds sizes below slCount
	// linearly, level f >= 1 holds [1<<(f+slLog-1), 1<<(f+slLog)).
	flCount = 64 - slLog + 1
)

// nilNode marks the absence of a neighbour or list element; node indices are
// int32 so that a node stays small and the slab stays cache friendly.
const nilNode int32 = -1

// node is one contiguous range of a page: free, a live claim, or a claim
// freed while guarded. Nodes live in the allocator's slab and are recycled,
// so the hot path never allocates.
type node struct {
	offset    uint64
	size      uint64 // reserved bytes: the claim size rounded to the alignment
	claimSize uint64 // the size the caller asked for; 0 for a free range
	page      PageID
	prevPhys  int32 // the range just below in the same page
	nextPhys  int32 // the range just above in the same page
	prevFree  int32 // neighbours in the free list of its bucket
	nextFree  int32
	guards    int32 // graphs guarding this claim
	free      bool
	deferred  bool // freed by the caller while guarded: neither live nor free
}

// freeIndex is the TLSF index of one kind's free ranges.
type freeIndex struct {
	flBitmap uint64
	slBitmap [flCount]uint32
	heads    [flCount][slCount]int32
}

func (ix *freeIndex) init() {
	for fl := range ix.heads {
		for sl := range ix.heads[fl] {
			ix.heads[fl][sl] = nilNode
		}
	}
}

// bucketOf returns the bucket whose ranges all have about this size.
func bucketOf(size uint64) (fl, sl int) {
	if size < slCount {
		return 0, int(size)
	}
	log := bits.Len64(size) - 1
	return log - slLog + 1, int(size>>(log-slLog)) - slCount
}

// searchBucketOf returns the first bucket whose ranges are all at least size
// bytes, so that its head serves the request without a scan.
func searchBucketOf(size uint64) (fl, sl int) {
	if size >= slCount {
		size += (uint64(1) << (bits.Len64(size) - 1 - slLog)) - 1
	}
	return bucketOf(size)
}

// insert puts a free range at the head of its bucket.
func (ix *freeIndex) insert(nodes []node, n int32) {
	fl, sl := bucketOf(nodes[n].size)
	head := ix.heads[fl][sl]
	nodes[n].prevFree = nilNode
	nodes[n].nextFree = head
	if head != nilNode {
		nodes[head].prevFree = n
	}
	ix.heads[fl][sl] = n
	ix.slBitmap[fl] |= 1 << sl
	ix.flBitmap |= 1 << fl
}

// remove takes a free range out of its bucket.
func (ix *freeIndex) remove(nodes []node, n int32) {
	prev, next := nodes[n].prevFree, nodes[n].nextFree
	if prev != nilNode {
		nodes[prev].nextFree = next
	}
	if next != nilNode {
		nodes[next].prevFree = prev
	}
	fl, sl := bucketOf(nodes[n].size)
	if ix.heads[fl][sl] == n {
		ix.heads[fl][sl] = next
		if next == nilNode {
			ix.slBitmap[fl] &^= 1 << sl
			if ix.slBitmap[fl] == 0 {
				ix.flBitmap &^= 1 << fl
			}
		}
	}
	nodes[n].prevFree, nodes[n].nextFree = nilNode, nilNode
}

// find returns a free range of at least size bytes, or nilNode. It is
// complete: when any free range is large enough, one is found, because the
// request's own bucket (which good-fit search skips) is scanned last.
func (ix *freeIndex) find(nodes []node, size uint64) int32 {
	fl, sl := searchBucketOf(size)
	if fl < flCount {
		slMap := ix.slBitmap[fl] & (^uint32(0) << sl)
		if slMap == 0 {
			flMap := ix.flBitmap & (^uint64(0) << (fl + 1))
			if flMap != 0 {
				fl = bits.TrailingZeros64(flMap)
				slMap = ix.slBitmap[fl]
			}
		}
		if slMap != 0 {
			return ix.heads[fl][bits.TrailingZeros32(slMap)]
		}
	}
	fl, sl = bucketOf(size)
	for n := ix.heads[fl][sl]; n != nilNode; n = nodes[n].nextFree {
		if nodes[n].size >= size {
			return n
		}
	}
	return nilNode
}

// largest returns the size of the largest free range: every range of the
// highest non-empty bucket is larger than any range of a lower one.
func (ix *freeIndex) largest(nodes []node) uint64 {
	if ix.flBitmap == 0 {
		return 0
	}
	fl := 63 - bits.LeadingZeros64(ix.flBitmap)
	sl := 31 - bits.LeadingZeros32(ix.slBitmap[fl])
	var best uint64
	for n := ix.heads[fl][sl]; n != nilNode; n = nodes[n].nextFree {
		best = max(best, nodes[n].size)
	}
	return best
}
