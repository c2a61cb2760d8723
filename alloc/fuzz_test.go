package alloc

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

// fuzzInput hands out the fuzzer's bytes, zeros once they run out.
type fuzzInput struct{ data []byte }

func (in *fuzzInput) more() bool { return len(in.data) > 0 }

func (in *fuzzInput) byte() byte {
	if len(in.data) == 0 {
		return 0
	}
	b := in.data[0]
	in.data = in.data[1:]
	return b
}

func (in *fuzzInput) pick(n int) int {
	return int(uint16(in.byte())<<8|uint16(in.byte())) % n
}

var errFuzzSource = errors.New("fuzz: source refuses")

var fuzzConfig = Config{PageSize: 1024, DedicatedThreshold: 512, Alignment: 32, KeepEmpty: 1024, MaxClaim: 2048, StaggerFrom: 256, Stagger: 64}

// fuzzLimit is the memory limit of the runs that have one: four shared
// pages, or fewer with dedicated ones, so requests hit it often.
const fuzzLimit = 4096

type modelPage struct {
	kind      Kind
	dedicated bool
	block     *fakeBlock
}

// allocModel drives an allocator and a twin (the same calls must give the
// same claims) and knows, from first principles, what they must hold.
type allocModel struct {
	t           *testing.T
	a, twin     *Allocator[*fakeBlock]
	src, twinSr *fakeSource
	pages       map[PageID]*modelPage
	live        []Claim
	deferred    []Claim
	dead        []Claim
	guards      map[Claim]int
	guardSets   [][]Claim
	locks       int
	keeps       int
	peak        uint64
	limit       uint64 // 0: none
	// reclaimed says the step may release shared pages the cache would
	// keep: a request past the limit, or Trim.
	reclaimed bool
}

func newAllocModel(t *testing.T, limit uint64) *allocModel {
	m := &allocModel{t: t, src: &fakeSource{}, twinSr: &fakeSource{},
		pages: map[PageID]*modelPage{}, guards: map[Claim]int{}, limit: limit}
	cfg := fuzzConfig
	cfg.Limit = limit
	var err error
	m.a, err = New[*fakeBlock](m.src, cfg)
	require.NoError(t, err)
	m.twin, err = New[*fakeBlock](m.twinSr, cfg)
	require.NoError(t, err)
	return m
}

// reservedAndEmpty is what the model's live pages hold: every byte, and
// the bytes of pages with no claim in them.
func (m *allocModel) reservedAndEmpty() (reserved, empty uint64) {
	extents := m.extents()
	for id, p := range m.pages {
		if p.block.releases != 0 {
			continue
		}
		reserved += p.block.size
		if len(extents[id]) == 0 {
			empty += p.block.size
		}
	}
	return reserved, empty
}

func reserveOf(size uint64) uint64 { return (size + 31) &^ 31 }

// extents returns the reserved ranges of the live and guarded claims of
// every page, by offset.
func (m *allocModel) extents() map[PageID][][2]uint64 {
	out := map[PageID][][2]uint64{}
	for _, list := range [][]Claim{m.live, m.deferred} {
		for _, c := range list {
			out[c.Page] = append(out[c.Page], [2]uint64{c.Offset, c.Offset + reserveOf(c.Size)})
		}
	}
	for _, e := range out {
		slices.SortFunc(e, func(x, y [2]uint64) int { return int(x[0]) - int(y[0]) })
	}
	return out
}

// gaps returns the free runs of an unreleased page.
func (m *allocModel) gaps(id PageID, extents [][2]uint64) []uint64 {
	var out []uint64
	var at uint64
	for _, e := range extents {
		if e[0] < at {
			m.t.Fatalf("claims overlap in page %d: %v", id, extents)
		}
		if e[0] > at {
			out = append(out, e[0]-at)
		}
		at = e[1]
	}
	size := m.pages[id].block.size
	if at > size {
		m.t.Fatalf("claim beyond page %d (size %d): %v", id, size, extents)
	}
	if size > at {
		out = append(out, size-at)
	}
	return out
}

func (m *allocModel) hasRoom(kind Kind, reserve uint64) bool {
	extents := m.extents()
	for id, p := range m.pages {
		if p.kind == kind && p.block.releases == 0 && slices.ContainsFunc(m.gaps(id, extents[id]), func(g uint64) bool { return g >= reserve }) {
			return true
		}
	}
	return false
}

func (m *allocModel) alloc(in *fuzzInput) {
	kind := Kind(in.byte() % 3)
	if in.byte() == 255 {
		kind = numKinds
	}
	size := uint64(in.pick(2200))
	if in.byte()%2 == 0 {
		size %= 200
	}
	reserve := reserveOf(size)
	pageSize := fuzzConfig.PageSize
	if reserve >= fuzzConfig.DedicatedThreshold {
		pageSize = reserve
	}
	reserved, empty := m.reservedAndEmpty()
	pastLimit := m.limit != 0 && reserved+pageSize > m.limit
	mayRelease := m.locks == 0 && m.keeps == 0 && reserved-empty+pageSize <= m.limit
	m.reclaimed = pastLimit
	made := len(m.src.made)
	outside := in.byte()%4 == 0
	allocate := (*Allocator[*fakeBlock]).Alloc
	if outside {
		allocate = (*Allocator[*fakeBlock]).AllocOutsideWindow
	}
	m.src.growing = outside
	c, err := allocate(m.a, kind, size)
	m.src.growing = false
	twin, twinErr := allocate(m.twin, kind, size)
	m.same(c, err, twin, twinErr)
	switch {
	case kind >= numKinds:
		require.ErrorIs(m.t, err, ErrInvalidKind)
	case size == 0:
		require.ErrorIs(m.t, err, ErrInvalidSize)
	case size > fuzzConfig.MaxClaim:
		require.ErrorIs(m.t, err, ErrTooLarge)
	case m.hasRoom(kind, reserve):
		require.NoError(m.t, err)
		require.Len(m.t, m.src.made, made, "a new page although one had room")
		require.Equal(m.t, kind, m.pages[c.Page].kind)
	case m.locks > 0 && !outside:
		require.ErrorIs(m.t, err, errs.AllocInCapture)
	case pastLimit && !mayRelease:
		require.ErrorIs(m.t, err, ErrOverLimit)
		after, _ := m.reservedAndEmpty()
		require.Equal(m.t, reserved, after, "a refused request released pages")
	case m.src.fail != nil:
		require.ErrorIs(m.t, err, errFuzzSource)
	default:
		require.NoError(m.t, err)
		require.Len(m.t, m.src.made, made+1)
		block := m.src.made[made]
		dedicated := reserve >= fuzzConfig.DedicatedThreshold
		want := fuzzConfig.PageSize
		if dedicated {
			want = reserve
		}
		require.Equal(m.t, want, block.size)
		require.Equal(m.t, kind, block.kind)
		require.NotContains(m.t, m.pages, c.Page, "page ID reused")
		m.pages[c.Page] = &modelPage{kind: kind, dedicated: dedicated, block: block}
	}
	if err != nil {
		require.Len(m.t, m.src.made, made)
		return
	}
	require.Equal(m.t, size, c.Size)
	require.Zero(m.t, c.Offset%fuzzConfig.Alignment)
	m.live = append(m.live, c)
}

func (m *allocModel) same(c Claim, err error, twin Claim, twinErr error) {
	require.Equal(m.t, c, twin, "the same calls gave different claims")
	require.Equal(m.t, err == nil, twinErr == nil)
	if err != nil {
		require.Equal(m.t, err.Error(), twinErr.Error())
	}
}

func (m *allocModel) free(in *fuzzInput) {
	if len(m.live) == 0 {
		return
	}
	i := in.pick(len(m.live))
	c := m.live[i]
	require.NoError(m.t, m.a.Free(c))
	require.NoError(m.t, m.twin.Free(c))
	m.live = slices.Delete(m.live, i, i+1)
	if m.guards[c] > 0 {
		m.deferred = append(m.deferred, c)
	} else {
		m.dead = append(m.dead, c)
	}
}

func (m *allocModel) badFree(in *fuzzInput) {
	candidates := append(slices.Clone(m.dead), m.deferred...)
	if len(m.live) > 0 {
		c := m.live[in.pick(len(m.live))]
		c.Size++
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		return
	}
	c := candidates[in.pick(len(candidates))]
	if slices.Contains(m.live, c) {
		return // the range was claimed again, exactly
	}
	require.ErrorIs(m.t, m.a.Free(c), ErrUnknownClaim)
	require.ErrorIs(m.t, m.twin.Free(c), ErrUnknownClaim)
}

func (m *allocModel) guard(in *fuzzInput) {
	pool := slices.Clone(m.live)
	if in.byte()%4 == 0 {
		pool = append(pool, m.dead...)
		pool = append(pool, m.deferred...)
	}
	if len(pool) == 0 {
		return
	}
	set := []Claim{pool[in.pick(len(pool))], pool[in.pick(len(pool))]}
	err := m.a.Guard(set)
	require.Equal(m.t, err == nil, m.twin.Guard(set) == nil)
	if slices.ContainsFunc(set, func(c Claim) bool { return !slices.Contains(m.live, c) }) {
		require.ErrorIs(m.t, err, ErrUnknownClaim)
		return
	}
	require.NoError(m.t, err)
	for _, c := range set {
		m.guards[c]++
	}
	m.guardSets = append(m.guardSets, set)
}

func (m *allocModel) unguard(in *fuzzInput) {
	if len(m.guardSets) == 0 {
		stray := []Claim{{Page: PageID(in.byte() % 4), Offset: 64, Size: 32}}
		if !slices.Contains(m.live, stray[0]) {
			m.a.Unguard(stray)
			m.twin.Unguard(stray)
		}
		return
	}
	i := in.pick(len(m.guardSets))
	set := m.guardSets[i]
	m.guardSets = slices.Delete(m.guardSets, i, i+1)
	m.a.Unguard(set)
	m.twin.Unguard(set)
	for _, c := range set {
		m.guards[c]--
		if m.guards[c] == 0 {
			delete(m.guards, c)
			if j := slices.Index(m.deferred, c); j >= 0 {
				m.deferred = slices.Delete(m.deferred, j, j+1)
				m.dead = append(m.dead, c)
			}
		}
	}
}

func (m *allocModel) toggleLock(in *fuzzInput) {
	if in.byte()%2 == 0 && m.locks < 3 {
		m.a.LockGrowth()
		m.twin.LockGrowth()
		m.locks++
	} else if m.locks > 0 {
		m.locks--
		m.src.frozen = m.locks > 0
		m.a.UnlockGrowth()
		m.twin.UnlockGrowth()
	}
	m.src.frozen = m.locks > 0
}

func (m *allocModel) toggleKeep(in *fuzzInput) {
	if in.byte()%2 == 0 && m.keeps < 3 {
		m.a.KeepPages()
		m.twin.KeepPages()
		m.keeps++
	} else if m.keeps > 0 {
		m.keeps--
		m.src.kept = m.keeps > 0
		m.a.UnkeepPages()
		m.twin.UnkeepPages()
	}
	m.src.kept = m.keeps > 0
}

// trim releases every empty page unless a lock holds them.
func (m *allocModel) trim() {
	_, empty := m.reservedAndEmpty()
	if m.locks > 0 || m.keeps > 0 {
		empty = 0
	}
	m.reclaimed = true
	require.Equal(m.t, empty, m.a.Trim())
	require.Equal(m.t, empty, m.twin.Trim())
	if _, left := m.reservedAndEmpty(); m.locks == 0 && m.keeps == 0 {
		require.Zero(m.t, left, "Trim kept an empty page")
	}
}

func (m *allocModel) toggleFailure() {
	if m.src.fail == nil {
		m.src.fail, m.twinSr.fail = errFuzzSource, errFuzzSource
	} else {
		m.src.fail, m.twinSr.fail = nil, nil
	}
}

// check compares the allocator with the model after a step that released
// the blocks from releasedBefore on.
func (m *allocModel) check(releasedBefore int) {
	t := m.t
	require.NoError(t, m.a.Validate())
	require.Empty(t, m.src.violations)
	var want Stats
	var emptyShared [numKinds]uint64
	extents := m.extents()
	// Plain comparisons in the loops below: testify's helpers walk the stack
	// on every call, which made this check most of a fuzz execution.
	for id, p := range m.pages {
		if p.block.releases > 1 {
			t.Fatalf("block of page %d released %d times", id, p.block.releases)
		}
		block, kind, ok := m.a.Page(id)
		if ok != (p.block.releases == 0) {
			t.Fatalf("page %d: Page reports live=%v, block released %d times", id, ok, p.block.releases)
		}
		if !ok {
			if len(extents[id]) > 0 {
				t.Fatalf("page %d released with claims in it: %v", id, extents[id])
			}
			continue
		}
		if block != p.block || kind != p.kind {
			t.Fatalf("page %d: Page gives block %p kind %v, want %p kind %v", id, block, kind, p.block, p.kind)
		}
		want.Pages++
		want.Reserved += p.block.size
		for _, g := range m.gaps(id, extents[id]) {
			want.LargestFree = max(want.LargestFree, g)
		}
		if len(extents[id]) == 0 && m.locks == 0 && m.keeps == 0 {
			if p.dedicated {
				t.Fatalf("empty dedicated page %d kept", id)
			}
			emptyShared[p.kind] += p.block.size
		}
	}
	for _, k := range emptyShared {
		require.LessOrEqual(t, k, fuzzConfig.KeepEmpty)
	}
	for _, b := range m.src.released[releasedBefore:] {
		if m.reclaimed {
			break // reclaim and Trim release what the cache would keep
		}
		for _, p := range m.pages {
			if p.block == b && !p.dedicated {
				require.Greater(t, emptyShared[b.kind]+b.size, fuzzConfig.KeepEmpty, "a shared page released within budget")
			}
		}
	}
	for _, c := range m.live {
		want.Used += reserveOf(c.Size)
	}
	for _, c := range m.deferred {
		want.Guarded += reserveOf(c.Size)
	}
	want.LiveClaims = len(m.live)
	m.peak = max(m.peak, want.Used)
	want.Peak = m.peak
	want.Limit = m.limit
	if m.limit != 0 {
		require.LessOrEqual(t, want.Reserved, m.limit, "reserved past the limit")
	}
	require.Equal(t, want, m.a.Stats())
	require.Equal(t, want.Pages, m.src.live())
}

func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 3, 0, 0})
	f.Add([]byte{0, 1, 0, 2, 100, 1, 0, 1, 0, 1, 100, 1, 5, 1, 0, 0, 0, 0, 3, 0, 0, 7, 0, 3, 0, 0, 6, 0, 0, 7, 1})
	f.Add([]byte{8, 0, 0, 0, 9, 9, 1, 8, 7, 0, 0, 2, 0, 4, 0, 7, 1, 0, 0, 0, 1, 0, 1})
	f.Add([]byte{1, 0, 0, 0, 9, 9, 0, 0, 0, 1, 9, 0, 1, 0, 0, 2, 4, 0, 0, 0, 2, 4, 3, 0, 0, 10, 0, 0, 0, 3, 0, 0, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{data: data}
		var limit uint64
		if in.byte()%2 == 1 {
			limit = fuzzLimit
		}
		m := newAllocModel(t, limit)
		for step := 0; in.more() && step < 256; step++ {
			released := len(m.src.released)
			m.reclaimed = false
			switch in.byte() % 11 {
			case 0, 1, 2:
				m.alloc(in)
			case 3:
				m.free(in)
			case 4:
				m.badFree(in)
			case 5:
				m.guard(in)
			case 6:
				m.unguard(in)
			case 7:
				m.toggleLock(in)
			case 8:
				m.toggleFailure()
			case 9:
				m.toggleKeep(in)
			case 10:
				m.trim()
			}
			m.check(released)
		}
		m.src.frozen, m.src.kept = false, false
		m.a.Close()
		m.twin.Close()
		for _, b := range m.src.made {
			assert.Equal(t, 1, b.releases, "block %d after Close", b.serial)
		}
	})
}
