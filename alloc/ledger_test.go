package alloc

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

var errSubmit = errors.New("test: submit failed")

func TestCleanLedgerChecksNothing(t *testing.T) {
	l := NewLedger()
	c := Claim{Page: 1, Offset: 0, Size: 64}
	assert.NoError(t, l.Check([]Claim{c}))
	_, tainted := l.Failure([]Claim{c})
	assert.False(t, tainted)
	l.Written([]Claim{c})
	assert.Zero(t, l.Live())
}

func TestTaintIsByteExact(t *testing.T) {
	l := NewLedger()
	a := Claim{Page: 3, Offset: 0, Size: 256}
	b := Claim{Page: 3, Offset: 256, Size: 256}
	onOtherPage := Claim{Page: 4, Offset: 0, Size: 256}
	id := l.Taint([]Claim{a}, errSubmit)

	assert.NoError(t, l.Check([]Claim{b}), "the adjacent claim stays clean")
	assert.NoError(t, l.Check([]Claim{onOtherPage}))
	err := l.Check([]Claim{b, a})
	require.Error(t, err)
	assert.ErrorIs(t, err, errs.Unwritten)
	assert.ErrorIs(t, err, errSubmit, "unwraps to the cause")
	var unwritten *UnwrittenError
	require.ErrorAs(t, err, &unwritten)
	assert.Equal(t, id, unwritten.Failure)
	assert.Equal(t, a, unwritten.Claim)
	assert.Contains(t, err.Error(), a.String())
	assert.Contains(t, err.Error(), errSubmit.Error())

	straddling := Claim{Page: 3, Offset: 255, Size: 2}
	assert.ErrorIs(t, l.Check([]Claim{straddling}), errs.Unwritten, "one tainted byte is enough")
}

func TestWrittenClearsExactlyItsRange(t *testing.T) {
	l := NewLedger()
	whole := Claim{Page: 0, Offset: 0, Size: 300}
	id := l.Taint([]Claim{whole}, errSubmit)
	middle := Claim{Page: 0, Offset: 100, Size: 100}
	l.Written([]Claim{middle})

	assert.NoError(t, l.Check([]Claim{middle}))
	for _, c := range []Claim{{Page: 0, Offset: 99, Size: 1}, {Page: 0, Offset: 200, Size: 1}} {
		got, tainted := l.Failure([]Claim{c})
		assert.True(t, tainted, "%s", c)
		assert.Equal(t, id, got)
	}
	assert.Equal(t, 1, l.Live())
	l.Written([]Claim{{Page: 0, Offset: 0, Size: 100}, {Page: 0, Offset: 200, Size: 100}})
	assert.NoError(t, l.Check([]Claim{whole}))
	assert.Zero(t, l.Live(), "the failure is dropped with its last byte")
}

func TestNewerTaintOverwritesAndFailuresAreDroppedWhenCovered(t *testing.T) {
	l := NewLedger()
	first := l.Taint([]Claim{{Page: 0, Offset: 0, Size: 100}}, errSubmit)
	second := l.Taint([]Claim{{Page: 0, Offset: 50, Size: 100}}, errOutOfMemory)
	assert.NotEqual(t, first, second)
	assert.Equal(t, 2, l.Live())

	got, _ := l.Failure([]Claim{{Page: 0, Offset: 60, Size: 1}})
	assert.Equal(t, second, got)
	got, _ = l.Failure([]Claim{{Page: 0, Offset: 10, Size: 1}})
	assert.Equal(t, first, got)

	third := l.Taint([]Claim{{Page: 0, Offset: 0, Size: 50}}, errSubmit)
	assert.Equal(t, 2, l.Live(), "no byte carries the first failure any more")
	assert.Greater(t, third, second, "IDs are never reused")
}

func TestInheritCarriesTheCauseDownAChain(t *testing.T) {
	l := NewLedger()
	input := Claim{Page: 0, Offset: 0, Size: 64}
	output := Claim{Page: 1, Offset: 64, Size: 64}
	id := l.Taint([]Claim{input}, errSubmit)

	failure, tainted := l.Failure([]Claim{output, input})
	require.True(t, tainted)
	require.Equal(t, id, failure)
	l.Inherit([]Claim{output}, failure)
	l.Written([]Claim{input})

	err := l.Check([]Claim{output})
	assert.ErrorIs(t, err, errSubmit)
	var unwritten *UnwrittenError
	require.ErrorAs(t, err, &unwritten)
	assert.Equal(t, id, unwritten.Failure)
	assert.Equal(t, 1, l.Live())
}

func TestInheritOfDroppedFailureStillTaints(t *testing.T) {
	l := NewLedger()
	c := Claim{Page: 0, Offset: 0, Size: 8}
	id := l.Taint([]Claim{c}, errSubmit)
	l.Written([]Claim{c})
	require.Zero(t, l.Live())
	l.Inherit([]Claim{c}, id)
	err := l.Check([]Claim{c})
	assert.ErrorIs(t, err, errs.Unwritten)
	assert.NotErrorIs(t, err, errSubmit)

	l.Inherit([]Claim{{Page: 5, Size: 8}}, 0)
	assert.NoError(t, l.Check([]Claim{{Page: 5, Size: 8}}), "failure 0 is no failure")
}

func TestTaintOfNothingLeavesNoFailure(t *testing.T) {
	l := NewLedger()
	l.Taint(nil, errSubmit)
	l.Taint([]Claim{{Page: 0, Offset: 8, Size: 0}}, errSubmit)
	assert.Zero(t, l.Live())
	assert.NoError(t, l.Check([]Claim{{Page: 0, Offset: 0, Size: 64}}))
}

func TestAdjacentEqualTaintsMerge(t *testing.T) {
	l := NewLedger()
	id := l.Taint([]Claim{{Page: 0, Offset: 0, Size: 10}, {Page: 0, Offset: 20, Size: 10}}, errSubmit)
	l.Inherit([]Claim{{Page: 0, Offset: 10, Size: 10}}, id)
	assert.Equal(t, []taintRange{{start: 0, end: 30, failure: id}}, l.pages[0])
	assert.Equal(t, 1, l.failures[id].ranges)
}

func TestLedgerConcurrentUse(t *testing.T) {
	l := NewLedger()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			c := Claim{Page: PageID(g), Offset: 0, Size: 128}
			for range 300 {
				l.Taint([]Claim{c}, errSubmit)
				assert.Error(t, l.Check([]Claim{c}))
				l.Written([]Claim{c})
				assert.NoError(t, l.Check([]Claim{c}))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, l.Live())
}

// ledgerModel is the obvious ledger: one failure ID per byte, 0 for clean.
type ledgerModel struct {
	bytes  [2][96]FailureID
	causes map[FailureID]error
}

func (m *ledgerModel) assign(c Claim, id FailureID) {
	for b := c.Offset; b < c.End(); b++ {
		m.bytes[c.Page][b] = id
	}
}

// first is the failure of the first tainted byte, claims in order.
func (m *ledgerModel) first(claims []Claim) (Claim, FailureID) {
	for _, c := range claims {
		for b := c.Offset; b < c.End(); b++ {
			if id := m.bytes[c.Page][b]; id != 0 {
				return c, id
			}
		}
	}
	return Claim{}, 0
}

func (m *ledgerModel) live() map[FailureID]bool {
	out := map[FailureID]bool{}
	for _, page := range m.bytes {
		for _, id := range page {
			if id != 0 {
				out[id] = true
			}
		}
	}
	return out
}

func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 0, 10, 20, 1, 0, 15, 3, 2, 0, 0, 96, 3, 0, 5, 5})
	f.Add([]byte{0, 1, 0, 50, 0, 1, 40, 30, 4, 1, 0, 90, 1, 1, 45, 10, 3, 1, 0, 96})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{data: data}
		l := NewLedger()
		m := &ledgerModel{causes: map[FailureID]error{}}
		var lastID FailureID
		claimsOf := func() []Claim {
			claims := make([]Claim, 1+in.byte()%3)
			for i := range claims {
				page, off := PageID(in.byte()%2), uint64(in.byte()%96)
				claims[i] = Claim{Page: page, Offset: off, Size: uint64(in.byte()) % (97 - off)}
			}
			return claims
		}
		for step := 0; in.more() && step < 200; step++ {
			op := in.byte() % 5
			claims := claimsOf()
			switch op {
			case 0:
				cause := fmt.Errorf("fuzz failure at step %d", step)
				id := l.Taint(claims, cause)
				require.Greater(t, id, lastID, "failure IDs are new")
				lastID = id
				m.causes[id] = cause
				for _, c := range claims {
					m.assign(c, id)
				}
			case 1:
				id := FailureID(in.byte()) % (lastID + 1)
				if !m.live()[id] {
					continue // the cause of a dropped failure is not modelled
				}
				l.Inherit(claims, id)
				for _, c := range claims {
					m.assign(c, id)
				}
			case 2:
				l.Written(claims)
				for _, c := range claims {
					m.assign(c, 0)
				}
			case 3:
				wantClaim, wantID := m.first(claims)
				err := l.Check(claims)
				if wantID == 0 {
					require.NoError(t, err)
					break
				}
				var unwritten *UnwrittenError
				require.ErrorAs(t, err, &unwritten)
				require.ErrorIs(t, err, errs.Unwritten)
				require.Equal(t, wantID, unwritten.Failure)
				require.Equal(t, wantClaim, unwritten.Claim)
				require.Same(t, m.causes[wantID], unwritten.Cause)
			case 4:
				_, wantID := m.first(claims)
				id, tainted := l.Failure(claims)
				require.Equal(t, wantID != 0, tainted)
				require.Equal(t, wantID, id)
			}
			require.NoError(t, l.Validate())
			require.Equal(t, len(m.live()), l.Live())
			for page := range m.bytes {
				whole := []Claim{{Page: PageID(page), Offset: 0, Size: 96}}
				_, wantID := m.first(whole)
				id, _ := l.Failure(whole)
				require.Equal(t, wantID, id)
			}
		}
	})
}
