package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// Only a device not opened on Vulkan has nothing to share, and no public
// call opens one (Open and Adopt both open Vulkan devices), so the public
// API declares no sentinel for it. On the host device every outside call
// fails with the recorder's refusal, matching no public sentinel, and
// changes nothing (a declared write leaves the buffer unwritten).
func TestOutsideCallsOnAHostDeviceAreRefused(t *testing.T) {
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) { return hostdev.New(hostdev.Options{}), nil }))
	require.NoError(t, err)
	defer dev.Close()
	b, err := NewBuffer[float32](dev, 4)
	require.NoError(t, err)
	_, err = b.VulkanBuffer()
	assert.ErrorIs(t, err, errs.NotShared)
	assert.ErrorIs(t, dev.Stream().SignalOutside(1, 0), errs.NotShared)
	assert.ErrorIs(t, dev.Stream().WaitOutside(1), errs.NotShared)
	_, err = dev.Stream().ImportEvent(1)
	assert.ErrorIs(t, err, errs.NotShared)
	ev, err := dev.Stream().Record()
	require.NoError(t, err)
	assert.ErrorIs(t, ev.SignalOutside(1, 0), errs.NotShared)
	assert.ErrorIs(t, b.WrittenOutside(dev.Stream(), 0), errs.NotShared)
	assert.ErrorIs(t, b.ReadOutside(dev.Stream(), 0), errs.NotShared)
	_, err = b.Read(context.Background())
	assert.ErrorIs(t, err, ErrUnwritten)
}
