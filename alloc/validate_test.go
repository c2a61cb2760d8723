package alloc

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAllocatorValidateFindsCorruption: a healthy allocator validates, and
// each kind of broken structure a bug could leave is reported as
// ErrCorrupt (the structure is restored after each, so the checks are
// independent).
func TestAllocatorValidateFindsCorruption(t *testing.T) {
	a, _ := newTestAllocator(t, Config{Alignment: 256})
	c := mustAlloc(t, a, DeviceLocal, 1000)
	mustAlloc(t, a, DeviceLocal, 3000)
	require.NoError(t, a.Free(c))
	require.NoError(t, a.Validate())

	n := a.nodes[a.pages[c.Page].first]
	require.True(t, n.free, "the freed claim is the page's first range")
	corruptions := map[string]func() func(){
		"a counter off": func() func() {
			a.used += 256
			return func() { a.used -= 256 }
		},
		"a free range outside the index": func() func() {
			first := a.pages[c.Page].first
			a.nodes[first].free = false
			return func() { a.nodes[first].free = true }
		},
		"a claim missing from the claim map": func() func() {
			saved := a.pages[c.Page].claims
			a.pages[c.Page].claims = nil
			return func() { a.pages[c.Page].claims = saved }
		},
	}
	for name, corrupt := range corruptions {
		restore := corrupt()
		err := a.Validate()
		restore()
		require.ErrorIs(t, err, ErrCorrupt, name)
		require.NoError(t, a.Validate(), "restored after %s", name)
	}
}

// TestLedgerValidateFindsCorruption: likewise for the ledger's ranges.
func TestLedgerValidateFindsCorruption(t *testing.T) {
	l := NewLedger()
	cause := errors.New("cause")
	l.Taint([]Claim{{Page: 1, Offset: 0, Size: 64}}, cause)
	l.Taint([]Claim{{Page: 1, Offset: 128, Size: 64}}, cause)
	require.NoError(t, l.Validate())

	corruptions := map[string]func() func(){
		"a range count off": func() func() {
			l.count++
			return func() { l.count-- }
		},
		"overlapping ranges": func() func() {
			rs := l.pages[1]
			end := rs[0].end
			rs[0].end = rs[1].start + 1
			return func() { rs[0].end = end }
		},
		"an empty range": func() func() {
			rs := l.pages[1]
			end := rs[1].end
			rs[1].end = rs[1].start
			return func() { rs[1].end = end }
		},
	}
	for name, corrupt := range corruptions {
		restore := corrupt()
		err := l.Validate()
		restore()
		require.ErrorIs(t, err, ErrCorrupt, name)
		require.NoError(t, l.Validate(), "restored after %s", name)
	}
}
