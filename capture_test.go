package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers of the root package's capture-window tests, and the scenario
// that looks inside the allocator (19); scenarios 1 to 18 use only the
// public API and live in blackbox/capture_scenarios_test.go. Values are
// small integers so every float32 result is exact and the expected
// numbers come from a host model of the same arithmetic.

// capRamp returns n values start, start+step, ... .
func capRamp(n int, start, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = start + float32(i)*step
	}
	return out
}

// capAxpy is the host model of Axpy: a*x + y.
func capAxpy(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// capBuffer is FromSlice that fails the test on error.
func capBuffer(t testing.TB, dev *Device, xs []float32) *Buffer[float32] {
	t.Helper()
	b, err := FromSlice(dev, xs)
	require.NoError(t, err)
	return b
}

// capReadOn reads b on stream s, failing the test on error.
func capReadOn(t testing.TB, s *Stream, b *Buffer[float32]) []float32 {
	t.Helper()
	out, err := b.ReadOn(context.Background(), s)
	require.NoError(t, err)
	return out
}

// capRequireUnwritten checks that reading b fails with ErrUnwritten
// unwrapping to cause.
func capRequireUnwritten(t testing.TB, s *Stream, b *Buffer[float32], cause error) {
	t.Helper()
	_, err := b.ReadOn(context.Background(), s)
	require.ErrorIs(t, err, ErrUnwritten)
	require.ErrorIs(t, err, cause)
}

// capWarmAndBegin prepares s's window, runs fn as the warmup, syncs and
// begins recording.
func capWarmAndBegin(t testing.TB, s *Stream, fn func(*Stream) error) {
	t.Helper()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, fn(s))
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.BeginCapture())
}

// Scenario 19: two adjacent buffers carved from one page, both written in
// a window: a refusal taints exactly both (not their untouched sibling), and
// a replay of a graph that writes them releases both.
func TestCaptureSiblingClaimsOnOnePage(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	const n = 16
	a, b, sibling := capBuffer(t, dev, capRamp(n, 0, 0)), capBuffer(t, dev, capRamp(n, 0, 0)), capBuffer(t, dev, capRamp(n, 9, 1))
	require.Equal(t, a.core.claim.Page, b.core.claim.Page, "adjacent small buffers share the default page")
	require.Equal(t, a.core.claim.Page, sibling.core.claim.Page)
	require.NotEqual(t, a.core.claim, b.core.claim, "two claims even though adjacent")
	fill := func(s *Stream) error {
		if err := Fill(s, a, 1); err != nil {
			return err
		}
		return Fill(s, b, 2)
	}

	capWarmAndBegin(t, s, fill)
	require.NoError(t, fill(s))
	require.ErrorIs(t, s.Sync(context.Background()), ErrSyncInCapture)
	_, err := s.EndCapture()
	require.ErrorIs(t, err, ErrSyncInCapture)
	capRequireUnwritten(t, s, a, ErrSyncInCapture)
	capRequireUnwritten(t, s, b, ErrSyncInCapture)
	require.Equal(t, capRamp(n, 9, 1), capReadOn(t, s, sibling), "the taint stays on the exact claims")

	// A window recorded without warmup (the pools already hold everything)
	// executes nothing, so a and b stay tainted until the replay.
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, s.BeginCapture())
	require.NoError(t, fill(s))
	g, err := s.EndCapture()
	require.NoError(t, err)
	capRequireUnwritten(t, s, a, ErrSyncInCapture)
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(n, 1, 0), capReadOn(t, s, a))
	require.Equal(t, capRamp(n, 2, 0), capReadOn(t, s, b))
	require.Equal(t, capRamp(n, 9, 1), capReadOn(t, s, sibling))
	require.NoError(t, g.Close())
}

// BenchmarkReplay measures one replay of a small captured chain: the cost
// of one submit, with no Go allocation in steady state.
func BenchmarkReplay(b *testing.B) {
	dev := openTest(b)
	s := dev.NewStream()
	x, y := capBuffer(b, dev, capRamp(256, 1, 0)), capBuffer(b, dev, capRamp(256, 0, 0))
	g, err := s.Capture(func(s *Stream) error {
		for range 4 {
			if err := Axpy(s, 1, x, y); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(b, err)
	for range 64 { // fill the spare batches and in-flight slices once
		require.NoError(b, g.Replay())
	}
	require.NoError(b, s.Sync(context.Background()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := g.Replay(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, s.Sync(context.Background()))
	require.NoError(b, g.Close())
}
