package vkc

import (
	"errors"

	"github.com/vkcompute/vkc/recorder"
)

var errNilGraph = errors.New("vkc: nil graph (use Stream.Capture)")

// Graph is a sealed capture: Replay resubmits every recorded launch, or
// none, for the cost of one submit.
type Graph struct {
	g    *recorder.Graph
	dev  *Device
	life lifetime
}

// Replay enqueues the recorded work once, after the capturing stream's
// pending work; consecutive replays need no host wait and run in order. If
// it does not enqueue (the submit fails, or another stream records a
// window on its slot: ErrStreamCapturing) every output of the graph reads
// as ErrUnwritten (unwrapping to the error) until a replay writes it again
// (with a dynamic length, only the prefix that length covers is rewritten).
// An output whose input holds unwritten bytes when the replay is enqueued
// reads as ErrUnwritten too, as the same launches done one by one would. A
// replay whose length param is above what its buffers hold is refused.
func (g *Graph) Replay() error {
	if g == nil || g.g == nil || g.dev == nil {
		return errNilGraph
	}
	if err := g.dev.enter(); err != nil {
		return err
	}
	defer g.dev.leave()
	if !g.life.enter() {
		return ErrClosed
	}
	defer g.life.leave()
	return public(g.g.Replay())
}

// Close waits for replays in flight on other goroutines and for the last
// replay, then releases the graph's command buffer, guards, pinned
// descriptor sets, host staging and the kernels and buffers it kept alive.
// Idempotent; Replay after Close returns ErrClosed. Closing a nil Graph
// does nothing.
func (g *Graph) Close() error {
	if g == nil || g.g == nil || g.dev == nil || !g.life.close() {
		return nil
	}
	defer g.life.finish()
	d := g.dev
	if d.enter() != nil {
		return nil // the device is closing, and closes the graph
	}
	defer d.leave()
	d.mu.Lock()
	delete(d.graphs, g)
	d.mu.Unlock()
	return public(g.g.Close())
}
