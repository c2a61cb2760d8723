package vkc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
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
func measuredLocalSize(t *testing.T, dev *Device, k *Kernel) [3]uint32 {
	t.Helper()
	extent, err := FromSlice(dev, make([]uint32, 3))
	require.NoError(t, err)
	defer func() { assert.NoError(t, extent.Close()) }()
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, extent))
	got := readAll(t, extent)
	return [3]uint32{got[0], got[1], got[2]}
}

// KernelSpec.LocalSize and Kernel.Spec speak of the same axes, whatever
// specialization constant sizes each: under every assignment of IDs to
// axes, a request sets the specializable axes to the sizes asked for them
// (and leaves the others at the module's 4 x 3 x 2), Spec reports the
// size the invocations measure, and LoadKernel(k.Spec()) builds that size
// again.
func TestLocalSizeRoundTripsThroughSpecUnderEveryIDAssignment(t *testing.T) {
	dev := openTest(t)
	modules := wgpermModules()
	require.Len(t, modules, 34)
	defaults := [3]uint32{4, 3, 2}
	for _, name := range modules {
		code := testSPIRV(t, name)
		for _, request := range [][3]uint32{{}, {5, 6, 7}, {7, 1, 5}} {
			want := defaults
			if request != ([3]uint32{}) {
				for axis, id := range name[len("wgperm_"):] {
					if id != 'n' {
						want[axis] = request[axis]
					}
				}
			}
			k, err := dev.LoadKernel(KernelSpec{Name: name, SPIRV: code, LocalSize: request})
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

// One constant may size two axes, and any ID may size an axis: a request
// sets the constant once, and one that asks two sizes of it is refused.
func TestLocalSizeRequestOfASharedConstant(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 8, 1}, LocalSizeSpecIDs: [3]int64{7, 7, -1}}
	local, values, ids, err := workgroupSpec(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 16, 4}}, mod)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{16, 16, 1}, local)
	assert.Equal(t, []uint32{16}, values)
	assert.Equal(t, []uint32{7}, ids)

	_, _, _, err = workgroupSpec(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 8, 1}}, mod)
	assert.ErrorContains(t, err, "specialization constant 7, which sizes axes x and y")
}
