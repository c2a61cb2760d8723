package alloc

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A range inside a claim is owned by that claim, wherever it lies in it;
// a range across two claims, past a claim's requested size, in a free
// range or on another page has no owner. The model is the list of claims
// handed out, checked against random ranges on random layouts.
func TestOwnerIsTheClaimHoldingTheRange(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		a, _ := newTestAllocator(t, Config{})
		var live []Claim
		for range 40 {
			if len(live) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(live))
				require.NoError(t, a.Free(live[i]))
				live = append(live[:i], live[i+1:]...)
				continue
			}
			live = append(live, mustAlloc(t, a, DeviceLocal, 1+uint64(r.IntN(5000))))
		}
		live = append(live, mustAlloc(t, a, DeviceLocal, 64))
		owner := func(c Claim) (Claim, bool) {
			for _, o := range live {
				if o.Page == c.Page && o.Offset <= c.Offset && c.Offset < c.End() && c.End() <= o.End() {
					return o, true
				}
			}
			return Claim{}, false
		}
		for range 500 {
			base := live[r.IntN(len(live))]
			off := base.Offset + uint64(r.IntN(int(base.Size)+600)) - 300
			c := Claim{Page: base.Page, Offset: off, Size: 1 + uint64(r.IntN(int(base.Size)+300))}
			if r.IntN(10) == 0 {
				c.Page += 7 // a page that does not exist
			}
			want, wantOK := owner(c)
			got, ok := a.Owner(c)
			require.Equal(t, wantOK, ok, "seed %d: %s", seed, c)
			require.Equal(t, want, got, "seed %d: %s", seed, c)
		}
		for _, c := range live {
			got, ok := a.Owner(c)
			require.True(t, ok)
			require.Equal(t, c, got)
		}
	}
}

// A claim freed while guarded still owns its ranges until its last guard
// goes: a graph that recorded a view of it still names them.
func TestOwnerOfAGuardedFreedClaim(t *testing.T) {
	a, _ := newTestAllocator(t, Config{})
	c := mustAlloc(t, a, DeviceLocal, 1024)
	view := Claim{Page: c.Page, Offset: c.Offset + 100, Size: 8}
	require.NoError(t, a.Guard([]Claim{c}))
	require.NoError(t, a.Free(c))
	got, ok := a.Owner(view)
	require.True(t, ok)
	require.Equal(t, c, got)
	a.Unguard([]Claim{c})
	_, ok = a.Owner(view)
	require.False(t, ok, "a released claim owns nothing")
	_, ok = a.Owner(Claim{Page: c.Page, Offset: c.Offset, Size: 0})
	require.False(t, ok, "an empty range has no owner")
}
