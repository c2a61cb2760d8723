package vkc

import (
	"context"
	"testing"
)

// BenchmarkEagerChainProfiled is BenchmarkEagerChain inside a Profile:
// two timestamps per launch, read back after the Sync. Its ns/launch over
// BenchmarkEagerChain's is what profiling costs; a stream that does not
// profile pays nothing (BenchmarkLaunch, 0 allocs/op).
func BenchmarkEagerChainProfiled(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.Profile(func(s *Stream) error {
			for range eagerChainK {
				if err := Axpy(s, 1, x, y); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || len(p.Launches) != eagerChainK {
			b.Fatal(err, len(p.Launches))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*eagerChainK), "ns/launch")
}

// BenchmarkReplayChain times a replay of the K-launch chain and its Sync;
// BenchmarkReplayChainTimed the same between two timed events, read back
// with Since, and BenchmarkReplayChainProfiled inside a Profile (one
// entry): what timing a replay costs. The graph itself writes no
// timestamp in these. BenchmarkReplayChainCapturedProfiled replays a
// graph captured with profiling (two timestamps per launch in its buffer)
// and reads every launch's time with LastProfile; ...NoRead replays it
// and syncs without reading: the timestamps' own cost on the device.
func BenchmarkReplayChain(b *testing.B)         { benchReplayChain(b, replayPlain) }
func BenchmarkReplayChainTimed(b *testing.B)    { benchReplayChain(b, replayTimed) }
func BenchmarkReplayChainProfiled(b *testing.B) { benchReplayChain(b, replayProfiled) }
func BenchmarkReplayChainCapturedProfiled(b *testing.B) {
	benchReplayChain(b, replayCapturedProfiled)
}
func BenchmarkReplayChainCapturedProfiledNoRead(b *testing.B) {
	benchReplayChain(b, replayCapturedProfiledNoRead)
}

// replayTiming is how benchReplayChain times each replay.
type replayTiming int

const (
	replayPlain replayTiming = iota
	replayTimed
	replayProfiled
	replayCapturedProfiled
	replayCapturedProfiledNoRead
)

func benchReplayChain(b *testing.B, how replayTiming) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	ctx := context.Background()
	opts := CaptureOptions{Profile: how >= replayCapturedProfiled}
	g, err := s.CaptureWith(opts, func(s *Stream) error {
		for range eagerChainK {
			if err := Axpy(s, 1, x, y); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	b.ReportAllocs()
	for b.Loop() {
		switch how {
		case replayPlain, replayCapturedProfiledNoRead:
			if err := g.Replay(); err != nil {
				b.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		case replayTimed:
			start, err := s.RecordTimed()
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Replay(); err != nil {
				b.Fatal(err)
			}
			end, err := s.RecordTimed()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := end.Since(start); err != nil {
				b.Fatal(err)
			}
			_ = start.Close()
			_ = end.Close()
		case replayProfiled:
			p, err := s.Profile(func(*Stream) error { return g.Replay() })
			if err != nil || len(p.Launches) != 1 {
				b.Fatal(err)
			}
		case replayCapturedProfiled:
			if err := g.Replay(); err != nil {
				b.Fatal(err)
			}
			p, err := g.LastProfile(ctx)
			if err != nil || len(p.Launches) != eagerChainK {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*eagerChainK), "ns/launch")
}
