package vkc

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/shaders"
)

// typedKernel reports whether a catalogue kernel is one of the Float16
// (_f16) or float64 (_f64) op kernels.
func typedKernel(name string) bool {
	return strings.HasSuffix(name, "_f16") || strings.HasSuffix(name, "_f64")
}

func sameBits[T Element](t *testing.T, a, b []T, msg string) {
	t.Helper()
	require.Equal(t, bytesOf(a), bytesOf(b), msg)
}

// typedVariantRuns runs every typed op statically and through its Dyn
// form (the _dyn variant) on d, and returns which static kernels ran.
func typedVariantRuns[T Float](t *testing.T, d *Device, sfx string, from func(float64) T) map[string]bool {
	s := d.Stream()
	rng := rand.New(rand.NewPCG(3, 4))
	const n, cols, k, nn = 600, 20, 12, 10
	values := func(n int) []T {
		out := make([]T, n)
		for i := range out {
			out[i] = from(4*rng.Float64() - 2)
		}
		return out
	}
	x, y := upload(t, d, values(n)), upload(t, d, values(n))
	b := upload(t, d, values(k*nn))
	length, err := NewParam(d, uint32(n))
	require.NoError(t, err)
	t.Cleanup(func() { _ = length.Close() })
	pair := func(what string, size int, static, dynamic func(out *Buffer[T]) error) {
		var got [2][]T
		for i, run := range []func(*Buffer[T]) error{static, dynamic} {
			out := upload(t, d, values(size))
			require.NoError(t, run(out), "%s%s", what, sfx)
			got[i] = readAll(t, out)
		}
		sameBits(t, got[0], got[1], what+sfx+": static and dynamic differ")
	}
	for op, name := range []string{"add", "sub", "mul", "div"} {
		pair(name, n, func(z *Buffer[T]) error { return binaryOf(s, name, uint32(op), x, y, z, nil) },
			func(z *Buffer[T]) error { return binaryOf(s, name, uint32(op), x, y, z, length) })
	}
	pair("sum", 1, func(o *Buffer[T]) error { return SumOf(s, x, o) }, func(o *Buffer[T]) error { return SumDynOf(s, x, o, length) })
	pair("dot", 1, func(o *Buffer[T]) error { return DotOf(s, x, y, o) }, func(o *Buffer[T]) error { return DotDynOf(s, x, y, o, length) })
	rows, err := NewParam(d, uint32(n/cols))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rows.Close() })
	pair("softmax", n, func(o *Buffer[T]) error { return SoftmaxOf(s, x, o, n/cols, cols) },
		func(o *Buffer[T]) error { return SoftmaxDynOf(s, x, o, rows, cols) })
	mrows, err := NewParam(d, uint32(n/k))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mrows.Close() })
	pair("matmul", n/k*nn, func(o *Buffer[T]) error { return MatmulOf(s, x, b, o, n/k, nn, k) },
		func(o *Buffer[T]) error { return MatmulDynOf(s, x, b, o, mrows, nn, k) })
	// N and K multiples of 8: matmul_texel on a CPU driver (Float16), the
	// blocked kernel elsewhere.
	const wideK, wideN = 8, 16
	wideB := upload(t, d, values(wideK*wideN))
	wideRows, err := NewParam(d, uint32(n/wideK))
	require.NoError(t, err)
	t.Cleanup(func() { _ = wideRows.Close() })
	pair("matmul", n/wideK*wideN, func(o *Buffer[T]) error { return MatmulOf(s, x, wideB, o, n/wideK, wideN, wideK) },
		func(o *Buffer[T]) error { return MatmulDynOf(s, x, wideB, o, wideRows, wideN, wideK) })
	return map[string]bool{"binary" + sfx: true, "sum" + sfx: true, "dot" + sfx: true, "softmax" + sfx: true, "matmul" + sfx: true,
		d.matmulKernel(sfx, wideN, wideK, x.core, wideB.core): true}
}

// runsOnAligned reports whether d runs kernel (a static matmul kernel)
// for the shapes the CPU-driver kernels take, on inputs bound as they are.
func runsOnAligned(d *Device, kernel string) bool {
	return d.matmulKernel(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(kernel, "matmul_texel"), "matmul_wide"), "matmul"), 8, 8) == kernel
}

// Every dynamic variant of the Float16 and float64 op kernels computes
// what its static kernel computes, bit for bit, on lavapipe and on the
// host device's Go references.
func TestTypedKernelVariantsMatchStatic(t *testing.T) {
	for name, open := range devices(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			covered := typedVariantRuns(t, d, "_f16", func(x float64) Float16 { return Float16From(float32(x)) })
			for k, v := range typedVariantRuns(t, d, "_f64", func(x float64) float64 { return x }) {
				covered[k] = v
			}
			for _, k := range shaders.All() {
				if k.DynamicOf != "" && typedKernel(k.DynamicOf) && (!strings.HasPrefix(k.Name, "matmul_wide") && !strings.HasPrefix(k.Name, "matmul_texel") || runsOnAligned(d, k.DynamicOf)) {
					require.True(t, covered[k.DynamicOf], "%s has no case", k.Name)
				}
			}
		})
	}
}
