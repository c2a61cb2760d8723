package vkc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A close racing uses: every use either completes before close returns or
// is refused, and close returns only once no use is in flight.
func TestLifetimeCloseWaitsForUses(t *testing.T) {
	for round := 0; round < 50; round++ {
		var l lifetime
		var inside, done atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					if !l.enter() {
						return
					}
					inside.Add(1)
					if l.enter() { // a second hold by the same call must not deadlock
						l.leave()
					}
					inside.Add(-1)
					done.Add(1)
					l.leave()
				}
			}()
		}
		require.True(t, l.close())
		assert.Zero(t, inside.Load(), "close returned with a use in flight")
		assert.False(t, l.enter(), "a use after close is refused")
		l.finish()
		assert.False(t, l.close(), "only the first close closes")
		assert.True(t, l.closed())
		wg.Wait()
	}
}

// A later close returns only once the first has finished releasing the
// object: a second Close must not report closed what is still being
// destroyed.
func TestLifetimeLaterCloseWaitsForTheFirst(t *testing.T) {
	var l lifetime
	require.True(t, l.close())
	var finished atomic.Bool
	returned := make(chan bool)
	for range 3 {
		go func() {
			first := l.close()
			assert.True(t, finished.Load(), "a later close returned before the first finished")
			returned <- first
		}()
	}
	select {
	case <-returned:
		t.Fatal("a later close returned while the first was still releasing")
	case <-time.After(50 * time.Millisecond):
	}
	finished.Store(true)
	l.finish()
	for range 3 {
		assert.False(t, <-returned)
	}
}
