//go:build vkc_lockrank

package lockrank

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func ranked(r Rank, index int) *Mutex {
	m := &Mutex{}
	m.SetRank(r, index)
	return m
}

// TestIncreasingRanksPass: every pair of ranks taken in the declared order,
// and slots taken in increasing index, is accepted and released cleanly.
func TestIncreasingRanksPass(t *testing.T) {
	rs := Ranks()
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			a, b := ranked(rs[i], 0), ranked(rs[j], 0)
			require.NotPanics(t, func() {
				a.Lock()
				b.Lock()
				b.Unlock()
				a.Unlock()
			}, "%s then %s", rs[i], rs[j])
		}
	}
	slots := []*Mutex{ranked(Slot, 0), ranked(Slot, 1), ranked(Slot, 2)}
	require.NotPanics(t, func() {
		for _, m := range slots {
			m.Lock()
		}
		for _, m := range slots { // released in index order, as unlockSlots does
			m.Unlock()
		}
	})
}

// TestInversionPanicsNamingBoth: a lock of lower or equal rank than one
// held is refused with both locks named, except slots in increasing index.
func TestInversionPanicsNamingBoth(t *testing.T) {
	cases := []struct {
		first, second *Mutex
		want          string
	}{
		{ranked(Slot, 1), ranked(Presentation, 0), fmt.Sprintf("acquiring Presentation.mu (rank %d) while holding slot.mu[1] (rank %d)", Presentation, Slot)},
		{ranked(Guards, 0), ranked(Staging, 0), fmt.Sprintf("acquiring Recorder.stagingMu (rank %d) while holding Recorder.guardMu (rank %d)", Staging, Guards)},
		{ranked(Slot, 2), ranked(Slot, 1), fmt.Sprintf("acquiring slot.mu[1] (rank %d) while holding slot.mu[2] (rank %d)", Slot, Slot)},
		{ranked(Graphs, 0), ranked(Graphs, 0), fmt.Sprintf("acquiring Recorder.graphsMu (rank %d) while holding Recorder.graphsMu (rank %d)", Graphs, Graphs)},
		{ranked(Device, 0), ranked(Param, 0), fmt.Sprintf("acquiring vkc.paramCore.mu (rank %d) while holding Recorder.devMu (rank %d)", Param, Device)},
	}
	for _, c := range cases {
		c.first.Lock()
		require.PanicsWithValue(t, "lockrank: "+c.want+": locks are taken in increasing rank (see internal/lockrank)", c.second.Lock)
		c.first.Unlock()
	}
}

// TestReadLockRanked: a read lock counts as holding the lock, so taking it
// again for reading, or anything of lower rank under it, is refused.
func TestReadLockRanked(t *testing.T) {
	var dev RWMutex
	dev.SetRank(Device, 0)
	slot := ranked(Slot, 0)
	dev.RLock()
	require.NotPanics(t, func() { slot.Lock(); slot.Unlock() })
	require.Panics(t, dev.RLock)
	dev.RUnlock()
	slot.Lock()
	require.Panics(t, dev.RLock)
	slot.Unlock()
}

// TestHeldIsPerGoroutine: a lock held by one goroutine does not constrain
// another.
func TestHeldIsPerGoroutine(t *testing.T) {
	slot := ranked(Slot, 3)
	slot.Lock()
	defer slot.Unlock()
	var wg sync.WaitGroup
	var got any
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { got = recover() }()
		dev := ranked(Presentation, 0)
		dev.Lock()
		dev.Unlock()
	}()
	wg.Wait()
	require.Nil(t, got)
}

// TestMisuse: a lock never given a rank, and an unlock of a lock this
// goroutine does not hold, panic.
func TestMisuse(t *testing.T) {
	var m Mutex
	require.Panics(t, m.Lock)
	r := ranked(Kernels, 0)
	require.PanicsWithValue(t, fmt.Sprintf("lockrank: unlocking %s, which this goroutine does not hold", &r.l), r.Unlock)
}

// TestLeafMutexReadyAtZero: a zero LeafMutex is ranked last without a
// SetRank, so it may be taken under any ranked lock, and nothing (another
// leaf included) under it.
func TestLeafMutexReadyAtZero(t *testing.T) {
	var a, b LeafMutex
	slot := ranked(Slot, 0)
	require.NotPanics(t, func() {
		slot.Lock()
		a.Lock()
		a.Unlock()
		slot.Unlock()
	})
	a.Lock()
	require.PanicsWithValue(t, fmt.Sprintf("lockrank: acquiring a leaf lock (rank %d) while holding a leaf lock (rank %d): locks are taken in increasing rank (see internal/lockrank)", Leaf, Leaf), b.Lock)
	require.Panics(t, slot.Lock, "a ranked lock under a leaf")
	a.Unlock()
	require.Panics(t, b.Unlock, "a leaf this goroutine does not hold")
}
