package blackbox_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// wgpermModules are testdata/wgperm_XYZ.spv: the module built once per
// assignment of specialization-constant IDs 0, 1, 2 to the axes x, y, z,
// each ID used at most once ('n': the axis is not specializable).
func wgpermModules() []string {
	var names []string
	for _, x := range "n012" {
		for _, y := range "n012" {
			for _, z := range "n012" {
				if x != 'n' && (x == y || x == z) || y != 'n' && y == z {
					continue
				}
				names = append(names, fmt.Sprintf("wgperm_%c%c%c", x, y, z))
			}
		}
	}
	return names
}

// measuredLocalSize launches one workgroup of a wgperm kernel and returns
// the extent its invocations saw along each axis.
func measuredLocalSize(t *testing.T, dev *vkc.Device, k *vkc.Kernel) [3]uint32 {
	t.Helper()
	s := dev.Stream()
	extent := upload(t, dev, make([]uint32, 3))
	require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, nil, extent))
	got := read(t, s, extent)
	return [3]uint32{got[0], got[1], got[2]}
}

// Promise (KernelSpec.LocalSize is "given per axis (x, y, z) as
// Kernel.Spec reports it"; Spec: "passing the result with the module's
// bytes back to LoadKernel builds the same kernel"): under every
// assignment of IDs to axes, a request sets the specializable axes to the
// sizes asked for them (and leaves the others at the module's 4 x 3 x 2),
// Spec reports the size the invocations measure, and LoadKernel(k.Spec())
// builds that size again.
func TestLocalSizeRoundTripsThroughSpecUnderEveryIDAssignment(t *testing.T) {
	dev := openDevice(t)
	modules := wgpermModules()
	require.Len(t, modules, 34)
	defaults := [3]uint32{4, 3, 2}
	for _, name := range modules {
		code := testdataModule(t, name)
		for _, request := range [][3]uint32{{}, {5, 6, 7}, {7, 1, 5}} {
			want := defaults
			if request != ([3]uint32{}) {
				for axis, id := range name[len("wgperm_"):] {
					if id != 'n' {
						want[axis] = request[axis]
					} else {
						request[axis] = 0 // a size asked along a fixed axis is refused
					}
				}
			}
			k, err := dev.LoadKernel(vkc.KernelSpec{Name: name, SPIRV: code, LocalSize: request})
			require.NoError(t, err, name)
			spec := k.Spec()
			assert.Equal(t, want, spec.LocalSize, "%s requested %v: Spec", name, request)
			assert.Equal(t, want, measuredLocalSize(t, dev, k), "%s requested %v: measured", name, request)
			require.NoError(t, k.Close())

			spec.SPIRV = code
			again, err := dev.LoadKernel(spec)
			require.NoError(t, err, name)
			assert.Equal(t, want, again.Spec().LocalSize, "%s: LoadKernel(k.Spec()) after requesting %v", name, request)
			assert.Equal(t, want, measuredLocalSize(t, dev, again), "%s: LoadKernel(k.Spec()) after requesting %v: measured", name, request)
			require.NoError(t, again.Close())
		}
	}
}
