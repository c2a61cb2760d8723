package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// fillUploadPages allocates params until host-visible (upload) pages have
// no room left: the next upload claim of a param's size needs a new page.
// It returns the params, which the caller keeps open. No upload claim is
// freed on the way (the buffers it uses are filled by kernels), so no
// earlier page has a hole.
func fillUploadPages(t *testing.T, dev *Device, page uint64) []*Param[uint32] {
	t.Helper()
	var ps []*Param[uint32]
	newParam := func() {
		p, err := NewParam(dev, uint32(1))
		require.NoError(t, err)
		ps = append(ps, p)
	}
	// Allocate until one starts a fresh page, measuring a claim's size.
	for {
		before := dev.MemoryStats()
		newParam()
		after := dev.MemoryStats()
		if after.Pages > before.Pages {
			claim := after.Used - before.Used
			require.NotZero(t, claim)
			for range page/claim - 1 { // the rest of that page
				newParam()
			}
			require.Equal(t, after.Pages, dev.MemoryStats().Pages, "the page took them all")
			return ps
		}
	}
}

// vkc's own allocations for a stream's op (a Const's device copy, a length
// param's derived group counts) are that stream's work: while stream A
// records a window on one slot, stream B on another slot runs a dynamic op
// with a new Const, and first uses a length param made before the window,
// when each needs a new page. B's op succeeds and A's window is not doomed
// (the capture contract: streams on other slots run normally); A's graph
// replays right.
func TestInternalAllocationOnOtherSlotKeepsTheWindow(t *testing.T) {
	const page = 64 << 10
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		op   func(s *Stream, x, y *Buffer[float32], n *Param[uint32]) error
		want func(x float32) float32
	}{
		{"new Const", func(s *Stream, _, y *Buffer[float32], n *Param[uint32]) error {
			return FillDyn(s, y, Const[float32](7.5), n)
		}, func(float32) float32 { return 7.5 }},
		{"length param first used", func(s *Stream, x, y *Buffer[float32], n *Param[uint32]) error {
			return CopyDyn(s, x, y, n)
		}, func(x float32) float32 { return x }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := openTest(t, WithPageSize(page))
			owner, other := dev.NewStream(), dev.NewStream()
			require.NotEqual(t, dev.rec.Slot(owner.ID()), dev.rec.Slot(other.ID()))
			const size = 16
			ax, ay := scratch[float32](t, dev, size), scratch[float32](t, dev, size)
			bx, by := scratch[float32](t, dev, size), scratch[float32](t, dev, size)
			require.NoError(t, Fill(owner, ax, 2))
			require.NoError(t, Fill(owner, ay, 1))
			require.NoError(t, Fill(other, bx, 3))
			require.NoError(t, owner.Sync(ctx))
			require.NoError(t, other.Sync(ctx))
			n, err := NewParam(dev, uint32(size)) // made before the window, never used yet
			require.NoError(t, err)
			for _, p := range fillUploadPages(t, dev, page) {
				t.Cleanup(func() { require.NoError(t, p.Close()) })
			}

			step := func(s *Stream) error { return Axpy(s, 1, ax, ay) }
			capWarmAndBegin(t, owner, step)
			require.NoError(t, step(owner))
			pages := dev.MemoryStats().Pages
			require.NoError(t, tc.op(other, bx, by, n), "the other slot's op")
			require.Greater(t, dev.MemoryStats().Pages, pages, "its value needed a page")
			got, err := by.ReadOn(ctx, other)
			require.NoError(t, err)
			for i, v := range got {
				require.Equal(t, tc.want(3), v, "element %d", i)
			}

			g, err := owner.EndCapture()
			require.NoError(t, err, "the other slot's op did not doom the window")
			require.NoError(t, g.Replay())
			require.Equal(t, capAxpy(2, capRamp(size, 2, 0), capRamp(size, 1, 0)), capReadOn(t, owner, ay))
			require.NoError(t, g.Close())
		})
	}
}

// The recording slot's own new Const still follows the contract: made by
// the warmup (which may grow the pools), the recorded run finds it and the
// window records; the graph replays the value.
func TestOwnWindowConstMadeByWarmup(t *testing.T) {
	const page = 64 << 10
	dev := openTest(t, WithPageSize(page))
	s := dev.NewStream()
	y := scratch[float32](t, dev, 16)
	n, err := NewParam(dev, uint32(16))
	require.NoError(t, err)
	for _, p := range fillUploadPages(t, dev, page) {
		t.Cleanup(func() { require.NoError(t, p.Close()) })
	}
	require.NoError(t, Fill(s, y, 0))
	g, err := s.Capture(func(s *Stream) error { return FillDyn(s, y, Const[float32](-4.25), n) })
	require.NoError(t, err)
	require.NoError(t, Fill(s, y, 0))
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(16, -4.25, 0), capReadOn(t, s, y))
	require.NoError(t, g.Close())
	require.NoError(t, n.Close())
}
