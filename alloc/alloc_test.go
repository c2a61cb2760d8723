package alloc

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

const testPage = 1 << 20

func newTestAllocator(t *testing.T, cfg Config) (*Allocator[*fakeBlock], *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	if cfg.PageSize == 0 {
		cfg.PageSize = testPage
	}
	a, err := New[*fakeBlock](src, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, a.Validate())
		assert.Empty(t, src.violations)
	})
	return a, src
}

func mustAlloc(t *testing.T, a *Allocator[*fakeBlock], kind Kind, size uint64) Claim {
	t.Helper()
	c, err := a.Alloc(kind, size)
	require.NoError(t, err)
	require.NoError(t, a.Validate())
	return c
}

func TestNewRejectsBadConfig(t *testing.T) {
	src := &fakeSource{}
	for name, cfg := range map[string]Config{
		"alignment not a power of two": {Alignment: 24},
		"page not a multiple":          {PageSize: 1000, Alignment: 256},
		"threshold above page":         {PageSize: 4096, DedicatedThreshold: 8192},
		"page too large":               {PageSize: 1 << 63},
		"limit below the alignment":    {Alignment: 256, Limit: 255},
		"limit below the default":      {Limit: 1},
	} {
		_, err := New[*fakeBlock](src, cfg)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	_, err := New[*fakeBlock](nil, Config{})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

// A limit of exactly one alignment is the smallest accepted: the page
// size is lowered to it.
func TestLimitOfOneAlignment(t *testing.T) {
	a, err := New[*fakeBlock](&fakeSource{}, Config{Alignment: 256, Limit: 256})
	require.NoError(t, err)
	assert.Equal(t, uint64(256), a.Config().PageSize)
	mustAlloc(t, a, DeviceLocal, 256)
	_, err = New[*fakeBlock](&fakeSource{}, Config{Alignment: 256, Limit: 255})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "memory limit 255 below the alignment 256")
}

func TestNewFillsDefaults(t *testing.T) {
	a, err := New[*fakeBlock](&fakeSource{}, Config{})
	require.NoError(t, err)
	cfg := a.Config()
	assert.Equal(t, DefaultPageSize, cfg.PageSize)
	assert.Equal(t, DefaultPageSize/2, cfg.DedicatedThreshold)
	assert.Equal(t, DefaultAlignment, cfg.Alignment)
	assert.Equal(t, DefaultPageSize, cfg.KeepEmpty)
}

func TestAllocAlignsOffsetsAndKeepsRequestedSize(t *testing.T) {
	a, src := newTestAllocator(t, Config{Alignment: 256})
	sizes := []uint64{1, 100, 300, 256, 4}
	var claims []Claim
	for _, size := range sizes {
		c := mustAlloc(t, a, DeviceLocal, size)
		assert.Zero(t, c.Offset%256, "offset of %s", c)
		assert.Equal(t, size, c.Size)
		for _, other := range claims {
			assert.False(t, c.Overlaps(other), "%s overlaps %s", c, other)
		}
		claims = append(claims, c)
	}
	assert.Len(t, src.made, 1, "small claims share one page")
	// Reserved sizes round up: 256 + 256 + 512 + 256 + 256.
	assert.Equal(t, uint64(1536), a.Stats().Used)
}

func TestClaimsOfDifferentKindsUseDifferentPages(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	d := mustAlloc(t, a, DeviceLocal, 64)
	u := mustAlloc(t, a, Upload, 64)
	r := mustAlloc(t, a, Readback, 64)
	require.Len(t, src.made, 3)
	for _, c := range []Claim{d, u, r} {
		block, kind, ok := a.Page(c.Page)
		require.True(t, ok)
		assert.Equal(t, block.kind, kind)
	}
	_, k, _ := a.Page(u.Page)
	assert.Equal(t, Upload, k)
}

func TestDedicatedPageIsExactAndReleasedOnFree(t *testing.T) {
	a, src := newTestAllocator(t, Config{Alignment: 256})
	small := mustAlloc(t, a, DeviceLocal, testPage/2-256)
	mustAlloc(t, a, DeviceLocal, testPage/2-256) // 512 bytes of the page are left
	big := mustAlloc(t, a, DeviceLocal, testPage/2+1)
	require.Len(t, src.made, 2)
	assert.Equal(t, uint64(testPage/2+256), src.made[1].size, "a dedicated page is the rounded request")
	assert.NotEqual(t, small.Page, big.Page)
	assert.Zero(t, big.Offset)

	require.NoError(t, a.Free(big))
	assert.Equal(t, 1, src.made[1].releases)
	_, _, ok := a.Page(big.Page)
	assert.False(t, ok, "a released page is gone")
	assert.Equal(t, 1, a.Stats().Pages)
}

func TestLargeRequestUsesExistingRoomFirst(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	c := mustAlloc(t, a, DeviceLocal, 100)
	require.NoError(t, a.Free(c)) // the empty page is kept
	big := mustAlloc(t, a, DeviceLocal, testPage*3/4)
	assert.Len(t, src.made, 1, "the kept page had room")
	assert.Equal(t, c.Page, big.Page)
}

func TestPageIDsAreNotReused(t *testing.T) {
	a, _ := newTestAllocator(t, Config{})
	first := mustAlloc(t, a, DeviceLocal, testPage)
	require.NoError(t, a.Free(first))
	second := mustAlloc(t, a, DeviceLocal, testPage)
	assert.NotEqual(t, first.Page, second.Page)
}

func TestReuseAfterFree(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	x := mustAlloc(t, a, DeviceLocal, 4096)
	y := mustAlloc(t, a, DeviceLocal, 4096)
	require.NoError(t, a.Free(x))
	again := mustAlloc(t, a, DeviceLocal, 4096)
	assert.Equal(t, x, again, "the freed range is reused exactly")
	assert.False(t, again.Overlaps(y))
	assert.Len(t, src.made, 1)
}

func TestReuseOfUnalignedSizeInItsOwnBucket(t *testing.T) {
	// The only room is a hole of exactly the request's size, which a pure
	// good-fit search skips; it must still be found while growth is locked.
	a, src := newTestAllocator(t, Config{Alignment: 256})
	const size = 20*4096 + 256
	var claims []Claim
	for range testPage / size {
		claims = append(claims, mustAlloc(t, a, DeviceLocal, size))
	}
	require.Len(t, src.made, 1)
	require.NoError(t, a.Free(claims[1]))
	a.LockGrowth()
	again, err := a.Alloc(DeviceLocal, size)
	a.UnlockGrowth()
	require.NoError(t, err)
	assert.Equal(t, claims[1], again)
}

func TestFreeCoalescesNeighbours(t *testing.T) {
	a, src := newTestAllocator(t, Config{DedicatedThreshold: testPage})
	quarter := uint64(testPage / 4)
	parts := make([]Claim, 4)
	for i := range parts {
		parts[i] = mustAlloc(t, a, DeviceLocal, quarter)
	}
	assert.Zero(t, a.Stats().LargestFree)
	require.NoError(t, a.Free(parts[1]))
	require.NoError(t, a.Free(parts[0]))
	require.NoError(t, a.Free(parts[2]))
	require.NoError(t, a.Validate())
	assert.Equal(t, 3*quarter, a.Stats().LargestFree)
	big := mustAlloc(t, a, DeviceLocal, 3*quarter)
	assert.Equal(t, Claim{Page: parts[0].Page, Offset: 0, Size: 3 * quarter}, big)
	assert.Len(t, src.made, 1)
}

func TestEmptyPagesKeptUpToBudgetThenReleased(t *testing.T) {
	a, src := newTestAllocator(t, Config{KeepEmpty: testPage})
	size := uint64(testPage * 2 / 5)
	var claims []Claim
	for range 6 { // two per page: three pages
		claims = append(claims, mustAlloc(t, a, Upload, size))
	}
	require.Len(t, src.made, 3)
	for _, c := range claims {
		require.NoError(t, a.Free(c))
	}
	assert.Len(t, src.released, 2, "one page's worth is kept")
	s := a.Stats()
	assert.Equal(t, 1, s.Pages)
	assert.Equal(t, uint64(testPage), s.Reserved)
	assert.Equal(t, uint64(testPage), s.LargestFree)

	mustAlloc(t, a, Upload, size)
	assert.Len(t, src.made, 3, "the kept page is reused")
}

func TestKeepEmptyIsPerKind(t *testing.T) {
	a, src := newTestAllocator(t, Config{KeepEmpty: testPage})
	d := mustAlloc(t, a, DeviceLocal, 64)
	r := mustAlloc(t, a, Readback, 64)
	require.NoError(t, a.Free(d))
	require.NoError(t, a.Free(r))
	assert.Empty(t, src.released)
	assert.Equal(t, 2, a.Stats().Pages)
}

func TestGrowthLockRefusesNewPagesButAllowsReuse(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	c := mustAlloc(t, a, DeviceLocal, 4096)
	a.LockGrowth()
	src.frozen = true

	inPage := mustAlloc(t, a, DeviceLocal, 4096)
	assert.Equal(t, c.Page, inPage.Page)

	before := a.Stats()
	_, err := a.Alloc(Upload, 64)
	assert.ErrorIs(t, err, errs.AllocInCapture, "no upload page exists")
	_, err = a.Alloc(DeviceLocal, testPage)
	assert.ErrorIs(t, err, errs.AllocInCapture, "a dedicated request needs a new page too")
	assert.Equal(t, before, a.Stats())
	assert.Len(t, src.made, 1)

	src.frozen = false
	a.UnlockGrowth()
	mustAlloc(t, a, Upload, 64)
}

func TestGrowthLockIsCounted(t *testing.T) {
	a, _ := newTestAllocator(t, Config{})
	a.LockGrowth()
	a.LockGrowth()
	a.UnlockGrowth()
	_, err := a.Alloc(DeviceLocal, 64)
	assert.ErrorIs(t, err, errs.AllocInCapture)
	a.UnlockGrowth()
	a.UnlockGrowth() // unbalanced: ignored
	mustAlloc(t, a, DeviceLocal, 64)
	a.LockGrowth()
	_, err = a.Alloc(Upload, 64)
	assert.ErrorIs(t, err, errs.AllocInCapture, "an unbalanced unlock must not cancel a later lock")
	a.UnlockGrowth()
}

func TestAllocOutsideWindowGrowsWhileLocked(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	a.LockGrowth()
	_, err := a.Alloc(Upload, 64)
	require.ErrorIs(t, err, errs.AllocInCapture, "the window's own work may not grow")
	c, err := a.AllocOutsideWindow(Upload, 64)
	require.NoError(t, err, "work outside any window may")
	assert.Len(t, src.made, 1)
	again, err := a.Alloc(Upload, 64)
	require.NoError(t, err, "the page it made serves the window too")
	assert.Equal(t, c.Page, again.Page)
	require.NoError(t, a.Free(c))
	require.NoError(t, a.Free(again))
	assert.Empty(t, src.released, "an emptied page is kept while growth is locked")
	a.UnlockGrowth()
}

func TestKeepPagesHoldsEmptiedPages(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	a.KeepPages()
	big := mustAlloc(t, a, DeviceLocal, 3*testPage) // a dedicated page
	require.NoError(t, a.Free(big))
	assert.Empty(t, src.released, "kept while the keep lock holds")
	again := mustAlloc(t, a, DeviceLocal, 3*testPage)
	assert.Equal(t, big, again, "the kept page serves the same request again")
	require.NoError(t, a.Free(again))
	a.LockGrowth()
	a.UnkeepPages()
	assert.Empty(t, src.released, "a growth lock still holds it")
	a.UnkeepPages() // unbalanced: ignored
	a.UnlockGrowth()
	assert.Len(t, src.released, 1, "released once no lock holds it")
	assert.Zero(t, a.Stats().Pages)
}

func TestNoReleaseWhileGrowthLocked(t *testing.T) {
	a, src := newTestAllocator(t, Config{KeepEmpty: testPage})
	shared1 := mustAlloc(t, a, DeviceLocal, testPage/4)
	shared2 := mustAlloc(t, a, DeviceLocal, testPage/4)
	other := mustAlloc(t, a, DeviceLocal, testPage/4)
	other2 := mustAlloc(t, a, DeviceLocal, testPage/4)
	extra := mustAlloc(t, a, DeviceLocal, testPage/4) // second shared page
	dedicated := mustAlloc(t, a, DeviceLocal, testPage)
	require.Len(t, src.made, 3)

	a.LockGrowth()
	src.frozen = true
	for _, c := range []Claim{shared1, shared2, other, other2, extra, dedicated} {
		require.NoError(t, a.Free(c))
	}
	assert.Empty(t, src.released)
	assert.Equal(t, 3, a.Stats().Pages)

	again := mustAlloc(t, a, DeviceLocal, testPage)
	assert.Equal(t, dedicated, again, "a dedicated page freed in the window is reused")
	require.NoError(t, a.Free(again))

	src.frozen = false
	a.UnlockGrowth()
	assert.Len(t, src.released, 2, "the dedicated page and the shared page beyond the budget")
	assert.Zero(t, src.made[0].releases, "the lowest page is kept")
	assert.Equal(t, 1, a.Stats().Pages)
}

func TestGuardDefersFreeAndKeepsRangeOutOfUse(t *testing.T) {
	a, _ := newTestAllocator(t, Config{})
	g := mustAlloc(t, a, DeviceLocal, 4096)
	require.NoError(t, a.Guard([]Claim{g}))
	require.NoError(t, a.Guard([]Claim{g}))
	require.NoError(t, a.Free(g))
	s := a.Stats()
	assert.Equal(t, uint64(4096), s.Guarded)
	assert.Zero(t, s.Used)
	assert.Zero(t, s.LiveClaims)

	assert.ErrorIs(t, a.Free(g), ErrUnknownClaim, "double free")
	assert.ErrorIs(t, a.Guard([]Claim{g}), ErrUnknownClaim, "a freed claim cannot be guarded anew")

	other := mustAlloc(t, a, DeviceLocal, 4096)
	assert.False(t, other.Overlaps(g), "a guarded range is not reused")
	assert.Equal(t, g.Page, other.Page, "the rest of the page stays usable")

	a.Unguard([]Claim{g})
	assert.Equal(t, uint64(4096), a.Stats().Guarded, "one guard is left")
	a.Unguard([]Claim{g})
	assert.Zero(t, a.Stats().Guarded)
	again := mustAlloc(t, a, DeviceLocal, 4096)
	assert.Equal(t, g, again, "the range is free once unguarded")
}

func TestGuardOfLiveClaimThenUnguardKeepsItLive(t *testing.T) {
	a, _ := newTestAllocator(t, Config{})
	c := mustAlloc(t, a, DeviceLocal, 64)
	require.NoError(t, a.Guard([]Claim{c}))
	a.Unguard([]Claim{c})
	a.Unguard([]Claim{c}) // not guarded: ignored
	assert.Equal(t, 1, a.Stats().LiveClaims)
	require.NoError(t, a.Free(c))
	assert.Zero(t, a.Stats().Guarded)
}

func TestGuardedDedicatedPageReleasedAtLastUnguard(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	big := mustAlloc(t, a, DeviceLocal, testPage)
	require.NoError(t, a.Guard([]Claim{big}))
	require.NoError(t, a.Free(big))
	assert.Empty(t, src.released)
	a.Unguard([]Claim{big})
	assert.Len(t, src.released, 1)
}

func TestErrorsLeaveStateUntouched(t *testing.T) {
	a, src := newTestAllocator(t, Config{MaxClaim: 1 << 16})
	live := mustAlloc(t, a, DeviceLocal, 512)
	before := a.Stats()

	_, err := a.Alloc(DeviceLocal, 0)
	assert.ErrorIs(t, err, ErrInvalidSize)
	_, err = a.Alloc(DeviceLocal, 1<<16+1)
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = a.Alloc(Kind(7), 64)
	assert.ErrorIs(t, err, ErrInvalidKind)
	assert.ErrorIs(t, a.Free(Claim{Page: 9, Size: 64}), ErrUnknownClaim)
	assert.ErrorIs(t, a.Free(Claim{Page: live.Page, Offset: live.Offset, Size: live.Size + 1}), ErrUnknownClaim, "inexact")
	assert.ErrorIs(t, a.Guard([]Claim{live, {Page: live.Page, Offset: 4096, Size: 8}}), ErrUnknownClaim)

	assert.Equal(t, before, a.Stats())
	assert.Len(t, src.made, 1)
	require.NoError(t, a.Free(live))
	assert.Zero(t, a.Stats().Guarded, "the failed Guard guarded nothing")
}

func TestUnboundedRequestIsTooLarge(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	_, err := a.Alloc(DeviceLocal, ^uint64(0))
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Empty(t, src.made)
}

var errOutOfMemory = errors.New("test: out of device memory")

func TestSourceFailureIsWrappedAndChangesNothing(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	src.fail = errOutOfMemory
	_, err := a.Alloc(Readback, 64)
	require.ErrorIs(t, err, errOutOfMemory)
	assert.Contains(t, err.Error(), "readback")
	assert.Equal(t, Stats{}, a.Stats())

	src.fail = nil
	c := mustAlloc(t, a, Readback, 64)
	assert.Equal(t, PageID(0), c.Page, "the failed attempt used no page ID")
}

func TestStatsTrackUsageAndPeak(t *testing.T) {
	a, _ := newTestAllocator(t, Config{Alignment: 256})
	x := mustAlloc(t, a, DeviceLocal, 1000) // 1024 reserved
	y := mustAlloc(t, a, DeviceLocal, 3000) // 3072 reserved
	require.NoError(t, a.Free(x))
	mustAlloc(t, a, Upload, 10) // 256 reserved
	s := a.Stats()
	assert.Equal(t, Stats{
		Reserved:    2 * testPage,
		Used:        3072 + 256,
		Peak:        1024 + 3072,
		LargestFree: testPage - 256,
		Pages:       2,
		LiveClaims:  2,
	}, s)
	require.NoError(t, a.Free(y))
	assert.Equal(t, uint64(1024+3072), a.Stats().Peak)
}

func TestCloseReleasesEverythingOnce(t *testing.T) {
	a, src := newTestAllocator(t, Config{})
	c := mustAlloc(t, a, DeviceLocal, 64)
	mustAlloc(t, a, Upload, testPage)
	require.NoError(t, a.Guard([]Claim{c}))
	a.LockGrowth()
	a.Close()
	a.Close()
	for _, b := range src.made {
		assert.Equal(t, 1, b.releases, "block %d", b.serial)
	}
	_, err := a.Alloc(DeviceLocal, 64)
	assert.ErrorIs(t, err, errs.Closed)
	assert.ErrorIs(t, a.Free(c), errs.Closed)
	assert.ErrorIs(t, a.Guard([]Claim{c}), errs.Closed)
	a.Unguard([]Claim{c})
	a.UnlockGrowth()
	_, _, ok := a.Page(c.Page)
	assert.False(t, ok)
	assert.Zero(t, a.Stats().Pages)
	assert.Zero(t, src.live())
}

func TestSameCallsGiveSameClaims(t *testing.T) {
	run := func() []Claim {
		a, _ := newTestAllocator(t, Config{Alignment: 64})
		var out, live []Claim
		for i := range 200 {
			size := uint64(i*7919%5000 + 1)
			c := mustAlloc(t, a, Kind(i%3), size)
			out = append(out, c)
			live = append(live, c)
			if i%3 == 2 {
				victim := live[(i*31)%len(live)]
				require.NoError(t, a.Free(victim))
				live = removeClaim(live, victim)
			}
		}
		return out
	}
	assert.Equal(t, run(), run())
}

func removeClaim(claims []Claim, c Claim) []Claim {
	for i, x := range claims {
		if x == c {
			return append(claims[:i:i], claims[i+1:]...)
		}
	}
	return claims
}

func TestConcurrentUse(t *testing.T) {
	a, _ := newTestAllocator(t, Config{PageSize: 1 << 16})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var mine []Claim
			for i := range 500 {
				c, err := a.Alloc(Kind(g%3), uint64(i%700+1))
				if !assert.NoError(t, err) {
					return
				}
				mine = append(mine, c)
				if len(mine) > 8 {
					assert.NoError(t, a.Free(mine[0]))
					mine = mine[1:]
				}
				a.Page(c.Page)
			}
			for _, c := range mine {
				assert.NoError(t, a.Free(c))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, a.Stats().LiveClaims)
}

// Large claims in a shared page start Stagger bytes into the range they
// take, so tensors allocated one after another are not a power of two
// apart; the bytes skipped stay free for small claims, and freeing
// everything leaves one free range again.
func TestLargeClaimsAreStaggered(t *testing.T) {
	a, _ := newTestAllocator(t, Config{PageSize: 64 << 20, Alignment: 256})
	stagger := a.Config().Stagger
	require.Equal(t, uint64(4096+256), stagger, "the default: 4 KiB and one alignment")
	require.Equal(t, DefaultStaggerFrom, a.Config().StaggerFrom)
	var big []Claim
	for range 3 {
		c, err := a.Alloc(DeviceLocal, 16<<20)
		require.NoError(t, err)
		big = append(big, c)
	}
	assert.Equal(t, stagger, big[0].Offset, "the first starts one stagger in")
	for i := 1; i < len(big); i++ {
		assert.Equal(t, big[i-1].End()+stagger, big[i].Offset, "each starts one stagger past the last")
		gap := big[i].Offset - big[0].Offset
		assert.NotZero(t, gap%4096, "claims %d and 0 are not a multiple of 4 KiB apart", i)
	}
	// The gaps in front stay free: claims that fit them fill them. The
	// rest of the page goes to one more large claim (staggered too), so
	// the four gaps are all that is left.
	tail, err := a.Alloc(DeviceLocal, 64<<20-big[2].End()-stagger)
	require.NoError(t, err)
	assert.Equal(t, big[2].End()+stagger, tail.Offset)
	var small []Claim
	var offsets []uint64
	for range 4 {
		c, err := a.Alloc(DeviceLocal, stagger)
		require.NoError(t, err, "a gap in front of a large claim is free")
		small, offsets = append(small, c), append(offsets, c.Offset)
	}
	assert.ElementsMatch(t, []uint64{0, big[0].End(), big[1].End(), big[2].End()}, offsets)
	assert.Equal(t, uint64(64<<20), a.Stats().Used, "the page is full")
	require.NoError(t, a.Validate())
	for _, c := range append(append(big, small...), tail) {
		require.NoError(t, a.Free(c))
	}
	require.NoError(t, a.Validate())
	st := a.Stats()
	assert.Zero(t, st.Used)
	assert.Equal(t, uint64(64<<20), st.LargestFree, "the page is one free range again")

	_, err = New[*fakeBlock](&fakeSource{}, Config{Alignment: 256, Stagger: 100})
	assert.ErrorIs(t, err, ErrInvalidConfig, "a stagger off the alignment")
	tiny, err := New[*fakeBlock](&fakeSource{}, Config{PageSize: 4096, Alignment: 256})
	require.NoError(t, err)
	assert.Zero(t, tiny.Config().Stagger, "no stagger where a page cannot spare it")
}
