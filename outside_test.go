package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// A device not opened on Vulkan has nothing to share: every outside call
// is ErrNotShared and changes nothing (a declared write leaves the buffer
// unwritten).
func TestOutsideCallsOnAHostDeviceAreErrNotShared(t *testing.T) {
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) { return hostdev.New(hostdev.Options{}), nil }))
	require.NoError(t, err)
	defer dev.Close()
	b, err := NewBuffer[float32](dev, 4)
	require.NoError(t, err)
	_, err = b.VulkanBuffer()
	assert.ErrorIs(t, err, ErrNotShared)
	assert.ErrorIs(t, dev.Stream().SignalOutside(1, 0), ErrNotShared)
	assert.ErrorIs(t, dev.Stream().WaitOutside(1), ErrNotShared)
	_, err = dev.Stream().ImportEvent(1)
	assert.ErrorIs(t, err, ErrNotShared)
	ev, err := dev.Stream().Record()
	require.NoError(t, err)
	assert.ErrorIs(t, ev.SignalOutside(1, 0), ErrNotShared)
	assert.ErrorIs(t, b.WrittenOutside(dev.Stream(), 0), ErrNotShared)
	assert.ErrorIs(t, b.ReadOutside(dev.Stream(), 0), ErrNotShared)
	_, err = b.Read(context.Background())
	assert.ErrorIs(t, err, ErrUnwritten)
}
