package vkc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Host writes follow the bytes too, on a device whose memory the host maps:
// with the queue held, a write to a view disjoint from pending work lands
// at once, and a write to a view that pending work reads lands only after
// that work ran, which read the old bytes.
func TestHostWritesToViewsWaitForOverlappingWorkOnly(t *testing.T) {
	dev, hd := openPausable(t)
	old := seq(64, func(i int) float32 { return float32(i) })
	b, err := FromSlice(dev, old)
	require.NoError(t, err)
	defer b.Close()
	mk := func(off, n int) *Buffer[float32] {
		v, err := b.View(off, n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = v.Close() })
		return v
	}
	out, err := NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	defer out.Close()
	a, c := dev.StreamWithID(1), dev.StreamWithID(2)
	hd.Pause()
	require.NoError(t, Scale(a, 2, mk(0, 16), out)) // reads [0,16), held
	require.NoError(t, a.Flush())

	done := make(chan error, 1)
	go func() { done <- mk(40, 8).WriteOn(c, seq(8, func(int) float32 { return -1 })) }()
	select {
	case err := <-done:
		require.NoError(t, err, "a write to a disjoint view")
	case <-time.After(30 * time.Second):
		hd.Resume()
		t.Fatal("a write to a view disjoint from the held work waited for it")
	}

	fresh := seq(4, func(int) float32 { return 1000 })
	go func() { done <- mk(8, 4).WriteOn(c, fresh) }()
	hd.Resume()
	require.NoError(t, <-done, "a write to a view the held work reads")
	got, err := out.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, seq(16, func(i int) float32 { return 2 * old[i] }), got, "the held work read the bytes from before the write")
	all, err := b.ReadOn(t.Context(), c)
	require.NoError(t, err)
	want := append([]float32(nil), old...)
	copy(want[8:], fresh)
	for i := 40; i < 48; i++ {
		want[i] = -1
	}
	require.Equal(t, want, all)
}
