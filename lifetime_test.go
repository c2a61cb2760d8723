package vkc

import (
	"sync"
	"sync/atomic"
	"testing"

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
		assert.False(t, l.close(), "only the first close closes")
		assert.True(t, l.closed())
		wg.Wait()
	}
}
