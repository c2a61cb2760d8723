package shaders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wide variant stands in for its element-wise kernel wherever a CPU
// driver runs: the same bindings, push constants, scalars and elements per
// group (so the same group counts and outputs), eight elements per
// invocation over 32 invocations, needing shaderInt64; the dynamic form of
// a wide variant is the wide form of the dynamic variant. No other kernel
// has one.
func TestWideVariantsKeepTheirKernelsContract(t *testing.T) {
	for _, k := range All() {
		wide, ok := Wide(k.Name)
		if !ok {
			continue
		}
		w, err := Get(wide)
		require.NoError(t, err, "%s names %s, which the catalogue must hold", k.Name, wide)
		assert.Equal(t, k.Bindings, w.Bindings, wide)
		assert.Equal(t, k.PushSize, w.PushSize, wide)
		assert.Equal(t, k.PushDoc, w.PushDoc, wide)
		assert.Equal(t, k.Scalars, w.Scalars, wide)
		assert.Equal(t, k.Span(k.LocalSize[0]), w.Span(w.LocalSize[0]), "%s covers what %s covers per group", wide, k.Name)
		assert.Equal(t, [3]uint32{32, 1, 1}, w.LocalSize, wide)
		assert.Equal(t, uint32(8), w.PerInvocation, wide)
		assert.Equal(t, FeatureInt64, w.Needs, wide)
		assert.Equal(t, FeatureNone, k.Needs, "%s runs anywhere", k.Name)
		if k.DynamicOf != "" {
			static, ok := Wide(k.DynamicOf)
			require.True(t, ok, k.DynamicOf)
			assert.Equal(t, static, w.DynamicOf, "%s is the variant of %s", wide, static)
			v, err := Dynamic(static)
			require.NoError(t, err)
			assert.Equal(t, wide, v.Name)
		}
		// The module itself runs 32 invocations by default, so a program
		// that builds it unspecialized (vkbench's C baseline) runs vkc's shape.
		mod, err := Inspect(w.SPIRV)
		require.NoError(t, err)
		assert.Equal(t, uint32(32), mod.LocalSize[0], "%s's own workgroup size", wide)
	}
	for _, name := range []string{"fill", "copy", "axpy", "scale", "add", "sub", "mul", "div",
		"fill_dyn", "copy_dyn", "axpy_dyn", "scale_dyn", "add_dyn", "sub_dyn", "mul_dyn", "div_dyn"} {
		_, ok := Wide(name)
		assert.True(t, ok, "%s has a wide variant", name)
	}
	for _, name := range []string{"sum", "dot", "matmul", "fill64", "axpy_f16", "axpy_wide", "transpose", "nonesuch"} {
		_, ok := Wide(name)
		assert.False(t, ok, "%s has no wide variant", name)
	}
}
