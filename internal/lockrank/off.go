//go:build !vkc_lockrank

package lockrank

import "sync"

// Checked reports whether this build checks ranks (the vkc_lockrank tag).
const Checked = false

// Mutex is a sync.Mutex with a rank, checked under the vkc_lockrank tag.
type Mutex struct{ sync.Mutex }

// SetRank gives the lock its rank and its index among locks of an ordered
// rank; call it before the first Lock. Unchecked builds ignore it.
func (m *Mutex) SetRank(Rank, int) {}

// RWMutex is a sync.RWMutex with a rank, checked under the vkc_lockrank
// tag; a read lock counts as holding it.
type RWMutex struct{ sync.RWMutex }

// SetRank is Mutex.SetRank.
func (m *RWMutex) SetRank(Rank, int) {}

// LeafMutex is a sync.Mutex of rank Leaf, ready at its zero value, checked
// under the vkc_lockrank tag.
type LeafMutex struct{ sync.Mutex }
