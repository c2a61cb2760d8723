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

// LeafMutex is a sync.Mutex of rank Leaf, ready at its zero value: for a lock
// that guards a few fields and takes nothing under it, in values made in
// many places (a lifetime, a handle table) where a SetRank would be
// forgotten. Checked under the vkc_lockrank tag like a Mutex.
type LeafMutex struct {
	mu sync.Mutex
}

// leafLock is what the checker knows of every LeafMutex; one is told apart
// from another by its address.
var leafLock = lock{rank: Leaf}

// Lock checks that nothing of rank Leaf is held, then locks.
func (m *LeafMutex) Lock() {
	acquireAt(&m.mu, &leafLock)
	m.mu.Lock()
}

// Unlock unlocks and forgets the lock.
func (m *LeafMutex) Unlock() {
	releaseAt(&m.mu, &leafLock)
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

// heldLock is one lock a goroutine holds: the lock's identity (its
// address) and its rank.
type heldLock struct {
	at any
	l  *lock
}

var (
	heldMu sync.Mutex
	// held is what each goroutine holds, by goroutine id, in acquisition
	// order. A goroutine's entry stays when it holds nothing, so its list
	// keeps its capacity and a checked build allocates nothing per lock
	// once warm (the tests that count allocations run with the checker).
	held  = map[uint64][]heldLock{}
	stack [64]byte // goid's buffer, used under heldMu
)

// acquire panics unless the goroutine may take l after what it holds, and
// records l as held.
func acquire(l *lock) { acquireAt(l, l) }

// acquireAt is acquire of the lock at the address at, ranked as l says.
func acquireAt(at any, l *lock) {
	if l.rank == unranked {
		panic("lockrank: Lock of a lock with no rank (SetRank it where it is made)")
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	g := goid()
	for _, h := range held[g] {
		if !mayFollow(h.l, l) {
			panic(fmt.Sprintf("lockrank: acquiring %s while holding %s: locks are taken in increasing rank (see internal/lockrank)", l, h.l))
		}
	}
	held[g] = append(held[g], heldLock{at: at, l: l})
}

// mayFollow reports whether l may be taken while h is held.
func mayFollow(h, l *lock) bool {
	if h.rank != l.rank {
		return h.rank < l.rank
	}
	return l.rank.ordered() && h.index < l.index
}

// release forgets l; unlocking a lock this goroutine did not take panics.
func release(l *lock) { releaseAt(l, l) }

// releaseAt is release of the lock at the address at.
func releaseAt(at any, l *lock) {
	heldMu.Lock()
	defer heldMu.Unlock()
	g := goid()
	hs := held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].at == at {
			n := copy(hs[i:], hs[i+1:])
			hs[i+n] = heldLock{}
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
