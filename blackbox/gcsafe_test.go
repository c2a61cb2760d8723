package blackbox_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// TestGCPressureOpenUseClose is an outside program's first minutes with
// vkc while its other goroutines allocate: open a device, upload, Matmul,
// Softmax, load and launch a kernel of its own, close, round after round.
// Each round's results are checked against the host, and after each Close
// no Vulkan object is left alive and the validation layer said nothing.
// Before vk built Vulkan's create infos in its own C this crashed with
// SIGSEGV inside vkCreateComputePipelines within a few rounds. VKC_SOAK=1
// runs 200 rounds instead of 25.
func TestGCPressureOpenUseClose(t *testing.T) {
	gcpressure.Start(t)
	rounds := gcpressure.Scaled(25, 200)
	affine := affineSPIRV(t)
	const m = 8 // 8x8 matrices: 64 elements, as the reported program used
	a, b := make([]float32, m*m), make([]float32, m*m)
	for i := range a {
		a[i], b[i] = float32(i%7)-3, float32(i%5)*0.25
	}
	for round := 0; round < rounds; round++ {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err, "round %d", round)
		s := dev.Stream()
		x, err := vkc.FromSlice(dev, a)
		require.NoError(t, err)
		y, err := vkc.FromSlice(dev, b)
		require.NoError(t, err)
		z, err := vkc.FromSlice(dev, make([]float32, m*m))
		require.NoError(t, err)
		require.NoError(t, opMatmul(s, x, y, z, m, m, m), "round %d", round)
		prod := readGC(t, z)
		for r := 0; r < m; r++ {
			for c := 0; c < m; c++ {
				var want float32
				for k := 0; k < m; k++ {
					want += a[r*m+k] * b[k*m+c]
				}
				require.InDelta(t, want, prod[r*m+c], 1e-4, "round %d: C[%d][%d]", round, r, c)
			}
		}
		require.NoError(t, opSoftmax(s, z, y, m, m), "round %d", round)
		soft := readGC(t, y)
		for r := 0; r < m; r++ {
			var sum float64
			for c := 0; c < m; c++ {
				v := soft[r*m+c]
				require.True(t, v > 0 && v <= 1, "round %d: softmax[%d][%d] = %v", round, r, c, v)
				sum += float64(v)
			}
			require.InDelta(t, 1, sum, 1e-5, "round %d: softmax row %d sums to %v", round, r, sum)
		}
		k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: affine, Bindings: []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, PushSize: 12})
		require.NoError(t, err, "round %d", round)
		push := make([]byte, 12)
		binary.LittleEndian.PutUint32(push[0:], math.Float32bits(2))
		binary.LittleEndian.PutUint32(push[4:], math.Float32bits(1))
		binary.LittleEndian.PutUint32(push[8:], m*m)
		require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, push, x, z), "round %d", round)
		for i, v := range readGC(t, z) {
			require.Equal(t, 2*a[i]+1, v, "round %d: affine[%d]", round, i)
		}
		require.NoError(t, dev.Close(), "round %d", round)
		assert.Empty(t, dev.LiveObjects(), "round %d: Vulkan objects alive after Close", round)
		errs, warns, recent := dev.ValidationMessages()
		require.Zero(t, errs+warns, "round %d: validation messages: %q", round, recent)
	}
}

// readGC reads a buffer on the default stream, failing the test on error.
func readGC(t *testing.T, b *vkc.Buffer[float32]) []float32 {
	t.Helper()
	out, err := b.Read(context.Background())
	require.NoError(t, err)
	return out
}
