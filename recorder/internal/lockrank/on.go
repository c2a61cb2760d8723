//go:build vkc_lockrank

package lockrank

import (
	"fmt"
	"runtime"
	"sync"
)

// Checked reports whether this build checks ranks (the vkc_lockrank tag).
const Checked = true

// lock is what the checker knows of a ranked lock.
type lock struct {
	rank  Rank
	index int
}

func (l *lock) String() string {
	if l.rank.ordered() {
		return fmt.Sprintf("%s[%d] (rank %d)", l.rank, l.index, l.rank)
	}
	return fmt.Sprintf("%s (rank %d)", l.rank, l.rank)
}

// Mutex is a sync.Mutex with a rank, checked under the vkc_lockrank tag.
type Mutex struct {
	mu sync.Mutex
	l  lock
}

// SetRank gives the lock its rank and its index among locks of an ordered
// rank; call it before the first Lock.
func (m *Mutex) SetRank(r Rank, index int) { m.l = lock{rank: r, index: index} }

// Lock checks the rank against the locks this goroutine holds, then locks.
func (m *Mutex) Lock() {
	acquire(&m.l)
	m.mu.Lock()
}

// Unlock unlocks and forgets the lock.
func (m *Mutex) Unlock() {
	release(&m.l)
	m.mu.Unlock()
}

// RWMutex is a sync.RWMutex with a rank, checked under the vkc_lockrank
// tag; a read lock counts as holding it.
type RWMutex struct {
	mu sync.RWMutex
	l  lock
}

// SetRank is Mutex.SetRank.
func (m *RWMutex) SetRank(r Rank, index int) { m.l = lock{rank: r, index: index} }

// Lock checks the rank, then locks for writing.
func (m *RWMutex) Lock() {
	acquire(&m.l)
	m.mu.Lock()
}

// Unlock unlocks for writing and forgets the lock.
func (m *RWMutex) Unlock() {
	release(&m.l)
	m.mu.Unlock()
}

// RLock checks the rank, then locks for reading: a second read lock of the
// same lock by one goroutine is refused too, since a writer waiting
// between them deadlocks it.
func (m *RWMutex) RLock() {
	acquire(&m.l)
	m.mu.RLock()
}

// RUnlock unlocks for reading and forgets the lock.
func (m *RWMutex) RUnlock() {
	release(&m.l)
	m.mu.RUnlock()
}

var (
	heldMu sync.Mutex
	// held is what each goroutine holds, by goroutine id, in acquisition
	// order. A goroutine's entry stays when it holds nothing, so its list
	// keeps its capacity and a checked build allocates nothing per lock
	// once warm (the tests that count allocations run with the checker).
	held  = map[uint64][]*lock{}
	stack [64]byte // goid's buffer, used under heldMu
)

// acquire panics unless the goroutine may take l after what it holds, and
// records l as held.
func acquire(l *lock) {
	if l.rank == unranked {
		panic("lockrank: Lock of a lock with no rank (SetRank it where it is made)")
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	g := goid()
	for _, h := range held[g] {
		if !mayFollow(h, l) {
			panic(fmt.Sprintf("lockrank: acquiring %s while holding %s: locks are taken in increasing rank (see recorder/internal/lockrank)", l, h))
		}
	}
	held[g] = append(held[g], l)
}

// mayFollow reports whether l may be taken while h is held.
func mayFollow(h, l *lock) bool {
	if h.rank != l.rank {
		return h.rank < l.rank
	}
	return l.rank.ordered() && h.index < l.index
}

// release forgets l; unlocking a lock this goroutine did not take panics.
func release(l *lock) {
	heldMu.Lock()
	defer heldMu.Unlock()
	g := goid()
	hs := held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i] == l {
			n := copy(hs[i:], hs[i+1:])
			hs[i+n] = nil
			held[g] = hs[:i+n]
			return
		}
	}
	panic(fmt.Sprintf("lockrank: unlocking %s, which this goroutine does not hold", l))
}

// goid is the running goroutine's id, read from its stack trace's first
// line ("goroutine 42 [running]:"): slow, and only in checked builds. The
// caller holds heldMu, which guards the buffer.
func goid() uint64 {
	b := stack[:runtime.Stack(stack[:], false)]
	const prefix = "goroutine "
	if len(b) <= len(prefix) || string(b[:len(prefix)]) != prefix {
		panic("lockrank: cannot read the goroutine id")
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
