package vkc

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// openPausable opens the public API on the host device with unified
// memory (reads map, with no work of their own) and returns the device,
// whose queue a test holds with Pause.
func openPausable(t *testing.T) (*Device, *hostdev.Device) {
	t.Helper()
	var hd *hostdev.Device
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) {
		hd = hostdev.New(hostdev.Options{Unified: true})
		return hd, nil
	}))
	require.NoError(t, err)
	t.Cleanup(func() {
		hd.Resume()
		closeAndCheck(t, dev)
	})
	return dev, hd
}

// Work on disjoint views of one buffer does not wait for each other, and
// work on overlapping ones does: with the queue held, stream B's launch
// and read of a range disjoint from what stream A's pending work writes
// neither submit A's batch nor wait for it, while a launch reading a range
// that overlaps it submits A's batch first and a read of one waits.
func TestDisjointViewsDoNotWaitForEachOther(t *testing.T) {
	dev, hd := openPausable(t)
	b, err := FromSlice(dev, seq(64, func(i int) float32 { return float32(i) }))
	require.NoError(t, err)
	defer b.Close()
	mk := func(off, n int) *Buffer[float32] {
		v, err := b.View(off, n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = v.Close() })
		return v
	}
	a, bb, c := dev.StreamWithID(1), dev.StreamWithID(2), dev.StreamWithID(3)
	require.Len(t, map[int]bool{dev.rec.Slot(a.id): true, dev.rec.Slot(bb.id): true, dev.rec.Slot(c.id): true}, 3)
	lo, hi, mid := mk(0, 16), mk(32, 16), mk(8, 16)
	out, err := NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	defer out.Close()
	hd.Pause()

	require.NoError(t, Scale(a, 2, lo, lo)) // A writes [0,16), open on A's slot
	require.NoError(t, Scale(bb, 3, hi, out))
	require.NoError(t, bb.Flush())
	require.Equal(t, 1, hd.Pending(), "B's launch on a disjoint view submitted only its own batch")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := mk(40, 8).ReadOn(ctx, c)
	require.NoError(t, err, "a read of a range A does not write does not wait for A")
	require.Equal(t, seq(8, func(i int) float32 { return float32(40 + i) }), got)

	require.NoError(t, Scale(bb, 3, mid, out)) // reads [8,24): overlaps A's write
	require.Equal(t, 2, hd.Pending(), "B's launch reading an overlapping view submitted A's batch first")
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err = mk(15, 1).ReadOn(short, c)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a read of a range A writes waits for A")

	hd.Resume()
	require.Equal(t, seq(16, func(i int) float32 { return 3 * float32(8+i) * map[bool]float32{true: 2, false: 1}[8+i < 16] }), readAll(t, out))
}

// seq is n elements f(0), f(1), ...
func seq(n int, f func(int) float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = f(i)
	}
	return xs
}
