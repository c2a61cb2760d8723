package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// clockless is a device whose queue takes no timestamps.
type clockless struct{ recorder.Device }

func (d clockless) Info() recorder.DeviceInfo {
	info := d.Device.Info()
	info.Limits.TimestampPeriod = 0
	return info
}

// A profiled capture on a device without timestamps is refused with
// ErrUnsupported before its warmup runs, and leaves no window behind: a
// plain capture follows as usual. By hand, BeginCaptureWith refuses it
// with the window still prepared, for a plain BeginCapture.
func TestProfiledCaptureOnADeviceWithoutTimestamps(t *testing.T) {
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) {
		return clockless{hostdev.New(hostdev.Options{})}, nil
	}))
	require.NoError(t, err)
	defer closeAndCheck(t, dev)
	x, err := FromSlice(dev, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	defer x.Close()
	y, err := FromSlice(dev, []float32{0, 0, 0, 0})
	require.NoError(t, err)
	defer y.Close()
	s := dev.NewStream()
	calls := 0
	work := func(s *Stream) error {
		calls++
		return Axpy(s, 1, x, y)
	}

	_, err = s.CaptureWith(CaptureOptions{Profile: true}, work)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Zero(t, calls, "refused before the warmup")
	g, err := s.Capture(work)
	require.NoError(t, err, "no window left behind")
	require.False(t, g.Profiled())
	require.NoError(t, g.Close())

	require.NoError(t, s.PrepareCapture())
	require.NoError(t, work(s))
	require.NoError(t, s.Sync(context.Background()))
	require.ErrorIs(t, s.BeginCaptureWith(CaptureOptions{Profile: true}), ErrUnsupported)
	require.NoError(t, s.BeginCapture(), "the window is still prepared")
	require.NoError(t, work(s))
	g, err = s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	_, err = g.LastProfile(context.Background())
	require.ErrorIs(t, err, ErrGraphUnprofiled)
	require.NoError(t, g.Close())
	got, err := y.Read(context.Background())
	require.NoError(t, err)
	// Ran: Capture's warmup, the by-hand warmup and the one replay (a
	// recorded run executes nothing).
	assert.Equal(t, []float32{3, 6, 9, 12}, got)
}
