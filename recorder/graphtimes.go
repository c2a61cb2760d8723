package recorder

import (
	"context"
	"fmt"
	"time"

	"github.com/vkcompute/vkc/internal/errs"
)

// CaptureOptions are what a recording window records besides the work.
// The zero value records the work alone.
type CaptureOptions struct {
	// Profile records a timestamp before and after each launch into the
	// graph's command buffer (each query reset there first, so the buffer
	// can be resubmitted; consecutive launches share one), so every replay
	// leaves its per-launch device times for Graph.LastProfile. A graph
	// captured without it holds no timestamp and pays nothing for them.
	Profile bool
}

// graphTimes is what a profiled recording adds to its graph: the timestamp
// pools its launches write and what each launch was. Launch i runs
// between queries before[i] and before[i]+1. Consecutive launches share a
// query: a bottom-of-pipe timestamp is written once all earlier work has
// completed, so the one after a launch is also the one before the next
// when nothing else was recorded in between (a barrier takes no time of
// its own; a recorded copy does, and cuts the chain). N launches in a row
// write N+1 queries instead of 2N: timestamps are cheap on a GPU, but a
// CPU driver such as lavapipe drains its work at each. The graph owns the
// pools and destroys them with it.
type graphTimes struct {
	pools    []Timestamps
	written  int // queries recorded
	chained  bool
	before   []int
	launches []LaunchTime
}

// query is the pool and index of the i-th query.
func (t *graphTimes) query(i int) (Timestamps, uint32) {
	return t.pools[i/profileChunk], uint32(i % profileChunk)
}

// cut notes a command recorded between two launches that takes device
// time: the next launch writes its own query before it. Nil-safe: a
// recording that does not profile has no times.
func (t *graphTimes) cut() {
	if t != nil {
		t.chained = false
	}
}

// stamp records the next query into cb, creating a pool when the last is
// full.
func (b *slot) stamp(t *graphTimes) error {
	if t.written/profileChunk == len(t.pools) {
		q, err := b.r.dev.NewTimestamps(profileChunk)
		if err != nil {
			return b.r.observe(err)
		}
		t.pools = append(t.pools, q)
	}
	q, at := t.query(t.written)
	b.r.dev.CmdTimestamp(b.win.cb, q, at)
	t.written++
	return nil
}

// stampBefore adds launch k, l to the recording's times and records the
// timestamp before it into the graph's buffer, unless the previous
// launch's ends right before it. A pool that cannot be had fails the
// launch (the caller dooms the window): a profiled graph times every
// launch or none.
func (b *slot) stampBefore(k *Kernel, l *Launch) error {
	t := b.win.times
	if !t.chained {
		if err := b.stamp(t); err != nil {
			return err
		}
	}
	groups := l.Groups
	if l.Indirect.Size != 0 {
		groups = [3]uint32{}
	}
	t.before = append(t.before, t.written-1)
	t.launches = append(t.launches, LaunchTime{Kernel: k.desc.Name, Groups: groups})
	return nil
}

// stampAfter records the timestamp after the launch stampBefore added.
func (b *slot) stampAfter() error {
	t := b.win.times
	t.chained = false
	if err := b.stamp(t); err != nil {
		return err
	}
	t.chained = true
	return nil
}

// destroyPools destroys the pools, which no pending submission writes (a
// recording refused before it sealed, a graph whose replays completed, or
// any once the device is idle).
func (t *graphTimes) destroyPools(d Device) {
	if t == nil {
		return
	}
	for _, q := range t.pools {
		d.DestroyTimestamps(q)
	}
	t.pools = nil
}

// noteReplay remembers how a replay of a profiled graph ended, deferred
// with its error: LastProfile then reports a replay that did not enqueue
// instead of the times of an older one. The caller holds the slot's lock.
func (g *Graph) noteReplay(err *error) {
	g.replayErr = *err
}

// replayRefused is noteReplay for a replay refused before it took the
// slot's lock (another slot's work it waits for failed to submit).
func (g *Graph) replayRefused(err error) {
	if g.times == nil {
		return
	}
	g.b.mu.Lock()
	if !g.closed {
		g.replayErr = err
	}
	g.b.mu.Unlock()
}

// LastProfile waits for the graph's latest replay enqueued before the
// call and returns its launches, in recorded order, each with its device
// time, and the device time from the first launch's start to the last
// one's end. Every replay rewrites the same queries, so these are the
// times of that replay alone: replays queued later wait for the slot's
// lock, which this call holds from its wait to its read. Refused for a
// graph captured without profiling (errs.GraphUnprofiled), before any
// replay and after one that did not enqueue or did not complete
// (errs.ProfileState, with the replay's failure), and after Close.
func (g *Graph) LastProfile(ctx context.Context) ([]LaunchTime, time.Duration, error) {
	r, b := g.r, g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case g.closed:
		return nil, 0, fmt.Errorf("times of a closed graph: %w", errs.Closed)
	case g.times == nil:
		return nil, 0, errs.GraphUnprofiled
	}
	if err := r.usable(); err != nil {
		return nil, 0, err
	}
	switch {
	case g.replayErr != nil:
		return nil, 0, fmt.Errorf("%w: the graph's last replay failed: %w", errs.ProfileState, g.replayErr)
	case g.lastSerial == 0:
		return nil, 0, fmt.Errorf("%w: the graph was never replayed", errs.ProfileState)
	}
	// A wait that failed earlier is tried again: the replay may have run.
	// Only a wait the context stopped ends here: one that completed, even
	// with the context cancelled since, has its times to give.
	werr := b.syncThrough(ctx, g.lastSerial)
	if werr != nil && ctx.Err() != nil {
		return nil, 0, werr
	}
	if b.subs.failedAt(g.lastSerial) {
		return nil, 0, fmt.Errorf("%w: the graph's last replay did not complete: %w", errs.ProfileState, werr)
	}
	if err := r.usable(); err != nil {
		return nil, 0, err
	}
	return r.launchTimes(g.times)
}

// launchTimes reads the graph's queries and returns a copy of its
// launches with their device times, and the time from the first launch's
// start to the last one's end.
func (r *Recorder) launchTimes(t *graphTimes) ([]LaunchTime, time.Duration, error) {
	ticks := make([]uint64, t.written)
	for c, q := range t.pools {
		lo := c * profileChunk
		hi := min(lo+profileChunk, len(ticks))
		if lo >= hi {
			break
		}
		if err := r.observe(r.dev.ReadTimestamps(q, 0, ticks[lo:hi])); err != nil {
			return nil, 0, err
		}
	}
	out := make([]LaunchTime, len(t.launches))
	for i, l := range t.launches {
		at := t.before[i]
		l.Device = r.ticksToDuration(int64(ticks[at+1]) - int64(ticks[at]))
		out[i] = l
	}
	var total time.Duration
	if n := len(t.launches); n > 0 {
		total = r.ticksToDuration(int64(ticks[t.before[n-1]+1]) - int64(ticks[t.before[0]]))
	}
	return out, total, nil
}

// Profiled reports whether the graph was captured with profiling.
func (g *Graph) Profiled() bool { return g.times != nil }

// releaseTimes lets go of a closing graph's pools under the slot's lock:
// destroyed now when no submission may still write them, else kept with
// the slot's orphans until the device is idle (the recorder closing, or
// a replay whose fence wait failed).
func (g *Graph) releaseTimes() {
	if g.times == nil {
		return
	}
	b := g.b
	if g.r.closed.Load() || b.subs.mayBePending(g.cb) {
		b.orphanTimestamps = append(b.orphanTimestamps, g.times.pools...)
	} else {
		g.times.destroyPools(g.r.dev)
	}
	g.times.pools = nil
}

// destroyGraphTimes destroys the pools of the slot's graphs still open
// when the recorder closes; the device is idle and the slot's lock held.
func (b *slot) destroyGraphTimes() {
	b.r.graphsMu.Lock()
	defer b.r.graphsMu.Unlock()
	for g := range b.r.graphs {
		if g.b == b {
			g.times.destroyPools(b.r.dev)
		}
	}
}
