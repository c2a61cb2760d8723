package recorder

import (
	"context"
	"fmt"
	"time"

	"github.com/vkcompute/vkc/internal/errs"
)

// LaunchTime is one profiled launch: its kernel, its group counts (zero
// for a launch whose counts the device reads, DispatchIndirect) and the
// device time from the completion of the work before it to its own.
type LaunchTime struct {
	Kernel string
	Groups [3]uint32
	Device time.Duration
}

// profileChunk is the queries of one timestamp pool of a profile: two per
// launch.
const profileChunk = 256

// profiling is a slot's profile in progress: the stream it times, the
// timestamp pools its launches write (two queries each: before, after)
// and what each launch was. A slot without one pays a nil check per launch.
type profiling struct {
	owner    StreamID
	pools    []Timestamps
	launches []LaunchTime
	serials  []uint64 // the submission each query went into, two per launch
	broken   error    // a query that could not be written: the profile cannot be read
}

// query is the pool and index of the i-th query of the profile.
func (p *profiling) query(i int) (Timestamps, uint32) {
	return p.pools[i/profileChunk], uint32(i % profileChunk)
}

// BeginProfile starts timing stream s's eager launches on the device,
// each between two timestamps. Refused while the slot profiles already or
// has a capture window open (a recorded launch runs only at replay).
func (r *Recorder) BeginProfile(s StreamID) error {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.refuseNeighbour(s, "profile"); err != nil {
		return err
	}
	switch {
	case b.prof != nil:
		return fmt.Errorf("%w: slot %d already profiles stream %d", errs.ProfileState, b.index, b.prof.owner)
	case b.win.IsActive():
		return fmt.Errorf("%w: stream %d profiles around a capture window", errs.ProfileState, s)
	}
	if r.info.Limits.TimestampPeriod <= 0 {
		return fmt.Errorf("%q takes no timestamps: %w", r.info.Name, errs.Unsupported)
	}
	b.prof = &profiling{owner: s}
	return nil
}

// profileBefore writes the timestamp before a launch of stream s when the
// slot profiles s, returning the launch's index in the profile, or -1.
func (b *slot) profileBefore(s StreamID, k *Kernel, l *Launch) int {
	if b.prof == nil || b.prof.owner != s {
		return -1
	}
	groups := l.Groups
	if l.Indirect.Size != 0 {
		groups = [3]uint32{}
	}
	return b.profileStart(LaunchTime{Kernel: k.desc.Name, Groups: groups})
}

// profileReplayBefore writes the timestamp before a replay of a graph of
// n launches on a profiling slot (whichever stream replays it: a graph
// belongs to its slot), as one entry; -1 when the slot does not profile.
// The graph itself holds no timestamp: the two go into the eager batches
// around it, so a graph captured without profiling replays as it is.
func (b *slot) profileReplayBefore(n int) int {
	if b.prof == nil || b.subs.ensureOpen() != nil {
		return -1
	}
	return b.profileStart(LaunchTime{Kernel: fmt.Sprintf("replay of %d launches", n)})
}

// profileStart adds entry to the profile and writes its first timestamp
// into the open batch; -1 if no query could be had (the entry is left out).
func (b *slot) profileStart(entry LaunchTime) int {
	p := b.prof
	i := 2 * len(p.launches)
	if i/profileChunk == len(p.pools) {
		q, err := b.r.dev.NewTimestamps(profileChunk)
		if err != nil {
			return -1
		}
		p.pools = append(p.pools, q)
	}
	p.launches = append(p.launches, entry)
	p.serials = append(p.serials, b.subs.serial+1, 0)
	q, at := p.query(i)
	b.r.dev.CmdTimestamp(b.subs.open.cb, q, at)
	return len(p.launches) - 1
}

// profileAfter writes the timestamp after entry i of the profile, into
// the open batch (opened for it after a replay).
func (b *slot) profileAfter(i int) {
	if i < 0 || b.prof == nil {
		return
	}
	p := b.prof
	if err := b.subs.ensureOpen(); err != nil {
		p.broken = fmt.Errorf("profile: no command buffer for a timestamp: %w", err)
		return
	}
	p.serials[2*i+1] = b.subs.serial + 1
	q, at := p.query(2*i + 1)
	b.r.dev.CmdTimestamp(b.subs.open.cb, q, at)
}

// EndProfile waits for the slot's work and returns every launch of s
// timed since BeginProfile, in order, with the device time from the first
// launch's start to the last one's end. The profile ends whatever
// happens; its pools are destroyed.
func (r *Recorder) EndProfile(ctx context.Context, s StreamID) ([]LaunchTime, time.Duration, error) {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.prof
	if p == nil || p.owner != s {
		return nil, 0, fmt.Errorf("%w: stream %d ends a profile it did not begin", errs.ProfileState, s)
	}
	b.prof = nil
	defer func() {
		if len(b.subs.failed) > 0 {
			// A submission whose fence wait failed may still write them.
			b.orphanTimestamps = append(b.orphanTimestamps, p.pools...)
			return
		}
		for _, q := range p.pools {
			r.dev.DestroyTimestamps(q)
		}
	}()
	if err := r.usable(); err != nil {
		return nil, 0, err
	}
	if err := b.syncThrough(ctx, b.subs.serial+1); err != nil {
		return nil, 0, err
	}
	if p.broken != nil {
		return nil, 0, p.broken
	}
	for _, serial := range p.serials {
		if err := b.subs.submitErr(serial); err != nil {
			return nil, 0, err // its timestamps were never written
		}
	}
	ticks := make([]uint64, 2*len(p.launches))
	for c := range p.pools {
		lo := c * profileChunk
		hi := min(lo+profileChunk, len(ticks))
		if lo >= hi {
			break
		}
		if err := r.observe(r.dev.ReadTimestamps(p.pools[c], 0, ticks[lo:hi])); err != nil {
			return nil, 0, err
		}
	}
	var total time.Duration
	for i := range p.launches {
		p.launches[i].Device = r.ticksToDuration(int64(ticks[2*i+1]) - int64(ticks[2*i]))
	}
	if n := len(p.launches); n > 0 {
		total = r.ticksToDuration(int64(ticks[2*n-1]) - int64(ticks[0]))
	}
	return p.launches, total, nil
}

// destroyTimestamps destroys the pools of a profile still in progress and
// of ended ones kept for work that may have still run; the device is idle.
func (b *slot) destroyTimestamps() {
	if b.prof != nil {
		b.orphanTimestamps = append(b.orphanTimestamps, b.prof.pools...)
		b.prof = nil
	}
	for _, q := range b.orphanTimestamps {
		b.r.dev.DestroyTimestamps(q)
	}
	b.orphanTimestamps = nil
}
