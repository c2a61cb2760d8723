package vkc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A texel view covers a buffer's elements, not the padding its memory is
// rounded up to: a uniform texel buffer over three Float16 elements has
// three texels (textureSize), not the four its two words could hold.
func TestTexelViewCoversTheElementsOnly(t *testing.T) {
	compiler, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc not on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "size.comp")
	require.NoError(t, os.WriteFile(src, []byte(`#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform samplerBuffer t;
layout(std430, set = 0, binding = 1) writeonly buffer O { float o[]; };
void main() { o[0] = float(textureSize(t)); }
`), 0o600))
	out := filepath.Join(dir, "size.spv")
	msg, err := exec.Command(compiler, "--target-env=vulkan1.1", src, "-o", out).CombinedOutput()
	require.NoError(t, err, "glslc: %s", msg)
	code, err := os.ReadFile(out)
	require.NoError(t, err)

	dev := openTest(t)
	if !dev.Info().Features.Has(FeatureStorage16) || !dev.Info().Features.Has(FeatureFloat16) {
		t.Skip("no 16-bit storage")
	}
	k, err := dev.LoadKernel(KernelSpec{Name: "texel-size", SPIRV: code})
	require.NoError(t, err)
	defer k.Close()
	h, err := FromSlice(dev, []Float16{Float16From(1), Float16From(2), Float16From(3)})
	require.NoError(t, err)
	defer h.Close()
	o, err := NewBuffer[float32](dev, 1)
	require.NoError(t, err)
	defer o.Close()
	s := dev.Stream()
	require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, nil, h, o))
	got, err := o.ReadOn(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, []float32{3}, got)
}
