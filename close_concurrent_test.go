package vkc

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two Device.Close calls at once: whichever returns second or first, the
// device is gone when it returns (a caller may destroy the window of a
// presenting device right after), and every graph, kernel and buffer with
// it. Each object's own Close racing the device's returns once it is
// closed too.
func TestConcurrentClosesReturnOnlyWhenClosed(t *testing.T) {
	for round := 0; round < 3; round++ {
		dev, err := Open(WithValidation(true))
		require.NoError(t, err)
		s := dev.Stream()
		x, err := NewBuffer[float32](dev, 64)
		require.NoError(t, err)
		require.NoError(t, Fill(s, x, 1))
		var graphs []*Graph
		for range 20 { // enough to make the first Close take a while
			g, err := s.Capture(func(s *Stream) error { return Scale(s, 2, x, x) })
			require.NoError(t, err)
			graphs = append(graphs, g)
		}
		var wg sync.WaitGroup
		closeAndLook := func(close func() error) {
			defer wg.Done()
			assert.NoError(t, close())
			assert.Empty(t, dev.LiveObjects(), "a Close returned before the device was closed")
		}
		wg.Add(3)
		go closeAndLook(dev.Close)
		go closeAndLook(dev.Close)
		go func() {
			defer wg.Done()
			g := graphs[len(graphs)/2]
			assert.NoError(t, g.Close())
			assert.ErrorIs(t, g.Replay(), ErrClosed)
		}()
		wg.Wait()
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "%q", recent)
	}
}
