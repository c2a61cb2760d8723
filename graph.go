package vkc

import (
	"context"
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
		return closedError("graph")
	}
	defer g.life.leave()
	return publicOp("Graph.Replay", g.g.Replay())
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
	return publicOp("Graph.Close", g.g.Close())
}

// LastProfile waits for the graph's latest replay queued before the call
// and returns that replay's per-launch device times (kernel, groups,
// device time, in recorded order) and its total, from the first launch's
// start to the last one's end. Only a graph captured with
// CaptureOptions.Profile has them (else ErrGraphUnprofiled). Every replay
// writes the same timestamps, so with replays in flight the times are of
// the latest one queued before the call, which it waits for; replays
// queued while it reads wait for it. Before any replay, and after a
// replay that did not enqueue or did not complete, it fails with
// ErrProfileState (wrapping the replay's failure) rather than give an
// older replay's times; after Close, ErrClosed. A cancelled ctx stops the
// wait and leaves the replay running.
func (g *Graph) LastProfile(ctx context.Context) (*Profile, error) {
	if g == nil || g.g == nil || g.dev == nil {
		return nil, errNilGraph
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if err := g.dev.enter(); err != nil {
		return nil, err
	}
	defer g.dev.leave()
	if !g.life.enter() {
		return nil, closedError("graph")
	}
	defer g.life.leave()
	launches, total, err := g.g.LastProfile(ctx)
	if err != nil {
		return nil, publicOp("Graph.LastProfile", err)
	}
	p := &Profile{Total: total, Launches: make([]LaunchTime, len(launches))}
	for i, l := range launches {
		p.Launches[i] = LaunchTime(l)
	}
	return p, nil
}

// Profiled reports whether the graph was captured with
// CaptureOptions.Profile, so LastProfile has times to give.
func (g *Graph) Profiled() bool { return g != nil && g.g != nil && g.g.Profiled() }
