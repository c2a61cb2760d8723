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
	assert.ErrorIs(t, b.WrittenOutside(dev.Stream(), 0), ErrNotShared)
	assert.ErrorIs(t, b.ReadOutside(dev.Stream(), 0), ErrNotShared)
	_, err = b.Read(context.Background())
	assert.ErrorIs(t, err, ErrUnwritten)
}

// Adopting a zero External is refused before any Vulkan call, naming the
// null instance.
func TestAdoptRefusesAZeroExternal(t *testing.T) {
	dev, err := Adopt(External{})
	assert.Nil(t, dev)
	assert.ErrorIs(t, err, ErrBadAdoption)
	assert.ErrorContains(t, err, "null VkInstance")
}

// Buffers handed out name disjoint ranges of the length asked for, at
// offsets aligned for storage descriptors, on a device vkc opened itself
// as on an adopted one.
func TestVulkanBuffersAreDisjointAlignedRanges(t *testing.T) {
	dev := openTest(t)
	align := dev.Info().Limits.MinStorageBufferOffsetAlignment
	type span struct{ buf, lo, hi uint64 }
	var spans []span
	for _, n := range []int{1, 7, 64, 1000} {
		b, err := NewBuffer[uint32](dev, n)
		require.NoError(t, err)
		vb, err := b.VulkanBuffer()
		require.NoError(t, err)
		assert.NotZero(t, vb.Buffer)
		assert.Equal(t, uint64(n)*elemSize, vb.Range)
		if align > 0 {
			assert.Zero(t, vb.Offset%align, "offset %d, alignment %d", vb.Offset, align)
		}
		for _, s := range spans {
			if s.buf == vb.Buffer {
				assert.True(t, vb.Offset >= s.hi || vb.Offset+vb.Range <= s.lo, "[%d,%d) overlaps [%d,%d)", vb.Offset, vb.Offset+vb.Range, s.lo, s.hi)
			}
		}
		spans = append(spans, span{vb.Buffer, vb.Offset, vb.Offset + vb.Range})
	}
}

// A write declared as already done outside makes a never-written buffer
// readable: the ledger takes the declaration, as it takes a kernel's write.
func TestAnOutsideWriteDeclaredDoneClearsNeverWritten(t *testing.T) {
	dev := openTest(t)
	b, err := NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	_, err = b.Read(context.Background())
	require.ErrorIs(t, err, ErrNeverWritten)
	require.NoError(t, b.WrittenOutside(dev.Stream(), 0))
	got, err := b.Read(context.Background())
	require.NoError(t, err)
	assert.Len(t, got, 16)
}
