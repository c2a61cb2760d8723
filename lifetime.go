package vkc

import (
	"sync"
	"sync/atomic"

	"github.com/vkcompute/vkc/internal/lockrank"
)

// lifetime is the one way every vkc object closes (Device, Buffer, Param,
// Kernel, Graph; a Stream lives with its Device). A call holds the object
// in use from its check to its end (enter, leave); Close marks it closing
// and waits for every call in use; a call that starts after that fails
// with ErrClosed. So a Close racing any call is either before it (the call
// gets ErrClosed) or after it (the call completes), never in between — the
// discipline of database/sql's closemu, but counted rather than a
// RWMutex, so a call may hold one object twice (a buffer bound to two
// bindings) without deadlocking against a Close waiting between the two.
//
// The zero value is open and ready to use.
type lifetime struct {
	state atomic.Int64 // calls in use, plus closingBit once Close began

	mu   lockrank.LeafMutex
	idle *sync.Cond // signalled when the last call leaves a closing object, and at finish
	done bool       // the first close has released the object
}

const closingBit = int64(1) << 62

// enter holds the object in use; false means it is closing or closed (the
// caller returns ErrClosed and must not leave).
func (l *lifetime) enter() bool {
	if l.state.Add(1)&closingBit != 0 {
		l.leave()
		return false
	}
	return true
}

// closing reports whether Close has begun (or ended): a hint for checks
// that must not judge a closed object, which a later enter refuses.
func (l *lifetime) closing() bool { return l.state.Load()&closingBit != 0 }

// leave ends a use begun by a successful enter.
func (l *lifetime) leave() {
	if l.state.Add(-1) == closingBit {
		l.mu.Lock()
		if l.idle != nil {
			l.idle.Broadcast()
		}
		l.mu.Unlock()
	}
}

// close marks the object closing and waits until no call holds it. It
// reports whether this call closed it: only the first close does, and it
// must call finish once it has released the object. A later close waits
// for that finish and returns false, so every Close returns only once the
// object is closed (a second Device.Close racing the first does not
// return while the first still destroys the device).
func (l *lifetime) close() bool {
	for {
		v := l.state.Load()
		if v&closingBit != 0 {
			l.wait(func() bool { return l.done })
			return false
		}
		if l.state.CompareAndSwap(v, v|closingBit) {
			break
		}
	}
	l.wait(func() bool { return l.state.Load() == closingBit })
	return true
}

// finish ends the close that close reported to its caller: the object is
// released, and closes waiting for it return.
func (l *lifetime) finish() {
	l.mu.Lock()
	l.done = true
	if l.idle != nil {
		l.idle.Broadcast()
	}
	l.mu.Unlock()
}

// wait blocks until cond holds; leave and finish signal its changes.
func (l *lifetime) wait(cond func() bool) {
	l.mu.Lock()
	if l.idle == nil {
		l.idle = sync.NewCond(&l.mu)
	}
	for !cond() {
		l.idle.Wait()
	}
	l.mu.Unlock()
}

// closed reports whether close has begun.
func (l *lifetime) closed() bool { return l.state.Load()&closingBit != 0 }
