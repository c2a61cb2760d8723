package vk

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// UpdateSet allocates nothing for a set with texel bindings either: each
// new view's handle is written into the set's own view table (Go memory
// the set already holds), not into a Go local whose address cgo would move
// to the heap. A texel matmul's set-cache misses then cost the recorder's
// bookkeeping and no more.
func TestTexelUpdateSetAllocatesNothing(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/texelsum.spv")
	require.NoError(t, err)
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, Texels: 0b01, PushSize: 4})
	require.NoError(t, err)
	defer p.Destroy()
	pool, err := d.NewDescriptorPool(1)
	require.NoError(t, err)
	defer pool.Destroy()
	in, err := d.AllocateBlock(UseUpload, 1024)
	require.NoError(t, err)
	defer in.Release()
	out, err := d.AllocateBlock(UseReadback, 256)
	require.NoError(t, err)
	defer out.Release()
	set, err := pool.Allocate(p)
	require.NoError(t, err)
	ranges := []BufferRange{{in, 0, 1024, 0}, {out, 0, 256, 0}}
	require.NoError(t, d.UpdateSet(set, ranges))
	allocs := testing.AllocsPerRun(200, func() { _ = d.UpdateSet(set, ranges) })
	assert.Zero(t, allocs, "allocations per UpdateSet of a set with one texel binding")
	assert.Equal(t, int64(1), d.LiveCount(ObjBufferView), "each update replaced the set's one view")
}
