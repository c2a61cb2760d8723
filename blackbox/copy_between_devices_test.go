package blackbox_test

// Copy between devices (Copy's doc comment): through host memory, ordered
// after every write issued to the source on any of its streams, the
// unwritten rule carried over, never captured.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// A copy from one device's buffer to another's sees the source's queued
// writes (issued on another stream, not synced) whichever device's stream
// drives it, for element types of every width.
func TestCopyBetweenDevicesOrderedAfterSourceWrites(t *testing.T) {
	a, b := openDevice(t), openDevice(t)
	const n = 1000
	x := upload(t, a, ramp(n, 1, 0))
	y := upload(t, a, filled(n, 2))
	other := a.NewStream()
	for range 3 {
		require.NoError(t, opAxpy(other, 1, y, x)) // x += 2, three times, left queued
	}
	want := ramp(n, 1, 6)
	for _, s := range []*vkc.Stream{a.Stream(), b.Stream(), b.NewStream()} {
		dst := newBuffer[float32](t, b, n)
		require.NoError(t, vkc.Copy(s, x, dst))
		assert.Equal(t, want, read(t, b.Stream(), dst), "copy on a stream of device %q", s.Device().Info().Name)
	}
	back := newBuffer[float32](t, a, n)
	dst := upload(t, b, want)
	require.NoError(t, opAxpy(b.Stream(), -1, dst, dst)) // dst = 0, queued on b
	require.NoError(t, vkc.Copy(a.Stream(), dst, back))
	assert.Equal(t, filled(n, 0), read(t, a.Stream(), back), "b's queued write is seen by a copy driven from a")

	h := upload(t, a, []vkc.Float16{1, 2, 3})
	hb := newBuffer[vkc.Float16](t, b, 3)
	require.NoError(t, vkc.Copy(b.Stream(), h, hb))
	assert.Equal(t, []vkc.Float16{1, 2, 3}, read(t, b.Stream(), hb))
	i8 := upload(t, a, []int8{-128, 0, 127, 5, 6})
	i8b := newBuffer[int8](t, b, 5)
	require.NoError(t, vkc.Copy(a.Stream(), i8, i8b))
	assert.Equal(t, []int8{-128, 0, 127, 5, 6}, read(t, b.Stream(), i8b))
}

// A source that reads as ErrUnwritten leaves the destination unwritten
// with the same cause (a copy on one device does the same); a source
// written later copies again normally.
func TestCopyBetweenDevicesCarriesUnwritten(t *testing.T) {
	a, b := openDevice(t), openDevice(t)
	src := newBuffer[float32](t, a, 8)
	dst := upload(t, b, filled(8, 9))
	require.NoError(t, vkc.Copy(b.Stream(), src, dst), "an unwritten source is not an error of the copy")
	requireUnwritten(t, b.Stream(), dst, vkc.ErrNeverWritten, "the destination inherits the source's cause")

	// The same on one device, for comparison: the promise is the same.
	local := upload(t, a, filled(8, 9))
	require.NoError(t, vkc.Copy(a.Stream(), src, local))
	requireUnwritten(t, a.Stream(), local, vkc.ErrNeverWritten)

	require.NoError(t, src.Write(filled(8, 4)))
	require.NoError(t, vkc.Copy(a.Stream(), src, dst))
	assert.Equal(t, filled(8, 4), read(t, b.Stream(), dst), "a written source copies and clears the taint")
}

// Bad input between devices is refused and changes nothing: a stream of a
// third device, buffers of different lengths, and a copy inside a capture
// window (which would replay only the write of what the source held then).
func TestCopyBetweenDevicesBadInput(t *testing.T) {
	a, b, c := openDevice(t), openDevice(t), openDevice(t)
	src := upload(t, a, filled(4, 1))
	dst := upload(t, b, filled(4, 2))
	require.Error(t, vkc.Copy(c.Stream(), src, dst), "a stream of neither device")
	require.Error(t, vkc.Copy(a.Stream(), src, upload(t, b, filled(5, 2))), "different lengths")
	require.Error(t, vkc.Copy(nil, src, dst), "a nil stream")
	assert.Equal(t, filled(4, 2), read(t, b.Stream(), dst), "nothing changed")

	s := b.NewStream()
	_, err := s.Capture(func(s *vkc.Stream) error { return vkc.Copy(s, src, dst) })
	require.ErrorIs(t, err, vkc.ErrSyncInCapture, "the destination's stream records: refused")
	s = a.NewStream()
	_, err = s.Capture(func(s *vkc.Stream) error { return vkc.Copy(s, src, dst) })
	require.ErrorIs(t, err, vkc.ErrSyncInCapture, "the source's stream records: its read is refused")
	require.NoError(t, vkc.Copy(a.Stream(), src, dst), "outside a window the copy works")
	assert.Equal(t, filled(4, 1), read(t, b.Stream(), dst))
}

// While the other device's default stream records a window, a copy driven
// from this device is refused (ErrStreamCapturing) rather than recorded
// into that window or dooming it; the window still seals.
func TestCopyBetweenDevicesWhileOtherDeviceCaptures(t *testing.T) {
	a, b := openDevice(t), openDevice(t)
	src := upload(t, a, filled(4, 1))
	dst := upload(t, b, filled(4, 2))
	sb := b.Stream()
	require.NoError(t, sb.PrepareCapture())
	require.NoError(t, sb.BeginCapture())
	require.ErrorIs(t, vkc.Copy(a.Stream(), src, dst), vkc.ErrStreamCapturing)
	g, err := sb.EndCapture()
	require.NoError(t, err, "the window was neither doomed nor given the copy")
	require.NoError(t, g.Close())
	assert.Equal(t, filled(4, 2), read(t, sb, dst), "nothing written")
}
