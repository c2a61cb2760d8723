package blackbox_test

// The ops for Float16 and float64 (the doc comment of vkc.Float): each
// checked against a reference computed exactly (math/big) or in float64
// from the values the buffers hold, within a tolerance derived below from
// how the kernels compute. The worst error measured is logged per type
// and op (go test -v -run TestTypedOps ./blackbox).
//
// Units: u16 = 2^-10 is one unit in the last place of a Float16 relative
// to its value (a float32 -> float16 store errs by at most that, by half
// of it when the device rounds to nearest as lavapipe does); u32 = 2^-24
// and u64 = 2^-53 are float32's and float64's unit roundoffs (one correctly
// rounded operation errs by at most u times the exact result).

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

const (
	u16 = 1.0 / 1024
	u32 = 1.0 / (1 << 24)
	u64 = 1.0 / (1 << 53)
	// tiny16 is half the spacing of Float16's subnormals: a result that
	// rounds into them may err by that much absolutely.
	tiny16 = 1.0 / (1 << 25)
)

// typed is what the tests need of a Float type.
type typed[T vkc.Float] struct {
	name string
	from func(float64) T
	to   func(T) float64
	f16  bool
}

var (
	halfType   = typed[vkc.Float16]{"Float16", func(x float64) vkc.Float16 { return vkc.Float16From(float32(x)) }, func(h vkc.Float16) float64 { return float64(h.Float32()) }, true}
	doubleType = typed[float64]{"float64", func(x float64) float64 { return x }, func(x float64) float64 { return x }, false}
)

// worst tracks the largest error of an op as a fraction of its tolerance
// and in absolute terms, for the log.
type worst struct {
	ratio, abs float64
}

func (w *worst) check(t *testing.T, what string, i int, got, want, tol float64) {
	t.Helper()
	err := math.Abs(got - want)
	if err > tol || got != got {
		t.Fatalf("%s [%d]: got %v, want %v: error %.3g above the tolerance %.3g", what, i, got, want, err, tol)
	}
	if tol > 0 {
		w.ratio = max(w.ratio, err/tol)
	}
	w.abs = max(w.abs, err)
}

func (w *worst) log(t *testing.T, typ, op, tol string) {
	t.Logf("| %s | %s | %s | %.3g | %.2f |", typ, op, tol, w.abs, w.ratio)
}

// exactSum is the sum of xs computed exactly.
func exactSum(xs []float64) float64 {
	s := new(big.Float).SetPrec(2200)
	for _, x := range xs {
		s.Add(s, big.NewFloat(x))
	}
	f, _ := s.Float64()
	return f
}

func absSum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += math.Abs(x)
	}
	return s
}

// store is the tolerance of a result's final store: a Float16 store errs
// by at most one ulp (u16 relative, tiny16 absolute in the subnormals); a
// float64 result by none beyond the arithmetic.
func (ty typed[T]) store(ref float64) float64 {
	if ty.f16 {
		return u16*math.Abs(ref) + tiny16
	}
	return 0
}

// unit is the unit roundoff of the arithmetic the kernels do for T.
func (ty typed[T]) unit() float64 {
	if ty.f16 {
		return u32
	}
	return u64
}

func (ty typed[T]) random(rng *rand.Rand, n int, lo, hi float64, signed bool) ([]T, []float64) {
	xs, vs := make([]T, n), make([]float64, n)
	for i := range xs {
		v := lo + (hi-lo)*rng.Float64()
		if signed && rng.IntN(2) == 0 {
			v = -v
		}
		xs[i] = ty.from(v)
		vs[i] = ty.to(xs[i]) // the value the buffer holds
	}
	return xs, vs
}

func (ty typed[T]) values(xs []T) []float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = ty.to(x)
	}
	return vs
}

func runTypedOps[T vkc.Float](t *testing.T, dev *vkc.Device, ty typed[T]) {
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(18, 5))
	const n = 10007 // three reduction passes, a partial last group
	x, xv := ty.random(rng, n, 0, 2, true)
	y, yv := ty.random(rng, n, 0.5, 2, true) // away from zero: a divisor
	bx, by := upload(t, dev, x), upload(t, dev, y)
	bz := newBuffer[T](t, dev, n)
	u := ty.unit()

	// Element-wise: one operation in the kernel's arithmetic, correctly
	// rounded for + - * (u), within 2.5 ulp for / (Vulkan's precision for
	// OpFDiv: 3u), then the store.
	for _, op := range []struct {
		name  string
		run   func(*vkc.Stream, *vkc.Buffer[T], *vkc.Buffer[T], *vkc.Buffer[T]) error
		exact func(a, b float64) *big.Float
		ulps  float64
	}{
		{"add", opAdd[T], func(a, b float64) *big.Float {
			return new(big.Float).SetPrec(200).Add(big.NewFloat(a), big.NewFloat(b))
		}, 1},
		{"sub", opSub[T], func(a, b float64) *big.Float {
			return new(big.Float).SetPrec(200).Sub(big.NewFloat(a), big.NewFloat(b))
		}, 1},
		{"mul", opMul[T], func(a, b float64) *big.Float {
			return new(big.Float).SetPrec(200).Mul(big.NewFloat(a), big.NewFloat(b))
		}, 1},
		{"div", opDiv[T], func(a, b float64) *big.Float {
			return new(big.Float).SetPrec(200).Quo(big.NewFloat(a), big.NewFloat(b))
		}, 3},
	} {
		require.NoError(t, op.run(s, bx, by, bz))
		got := ty.values(read(t, s, bz))
		var w worst
		for i := range got {
			ref, _ := op.exact(xv[i], yv[i]).Float64()
			w.check(t, ty.name+" "+op.name, i, got[i], ref, op.ulps*u*math.Abs(ref)+ty.store(ref))
		}
		w.log(t, ty.name, op.name, fmt.Sprintf("%g·u·|r| + store", op.ulps))
	}

	// Axpy: a rounded to the arithmetic's type, a product and a sum, each
	// within u: 3u·(|a·x| + |y|), then the store. Scale: two roundings.
	const a = 0.3
	for _, op := range []struct {
		name string
		run  func(*vkc.Stream, float64, *vkc.Buffer[T], *vkc.Buffer[T]) error
		axpy bool
	}{{"axpy", opAxpyOf[T], true}, {"scale", opScaleOf[T], false}} {
		out := upload(t, dev, y)
		require.NoError(t, op.run(s, a, bx, out))
		got := ty.values(read(t, s, out))
		var w worst
		for i := range got {
			ref, bound := a*xv[i], 2*u*math.Abs(a*xv[i])
			if op.axpy {
				ref, bound = a*xv[i]+yv[i], 3*u*(math.Abs(a*xv[i])+math.Abs(yv[i]))
			}
			w.check(t, ty.name+" "+op.name, i, got[i], ref, bound+ty.store(ref)+u64*math.Abs(ref))
		}
		w.log(t, ty.name, op.name, "3u·(|ax|+|y|) + store")
	}

	// Sum and Dot: a tree of pairwise sums per group of 256 (8 levels; a
	// group of 256 folds in 8 steps), then the partials' passes, each
	// addition within u of its result: the error is at most
	// (levels)·u·Σ|terms| (Higham), then the store. A later pass on a CPU
	// driver is the wide float32 sum, whose group chains up to 2·8 + 16
	// additions per running sum, then 3 + 7 to reduce the group; on the 40
	// partials here at most 1 + 1 + 3 + 7 = 12, within the 16 allowed for
	// the later passes.
	// Products of two Float16 are exact in float32; in float64 one more u.
	levels := 3 * 8.0
	for _, op := range []struct {
		name  string
		run   func(out *vkc.Buffer[T]) error
		terms []float64
	}{
		{"sum", func(out *vkc.Buffer[T]) error { return opSum(s, bx, out) }, xv},
		{"dot", func(out *vkc.Buffer[T]) error { return opDot(t, s, bx, by, out) }, products(xv, yv)},
	} {
		out := newBuffer[T](t, dev, 1)
		require.NoError(t, op.run(out))
		got := ty.values(read(t, s, out))[0]
		ref := exactSum(op.terms)
		var w worst
		w.check(t, ty.name+" "+op.name, 0, got, ref, (levels+1)*u*absSum(op.terms)+ty.store(ref))
		w.log(t, ty.name, op.name, "25u·Σ|t| + store")
	}

	// Softmax over rows in [-4, 4]: exp of x - max in [-8, 0] within
	// Vulkan's 3 + 2|x| = 19 ulp for float32 (vkc's own float64 exp within
	// 20u), a row sum of cols terms (log2(cols)+1 levels of u), a
	// division (3u): below 64u relative to each output (which is at most
	// 1), then the store. The reference uses math.Exp, within 1 ulp of
	// float64, far below these.
	for _, shape := range [][2]int{{7, 333}, {3, 1000}} {
		rows, cols := shape[0], shape[1]
		src, sv := ty.random(rng, rows*cols, 0, 4, true)
		bs, bd := upload(t, dev, src), newBuffer[T](t, dev, rows*cols)
		if ty.name == "float64" {
			// GLSL has no double-precision exponential: ops refuses it.
			require.ErrorIs(t, opSoftmax(s, bs, bd, rows, cols), vkc.ErrUnsupported, "Softmax of float64")
			continue
		}
		require.NoError(t, opSoftmax(s, bs, bd, rows, cols))
		got := ty.values(read(t, s, bd))
		var w worst
		for r := range rows {
			row := sv[r*cols : (r+1)*cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = max(m, v)
			}
			var sum float64
			for _, v := range row {
				sum += math.Exp(v - m)
			}
			for c, v := range row {
				ref := math.Exp(v-m) / sum
				w.check(t, fmt.Sprintf("%s softmax %dx%d", ty.name, rows, cols), r*cols+c, got[r*cols+c], ref, 64*u*ref+ty.store(ref)+64*u64)
			}
		}
		w.log(t, ty.name, fmt.Sprintf("softmax %dx%d", rows, cols), "64u·r + store")
	}

	// Matmul: each C element a sum of K products in the arithmetic's type,
	// in whatever order the kernel forms it (sequentially, or in blocks of
	// eight fused multiply-adds added to the running sum, as matmul_wide
	// does): within K·u·Σ|a·b| (each product exact for Float16 in float32;
	// within u in float64, so K+1 there), then the store. 67x264x136 has N
	// and K multiples of 8 (matmul_wide's shapes on a CPU driver), M odd
	// and N one octet past its tile.
	for _, shape := range [][3]int{{67, 45, 129}, {64, 64, 64}, {67, 264, 136}} {
		m, nn, k := shape[0], shape[1], shape[2]
		av, aval := ty.random(rng, m*k, 0, 2, true)
		bv, bval := ty.random(rng, k*nn, 0, 2, true)
		ba, bb, bc := upload(t, dev, av), upload(t, dev, bv), newBuffer[T](t, dev, m*nn)
		require.NoError(t, opMatmul(s, ba, bb, bc, m, nn, k))
		got := ty.values(read(t, s, bc))
		var w worst
		for i := range m {
			for j := range nn {
				terms := make([]float64, k)
				for l := range k {
					terms[l] = aval[i*k+l] * bval[l*nn+j] // for the bound only
				}
				ref := exactProducts(aval, bval, i, j, m, nn, k)
				w.check(t, fmt.Sprintf("%s matmul %dx%dx%d", ty.name, m, nn, k), i*nn+j, got[i*nn+j], ref,
					float64(k+1)*u*absSum(terms)*(1+u)+ty.store(ref))
			}
		}
		w.log(t, ty.name, fmt.Sprintf("matmul %dx%dx%d", m, nn, k), "(K+1)u·Σ|ab| + store")
	}
}

func products(x, y []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * y[i]
	}
	return out
}

// exactProducts is C[i][j] of A·B computed exactly.
func exactProducts(a, b []float64, i, j, m, n, k int) float64 {
	s := new(big.Float).SetPrec(2400)
	for l := range k {
		p := new(big.Float).SetPrec(2400).Mul(big.NewFloat(a[i*k+l]), big.NewFloat(b[l*n+j]))
		s.Add(s, p)
	}
	f, _ := s.Float64()
	return f
}

// The element-wise ops, Sum, Dot, Softmax and Matmul on Float16 and
// float64 agree with exact (or float64) references within the derived
// tolerances; the log is the table of the worst error per type and op
// (| type | op | tolerance | worst absolute error | worst error / tolerance |).
func TestTypedOpsWithinDerivedTolerance(t *testing.T) {
	dev := openDevice(t)
	t.Log("| type | op | tolerance | worst abs error | worst/tolerance |")
	t.Run("Float16", func(t *testing.T) { runTypedOps(t, dev, halfType) })
	if !dev.Info().Features.Has(vkc.FeatureFloat64) {
		t.Skip("the device lacks shaderFloat64")
	}
	t.Run("float64", func(t *testing.T) { runTypedOps(t, dev, doubleType) })
}

// The typed ops on a device without the type's feature are refused with
// ErrUnsupported; float32 buffers take the float32 ops.
func TestTypedOpsRefusedWithoutFeature(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	x := upload(t, dev, []float32{1, 2, 3})
	out := newBuffer[float32](t, dev, 1)
	require.NoError(t, opSum(s, x, out))
	require.Equal(t, []float32{6}, read(t, s, out), "SumOf on float32 is Sum")

	if !dev.Info().Features.Has(vkc.FeatureFloat64) {
		t.Skip("the device lacks shaderFloat64")
	}
	d := upload(t, dev, []float64{1, 2, 3})
	// A device opened without float64 makes no float64 buffer, so no op
	// there meets one; an op given another device's float64 buffers on its
	// stream is refused before any kernel is chosen.
	less := openDevice(t, vkc.WithoutFeatures(vkc.FeatureFloat64))
	_, err := vkc.NewBuffer[float64](less, 3)
	require.ErrorIs(t, err, vkc.ErrUnsupported, "a float64 buffer on a device without shaderFloat64")
	require.Error(t, opAdd(less.Stream(), d, d, d), "float64 buffers of another device")
	require.Equal(t, []float64{1, 2, 3}, read(t, s, d), "the refused op changed nothing")
}

// runTypedDyn checks each op over dynamic rows (Mul, Softmax but on
// float64, Matmul; ops has no dynamic reduction) against the static op on
// the prefix the length covers (the same kernels' math: equal bit for
// bit), the tail left as it was, eagerly and replayed from one graph as
// the length changes (docs/guide/capture.md "Changing a graph without
// re-capturing it").
func runTypedDyn[T vkc.Float](t *testing.T, dev *vkc.Device, ty typed[T]) {
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(7, 7))
	const capacity, cols, nn, k = 900, 30, 12, 20 // 30 rows of softmax, 45 rows of matmul
	x, _ := ty.random(rng, capacity, 0, 2, true)
	y, _ := ty.random(rng, capacity, 0.5, 2, true)
	bx, by := upload(t, dev, x), upload(t, dev, y)
	mb, _ := ty.random(rng, k*nn, 0, 2, true)
	bb := upload(t, dev, mb)
	sentinel := ty.from(7)
	fill := func(n int) []T {
		out := make([]T, n)
		for i := range out {
			out[i] = sentinel
		}
		return out
	}
	z := upload(t, dev, fill(capacity))
	soft, mat := upload(t, dev, fill(capacity)), upload(t, dev, fill(capacity/k*nn))
	n := newParam(t, dev, uint32(capacity))
	rows := newParam(t, dev, uint32(1))
	mrows := newParam(t, dev, uint32(1))
	softmax := ty.name != "float64" // GLSL has no double-precision exponential
	step := func(s *vkc.Stream) error {
		var soft1 error
		if softmax {
			soft1 = opSoftmaxDyn(s, bx, soft, rows, cols)
		}
		for _, err := range []error{
			opMulDyn(s, bx, by, z, n),
			soft1,
			opMatmulDyn(s, bx, bb, mat, mrows, nn, k),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	}
	g, err := s.Capture(step)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	for round, length := range []int{900, 257, 1, 600} {
		require.NoError(t, n.Set(uint32(length)))
		r, mr := min(length/cols+1, capacity/cols), min(length/k+1, capacity/k)
		require.NoError(t, rows.Set(uint32(r)))
		require.NoError(t, mrows.Set(uint32(mr)))
		zBefore, softBefore, matBefore := read(t, s, z), read(t, s, soft), read(t, s, mat)
		if round%2 == 0 {
			require.NoError(t, step(s), "eager")
		} else {
			require.NoError(t, g.Replay(), "replayed")
		}
		prefix := func(b *vkc.Buffer[T], n int) *vkc.Buffer[T] {
			return upload(t, dev, read(t, s, b)[:n])
		}
		zs := read(t, s, z)
		part := newBuffer[T](t, dev, length)
		require.NoError(t, opMul(s, prefix(bx, length), prefix(by, length), part))
		require.Equal(t, bitsOf(read(t, s, part)), bitsOf(zs[:length]), "%s mul n=%d", ty.name, length)
		require.Equal(t, bitsOf(zBefore[length:]), bitsOf(zs[length:]), "%s mul n=%d: tail untouched", ty.name, length)

		if softmax {
			sm := newBuffer[T](t, dev, r*cols)
			require.NoError(t, opSoftmax(s, prefix(bx, r*cols), sm, r, cols))
			got := read(t, s, soft)
			require.Equal(t, bitsOf(read(t, s, sm)), bitsOf(got[:r*cols]), "%s softmax rows=%d", ty.name, r)
			require.Equal(t, bitsOf(softBefore[r*cols:]), bitsOf(got[r*cols:]), "%s softmax rows=%d: later rows untouched", ty.name, r)
		}

		mm := newBuffer[T](t, dev, mr*nn)
		require.NoError(t, opMatmul(s, prefix(bx, mr*k), bb, mm, mr, nn, k))
		gotm := read(t, s, mat)
		require.Equal(t, bitsOf(read(t, s, mm)), bitsOf(gotm[:mr*nn]), "%s matmul rows=%d", ty.name, mr)
		require.Equal(t, bitsOf(matBefore[mr*nn:]), bitsOf(gotm[mr*nn:]), "%s matmul rows=%d: later rows untouched", ty.name, mr)
	}
}

// The ops over dynamic rows on Float16 and float64 compute what the
// static ops compute on the prefix their length covers, eagerly and in a
// replayed graph whose lengths change.
func TestTypedDynOpsMatchStaticOnPrefix(t *testing.T) {
	dev := openDevice(t)
	t.Run("Float16", func(t *testing.T) { runTypedDyn(t, dev, halfType) })
	if dev.Info().Features.Has(vkc.FeatureFloat64) {
		t.Run("float64", func(t *testing.T) { runTypedDyn(t, dev, doubleType) })
	}
}
