package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchN is the vector length of the dispatch benchmarks: small enough that
// the kernel's own work is negligible and the launch path is what is timed.
const benchN = 256

// benchAxpyPair opens a device and returns x and y of benchN elements, both
// written, so that launches on them are never skipped as unwritten.
func benchAxpyPair(b *testing.B) (*Device, *Buffer[float32], *Buffer[float32]) {
	b.Helper()
	dev := openTest(b)
	xs := make([]float32, benchN)
	for i := range xs {
		xs[i] = float32(i % 7)
	}
	x, err := FromSlice(dev, xs)
	require.NoError(b, err)
	y, err := FromSlice(dev, make([]float32, benchN))
	require.NoError(b, err)
	require.NoError(b, dev.Stream().Sync(context.Background()))
	return dev, x, y
}

// BenchmarkLaunch times recording one axpy launch in steady state: the
// recorder's per-launch host cost, which must not allocate (allocs/op 0).
// Batches submit on their own every WithBatchSize launches; the Sync at the
// end is outside the timer.
func BenchmarkLaunch(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	ctx := context.Background()
	for range 2 * 1024 {
		require.NoError(b, Axpy(s, 1, x, y))
	}
	require.NoError(b, s.Sync(ctx))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Axpy(s, 1, x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, s.Sync(ctx))
}

// eagerChainK is the length of the dependent chain in BenchmarkEagerChain.
const eagerChainK = 1000

// BenchmarkEagerChain times K dependent axpy launches and one Sync per
// iteration: the batched eager path, reported per launch.
func BenchmarkEagerChain(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for range eagerChainK {
			if err := Axpy(s, 1, x, y); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*eagerChainK), "ns/launch")
}

// BenchmarkEagerOneSubmit times one launch followed by a Sync: the latency
// of a single submit-and-wait round trip through the recorder.
func BenchmarkEagerOneSubmit(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := Axpy(s, 1, x, y); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllocFree times NewBuffer and Close of a 1 KiB buffer: the
// suballocator's round trip with the device's bookkeeping around it.
func BenchmarkAllocFree(b *testing.B) {
	dev := openTest(b)
	warm, err := NewBuffer[float32](dev, 256)
	require.NoError(b, err)
	defer func() { require.NoError(b, warm.Close()) }()
	b.ReportAllocs()
	for b.Loop() {
		buf, err := NewBuffer[float32](dev, 256)
		if err != nil {
			b.Fatal(err)
		}
		if err := buf.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParamSet times setting a length param that a graph's launches
// read (with its derived group counts), in the common loop where nothing
// reading it is pending: it must not allocate (allocs/op 0).
func BenchmarkParamSet(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	n, err := NewParam(dev, uint32(benchN))
	require.NoError(b, err)
	g, err := s.Capture(func(s *Stream) error { return AxpyDyn(s, Const[float32](1), x, y, n) })
	require.NoError(b, err)
	require.NoError(b, g.Replay())
	require.NoError(b, s.Sync(context.Background()))
	b.ReportAllocs()
	b.ResetTimer()
	i := uint32(0)
	for b.Loop() {
		i++
		if err := n.Set(1 + i%benchN); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, g.Close())
}

// The hot paths allocate nothing in steady state: recording a launch,
// replaying a graph, setting a param. A regression shows up here in CI,
// not only in a benchmark someone has to run.
func TestHotPathsAllocateNothing(t *testing.T) {
	dev := openTest(t, WithValidation(false))
	s := dev.Stream()
	x, y := capBuffer(t, dev, capRamp(benchN, 1, 1)), capBuffer(t, dev, capRamp(benchN, 0, 0))
	n, err := NewParam(dev, uint32(benchN))
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return AxpyDyn(s, Const[float32](1), x, y, n) })
	require.NoError(t, err)
	ctx := context.Background()
	for range 2048 { // grow every scratch slice and spare batch first
		require.NoError(t, Axpy(s, 1, x, y))
		require.NoError(t, g.Replay())
	}
	require.NoError(t, s.Sync(ctx))
	if a := testing.AllocsPerRun(500, func() { _ = Axpy(s, 1, x, y) }); a != 0 {
		t.Errorf("Axpy allocates %.1f times per launch", a)
	}
	require.NoError(t, s.Sync(ctx))
	if a := testing.AllocsPerRun(500, func() { _ = g.Replay() }); a != 0 {
		t.Errorf("Replay allocates %.1f times per replay", a)
	}
	require.NoError(t, s.Sync(ctx))
	i := uint32(0)
	if a := testing.AllocsPerRun(500, func() { i++; _ = n.Set(1 + i%benchN) }); a != 0 {
		t.Errorf("Param.Set allocates %.1f times per call", a)
	}
	// A launch recorded into a capture window allocates nothing once the
	// window's slices have grown, in the first window and in the next.
	for range 2 {
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, Axpy(s, 1, x, y))
		require.NoError(t, s.BeginCapture())
		for range 1024 {
			require.NoError(t, Axpy(s, 1, x, y))
		}
		if a := testing.AllocsPerRun(500, func() { _ = Axpy(s, 1, x, y) }); a != 0 {
			t.Errorf("Axpy in a capture window allocates %.1f times per launch", a)
		}
		require.NoError(t, s.AbortCapture())
	}
	require.NoError(t, g.Close())
}

// BenchmarkRecord times recording the K=1000 axpy chain into a capture
// window that is then aborted, reported per launch: the Go-side cost of
// recording a launch with nothing submitted (vkbench's record figure).
func BenchmarkRecord(b *testing.B) {
	dev, x, y := benchAxpyPair(b)
	s := dev.Stream()
	const k = 1000
	b.ReportAllocs()
	b.ResetTimer()
	launches := 0
	for b.Loop() {
		if err := s.PrepareCapture(); err != nil {
			b.Fatal(err)
		}
		if err := s.BeginCapture(); err != nil {
			b.Fatal(err)
		}
		for range k {
			if err := Axpy(s, 1, x, y); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.AbortCapture(); err != nil {
			b.Fatal(err)
		}
		launches += k
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(launches), "ns/launch")
}
