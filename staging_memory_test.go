package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// stagedDevice leaves device-local pages unmapped, as on a discrete GPU
// whose device memory the host cannot see: writes then go through upload
// staging and reads through a readback copy, paths that lavapipe's unified
// memory would otherwise never take.
type stagedDevice struct{ recorder.Device }

func (d stagedDevice) Info() recorder.DeviceInfo {
	info := d.Device.Info()
	info.UnifiedMemory = false
	return info
}

// openStagedFaulty opens the test device behind a faultyDevice over a
// stagedDevice.
func openStagedFaulty(t *testing.T, opts ...Option) (*Device, *faultyDevice) {
	t.Helper()
	fd := &faultyDevice{}
	wrap := withDeviceWrapper(func(d recorder.Device) recorder.Device {
		fd.Device = stagedDevice{d}
		return fd
	})
	return openTest(t, append(opts, wrap)...), fd
}

func TestStagedEagerAndCapture(t *testing.T) {
	dev, _ := openStagedFaulty(t)
	s := dev.Stream()
	x, err := FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	y, err := FromSlice(dev, []float32{10, 20, 30})
	require.NoError(t, err)
	require.NoError(t, Axpy(s, 2, x, y))
	assert.Equal(t, []float32{12, 24, 36}, readAll(t, y))

	g, err := s.Capture(func(s *Stream) error {
		if err := x.WriteOn(s, []float32{1, 1, 1}); err != nil {
			return err
		}
		return Axpy(s, 1, x, y)
	})
	require.NoError(t, err)
	assert.Equal(t, []float32{13, 25, 37}, readAll(t, y))
	require.NoError(t, x.Write([]float32{100, 200, 300}))
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{113, 225, 337}, readAll(t, y))
	require.NoError(t, g.Close())
}

// A read whose readback copy never reaches the device must fail, not
// return whatever the readback memory held.
func TestStagedReadSubmitFault(t *testing.T) {
	dev, fd := openStagedFaulty(t)
	x, err := FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	require.NoError(t, dev.Stream().Sync(context.Background()))

	cause := submitFailure()
	fd.failNext(callSubmit, 1, cause)
	out, err := x.Read(context.Background())
	require.ErrorIs(t, err, cause, "read returned %v", out)
	assert.Equal(t, 1, fd.injectedCount(callSubmit))
	assert.Equal(t, []float32{1, 2, 3}, readAll(t, x))
}

// A read whose fence wait fails (without device loss) cannot know that its
// readback copy ran: it fails instead of returning those bytes.
func TestStagedReadFenceFault(t *testing.T) {
	dev, fd := openStagedFaulty(t)
	x, err := FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	require.NoError(t, dev.Stream().Sync(context.Background()))

	cause := fenceFailure()
	fd.failNext(callWaitFence, 1, cause)
	out, err := x.Read(context.Background())
	require.ErrorIs(t, err, cause, "read returned %v", out)
	assert.Equal(t, []float32{1, 2, 3}, readAll(t, x))
}

// A staged write whose copy cannot be recorded fails and leaves the
// destination unwritten: its old bytes are not what the caller wrote.
func TestStagedWriteFailureTaintsDestination(t *testing.T) {
	dev, fd := openStagedFaulty(t)
	x, err := FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	require.NoError(t, dev.Stream().Sync(context.Background()))
	cause := injected("vkBeginCommandBuffer", errs.OutOfMemory)
	fd.failNext(callBegin, 1, cause)
	err = x.Write([]float32{4, 5, 6})
	require.ErrorIs(t, err, cause)
	requireUnwrittenBy(t, x, cause)
	require.NoError(t, x.Write([]float32{7, 8, 9}))
	assert.Equal(t, []float32{7, 8, 9}, readAll(t, x))
}
