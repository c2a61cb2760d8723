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
// with Since: what timing a replay from outside costs (the graph itself
// writes no timestamp).
func BenchmarkReplayChain(b *testing.B)      { benchReplayChain(b, false) }
func BenchmarkReplayChainTimed(b *testing.B) { benchReplayChain(b, true) }

func benchReplayChain(b *testing.B, timed bool) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	ctx := context.Background()
	g, err := s.Capture(func(s *Stream) error {
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
		if !timed {
			if err := g.Replay(); err != nil {
				b.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
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
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*eagerChainK), "ns/launch")
}
