package vkc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

var errNilProfileFunc = errors.New("vkc: Profile of a nil function")

// LaunchTime is one launch in a Profile: the kernel's name, its group
// counts and the device time from the completion of the work before it to
// its own completion. Groups is zero for every launch whose counts are
// read from device memory when it runs, since they are not known when it
// is queued: LaunchIndirect with GroupsOf (package ops' dynamic
// tensors), and LaunchIndirect with GroupsFrom. A GroupsFrom launch is two
// entries: the catalogue's clamp_groups (1×1×1 groups), which bounds the
// counts, then the kernel (zero groups).
type LaunchTime struct {
	Kernel string
	Groups [3]uint32
	Device time.Duration
}

// Profile is the device's own account of the launches a function queued:
// each launch's time, read from timestamps written around it, and the
// total from the first launch's start to the last one's end. Total is at
// least the sum of the launches' times: they run one after another on the
// one queue, and what ran between two of them (a copy, a host write's
// transfer, another stream's work) counts in Total and in no launch.
type Profile struct {
	Launches []LaunchTime
	Total    time.Duration
}

// String prints the profile as a table: one row per launch, then the total.
func (p *Profile) String() string {
	if p == nil {
		return "<nil profile>"
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "#\tkernel\tgroups\tdevice\t")
	for i, l := range p.Launches {
		fmt.Fprintf(w, "%d\t%s\t%d×%d×%d\t%v\t\n", i, l.Kernel, l.Groups[0], l.Groups[1], l.Groups[2], l.Device)
	}
	fmt.Fprintf(w, "\ttotal\t\t%v\t\n", p.Total)
	_ = w.Flush()
	return sb.String()
}

// Profile runs fn on s with every launch it queues on s timed on the
// device, waits for the work, and returns the times. Launches of other
// streams are not timed. Only profiled calls pay for it (two timestamps
// per launch); a stream that never profiles writes none. A Graph.Replay
// on s's slot inside fn is one entry ("replay of N launches"), timed by
// timestamps around it; a graph captured with CaptureOptions.Profile
// times its own launches, read with Graph.LastProfile. Launches that a
// capture window inside fn records run only at replay, and are not in
// the profile; a Profile begun while the slot has a capture window open,
// or already profiles, fails with ErrProfileState. fn's error is returned
// with the profile of what it queued.
func (s *Stream) Profile(fn func(*Stream) error) (*Profile, error) {
	if fn == nil {
		return nil, errNilProfileFunc
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	err := publicOp("Stream.Profile", s.dev.rec.BeginProfile(s.id))
	s.leave()
	if err != nil {
		return nil, err
	}
	ferr := s.runProfiled(fn)
	if err := s.enter(); err != nil {
		return nil, errors.Join(ferr, err) // the device's Close released the profile
	}
	defer s.leave()
	launches, total, err := s.dev.rec.EndProfile(context.Background(), s.id)
	if err != nil {
		return nil, errors.Join(ferr, publicOp("Stream.Profile", err))
	}
	p := &Profile{Total: total, Launches: make([]LaunchTime, len(launches))}
	for i, l := range launches {
		p.Launches[i] = LaunchTime(l)
	}
	return p, ferr
}

// runProfiled runs fn, ending the profile on the way out if fn panics, so
// the slot does not stay profiled behind the panic.
func (s *Stream) runProfiled(fn func(*Stream) error) error {
	returned := false
	defer func() {
		if !returned && s.enter() == nil {
			_, _, _ = s.dev.rec.EndProfile(context.Background(), s.id)
			s.leave()
		}
	}()
	err := fn(s)
	returned = true
	return err
}
