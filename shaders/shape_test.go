package shaders

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapeTargets are devices the catalogue shapes kernels for: lavapipe as
// it reports itself, a CPU driver with a wider SIMD unit, GPUs with
// subgroups of 32 and 64, and a CPU driver whose limits refuse the larger
// workgroup.
var shapeTargets = []Target{
	{CPU: true, SubgroupSize: 8, MaxInvocations: 1024, MaxLocalSize: [3]uint32{1024, 1024, 1024}},
	{CPU: true, SubgroupSize: 16, MaxInvocations: 1024, MaxLocalSize: [3]uint32{1024, 1024, 1024}},
	{SubgroupSize: 32, MaxInvocations: 1024, MaxLocalSize: [3]uint32{1024, 1024, 64}},
	{SubgroupSize: 64, MaxInvocations: 1024, MaxLocalSize: [3]uint32{1024, 1024, 1024}},
	{CPU: true, SubgroupSize: 128, MaxInvocations: 128, MaxLocalSize: [3]uint32{128, 128, 64}},
}

// A kernel without a shape of its own runs everywhere with the catalogue's
// workgroup size and tile and no further specialization constants.
func TestShapeForDefaultsToTheCatalogue(t *testing.T) {
	for _, k := range All() {
		if _, own := shapes[k.Name]; own {
			continue
		}
		for _, target := range shapeTargets {
			assert.Equal(t, Shape{LocalSize: k.LocalSize, Tile: k.Tile}, k.ShapeFor(target), "%s on %+v", k.Name, target)
		}
	}
}

// matmul's tile is its block per invocation times its workgroup size on
// every device, the block is the one its BLOCK constant selects (8x8 for
// 0, 16x16 for 1), the workgroup fits the device, and a CPU driver gets
// the larger block with x a whole number of SIMD widths.
func TestMatmulShapeFitsTheDevice(t *testing.T) {
	k, err := Get("matmul")
	require.NoError(t, err)
	block := map[uint32]uint32{matmulBlock8: 8, matmulBlock16: 16}
	for _, target := range shapeTargets {
		sh := k.ShapeFor(target)
		require.Len(t, sh.Spec, 1, "one constant past the workgroup size: BLOCK")
		side, ok := block[sh.Spec[0]]
		require.True(t, ok, "BLOCK %d is one the module knows", sh.Spec[0])
		assert.Equal(t, [2]uint32{side * sh.LocalSize[0], side * sh.LocalSize[1]}, sh.Tile, "%+v", target)
		assert.LessOrEqual(t, sh.LocalSize[0]*sh.LocalSize[1]*sh.LocalSize[2], target.MaxInvocations)
		for i := range 3 {
			assert.LessOrEqual(t, sh.LocalSize[i], target.MaxLocalSize[i])
		}
		fits := target.SubgroupSize*max(64/target.SubgroupSize, 1) <= target.MaxInvocations
		if target.CPU && fits {
			assert.Equal(t, uint32(16), side, "a CPU driver takes the larger block")
			assert.Zero(t, sh.LocalSize[0]%target.SubgroupSize, "x is whole SIMD widths")
		} else {
			assert.Equal(t, Shape{LocalSize: k.LocalSize, Spec: []uint32{matmulBlock8}, Tile: k.Tile}, sh, "the catalogue's shape on %+v", target)
		}
	}
}

// matmul_wide and its variants cover 16 rows by 32 columns per invocation
// on every device; a CPU driver gets x = its SIMD width and 64 invocations
// where the device allows them, every other device the catalogue's shape.
func TestWideMatmulShapeFitsTheDevice(t *testing.T) {
	for _, name := range []string{"matmul_wide", "matmul_wide_dyn", "matmul_wide_f16", "matmul_wide_f16_dyn"} {
		k, err := Get(name)
		require.NoError(t, err)
		assert.Equal(t, [2]uint32{32 * k.LocalSize[0], 16 * k.LocalSize[1]}, k.Tile, name)
		for _, target := range shapeTargets {
			sh := k.ShapeFor(target)
			assert.Empty(t, sh.Spec, "no constant past the workgroup size")
			assert.Equal(t, [2]uint32{32 * sh.LocalSize[0], 16 * sh.LocalSize[1]}, sh.Tile, "%s on %+v", name, target)
			assert.LessOrEqual(t, sh.LocalSize[0]*sh.LocalSize[1]*sh.LocalSize[2], target.MaxInvocations)
			for i := range 3 {
				assert.LessOrEqual(t, sh.LocalSize[i], target.MaxLocalSize[i])
			}
			width := max(target.SubgroupSize, 8)
			if target.CPU && width*max(64/width, 1) <= target.MaxInvocations && width <= target.MaxLocalSize[0] {
				assert.Equal(t, width, sh.LocalSize[0], "%s on %+v: x is the SIMD width", name, target)
			} else {
				assert.Equal(t, Shape{LocalSize: k.LocalSize, Tile: k.Tile}, sh, "%s: the catalogue's shape on %+v", name, target)
			}
		}
	}
}

// The subgroup reductions run one subgroup per workgroup where the
// subgroup size divides 64 (so no barrier runs), 64 invocations otherwise,
// and cover the same elements per group at every size: 256 for the
// subgroup kernels (the partials and group counts of sum and dot), wideSpan
// for the wide ones, whatever the device. A wide kernel's invocation takes
// whole steps of two 8-element loads, summed a BLOCK (8) at a time.
func TestSubgroupReductionShapeIsOneSubgroup(t *testing.T) {
	for _, name := range []string{"sum_subgroup", "sum_subgroup_dyn", "dot_subgroup", "dot_subgroup_dyn",
		"sum_wide", "sum_wide_dyn", "dot_wide", "dot_wide_dyn"} {
		k, err := Get(name)
		require.NoError(t, err)
		plain, err := Get(k.Name[:3])
		require.NoError(t, err)
		if strings.Contains(name, "_wide") {
			plain.GroupSpan = wideSpan
		}
		for _, target := range shapeTargets {
			sh := k.ShapeFor(target)
			x := sh.LocalSize[0]
			assert.Equal(t, [3]uint32{x, 1, 1}, sh.LocalSize)
			assert.Zero(t, 64%x, "%s: 256/x elements per invocation in whole quads", name)
			if 64%target.SubgroupSize == 0 && target.SubgroupSize <= target.MaxInvocations {
				assert.Equal(t, target.SubgroupSize, x, "%s on %+v: one subgroup per group", name, target)
			} else {
				assert.Equal(t, uint32(64), x, "%s on %+v", name, target)
			}
			assert.Equal(t, plain.Span(plain.LocalSize[0]), k.Span(x), "%s covers what %s covers per group", name, plain.Name)
			if strings.Contains(name, "_wide") {
				assert.Zero(t, k.Span(x)%(16*8*x), "%s at %d: whole blocks of steps per invocation", name, x)
			}
		}
	}
}
