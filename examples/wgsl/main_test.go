package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// openTest opens a device with the validation layer on and, at cleanup,
// closes it and fails the test on any validation message or any Vulkan
// object left alive.
func openTest(t *testing.T) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		assert.Empty(t, dev.LiveObjects(), "Vulkan objects alive after Close")
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "validation messages: %q", recent)
	})
	return dev
}

// gelu is the tanh form of GELU biasgelu.wgsl computes, in float64.
func gelu(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
}

// geluTolerance is how far the device's float32 result may be from the
// float64 reference: a few float32 roundings of the value, plus an
// absolute term for the device's tanh, which need not be correctly
// rounded (Vulkan allows tanh an error of a few ulp of its inputs' range).
func geluTolerance(want float64) float64 {
	return 1e-6*math.Abs(want) + 2e-6
}

func randomSlice(r *rand.Rand, n int, scale float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = (r.Float32()*2 - 1) * scale
	}
	return xs
}

// The fused bias and GELU matches Go for row lengths that do and do not
// divide the workgroup, and a length that is no multiple of it.
func TestBiasGELUAgainstGo(t *testing.T) {
	dev := openTest(t)
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct{ rows, cols int }{{33, 64}, {17, 10}, {1, 1000}} {
		x, bias := randomSlice(r, c.rows*c.cols, 5), randomSlice(r, c.cols, 1)
		got, spec, err := biasGELU(dev, x, bias)
		require.NoError(t, err)
		assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.ReadOnly, vkc.WriteOnly}, spec.Bindings)
		require.Len(t, got, len(x))
		for i := range x {
			want := gelu(float64(x[i]) + float64(bias[i%c.cols]))
			require.InDelta(t, want, float64(got[i]), geluTolerance(want), "%dx%d: y[%d]", c.rows, c.cols, i)
		}
	}
}

// The two-pass sum matches Go's float64 sum within the error bound of
// float32 additions done in a tree: n*eps*sum|x| bounds any order.
func TestSumAgainstGo(t *testing.T) {
	dev := openTest(t)
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{1, 255, 256, 257, 100_003, 1 << 20} {
		x := randomSlice(r, n, 10)
		got, _, err := sum(dev, x)
		require.NoError(t, err)
		var want, abs float64
		for _, v := range x {
			want += float64(v)
			abs += math.Abs(float64(v))
		}
		depth := math.Ceil(math.Log2(float64(n))) + float64(n)/(reduceWorkgroup*maxPartials) + 2
		assert.InDelta(t, want, float64(got), depth*abs/(1<<24), "n %d", n)
	}
}

// The program's own run prints each kernel's derived description and its
// results, which match the Go references.
func TestRunPrintsDescriptionsAndResults(t *testing.T) {
	dev := openTest(t)
	var out bytes.Buffer
	require.NoError(t, run(dev, &out))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 4, "output:\n%s", out.String())
	geluSpec := vkc.KernelSpec{Name: "bias_gelu", Bindings: []vkc.Access{vkc.ReadOnly, vkc.ReadOnly, vkc.WriteOnly}, LocalSize: [3]uint32{64, 1, 1}, Entry: "bias_gelu"}
	sumSpec := vkc.KernelSpec{Name: "reduce", Bindings: []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, LocalSize: [3]uint32{256, 1, 1}, Entry: "reduce"}
	assert.Equal(t, geluSpec.String(), lines[0])
	assert.Equal(t, sumSpec.String(), lines[2])
	x := []float64{-3, -1.5, -0.5, 0, 0.25, 1, 2, 4}
	bias := []float64{0.5, -0.5}
	printed := strings.Fields(strings.Trim(lines[1], "[]"))
	require.Len(t, printed, len(x))
	var want float64
	for i, v := range x {
		got, err := strconv.ParseFloat(printed[i], 32)
		require.NoError(t, err)
		g := gelu(v + bias[i%2])
		assert.InDelta(t, g, got, geluTolerance(g), "y[%d]", i)
		want += v
	}
	assert.Equal(t, fmt.Sprint(float32(want)), lines[3], "every partial sum is exact in float32")
}
