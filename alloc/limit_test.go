package alloc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	limitPage  = 4 << 10
	limitBytes = 4 * limitPage
	piece      = 1 << 10
)

func newLimited(t *testing.T) (*Allocator[*fakeBlock], *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	a, err := New[*fakeBlock](src, Config{PageSize: limitPage, Alignment: 256, Limit: limitBytes, StaggerFrom: limitBytes})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a, src
}

// fill allocates pieces until the limit refuses one, and returns them.
func fill(t *testing.T, a *Allocator[*fakeBlock]) []Claim {
	t.Helper()
	var claims []Claim
	for {
		c, err := a.Alloc(DeviceLocal, piece)
		if err != nil {
			require.ErrorIs(t, err, ErrOverLimit)
			return claims
		}
		claims = append(claims, c)
		require.LessOrEqual(t, len(claims), limitBytes/piece, "more pieces than the limit holds")
	}
}

func TestLimitRefusesPastItAndSaysWhy(t *testing.T) {
	a, src := newLimited(t)
	claims := fill(t, a)
	require.Len(t, claims, limitBytes/piece, "the limit is filled exactly")
	st := a.Stats()
	assert.Equal(t, uint64(limitBytes), st.Reserved)
	assert.Equal(t, uint64(limitBytes), st.Limit)
	made := len(src.made)

	_, err := a.Alloc(Upload, 300)
	require.ErrorIs(t, err, ErrOverLimit)
	for _, want := range []string{"512 bytes of upload", fmt.Sprintf("limit %d", limitBytes),
		fmt.Sprintf("reserved %d", limitBytes), fmt.Sprintf("used %d", limitBytes), "largest free range 0"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, made, len(src.made), "a refusal makes no page")
	assert.Equal(t, st, a.Stats(), "a refusal changes nothing")
	require.NoError(t, a.Validate())

	require.NoError(t, a.Free(claims[0]))
	c, err := a.Alloc(DeviceLocal, piece)
	require.NoError(t, err, "a freed range serves the next request")
	assert.Equal(t, claims[0], c)
}

// Half the budget freed in pieces empties whole pages; the cache keeps
// one, and a request needing a page of its own fits only once it goes.
func TestLimitReleasesCachedPagesBeforeRefusing(t *testing.T) {
	a, src := newLimited(t)
	claims := fill(t, a)
	for _, c := range claims[len(claims)/2:] {
		require.NoError(t, a.Free(c))
	}
	st := a.Stats()
	require.Equal(t, uint64(limitBytes-limitPage), st.Reserved, "one emptied page cached, one released")
	require.Equal(t, uint64(limitBytes/2), st.Used)

	big, err := a.Alloc(DeviceLocal, limitBytes/2)
	require.NoError(t, err, "fits once the cached page is released")
	assert.Equal(t, uint64(limitBytes/2), src.made[len(src.made)-1].size, "a dedicated page")
	st = a.Stats()
	assert.Equal(t, uint64(limitBytes), st.Reserved)
	assert.Equal(t, uint64(limitBytes), st.Used)
	require.NoError(t, a.Validate())
	require.NoError(t, a.Free(big))
}

// Memory freed in scattered pieces empties no page: nothing can be
// released, so the request fails, naming the largest free range.
func TestLimitRefusesWhenFreeMemoryIsScattered(t *testing.T) {
	a, _ := newLimited(t)
	claims := fill(t, a)
	for i := 0; i < len(claims); i += 2 {
		require.NoError(t, a.Free(claims[i]))
	}
	_, err := a.Alloc(DeviceLocal, limitBytes/4)
	require.ErrorIs(t, err, ErrOverLimit)
	assert.Contains(t, err.Error(), fmt.Sprintf("largest free range %d", piece))
	assert.Equal(t, uint64(limitBytes), a.Stats().Reserved)
}

func TestTrimReleasesEveryEmptyPageAndNothingElse(t *testing.T) {
	a, src := newLimited(t)
	claims := fill(t, a)
	guarded := claims[0]
	require.NoError(t, a.Guard([]Claim{guarded}))
	for _, c := range claims[:len(claims)-1] {
		require.NoError(t, a.Free(c))
	}
	// Page 0 holds the guarded claim, page 3 the live one; pages 1 and 2
	// are empty, one of them cached.
	assert.Equal(t, uint64(limitPage), a.Trim())
	st := a.Stats()
	assert.Equal(t, uint64(2*limitPage), st.Reserved)
	assert.Equal(t, uint64(piece), st.Guarded)
	assert.Equal(t, 1, st.LiveClaims)
	assert.Zero(t, a.Trim(), "nothing left to release")

	a.Unguard([]Claim{guarded}) // page 0 empties and is cached
	a.LockGrowth()
	assert.Zero(t, a.Trim(), "a recording window holds the empty pages")
	a.UnlockGrowth()
	a.KeepPages()
	assert.Zero(t, a.Trim(), "a warmup holds the empty pages")
	a.UnkeepPages()
	assert.Equal(t, uint64(limitPage), a.Trim())
	assert.Equal(t, 1, src.live())
	require.NoError(t, a.Validate())
}

func TestLimitBelowThePageSizeShrinksThePage(t *testing.T) {
	src := &fakeSource{}
	a, err := New[*fakeBlock](src, Config{PageSize: 1 << 20, Alignment: 256, Limit: 10000})
	require.NoError(t, err)
	defer a.Close()
	assert.Equal(t, uint64(9984), a.Config().PageSize)
	_, err = a.Alloc(DeviceLocal, 100)
	require.NoError(t, err)
	_, err = a.Alloc(Upload, 100)
	require.ErrorIs(t, err, ErrOverLimit, "a second page does not fit")
}

// While growth is locked the limit still holds for work outside the
// window, and empty pages are not released for it.
func TestLimitWhileGrowthLocked(t *testing.T) {
	a, _ := newLimited(t)
	claims := fill(t, a)
	for _, c := range claims[len(claims)-limitPage/piece:] {
		require.NoError(t, a.Free(c))
	}
	a.LockGrowth()
	_, err := a.AllocOutsideWindow(Upload, piece)
	require.ErrorIs(t, err, ErrOverLimit, "the cached page is the window's")
	a.UnlockGrowth()
	_, err = a.AllocOutsideWindow(Upload, piece)
	require.NoError(t, err)
}
