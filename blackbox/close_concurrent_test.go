package blackbox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// Two Device.Close calls at once: whichever returns second or first, the
// device is gone when it returns (a caller may destroy the window of a
// presenting device right after), and every graph, kernel and buffer with
// it. Each object's own Close racing the device's returns once it is
// closed too.
func TestConcurrentClosesReturnOnlyWhenClosed(t *testing.T) {
	for round := 0; round < 3; round++ {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		s := dev.Stream()
		x, err := vkc.NewBuffer[float32](dev, 64)
		require.NoError(t, err)
		require.NoError(t, vkc.Fill(s, x, 1))
		var graphs []*vkc.Graph
		for range 20 { // enough to make the first Close take a while
			g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, x) })
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
			assert.ErrorIs(t, g.Replay(), vkc.ErrClosed)
		}()
		wg.Wait()
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "%q", recent)
	}
}

// A read on one stream of memory another stream's pending work writes
// waits for that work under the read's context, as a read on the writer's
// own stream does: a context that has ended returns its error, the work
// goes on, and a later read returns its result.
func TestReadOfAnotherStreamsWorkHonoursItsContext(t *testing.T) {
	dev := openDevice(t)
	writer, reader := dev.StreamWithID(1), dev.StreamWithID(2)
	require.Greater(t, dev.Slots(), 2, "streams 1 and 2 must be on different slots")
	const size = 1 << 20
	x := filledBuffer(t, dev, size, 1)
	y := filledBuffer(t, dev, size, 0)
	for range 100 { // long enough that it is pending when the reads below start
		require.NoError(t, opAxpy(writer, 1, x, y))
	}
	require.NoError(t, writer.Flush())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := y.ReadOn(cancelled, reader)
	require.ErrorIs(t, err, context.Canceled, "the read on another stream waited past its context")
	_, err = y.ReadOn(cancelled, writer)
	require.ErrorIs(t, err, context.Canceled, "as on the writer's own stream")
	got, err := y.ReadOn(context.Background(), reader)
	require.NoError(t, err)
	assert.Equal(t, float32(100), got[size-1])
}
