package vulkango

import (
	"errors"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inside the call the collector is off and the memory limit lifted; after
// it both are as they were, and f's error comes back.
func TestWithCollectorPausedRestoresTheCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(37))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	want := errors.New("f's error")
	err := WithCollectorPaused(func() error {
		assert.Equal(t, -1, debug.SetGCPercent(-1))
		assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
		return want
	})
	assert.Same(t, want, err)
	assert.Equal(t, 37, debug.SetGCPercent(37))
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1))
}

// Concurrent callers run one at a time, so one's restore never turns the
// collector back on under another's call.
func TestWithCollectorPausedServesOneCallerAtATime(t *testing.T) {
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for j := 0; j < 50; j++ {
				_ = WithCollectorPaused(func() error {
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					if debug.SetGCPercent(-1) != -1 {
						overlaps.Add(1)
					}
					inside.Add(-1)
					return nil
				})
			}
		})
	}
	wg.Wait()
	assert.Zero(t, overlaps.Load())
}

// Pins are pointers; anything else is an error, not a panic, and f does
// not run.
func TestWithCollectorPausedRefusesWhatItCannotPin(t *testing.T) {
	xs := []float32{1}
	require.NoError(t, WithCollectorPaused(func() error { return nil }, &xs[0]))
	var nilPtr *int
	for _, bad := range []any{nil, 3, xs, nilPtr} {
		ran := false
		err := WithCollectorPaused(func() error { ran = true; return nil }, bad)
		assert.Error(t, err, "%T", bad)
		assert.False(t, ran, "%T", bad)
	}
}
