package vkc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A launch whose Groups name a Prefix marks written only the elements
// the length covers, on every replay, and checks only those of an input:
// past them a never-written output reads as ErrUnwritten, and an input
// written only up to the length does not make the launch skip.
func TestPrefixMarksOnlyTheLengthWritten(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	k := loadAffine(t, dev, [3]uint32{})
	const total = 1024
	x, err := NewBuffer[float32](dev, total)
	require.NoError(t, err)
	defer x.Close()
	xs := make([]float32, total)
	for i := range xs {
		xs[i] = float32(i)
	}
	head, err := x.View(0, 256)
	require.NoError(t, err)
	defer head.Close()
	require.NoError(t, head.WriteOn(s, xs[:256])) // x is written up to 256 only
	y, err := NewBuffer[float32](dev, total)
	require.NoError(t, err)
	defer y.Close()
	n, err := NewParam(dev, uint32(128))
	require.NoError(t, err)
	defer n.Close()

	g, err := s.Capture(func(s *Stream) error {
		return k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(0, 1).Prefix(1, 1), affinePush(2, 1, total), x, y)
	})
	require.NoError(t, err)
	defer g.Close()
	for _, covered := range []int{128, 256, 64} {
		require.NoError(t, n.Set(uint32(covered)))
		require.NoError(t, g.Replay())
		done, err := y.View(0, covered)
		require.NoError(t, err)
		got, err := done.ReadOn(context.Background(), s)
		require.NoError(t, err, "the first %d elements", covered)
		for i, v := range got {
			require.Equal(t, 2*xs[i]+1, v, "element %d", i)
		}
		require.NoError(t, done.Close())
	}
	rest, err := y.View(256, total-256)
	require.NoError(t, err)
	defer rest.Close()
	_, err = rest.ReadOn(context.Background(), s)
	assert.ErrorIs(t, err, ErrUnwritten, "past every length replayed, y was never written")

	assert.ErrorContains(t, n.Set(total+64), "above", "the graph's prefix bounds the length")
	require.NoError(t, n.Set(512))
	require.NoError(t, g.Replay())
	_, err = y.ReadOn(context.Background(), s)
	assert.ErrorIs(t, err, ErrUnwritten, "x past 256 was never written: the launch is skipped")
}

// Prefix refuses what it cannot honour: a binding out of range, a
// non-positive size, a Param's binding, one binding twice, a length past
// the buffer, and GroupsFrom.
func TestPrefixRefusals(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	k := loadAffine(t, dev, [3]uint32{})
	x, err := FromSlice(dev, make([]float32, 256))
	require.NoError(t, err)
	defer x.Close()
	y, err := NewBuffer[float32](dev, 256)
	require.NoError(t, err)
	defer y.Close()
	n, err := NewParam(dev, uint32(128))
	require.NoError(t, err)
	defer n.Close()
	push := affinePush(1, 0, 256)
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(2, 1), push, x, y), "binding 2")
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(1, 0), push, x, y), "per unit")
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(1, 1).Prefix(1, 2), push, x, y), "twice")
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(1, 4), push, x, y), "holds 256")
	many := GroupsOf(n, 64)
	for range 20 {
		many = many.Prefix(1, 1)
	}
	assert.ErrorContains(t, k.LaunchIndirect(s, many, push, x, y), "20 prefixes for 2 bindings")
	assert.True(t, GroupsOf(n, 64).Prefix(1, 1) == GroupsOf(n, 64).Prefix(1, 1), "Groups stay comparable")
	a, err := NewParam(dev, float32(1))
	require.NoError(t, err)
	defer a.Close()
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(0, 1), push, a, y), "a Param")
	counts, err := FromSlice(dev, []uint32{1, 1, 1})
	require.NoError(t, err)
	defer counts.Close()
	assert.ErrorContains(t, k.LaunchIndirect(s, GroupsFrom(counts, 0, [3]uint32{}).Prefix(1, 1), push, x, y), "GroupsOf")
	require.NoError(t, k.LaunchIndirect(s, GroupsOf(n, 64).Prefix(1, 2), push, x, y))
}
