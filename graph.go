package vkc

import (
	"errors"

	"github.com/vkcompute/vkc/recorder"
)

var errNilGraph = errors.New("vkc: nil graph (use Stream.Capture)")

// Graph is a sealed capture: Replay resubmits every recorded launch, or
// none, for the cost of one submit.
type Graph struct {
	g   *recorder.Graph
	dev *Device
}

// Replay enqueues the recorded work once, after the capturing stream's
// pending work; consecutive replays need no host wait and run in order. If
// it does not enqueue (the submit fails, or another stream records a
// window on its slot: ErrStreamCapturing) every output of the graph reads
// as ErrUnwritten (unwrapping to the error) until a replay succeeds.
func (g *Graph) Replay() error {
	if g == nil || g.g == nil || g.dev == nil {
		return errNilGraph
	}
	if err := g.dev.usable(); err != nil {
		return err
	}
	return g.g.Replay()
}

// Close waits for the last replay and releases the graph's command buffer,
// guards, pinned descriptor sets and host staging. Idempotent; Replay after
// Close returns ErrClosed. Closing a nil Graph does nothing.
func (g *Graph) Close() error {
	if g == nil || g.g == nil || g.dev == nil {
		return nil
	}
	g.dev.mu.Lock()
	delete(g.dev.graphs, g)
	g.dev.mu.Unlock()
	return g.close()
}

func (g *Graph) close() error { return g.g.Close() }
