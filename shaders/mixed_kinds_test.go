package shaders

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// One binding declared as a uniform block and as a storage block has no
// one descriptor type: the reader reports it as OtherDescriptor, which
// LoadKernel refuses, rather than as one of the two (a uniform binding
// would be tracked read-only while the code stores through the other).
func TestBindingOfTwoKindsIsNotBindable(t *testing.T) {
	compiler, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc not on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "mixed.comp")
	require.NoError(t, os.WriteFile(src, []byte(`#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform U { float u; } ub;
layout(std430, set = 0, binding = 0) buffer S { float s[]; } sb;
void main() { sb.s[0] = ub.u + 1.0; }
`), 0o600))
	out := filepath.Join(dir, "mixed.spv")
	msg, err := exec.Command(compiler, "--target-env=vulkan1.1", src, "-o", out).CombinedOutput()
	require.NoError(t, err, "glslc: %s", msg)
	code, err := os.ReadFile(out)
	require.NoError(t, err)
	mod, err := Inspect(code)
	require.NoError(t, err)
	require.Len(t, mod.Bindings, 1)
	require.Equal(t, OtherDescriptor, mod.Bindings[0].Kind)
}
