package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// checkRowReductions checks Sum, Mean and Max of x's rows (the last
// axis) against the float64 reference, with checkReductions' bounds.
// It returns the sums.
func checkRowReductions(t *testing.T, dev *vkc.Device, v []float64, x Tensor[float32]) []float64 {
	t.Helper()
	sum, abs, maxv, _ := reduceRef(v, x.at, 1)
	R := float64(x.at.shape[1])
	u := unit[float32]()
	run := func(name string, fn func(*vkc.Stream, Tensor[float32], int, Tensor[float32]) error, want []float64, tol func(i int) float64) []float64 {
		t.Helper()
		ob := fresh[float32](t, dev, len(want))
		require.NoError(t, fn(dev.Stream(), x, 1, Of(ob)), name)
		got := download(t, ob)
		within(t, name, got, want, tol)
		return got
	}
	mean := make([]float64, len(sum))
	for i := range sum {
		mean[i] = sum[i] / R
	}
	got := run("Sum", Sum[float32], sum, func(i int) float64 { return R*u*abs[i] + u*math.Abs(sum[i]) })
	run("Mean", Mean[float32], mean, func(i int) float64 { return (R+1)*u*abs[i]/R + u*math.Abs(mean[i]) })
	run("Max", Max[float32], maxv, func(int) float64 { return 0 })
	return got
}

// rowsPlan is the plan of a reduction of x's rows into len rows outputs.
func rowsPlan(t *testing.T, dev *vkc.Device, x Tensor[float32]) reducing {
	t.Helper()
	r, err := reducePlan("Sum", x, 1, Of(fresh[float32](t, dev, x.at.shape[0])).at, nil, nil)
	require.NoError(t, err)
	return r
}

// Each first pass over contiguous float32 rows (texels, 64-bit loads,
// vec4 loads), forced in turn, sums, averages and finds the maxima of
// rows that start at an offset and span several groups, the last one
// partial, within the float64 reference's bounds. The elements are all
// negative, so a maximum that started from zero would show. The texel
// and 64-bit kernels add in the same order: their sums agree bit for bit.
func TestSumRowsEveryPath(t *testing.T) {
	dev := openTest(t)
	const rows, R, off = 3, 2*sumSpan + 24, 8
	rng := rand.New(rand.NewPCG(5, 6))
	v := randomValues[float32](rng, off+rows*R+4, -12, -4)
	x := Of(upload[float32](t, dev, v)).Slice(0, off, off+rows*R).Reshape(rows, R)
	sums := map[string][]float64{}
	for _, path := range []string{pathTexel, pathWide, pathVec4} {
		t.Run(path, func(t *testing.T) {
			if path == pathWide && !dev.Info().Features.Has(vkc.FeatureInt64) {
				t.Skip("no 64-bit integers")
			}
			sumPath = path
			defer func() { sumPath = "" }()
			r := rowsPlan(t, dev, x)
			require.Equal(t, path, rowsFirst(dev, redSum, typeOf[float32](), r, x))
			wantMax := ""
			if path == pathTexel {
				wantMax = "max_texel_f32"
			}
			require.Equal(t, wantMax, rowsFirst(dev, redMax, typeOf[float32](), r, x))
			sums[path] = checkRowReductions(t, dev, v, x)
		})
	}
	if sums[pathWide] != nil {
		require.Equal(t, sums[pathWide], sums[pathTexel])
	}
}

// On a CPU driver, rows in a buffer that starts at an aligned offset are
// read as texels; a view whose first byte is not aligned for texels
// takes a storage-buffer path, within the same bounds. Each row's last
// group has 17 texels, an odd number that ends a second pair early.
func TestSumRowsTexelsWhereBindable(t *testing.T) {
	dev := openTest(t)
	const rows, R = 2, sumSpan + 68
	rng := rand.New(rand.NewPCG(7, 8))
	v := randomValues[float32](rng, 1+rows*R, -4, 4)
	b := upload[float32](t, dev, v)
	x := Of(b).Slice(0, 0, rows*R).Reshape(rows, R)
	texel := rowsKernel(dev, rowsPlan(t, dev, x), x) == pathTexel
	require.Equal(t, dev.Info().Type == vkc.TypeCPU, texel)
	checkRowReductions(t, dev, v, x)

	view, err := b.View(1, rows*R)
	require.NoError(t, err)
	defer view.Close()
	y := Of(view).Reshape(rows, R)
	require.NotEqual(t, pathTexel, rowsKernel(dev, rowsPlan(t, dev, y), y))
	checkRowReductions(t, dev, v[1:], y)
}
