package blackbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// Adopting a zero External is refused before any Vulkan call, naming the
// null instance.
func TestAdoptRefusesAZeroExternal(t *testing.T) {
	dev, err := vkc.Adopt(vkc.External{})
	assert.Nil(t, dev)
	assert.ErrorIs(t, err, vkc.ErrBadAdoption)
	assert.ErrorContains(t, err, "null VkInstance")
}

// Buffers handed out name disjoint ranges of the length asked for, at
// offsets aligned for storage descriptors, on a device vkc opened itself
// as on an adopted one.
func TestVulkanBuffersAreDisjointAlignedRanges(t *testing.T) {
	dev := openDevice(t)
	align := dev.Info().Limits.MinStorageBufferOffsetAlignment
	type span struct{ buf, lo, hi uint64 }
	var spans []span
	for _, n := range []int{1, 7, 64, 1000} {
		b, err := vkc.NewBuffer[uint32](dev, n)
		require.NoError(t, err)
		vb, err := b.VulkanBuffer()
		require.NoError(t, err)
		assert.NotZero(t, vb.Buffer)
		assert.Equal(t, uint64(n)*4, vb.Range)
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
	dev := openDevice(t)
	b, err := vkc.NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	_, err = b.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrNeverWritten)
	require.NoError(t, b.WrittenOutside(dev.Stream(), 0))
	got, err := b.Read(context.Background())
	require.NoError(t, err)
	assert.Len(t, got, 16)
}
