package blackbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/shaders"
)

// fillWordsKernel loads the catalogue's fill module as a user kernel: it
// writes binding 0 (uint words) with push constants value and n, so a
// Param bound there would be set on the device behind the host's back.
func fillWordsKernel(t *testing.T, dev *vkc.Device) *vkc.Kernel {
	t.Helper()
	sk, err := shaders.Get("fill")
	require.NoError(t, err)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "fill-words", SPIRV: sk.SPIRV})
	require.NoError(t, err)
	require.True(t, k.Spec().Bindings[0].Writes(), "the module writes binding 0")
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// A user kernel may not bind a Param where it writes: the kernel would
// change the value on the device while the host (and every extent computed
// from it at record time) still holds the old one. The scenario: a
// kernel sets a length from 300 to 5, then a ScaleDyn sized by the param
// marks all 300 elements written while the device writes 5. Refused at
// Launch and LaunchIndirect, eagerly and inside a capture window, the
// param keeps its value and the ScaleDyn after it writes (and reads back)
// every element it claims.
func TestParamBoundWhereAKernelWritesIsRefused(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := context.Background()
	const size = 300
	k := fillWordsKernel(t, dev)
	x := upload(t, dev, slices.Repeat([]float32{1}, size))
	junk := upload(t, dev, slices.Repeat([]float32{1000}, size)) // what a lie would read back
	require.NoError(t, s.Sync(ctx))
	require.NoError(t, junk.Close())
	n, err := vkc.NewParam(dev, uint32(size))
	require.NoError(t, err)
	groups, err := vkc.NewParam(dev, uint32(1))
	require.NoError(t, err)

	setTo5 := push(5, 1) // n[0] = 5
	launches := map[string]func(s *vkc.Stream) error{
		"Launch": func(s *vkc.Stream) error { return k.Launch(s, [3]uint32{1, 1, 1}, setTo5, n) },
		"LaunchIndirect": func(s *vkc.Stream) error {
			return k.LaunchIndirect(s, vkc.GroupsOf(groups, 1), setTo5, n)
		},
	}
	want := make([]float32, size)
	for i := range want {
		want[i] = 2
	}
	for name, launch := range launches {
		for _, captured := range []bool{false, true} {
			y, err := vkc.NewBuffer[float32](dev, size)
			require.NoError(t, err)
			step := func(s *vkc.Stream) error {
				if err := launch(s); err != nil {
					return err
				}
				return opScaleDyn(s, ops.Const(2), x, y, n)
			}
			if captured {
				g, err := s.Capture(step)
				require.ErrorIs(t, err, vkc.ErrParamWritten, "%s in a capture window", name)
				require.Nil(t, g)
			} else {
				require.ErrorIs(t, step(s), vkc.ErrParamWritten, "%s eagerly", name)
			}
			require.Equal(t, uint32(size), n.Value(), name)
			// The param still holds 300 on the device: a ScaleDyn sized by
			// it writes every element it marks written.
			require.NoError(t, opScaleDyn(s, ops.Const(2), x, y, n))
			got, err := y.ReadOn(ctx, s)
			require.NoError(t, err, "%s (captured %v)", name, captured)
			require.Equal(t, want, got, "%s (captured %v)", name, captured)
			require.NoError(t, y.Close())
		}
	}

	// A param as the group counts of a kernel that writes a plain buffer
	// stays allowed: only a param bound where the kernel writes is refused.
	out, err := vkc.NewBuffer[uint32](dev, 1)
	require.NoError(t, err)
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsOf(groups, 1), push(7, 1), out))
	got, err := out.ReadOn(ctx, s)
	require.NoError(t, err)
	require.Equal(t, []uint32{7}, got)
}
