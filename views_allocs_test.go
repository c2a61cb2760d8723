package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Launches on views allocate no Go memory in steady state, as launches on
// buffers do: a view bound as it is, and a view bound through a stand-in
// (whose copies and temporary memory are the recorder's, reused), eagerly
// and into a capture window.
func TestLaunchesOnViewsAllocateNothing(t *testing.T) {
	dev := openTest(t, WithValidation(false))
	s := dev.Stream()
	b := capBuffer(t, dev, capRamp(4096, 1, 1))
	mk := func(off, n int) *Buffer[float32] {
		v, err := b.View(off, n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = v.Close() })
		return v
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		x, y *Buffer[float32]
	}{
		{"aligned views", mk(0, 1024), mk(2048, 1024)},
		{"views through stand-ins", mk(1, 1024), mk(2049, 1024)},
	} {
		launch := func() error { return Scale(s, 1, c.x, c.y) }
		for range 2048 {
			require.NoError(t, launch())
		}
		require.NoError(t, s.Sync(ctx))
		if a := testing.AllocsPerRun(500, func() { _ = launch() }); a != 0 {
			t.Errorf("%s: Scale allocates %.1f times per launch", c.name, a)
		}
		require.NoError(t, s.Sync(ctx))
		for range 2 {
			require.NoError(t, s.PrepareCapture())
			require.NoError(t, launch())
			require.NoError(t, s.BeginCapture())
			for range 1024 {
				require.NoError(t, launch())
			}
			if a := testing.AllocsPerRun(500, func() { _ = launch() }); a != 0 {
				t.Errorf("%s: Scale in a capture window allocates %.1f times per launch", c.name, a)
			}
			require.NoError(t, s.AbortCapture())
		}
	}
}
