package lockrank

import (
	"strings"
	"testing"
)

// TestEveryRankNamed: each rank of the order names its own lock, so a
// checker panic (and the table in docs/ARCHITECTURE.md) can say which.
func TestEveryRankNamed(t *testing.T) {
	seen := map[string]Rank{}
	for i, r := range Ranks() {
		if r != Rank(i+1) {
			t.Fatalf("Ranks()[%d] = %d: the order has a gap", i, r)
		}
		name := r.String()
		if name == "" || name == names[unranked] || strings.HasPrefix(name, "rank ") {
			t.Fatalf("rank %d has no lock name", r)
		}
		if other, dup := seen[name]; dup {
			t.Fatalf("ranks %d and %d both name %s", other, r, name)
		}
		seen[name] = r
	}
	if got := Rank(numRanks).String(); !strings.HasPrefix(got, "rank ") {
		t.Fatalf("a rank past the order reads %q", got)
	}
}
