package vk

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// specRun builds testdata/spec.spv (three bindings, push constants, two
// specialization constants), runs it once over n elements and checks every
// result, so that a create info the driver read wrongly shows as a wrong
// number rather than only as a crash.
func specRun(t *testing.T, d *Device, code []byte, scale float32, n int) {
	t.Helper()
	specRunDesc(t, d, code, PipelineDesc{Bindings: 3, PushSize: 8, Spec: []uint32{32, math.Float32bits(scale)}}, scale, n)
}

// specRunDesc is specRun with the pipeline built from desc, which must make
// the workgroup 32 wide (or leave it 64) and SCALE scale.
func specRunDesc(t *testing.T, d *Device, code []byte, desc PipelineDesc, scale float32, n int) {
	t.Helper()
	pipe, err := d.NewPipeline(code, desc)
	require.NoError(t, err)
	defer pipe.Destroy()
	pool, err := d.NewDescriptorPool(2)
	require.NoError(t, err)
	defer pool.Destroy()
	set, err := pool.Allocate(pipe)
	require.NoError(t, err)
	defer pool.Free(set)
	blocks := make([]*Block, 3)
	for i := range blocks {
		blocks[i], err = d.AllocateBlock(UseUpload, uint64(4*n))
		require.NoError(t, err)
		defer blocks[i].Release()
		require.NoError(t, d.MapBlock(blocks[i]))
	}
	xs, ys, zs := blocks[0].Mapped(), blocks[1].Mapped(), blocks[2].Mapped()
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(float32(i%5)))
		binary.LittleEndian.PutUint32(ys[4*i:], math.Float32bits(float32(i%3)))
	}
	ranges := make([]BufferRange, 3)
	for i, b := range blocks {
		ranges[i] = BufferRange{Block: b, Range: uint64(4 * n)}
	}
	d.UpdateSet(set, ranges)
	cp, err := d.NewCommandPool()
	require.NoError(t, err)
	defer cp.Destroy()
	cb, err := cp.Allocate()
	require.NoError(t, err)
	defer cb.Free()
	fence, err := d.NewFence()
	require.NoError(t, err)
	defer fence.Destroy()
	queries, err := d.NewTimestampPool(2)
	require.NoError(t, err)
	defer queries.Destroy()
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push, math.Float32bits(0.5))
	binary.LittleEndian.PutUint32(push[4:], uint32(n))
	require.NoError(t, d.Begin(cb, OneTimeSubmit))
	d.CmdResetQueries(cb, queries, 0, 2)
	d.CmdTimestamp(cb, queries, 0)
	d.CmdDispatch(cb, &Dispatch{Pipeline: pipe, Set: set, Groups: [3]uint32{uint32(n+31) / 32, 1, 1}, Push: push})
	d.CmdTimestamp(cb, queries, 1)
	d.CmdBarrier(cb, BarrierToHost)
	require.NoError(t, d.End(cb))
	require.NoError(t, d.Submit(cb, fence))
	ok, err := d.WaitFence(fence, -1)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < n; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(zs[4*i:]))
		require.Equal(t, scale*float32(i%5)+float32(i%3)+0.5, got, "z[%d]", i)
	}
	ts, err := queries.Results(0, 2)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ts[1], ts[0])
}

// TestGCPressureEveryConstructor opens and closes instance and device and
// builds and destroys every kind of object vk makes, pipelines most of all
// (their create info nests the most), while the collector runs constantly.
// Before vk built its create infos in C, this crashed within a few rounds
// with SIGSEGV inside vkCreateComputePipelines.
func TestGCPressureEveryConstructor(t *testing.T) {
	gcpressure.Start(t)
	code, err := os.ReadFile("testdata/spec.spv")
	require.NoError(t, err)
	axpy, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	rounds := gcpressure.Scaled(8, 200)
	for round := 0; round < rounds; round++ {
		in, d := openWith(t, InstanceOptions{Validation: true})
		for i := 0; i < 6; i++ {
			p, err := d.NewPipeline(axpy, PipelineDesc{Bindings: 2, PushSize: 8})
			require.NoError(t, err)
			q, err := d.NewPipeline(code, PipelineDesc{Bindings: 3, PushSize: 8, Spec: []uint32{uint32(16 << (i % 3)), math.Float32bits(2)}})
			require.NoError(t, err)
			p.Destroy()
			q.Destroy()
		}
		specRun(t, d, code, float32(round+2), 100)
		assert.Empty(t, d.Live(), "round %d: live objects before close", round)
		d.Close()
		e, w := in.ValidationCounts()
		assert.Zero(t, e+w, "round %d: validation messages: %v", round, in.RecentMessages())
		in.Close()
	}
}

// SpecIDs name the constants Spec sets: given in the other order, the
// values still land on their IDs (constant 1 SCALE, constant 0 the width),
// and a desc setting only SCALE, by ID, leaves the width at 64. IDs that
// do not match the values one for one are refused before the driver.
func TestPipelineSpecIDs(t *testing.T) {
	d := fixture(t)
	code, err := os.ReadFile("testdata/spec.spv")
	require.NoError(t, err)
	specRunDesc(t, d, code, PipelineDesc{Bindings: 3, PushSize: 8, Spec: []uint32{math.Float32bits(3), 32}, SpecIDs: []uint32{1, 0}}, 3, 100)
	specRunDesc(t, d, code, PipelineDesc{Bindings: 3, PushSize: 8, Spec: []uint32{math.Float32bits(5)}, SpecIDs: []uint32{1}}, 5, 100)
	for name, ids := range map[string][]uint32{"too few": {1}, "too many": {0, 1, 2}, "twice": {1, 1}} {
		_, err := d.NewPipeline(code, PipelineDesc{Bindings: 3, PushSize: 8, Spec: []uint32{32, 7}, SpecIDs: ids})
		assert.ErrorContains(t, err, "specialization", name)
	}
}
