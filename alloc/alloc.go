package alloc

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// Errors of the allocator. Each is returned wrapped with the request or
// claim it concerns; test for them with errors.Is.
var (
	// ErrInvalidSize rejects a zero-byte request, which would name no memory.
	ErrInvalidSize = errors.New("allocation of zero bytes")
	// ErrTooLarge rejects a request above Config.MaxClaim (the device's
	// maxStorageBufferRange), which no descriptor could address.
	ErrTooLarge = errors.New("allocation larger than the largest claim allowed")
	// ErrUnknownClaim reports a claim this allocator does not hold live: never
	// allocated here, already freed, or not matching a claim exactly.
	ErrUnknownClaim = errors.New("unknown or already freed claim")
	// ErrInvalidKind rejects a Kind outside DeviceLocal, Upload, Readback.
	ErrInvalidKind = errors.New("invalid memory kind")
	// ErrInvalidConfig rejects a Config that New cannot honour.
	ErrInvalidConfig = errors.New("invalid allocator configuration")
	// ErrOverLimit reports a request that needs a new page the memory
	// limit (Config.Limit) has no room for, even with every empty page
	// released: what is reserved is live, guarded or parked for a window.
	ErrOverLimit = errors.New("request past the memory limit")
)

// Block is the memory behind one page; the recorder wraps a VkDeviceMemory
// and the VkBuffer spanning it. The allocator calls Release exactly once,
// never while growth is locked except from Close.
type Block interface{ Release() }

// BlockSource creates the blocks behind pages. It is defined here, on the
// consumer side, so that tests feed the allocator a fake and the recorder
// feeds it the device. Its errors are returned wrapped, so errors.Is still
// sees the caller's sentinels (an out-of-memory error, say). NewBlock is
// called with the allocator's lock held and must not call back into it.
type BlockSource[B Block] interface {
	NewBlock(kind Kind, size uint64) (B, error)
}

// Defaults for the zero fields of Config.
const (
	DefaultPageSize    uint64 = 64 << 20
	DefaultAlignment   uint64 = 256
	DefaultStaggerFrom uint64 = 1 << 20
)

// maxRequest bounds every request so that rounding and bucket arithmetic
// never overflow; no device has anywhere near 4 EiB.
const maxRequest = uint64(1) << 62

// Config tunes an Allocator. A zero field takes its default.
type Config struct {
	// PageSize is the size of a shared page; default 64 MiB. Large pages
	// keep the number of Vulkan allocations (often capped at 4096) low.
	PageSize uint64
	// DedicatedThreshold is the request size from which a claim gets a
	// page of its own, so a huge tensor does not strand most of a shared
	// page when it is freed; default PageSize/2. At most PageSize.
	DedicatedThreshold uint64
	// Alignment is a power of two that every claim offset (and reserved
	// size) is a multiple of: the device's minStorageBufferOffsetAlignment
	// and nonCoherentAtomSize; default 256. PageSize must be a multiple.
	Alignment uint64
	// KeepEmpty is how many bytes of empty shared pages each kind keeps
	// for reuse before releasing more; default one PageSize, so a
	// workload that frees and reallocates a page's worth does not churn.
	KeepEmpty uint64
	// MaxClaim is the largest claim allowed (maxStorageBufferRange);
	// 0 means no limit.
	MaxClaim uint64
	// StaggerFrom is the reserved size from which a claim in a shared page
	// starts Stagger bytes into the free range it takes, when that range
	// has the room. Large tensors allocated one after another (16 MiB
	// each, say) would otherwise start exactly a power of two apart, and
	// a kernel walking two of them in step maps both onto the same cache
	// sets: a 2048 x 2048 matmul on lavapipe ran 8-10% slower so. The
	// bytes skipped stay free for smaller claims. Default 1 MiB.
	StaggerFrom uint64
	// Stagger is that offset, a multiple of Alignment; default 4 KiB plus
	// one Alignment, which moves a claim off both the 4 KiB page grid and
	// every larger power of two (none for pages under 16 times that).
	Stagger uint64
	// Limit caps the bytes of all live pages together, every kind
	// counted; 0 means no cap. A request that needs a page past it first
	// releases empty pages (the cache KeepEmpty keeps), and fails with
	// ErrOverLimit when even that leaves no room, so a library sharing
	// the device with others can budget its memory. A PageSize above the
	// limit is lowered to it, so the first page fits; a limit below the
	// Alignment, which no page fits, is refused.
	Limit uint64
}

func (c Config) withDefaults() (Config, error) {
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.Alignment == 0 {
		c.Alignment = DefaultAlignment
	}
	if c.Limit >= c.Alignment && c.PageSize > c.Limit && c.Alignment&(c.Alignment-1) == 0 {
		c.PageSize = c.Limit &^ (c.Alignment - 1)
		c.DedicatedThreshold = min(c.DedicatedThreshold, c.PageSize)
		c.KeepEmpty = min(c.KeepEmpty, c.PageSize)
	}
	if c.DedicatedThreshold == 0 {
		c.DedicatedThreshold = max(c.PageSize/2, 1)
	}
	if c.KeepEmpty == 0 {
		c.KeepEmpty = c.PageSize
	}
	if c.StaggerFrom == 0 {
		c.StaggerFrom = DefaultStaggerFrom
	}
	if c.Stagger == 0 && c.Alignment&(c.Alignment-1) == 0 {
		if s := (4096 + 2*c.Alignment - 1) &^ (c.Alignment - 1); s <= c.PageSize/16 {
			c.Stagger = s // pages too small to spare it keep their claims in front
		}
	}
	switch {
	case c.Alignment&(c.Alignment-1) != 0:
		return c, fmt.Errorf("%w: alignment %d is not a power of two", ErrInvalidConfig, c.Alignment)
	case c.Limit != 0 && c.Limit < c.Alignment:
		return c, fmt.Errorf("%w: memory limit %d below the alignment %d", ErrInvalidConfig, c.Limit, c.Alignment)
	case c.PageSize%c.Alignment != 0:
		return c, fmt.Errorf("%w: page size %d is not a multiple of alignment %d", ErrInvalidConfig, c.PageSize, c.Alignment)
	case c.PageSize > maxRequest:
		return c, fmt.Errorf("%w: page size %d is too large", ErrInvalidConfig, c.PageSize)
	case c.DedicatedThreshold > c.PageSize:
		return c, fmt.Errorf("%w: dedicated threshold %d is above page size %d", ErrInvalidConfig, c.DedicatedThreshold, c.PageSize)
	case c.Stagger%c.Alignment != 0 || c.Stagger > c.PageSize:
		return c, fmt.Errorf("%w: stagger %d is not a multiple of alignment %d within a page", ErrInvalidConfig, c.Stagger, c.Alignment)
	}
	return c, nil
}

// page is one block and the bookkeeping of its ranges.
type page[B Block] struct {
	block     B
	kind      Kind
	live      bool // false once released; the ID is never reused
	dedicated bool
	size      uint64
	used      uint64 // reserved bytes of live and guarded claims
	first     int32  // the node at offset 0
	// claims finds the node of a live or guarded claim by its offset; a
	// map keyed by one integer per page hashes far faster than one keyed
	// by whole claims.
	claims map[uint64]int32
}

// Allocator carves pages of memory into claims. It is safe for concurrent
// use. Page IDs are never reused, so a claim (and anything keyed by one,
// such as a cached descriptor set) can never come to name a different block.
type Allocator[B Block] struct {
	mu  lockrank.Mutex
	src BlockSource[B]
	cfg Config

	pages      []page[B]
	livePages  [numKinds][]PageID // ascending, for deterministic trimming
	free       [numKinds]freeIndex
	nodes      []node
	spareNodes []int32

	emptyShared [numKinds]uint64 // bytes of empty non-dedicated pages kept
	growthLocks int
	keepLocks   int
	closed      bool

	reserved, used, peak, guarded uint64
	livePageCount, liveClaims     int
}

// New returns an allocator drawing pages from src. A zero Config field takes
// its default; a Config it cannot honour returns an error wrapping
// ErrInvalidConfig.
func New[B Block](src BlockSource[B], cfg Config) (*Allocator[B], error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil block source", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Allocator[B]{src: src, cfg: cfg}
	a.mu.SetRank(lockrank.Allocator, 0)
	for k := range a.free {
		a.free[k].init()
	}
	return a, nil
}

// Config returns the configuration in force, defaults filled in.
func (a *Allocator[B]) Config() Config { return a.cfg }

// Alloc claims size bytes of memory of the given kind. The claim goes into
// an existing page of that kind when one has room, else into a new page (a
// dedicated one, exactly the rounded size, from DedicatedThreshold up).
// While growth is locked a request that needs a new page fails with
// errs.AllocInCapture. Past Config.Limit, empty pages are released to make
// room for the new one, and only when releasing all of them would not
// make room does the request fail, with ErrOverLimit. A failure leaves
// the allocator untouched.
func (a *Allocator[B]) Alloc(kind Kind, size uint64) (Claim, error) {
	return a.alloc(kind, size, false)
}

// AllocOutsideWindow is Alloc for work the caller knows belongs to no
// recording window (a stream whose slot is not capturing): it may create a
// page even while growth is locked, since no recording will name it. Like
// CUDA's thread-local capture mode, a window then restricts only its own
// work.
func (a *Allocator[B]) AllocOutsideWindow(kind Kind, size uint64) (Claim, error) {
	return a.alloc(kind, size, true)
}

func (a *Allocator[B]) alloc(kind Kind, size uint64, mayGrow bool) (Claim, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Claim{}, errs.Closed
	}
	switch {
	case kind >= numKinds:
		return Claim{}, fmt.Errorf("%w: %s", ErrInvalidKind, kind)
	case size == 0:
		return Claim{}, fmt.Errorf("%w (%s)", ErrInvalidSize, kind)
	case a.cfg.MaxClaim != 0 && size > a.cfg.MaxClaim:
		return Claim{}, fmt.Errorf("%w: %d bytes of %s, limit %d", ErrTooLarge, size, kind, a.cfg.MaxClaim)
	case size > maxRequest:
		return Claim{}, fmt.Errorf("%w: %d bytes of %s", ErrTooLarge, size, kind)
	}
	reserve := (size + a.cfg.Alignment - 1) &^ (a.cfg.Alignment - 1)
	n := a.free[kind].find(a.nodes, reserve)
	if n == nilNode {
		var err error
		if n, err = a.grow(kind, reserve, mayGrow); err != nil {
			return Claim{}, err
		}
	}
	return a.take(n, reserve, size), nil
}

// grow creates a page able to hold reserve bytes and returns its free node.
func (a *Allocator[B]) grow(kind Kind, reserve uint64, mayGrow bool) (int32, error) {
	if a.growthLocks > 0 && !mayGrow {
		return nilNode, fmt.Errorf("%w: %d bytes of %s", errs.AllocInCapture, reserve, kind)
	}
	if len(a.pages) >= math.MaxUint32 {
		return nilNode, fmt.Errorf("%w: page IDs exhausted", ErrTooLarge)
	}
	size, dedicated := a.cfg.PageSize, reserve >= a.cfg.DedicatedThreshold
	if dedicated {
		size = reserve
	}
	if !a.makeRoom(size) {
		return nilNode, a.overLimit(kind, reserve, size)
	}
	block, err := a.src.NewBlock(kind, size)
	if err != nil {
		return nilNode, fmt.Errorf("new %s page of %d bytes: %w", kind, size, err)
	}
	id := PageID(len(a.pages))
	n := a.newNode()
	a.nodes[n] = node{size: size, page: id, free: true,
		prevPhys: nilNode, nextPhys: nilNode, prevFree: nilNode, nextFree: nilNode}
	a.pages = append(a.pages, page[B]{block: block, kind: kind, live: true,
		dedicated: dedicated, size: size, first: n, claims: make(map[uint64]int32)})
	a.livePages[kind] = append(a.livePages[kind], id)
	a.free[kind].insert(a.nodes, n)
	a.reserved += size
	a.livePageCount++
	if !dedicated {
		a.emptyShared[kind] += size
	}
	return n, nil
}

// makeRoom reports whether a new page of size bytes fits under the limit,
// releasing empty pages first when that makes it fit: dedicated ones, then
// shared ones from the highest page ID, until it does. When even releasing
// all of them would leave no room, or a window holds the empty pages
// (growth or keep locked), nothing is released.
func (a *Allocator[B]) makeRoom(size uint64) bool {
	limit := a.cfg.Limit
	if limit == 0 || size <= limit && a.reserved <= limit-size {
		return true
	}
	if size > limit || a.growthLocks > 0 || a.keepLocks > 0 {
		return false
	}
	empty := a.emptyPages()
	var releasable uint64
	for _, id := range empty {
		releasable += a.pages[id].size
	}
	if a.reserved-releasable > limit-size {
		return false
	}
	for _, id := range empty {
		if a.reserved <= limit-size {
			break
		}
		a.releasePage(id)
	}
	return true
}

// emptyPages lists the pages holding no claim, in the order reclaim
// releases them: dedicated pages first (nothing reuses them), then shared
// pages from the highest ID, so the lowest stay cached as trimEmpty keeps
// them.
func (a *Allocator[B]) emptyPages() []PageID {
	var dedicated, shared []PageID
	for kind := range a.livePages {
		for _, id := range a.livePages[kind] {
			switch pg := &a.pages[id]; {
			case pg.used != 0:
			case pg.dedicated:
				dedicated = append(dedicated, id)
			default:
				shared = append(shared, id)
			}
		}
	}
	slices.Sort(dedicated)
	slices.Sort(shared)
	slices.Reverse(shared)
	return append(dedicated, shared...)
}

// overLimit is the refusal of a request whose page the limit has no room
// for: it names the request, the limit and where the reserved bytes are,
// so the caller can tell a budget too small from memory freed in pieces
// too small to use.
func (a *Allocator[B]) overLimit(kind Kind, reserve, pageSize uint64) error {
	var largest uint64
	for k := range a.free {
		largest = max(largest, a.free[k].largest(a.nodes))
	}
	return fmt.Errorf("%w: %w: %d bytes of %s need a page of %d bytes; limit %d, reserved %d, used %d, guarded %d, largest free range %d",
		errs.OutOfMemory, ErrOverLimit, reserve, kind, pageSize, a.cfg.Limit, a.reserved, a.used, a.guarded, largest)
}

// Trim releases every empty page now, cached ones included, and returns
// the bytes released: for a caller that knows it will not allocate soon,
// or that hands the memory to someone else. Live, guarded and parked
// claims keep their pages. While growth or pages are locked (a capture
// window), the empty pages belong to the window and nothing is released.
func (a *Allocator[B]) Trim() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.growthLocks > 0 || a.keepLocks > 0 {
		return 0
	}
	var released uint64
	for _, id := range a.emptyPages() {
		released += a.pages[id].size
		a.releasePage(id)
	}
	return released
}

// take turns the front of free node n into a claim of reserve bytes, or,
// for a claim of StaggerFrom bytes or more in a shared page, the part of it
// Stagger bytes in when n has the room (see Config.StaggerFrom); the bytes
// in front stay a free node.
func (a *Allocator[B]) take(n int32, reserve, size uint64) Claim {
	nd := &a.nodes[n]
	pg := &a.pages[nd.page]
	a.free[pg.kind].remove(a.nodes, n)
	if gap := a.cfg.Stagger; gap > 0 && reserve >= a.cfg.StaggerFrom && !pg.dedicated && nd.size-reserve >= gap {
		claim := a.newNode()
		nd = &a.nodes[n] // the slab may have moved
		a.nodes[claim] = node{offset: nd.offset + gap, size: nd.size - gap, page: nd.page,
			free: true, prevPhys: n, nextPhys: nd.nextPhys, prevFree: nilNode, nextFree: nilNode}
		if nd.nextPhys != nilNode {
			a.nodes[nd.nextPhys].prevPhys = claim
		}
		nd.nextPhys = claim
		nd.size = gap
		a.free[pg.kind].insert(a.nodes, n)
		n, nd = claim, &a.nodes[claim]
	}
	if nd.size > reserve {
		rest := a.newNode()
		nd = &a.nodes[n] // the slab may have moved
		a.nodes[rest] = node{offset: nd.offset + reserve, size: nd.size - reserve, page: nd.page,
			free: true, prevPhys: n, nextPhys: nd.nextPhys, prevFree: nilNode, nextFree: nilNode}
		if nd.nextPhys != nilNode {
			a.nodes[nd.nextPhys].prevPhys = rest
		}
		nd.nextPhys = rest
		nd.size = reserve
		a.free[pg.kind].insert(a.nodes, rest)
	}
	nd.free, nd.deferred, nd.guards, nd.claimSize = false, false, 0, size
	if pg.used == 0 && !pg.dedicated {
		a.emptyShared[pg.kind] -= pg.size
	}
	pg.used += reserve
	a.used += reserve
	a.peak = max(a.peak, a.used)
	a.liveClaims++
	pg.claims[nd.offset] = n
	return Claim{Page: nd.page, Offset: nd.offset, Size: size}
}

// lookup finds the node of a live or guarded claim matching c exactly.
func (a *Allocator[B]) lookup(c Claim) (int32, bool) {
	if int(c.Page) >= len(a.pages) {
		return nilNode, false
	}
	n, ok := a.pages[c.Page].claims[c.Offset]
	if !ok || a.nodes[n].claimSize != c.Size {
		return nilNode, false
	}
	return n, true
}

// forget drops a claim from its page's claim map.
func (a *Allocator[B]) forget(c Claim) { delete(a.pages[c.Page].claims, c.Offset) }

func (a *Allocator[B]) newNode() int32 {
	if k := len(a.spareNodes); k > 0 {
		n := a.spareNodes[k-1]
		a.spareNodes = a.spareNodes[:k-1]
		return n
	}
	a.nodes = append(a.nodes, node{})
	return int32(len(a.nodes) - 1)
}

func (a *Allocator[B]) dropNode(n int32) {
	a.nodes[n] = node{}
	a.spareNodes = append(a.spareNodes, n)
}

// Free returns a claim's range. A claim still guarded by a graph stays
// reserved (neither reused nor released) until its last Unguard; Free then
// returns nil at once. An unknown or already freed claim fails with
// ErrUnknownClaim and changes nothing.
func (a *Allocator[B]) Free(c Claim) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errs.Closed
	}
	n, ok := a.lookup(c)
	if !ok || a.nodes[n].deferred {
		return fmt.Errorf("%w: %s", ErrUnknownClaim, c)
	}
	nd := &a.nodes[n]
	a.used -= nd.size
	a.liveClaims--
	if nd.guards > 0 {
		nd.deferred = true
		a.guarded += nd.size
		return nil
	}
	a.forget(c)
	a.release(n)
	return nil
}

// release makes claim node n free, coalesces it with free neighbours and
// handles its page becoming empty.
func (a *Allocator[B]) release(n int32) {
	nd := &a.nodes[n]
	id := nd.page
	pg := &a.pages[id]
	ix := &a.free[pg.kind]
	pg.used -= nd.size
	nd.free, nd.deferred, nd.guards, nd.claimSize = true, false, 0, 0
	if prev := nd.prevPhys; prev != nilNode && a.nodes[prev].free {
		ix.remove(a.nodes, prev)
		a.absorbNext(prev)
		n = prev
	}
	if next := a.nodes[n].nextPhys; next != nilNode && a.nodes[next].free {
		ix.remove(a.nodes, next)
		a.absorbNext(n)
	}
	ix.insert(a.nodes, n)
	if pg.used == 0 {
		a.pageEmptied(id)
	}
}

// absorbNext merges n's physical successor into n and recycles it.
func (a *Allocator[B]) absorbNext(n int32) {
	next := a.nodes[n].nextPhys
	a.nodes[n].size += a.nodes[next].size
	after := a.nodes[next].nextPhys
	a.nodes[n].nextPhys = after
	if after != nilNode {
		a.nodes[after].prevPhys = n
	}
	a.dropNode(next)
}

// pageEmptied keeps or releases a page whose last claim just went.
func (a *Allocator[B]) pageEmptied(id PageID) {
	pg := &a.pages[id]
	if !pg.dedicated {
		a.emptyShared[pg.kind] += pg.size
	}
	if a.growthLocks > 0 || a.keepLocks > 0 {
		return
	}
	if pg.dedicated || a.emptyShared[pg.kind] > a.cfg.KeepEmpty {
		a.releasePage(id)
	}
}

// releasePage gives an empty page's block back to its source.
func (a *Allocator[B]) releasePage(id PageID) {
	pg := &a.pages[id]
	a.free[pg.kind].remove(a.nodes, pg.first)
	a.dropNode(pg.first)
	if !pg.dedicated {
		a.emptyShared[pg.kind] -= pg.size
	}
	if i, found := slices.BinarySearch(a.livePages[pg.kind], id); found {
		a.livePages[pg.kind] = slices.Delete(a.livePages[pg.kind], i, i+1)
	}
	a.reserved -= pg.size
	a.livePageCount--
	block := pg.block
	*pg = page[B]{}
	block.Release()
}

// Page returns the block behind a page and its kind; false for a page that
// was released or never existed. It is the hot path of descriptor updates.
func (a *Allocator[B]) Page(id PageID) (B, Kind, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if int(id) >= len(a.pages) || !a.pages[id].live {
		var none B
		return none, 0, false
	}
	return a.pages[id].block, a.pages[id].kind, true
}

// Owner is the claim the allocator handed out that holds c whole: c
// itself, or for a range inside one claim (a view of a buffer) that
// claim. Lifetimes are per claim — Free, Guard and the claims a capture
// window must hold back name what Alloc returned — so a range inside a
// claim is kept alive by keeping its owner. false when no live or
// guarded claim holds all of c (a range across two claims, a freed one).
// An exact claim is found by one map lookup; a range inside one walks its
// page's ranges in address order.
func (a *Allocator[B]) Owner(c Claim) (Claim, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := a.lookup(c); ok {
		return c, !a.nodes[n].free
	}
	if int(c.Page) >= len(a.pages) || !a.pages[c.Page].live || c.Size == 0 || c.End() < c.Offset {
		return Claim{}, false
	}
	for n := a.pages[c.Page].first; n != nilNode; n = a.nodes[n].nextPhys {
		nd := &a.nodes[n]
		if nd.offset > c.Offset {
			break
		}
		if !nd.free && c.End() <= nd.offset+nd.claimSize {
			return Claim{Page: c.Page, Offset: nd.offset, Size: nd.claimSize}, true
		}
	}
	return Claim{}, false
}

// Guard keeps each claim's range reserved while a sealed graph may touch it:
// a Free of a guarded claim is deferred until its last Unguard. Guards count
// per claim (a claim listed twice is guarded twice). Every claim must be live
// and match exactly, else nothing is guarded and the error wraps
// ErrUnknownClaim.
func (a *Allocator[B]) Guard(claims []Claim) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errs.Closed
	}
	for _, c := range claims {
		if n, ok := a.lookup(c); !ok || a.nodes[n].deferred {
			return fmt.Errorf("%w: guard of %s", ErrUnknownClaim, c)
		}
	}
	for _, c := range claims {
		n, _ := a.lookup(c)
		a.nodes[n].guards++
	}
	return nil
}

// Unguard drops one guard of each claim. A claim freed while guarded is
// freed now, when its last guard goes. Claims not guarded are ignored, so a
// graph closing after its allocator's Close is harmless.
func (a *Allocator[B]) Unguard(claims []Claim) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	for _, c := range claims {
		n, ok := a.lookup(c)
		if !ok || a.nodes[n].guards == 0 {
			continue
		}
		nd := &a.nodes[n]
		nd.guards--
		if nd.guards == 0 && nd.deferred {
			a.guarded -= nd.size
			a.forget(c)
			a.release(n)
		}
	}
}

// LockGrowth forbids new pages and page releases while a capture window
// records, so the recorded command buffer only names pages that outlive it.
// Locks count: several windows may record at once.
func (a *Allocator[B]) LockGrowth() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.growthLocks++
}

// UnlockGrowth drops one growth lock. When no growth or keep lock is left,
// empty pages kept meanwhile are released: every dedicated one, and shared
// ones beyond KeepEmpty (the lowest page IDs are kept). An unbalanced call
// is ignored.
func (a *Allocator[B]) UnlockGrowth() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.growthLocks == 0 {
		return
	}
	a.growthLocks--
	a.trimEmpty()
}

// KeepPages keeps every page that empties from now on, until the matching
// UnkeepPages: a capture window's warmup holds them so that the recorded run
// finds every range the warmup used, however large a temporary it freed.
// Locks count.
func (a *Allocator[B]) KeepPages() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keepLocks++
}

// UnkeepPages drops one keep lock, releasing what LockGrowth's end would.
// An unbalanced call is ignored.
func (a *Allocator[B]) UnkeepPages() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keepLocks == 0 {
		return
	}
	a.keepLocks--
	a.trimEmpty()
}

// trimEmpty releases the empty pages beyond what is kept, once no lock
// holds them.
func (a *Allocator[B]) trimEmpty() {
	if a.growthLocks > 0 || a.keepLocks > 0 || a.closed {
		return
	}
	for kind := range a.livePages {
		var kept uint64
		var release []PageID
		for _, id := range a.livePages[kind] {
			pg := &a.pages[id]
			switch {
			case pg.used != 0:
			case !pg.dedicated && kept+pg.size <= a.cfg.KeepEmpty:
				kept += pg.size
			default:
				release = append(release, id)
			}
		}
		for _, id := range release {
			a.releasePage(id)
		}
	}
}

// Stats is a snapshot of the allocator. Every reserved byte is exactly one
// of used, guarded or free.
type Stats struct {
	Reserved    uint64 // bytes of all live pages
	Used        uint64 // bytes reserved by live claims (sizes rounded to the alignment)
	Peak        uint64 // the highest Used seen
	LargestFree uint64 // the largest free range of any page
	Guarded     uint64 // bytes of claims freed while guarded, awaiting their last Unguard
	Pages       int    // live pages
	LiveClaims  int    // claims allocated and not yet freed
	Limit       uint64 // the cap on Reserved (Config.Limit); 0: none
}

// Stats returns a snapshot of the allocator's usage.
func (a *Allocator[B]) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{Reserved: a.reserved, Used: a.used, Peak: a.peak, Guarded: a.guarded,
		Pages: a.livePageCount, LiveClaims: a.liveClaims, Limit: a.cfg.Limit}
	for k := range a.free {
		s.LargestFree = max(s.LargestFree, a.free[k].largest(a.nodes))
	}
	return s
}

// Close releases every block, live claims or not; the allocator then
// refuses work with errs.Closed. Closing twice is harmless.
func (a *Allocator[B]) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	for i := range a.pages {
		if a.pages[i].live {
			a.pages[i].block.Release()
		}
	}
	a.pages, a.nodes, a.spareNodes = nil, nil, nil
	a.livePages = [numKinds][]PageID{}
	a.emptyShared = [numKinds]uint64{}
	a.reserved, a.used, a.guarded, a.livePageCount, a.liveClaims = 0, 0, 0, 0, 0
	for k := range a.free {
		a.free[k] = freeIndex{}
		a.free[k].init()
	}
}
