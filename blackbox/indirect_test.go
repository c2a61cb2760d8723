package blackbox_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// indirectRig is a kernel that records the geometry it ran with
// (testdata/groupcount.comp), the buffer it records into, and group
// counts that device work (a copy from src) writes before each launch.
type indirectRig struct {
	dev         *vkc.Device
	k           *vkc.Kernel
	seen        *vkc.Buffer[uint32]
	src, counts *vkc.Buffer[uint32]
}

func newIndirectRig(t *testing.T) *indirectRig {
	t.Helper()
	dev := openDevice(t, vkc.WithSyncValidation(true)) // checks the barriers before the indirect reads
	code, err := os.ReadFile("../testdata/groupcount.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "groupcount", SPIRV: code})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })
	return &indirectRig{dev: dev, k: k, seen: upload(t, dev, make([]uint32, 4)),
		src: upload(t, dev, make([]uint32, 5)), counts: upload(t, dev, make([]uint32, 5))}
}

// run writes src on the host, then on the device copies it into counts,
// zeroes seen and launches the kernel with counts[1:4] bounded by max; it
// returns what the kernel saw: groups run, and the geometry.
func (r *indirectRig) run(t *testing.T, src []uint32, max [3]uint32) [4]uint32 {
	t.Helper()
	require.NoError(t, r.src.Write(src))
	s := r.dev.Stream()
	require.NoError(t, vkc.Copy(s, r.src, r.counts))
	require.NoError(t, vkc.Fill(s, r.seen, 0))
	require.NoError(t, r.k.LaunchIndirect(s, vkc.GroupsFrom(r.counts, 1, max), nil, r.seen))
	got, err := r.seen.ReadOn(testCtx(t), s)
	require.NoError(t, err)
	return [4]uint32(got)
}

// The model of a launch with device counts: each count bounded by the
// caller's maximum (zero: none) and the device's limit.
func expectedGeometry(counts [3]uint32, max, limit [3]uint32) [4]uint32 {
	var g [3]uint32
	for i := range g {
		g[i] = min(counts[i], limit[i])
		if max[i] != 0 {
			g[i] = min(g[i], max[i])
		}
	}
	if g[0]*g[1]*g[2] == 0 {
		return [4]uint32{}
	}
	return [4]uint32{g[0] * g[1] * g[2], g[0], g[1], g[2]}
}

// A launch runs the groups earlier device work wrote, clamped on the
// device to the caller's maximum and the device's limit, with zero counts
// running nothing.
func TestLaunchIndirectFromDeviceCounts(t *testing.T) {
	r := newIndirectRig(t)
	limit := r.dev.Info().Limits.MaxComputeWorkGroupCount
	cases := []struct {
		counts, max [3]uint32
	}{
		{[3]uint32{2, 1, 7}, [3]uint32{}},
		{[3]uint32{5, 3, 2}, [3]uint32{4, 0, 1}},
		{[3]uint32{0, 4, 4}, [3]uint32{}},
		{[3]uint32{3, 3, 0}, [3]uint32{9, 9, 9}},
		{[3]uint32{1, 1 << 31, 1}, [3]uint32{0, 6, 0}},
		{[3]uint32{1, 1, 0xFFFFFFFF}, [3]uint32{}}, // the device's z limit (64 on most GPUs, 65535 on lavapipe)
	}
	for _, c := range cases {
		if e := expectedGeometry(c.counts, c.max, limit); e[0] > 1<<20 {
			continue // a device with limits this large would take long to run it
		}
		src := []uint32{99, c.counts[0], c.counts[1], c.counts[2], 99}
		require.Equal(t, expectedGeometry(c.counts, c.max, limit), r.run(t, src, c.max), "counts %v, max %v", c.counts, c.max)
	}
}

// In a graph, the clamp and the launch are recorded: each replay runs the
// counts the recorded copy wrote from what src holds then.
func TestLaunchIndirectFromDeviceCountsReplays(t *testing.T) {
	r := newIndirectRig(t)
	limit := r.dev.Info().Limits.MaxComputeWorkGroupCount
	s := r.dev.Stream()
	max := [3]uint32{0, 0, 3}
	require.NoError(t, r.src.Write([]uint32{0, 1, 1, 1, 0}))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := vkc.Copy(s, r.src, r.counts); err != nil {
			return err
		}
		if err := vkc.Fill(s, r.seen, 0); err != nil {
			return err
		}
		return r.k.LaunchIndirect(s, vkc.GroupsFrom(r.counts, 1, max), nil, r.seen)
	})
	require.NoError(t, err)
	defer g.Close()
	for _, counts := range [][3]uint32{{4, 2, 1}, {1, 1, 9}, {0, 1, 1}, {3, 1, 2}} {
		require.NoError(t, r.src.WriteOn(s, []uint32{7, counts[0], counts[1], counts[2], 7}))
		require.NoError(t, g.Replay())
		got, err := r.seen.ReadOn(testCtx(t), s)
		require.NoError(t, err)
		require.Equal(t, expectedGeometry(counts, max, limit), [4]uint32(got), "counts %v", counts)
	}
}

// Counts no executed work wrote skip the launch: what it writes reads as
// unwritten, with the counts' cause.
func TestLaunchIndirectFromUnwrittenCountsIsSkipped(t *testing.T) {
	r := newIndirectRig(t)
	counts, err := vkc.NewBuffer[uint32](r.dev, 3)
	require.NoError(t, err)
	defer counts.Close()
	s := r.dev.Stream()
	require.NoError(t, vkc.Fill(s, r.seen, 0))
	require.NoError(t, r.k.LaunchIndirect(s, vkc.GroupsFrom(counts, 0, [3]uint32{}), nil, r.seen))
	_, err = r.seen.ReadOn(testCtx(t), s)
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	require.ErrorIs(t, err, vkc.ErrNeverWritten)

	// Counts written, then tainted by a launch skipped for its own
	// unwritten input: the same, nil from the call and outputs unwritten.
	require.NoError(t, vkc.Fill(s, r.seen, 0))
	require.NoError(t, counts.Write([]uint32{1, 1, 1}))
	never, err := vkc.NewBuffer[int32](r.dev, 3)
	require.NoError(t, err)
	defer never.Close()
	require.NoError(t, opConvert(s, never, counts))
	require.NoError(t, r.k.LaunchIndirect(s, vkc.GroupsFrom(counts, 0, [3]uint32{}), nil, r.seen))
	_, err = r.seen.ReadOn(testCtx(t), s)
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	require.ErrorIs(t, err, vkc.ErrNeverWritten)
}

// Counts that cannot be read are refused before anything is recorded.
func TestLaunchIndirectFromRefusesBadCounts(t *testing.T) {
	r := newIndirectRig(t)
	s := r.dev.Stream()
	other := openDevice(t)
	foreign := upload(t, other, []uint32{1, 1, 1})
	closed := upload(t, r.dev, []uint32{1, 1, 1})
	require.NoError(t, closed.Close())
	for name, g := range map[string]vkc.Groups{
		"nil buffer":       vkc.GroupsFrom(nil, 0, [3]uint32{}),
		"negative offset":  vkc.GroupsFrom(r.counts, -1, [3]uint32{}),
		"past the end":     vkc.GroupsFrom(r.counts, 3, [3]uint32{}),
		"another device's": vkc.GroupsFrom(foreign, 0, [3]uint32{}),
		"closed":           vkc.GroupsFrom(closed, 0, [3]uint32{}),
		"zero Groups":      {},
	} {
		require.Error(t, r.k.LaunchIndirect(s, g, nil, r.seen), name)
	}
	require.NoError(t, s.Sync(testCtx(t)))
}

// In a profile, a GroupsFrom launch is two entries: clamp_groups, one
// group, then the kernel with zero groups (its counts are read on the
// device when it runs); a launch with counts known on the host keeps them.
func TestProfileOfAGroupsFromLaunchHasNoGroups(t *testing.T) {
	r := newIndirectRig(t)
	s := r.dev.Stream()
	require.NoError(t, r.src.Write([]uint32{0, 2, 3, 1, 0}))
	require.NoError(t, vkc.Copy(s, r.src, r.counts))
	p, err := s.Profile(func(s *vkc.Stream) error {
		if err := r.k.LaunchIndirect(s, vkc.GroupsFrom(r.counts, 1, [3]uint32{}), nil, r.seen); err != nil {
			return err
		}
		return r.k.Launch(s, [3]uint32{2, 3, 1}, nil, r.seen)
	})
	require.NoError(t, err)
	require.Len(t, p.Launches, 3)
	assert.Equal(t, "clamp_groups", p.Launches[0].Kernel)
	assert.Equal(t, [3]uint32{1, 1, 1}, p.Launches[0].Groups)
	assert.Equal(t, "groupcount", p.Launches[1].Kernel)
	assert.Equal(t, [3]uint32{}, p.Launches[1].Groups, "counts read on the device")
	assert.Equal(t, "groupcount", p.Launches[2].Kernel)
	assert.Equal(t, [3]uint32{2, 3, 1}, p.Launches[2].Groups)
	got, err := r.seen.ReadOn(testCtx(t), s)
	require.NoError(t, err)
	want := expectedGeometry([3]uint32{2, 3, 1}, [3]uint32{}, r.dev.Info().Limits.MaxComputeWorkGroupCount)
	want[0] *= 2 // both launches ran 2x3x1 groups into seen
	assert.Equal(t, want, [4]uint32(got))
}
