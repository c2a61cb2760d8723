package ops

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// reduceRef reduces v (laid out by l) along axis in float64: the sums,
// the sums of magnitudes (for the error bound), the maxima and the first
// indices of the maxima, over the output elements row-major.
func reduceRef(v []float64, l layout, axis int) (sum, abs, maxv, arg []float64) {
	shape := slices.Delete(slices.Clone(l.shape), axis, axis+1)
	n, _ := count(shape)
	pos := make([]int, len(shape))
	for range n {
		at := l.offset
		for i, p := range pos {
			ax := i
			if i >= axis {
				ax = i + 1
			}
			at += p * l.strides[ax]
		}
		s, a, m, idx := 0.0, 0.0, math.Inf(-1), 0.0
		for k := range l.shape[axis] {
			x := v[at+k*l.strides[axis]]
			s += x
			a += math.Abs(x)
			if x > m {
				m, idx = x, float64(k)
			}
		}
		sum, abs, maxv, arg = append(sum, s), append(abs, a), append(maxv, m), append(arg, idx)
		for i := len(pos) - 1; i >= 0; i-- {
			if pos[i]++; pos[i] < shape[i] {
				break
			}
			pos[i] = 0
		}
	}
	return
}

// checkReductions runs Sum, Mean, Max and Argmax on T along every axis of
// a permuted tensor (out with and without keepdims), and along a long
// axis that takes two passes.
func checkReductions[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(11, 12))
	lo := -4.0
	if typeOf[T]().name == "uint32" {
		lo = 0
	}
	cases := []struct {
		shape []int
		perm  []int
	}{
		{[]int{3, 5, 7}, []int{2, 0, 1}},
		{[]int{2, 9000}, []int{0, 1}}, // two passes; contiguous rows (the vec4 path for float32)
		{[]int{9001, 2}, []int{1, 0}}, // two passes, strided
		{[]int{2000, 3}, []int{0, 1}}, // many short rows (lanes)
		{[]int{40, 3, 50}, []int{1, 2, 0}},
	}
	for _, cs := range cases {
		n, _ := count(cs.shape)
		v := randomValues[T](rng, n, lo, 4)
		x := Of(upload[T](t, dev, v), cs.shape...).Permute(cs.perm...)
		for axis := range x.Rank() {
			sum, abs, maxv, arg := reduceRef(v, x.at, axis)
			keep := x.Shape()
			keep[axis] = 1
			drop := slices.Delete(x.Shape(), axis, axis+1)
			R := float64(x.at.shape[axis])
			uc, ut := computeUnit[T](), unit[T]()
			check := func(name string, fn func(*vkc.Stream, Tensor[T], int, Tensor[T]) error, want []float64, tol func(i int) float64, shape []int) {
				ob := fresh[T](t, dev, len(want))
				require.NoError(t, fn(dev.Stream(), x, axis, Of(ob, shape...)), "%s along %d of %v", name, axis, x)
				within(t, name, download(t, ob), want, tol)
			}
			wantSum := make([]float64, len(sum))
			for i := range sum {
				wantSum[i] = toFloat(fromFloat[T](sum[i]))
				if typeOf[T]().name == "uint32" || typeOf[T]().name == "int32" {
					wantSum[i] = sum[i]
				}
			}
			// Any order of R additions errs by at most R*u*sum|x|; the
			// result then rounds once to T.
			sumTol := func(i int) float64 { return R*uc*abs[i] + ut*math.Abs(sum[i]) }
			check("Sum", Sum[T], wantSum, sumTol, keep)
			check("Max", Max[T], maxv, func(int) float64 { return 0 }, drop)
			if typeOf[T]().float {
				mean := make([]float64, len(sum))
				for i := range sum {
					mean[i] = sum[i] / R
				}
				check("Mean", Mean[T], mean, func(i int) float64 { return (R+1)*uc*abs[i]/R + ut*math.Abs(mean[i]) }, drop)
			}
			ib := fresh[uint32](t, dev, len(arg))
			require.NoError(t, Argmax(dev.Stream(), x, axis, Of(ib, drop...)))
			require.Equal(t, arg, download(t, ib), "Argmax along %d of %v", axis, x)
		}
	}
}

func TestReductionsMatchFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkReductions[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkReductions[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkReductions[float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkReductions[int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkReductions[uint32](t, dev) })
}

// Argmax keeps the first of equal maxima, whichever lanes and groups
// found them.
func TestArgmaxTiesGoToTheFirst(t *testing.T) {
	dev := openTest(t)
	v := make([]float64, 5000)
	for _, i := range []int{4999, 1234, 64, 65, 3000} {
		v[i] = 7
	}
	ib := fresh[int32](t, dev, 1)
	require.NoError(t, Argmax(dev.Stream(), Of(upload[float32](t, dev, v)), 0, Of(ib)))
	require.Equal(t, []float64{64}, download(t, ib))
}

// A reduction of two passes records into a graph like any op: its
// partials live as long as the graph, and every replay sums the input of
// that replay.
func TestTwoPassSumReplays(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	const n = 3 * sumSpan
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i % 7)
	}
	xb := upload[float32](t, dev, v)
	out := fresh[float32](t, dev, 1)
	g, err := s.Capture(func(s *vkc.Stream) error { return Sum(s, Of(xb), 0, Of(out)) })
	require.NoError(t, err)
	defer g.Close()
	for _, k := range []float64{1, 2} {
		w := make([]float32, n)
		want := 0.0
		for i := range w {
			w[i] = float32(k * v[i])
			want += k * v[i]
		}
		require.NoError(t, xb.Write(w))
		require.NoError(t, g.Replay())
		require.Equal(t, []float64{want}, download(t, out))
	}
}

// Two-pass sums on several streams at once share the device's scratch
// and still each sum its own input.
func TestConcurrentTwoPassSums(t *testing.T) {
	dev := openTest(t)
	const workers, n = 3, 2*sumSpan + 8
	errs := make(chan error, workers)
	outs := make([]*vkc.Buffer[float32], workers)
	ins := make([]*vkc.Buffer[float32], workers)
	for w := range workers {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(w + 1)
		}
		ins[w], outs[w] = upload[float32](t, dev, v), fresh[float32](t, dev, 1)
	}
	for w := range workers {
		go func() {
			s := dev.NewStream()
			var err error
			for range 4 {
				err = errors.Join(err, Sum(s, Of(ins[w]), 0, Of(outs[w])))
			}
			errs <- errors.Join(err, s.Sync(context.Background()))
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	for w, o := range outs {
		require.Equal(t, []float64{float64((w + 1) * n)}, download(t, o))
	}
}

// TestSumAlongLongAxisSumsEveryTerm sums ones along axes of more than 64
// times the loop budget, the last axis (contiguous rows, and rows of an
// odd length for the reduce kernel's path) and axis 0 (strided): each
// sum must count every term.
func TestSumAlongLongAxisSumsEveryTerm(t *testing.T) {
	dev := openTest(t)
	for _, N := range []int{overBudget, overBudget + 1} {
		x := constants(t, dev, 2*N, 1)
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{2, N}, 1}, {[]int{N, 2}, 0}} {
			out := fresh[float32](t, dev, 2)
			require.NoError(t, Sum(dev.Stream(), Of(x, c.shape...), c.axis, Of(out, 2)))
			require.Equal(t, []float64{float64(N), float64(N)}, download(t, out), "Sum of ones %v along axis %d", c.shape, c.axis)
			require.NoError(t, Mean(dev.Stream(), Of(x, c.shape...), c.axis, Of(out, 2)))
			require.Equal(t, []float64{1, 1}, download(t, out), "Mean of ones %v along axis %d", c.shape, c.axis)
		}
	}
}

// TestMaxAlongLongAxisFindsTheLast puts the maximum last along axes of
// more than 64 times the loop budget; Argmax, a single pass, must find
// it or (on a CPU driver) refuse.
func TestMaxAlongLongAxisFindsTheLast(t *testing.T) {
	dev := openTest(t)
	const N = overBudget + 1
	xs := make([]float32, 2*N)
	xs[N-1], xs[2*N-1], xs[2*N-2] = 5, 7, 6 // [2, N]: row ends; [N, 2]: the last row
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	for _, c := range []struct {
		shape []int
		axis  int
		max   []float64
		arg   []uint32
	}{{[]int{2, N}, 1, []float64{5, 7}, []uint32{N - 1, N - 1}}, {[]int{N, 2}, 0, []float64{6, 7}, []uint32{N - 1, N - 1}}} {
		out := fresh[float32](t, dev, 2)
		require.NoError(t, Max(dev.Stream(), Of(x, c.shape...), c.axis, Of(out, 2)))
		require.Equal(t, c.max, download(t, out), "Max of %v along axis %d", c.shape, c.axis)
		idx := fresh[uint32](t, dev, 2)
		if refusedOnCPU(t, dev, Argmax(dev.Stream(), Of(x, c.shape...), c.axis, Of(idx, 2))) {
			continue
		}
		got, err := idx.Read(context.Background())
		require.NoError(t, err)
		require.Equal(t, c.arg, got, "Argmax of %v along axis %d", c.shape, c.axis)
	}
}

// TestDynamicReductionsWithinTheLoopBudget: a dynamic launch has as many
// groups as the param's rows at most, so at one row of [1, 8192, 600] a
// single group's lanes walk all 8192 outputs, 600 elements each, about
// 77,000 loop iterations a lane: a CPU driver must reduce every output
// or refuse.
func TestDynamicReductionsWithinTheLoopBudget(t *testing.T) {
	dev := openTest(t)
	const M, R = 8192, 600
	p, err := vkc.NewParam[uint32](dev, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	x := Of(constants(t, dev, M*R, 1), 1, M, R).Dynamic(p)
	t.Run("Sum", func(t *testing.T) {
		out := fresh[float32](t, dev, M)
		require.NoError(t, Fill(dev.Stream(), 0, Of(out, M)))
		if refusedOnCPU(t, dev, Sum(dev.Stream(), x, 2, Of(out, 1, M).Dynamic(p))) {
			return
		}
		requireEvery(t, out, R)
	})
	t.Run("Argmax", func(t *testing.T) {
		out := fresh[uint32](t, dev, M)
		require.NoError(t, Fill(dev.Stream(), 7, Of(out, M)))
		if refusedOnCPU(t, dev, Argmax(dev.Stream(), x, 2, Of(out, 1, M).Dynamic(p))) {
			return
		}
		requireEvery(t, out, 0)
	})
}
