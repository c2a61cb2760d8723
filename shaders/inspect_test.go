package shaders

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Decorations of ids that are not structs make no member maps: collect of
// a module of n OpDecorate on n ids made three maps per id (four
// allocations per id, 255 bytes, against one and 111 bytes now).
func TestCollectMakesMemberMapsOnlyForMembers(t *testing.T) {
	const n = 10000
	insts := make([]instruction, n)
	for i := range insts {
		insts[i] = instruction{op: opDecorate, operands: []uint32{uint32(100 + i), decorationNonWritable}}
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := collect(insts); err != nil {
			t.Fatal(err)
		}
	})
	assert.Less(t, allocs, float64(2*n), "allocations for %d decorated ids", n)
}

// Bindings of the kinds no shader can write (uniform blocks, uniform texel
// buffers, sampled images, samplers and their combinations) read as
// read-only, decorated NonWritable or not; a storage buffer keeps the
// access its decorations give.
func TestInspectReportsUnwritableKindsReadOnly(t *testing.T) {
	code, err := os.ReadFile(filepath.Join("testdata", "readonly_kinds.spv"))
	require.NoError(t, err)
	mod, err := Inspect(code)
	require.NoError(t, err)
	want := map[uint32]struct {
		kind   DescriptorKind
		access Access
	}{
		0: {StorageBuffer, WriteOnly},
		1: {UniformBuffer, ReadOnly},
		2: {UniformTexelBuffer, ReadOnly},
		3: {CombinedImageSampler, ReadOnly},
		4: {SampledImage, ReadOnly},
		5: {Sampler, ReadOnly},
	}
	require.Len(t, mod.Bindings, len(want))
	for _, b := range mod.Bindings {
		w, ok := want[b.Binding]
		require.True(t, ok, "binding %d", b.Binding)
		assert.Equal(t, w.kind, b.Kind, "binding %d kind", b.Binding)
		assert.Equal(t, w.access, b.Access, "binding %d (%s) access", b.Binding, b.Kind)
	}
}
