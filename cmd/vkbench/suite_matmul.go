package main

import (
	"context"
	"fmt"
	"math"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
	"github.com/vkcompute/vkc/ops"
)

// matmulShape is C[m x n] = A[m x k] · B[k x n], b times over b distinct
// pairs of matrices when b > 0 (a batched product).
type matmulShape struct{ m, n, k, b int }

// batches is the number of products (1 for an unbatched shape).
func (sh matmulShape) batches() int { return max(sh.b, 1) }

// params are the shape's figure parameters: m, n, k, and b when batched.
func (sh matmulShape) params() map[string]int64 {
	p := map[string]int64{"m": int64(sh.m), "n": int64(sh.n), "k": int64(sh.k)}
	if sh.b > 0 {
		p["b"] = int64(sh.b)
	}
	return p
}

// bandwidthBound reports whether the shape's speed is set by reading its
// operands (matrix-vector products, long K into few outputs): those
// figures are also given in bytes read per second, to set beside memcpy.
func (sh matmulShape) bandwidthBound() bool {
	return sh.m == 1 || sh.n == 1 || sh.k >= 64*max(sh.m, sh.n)
}

// matmulShapes are the squares 256..2048, one non-square shape whose
// sides are not multiples of any tile, the two matrix-vector products of
// a 4096 x 4096 matrix, a long-K product into a 3 x 16 output, and a
// batch of 32 small products.
func matmulShapes(quick bool) []matmulShape {
	if quick {
		return []matmulShape{{m: 64, n: 64, k: 64}, {m: 1, n: 64, k: 64}, {m: 4, n: 8, k: 16, b: 3}}
	}
	return []matmulShape{{m: 256, n: 256, k: 256}, {m: 512, n: 512, k: 512}, {m: 1024, n: 1024, k: 1024},
		{m: 2048, n: 2048, k: 2048}, {m: 1000, n: 3000, k: 500},
		{m: 1, n: 4096, k: 4096}, {m: 4096, n: 1, k: 4096}, {m: 3, n: 16, k: 100000}, {m: 128, n: 128, k: 64, b: 32}}
}

// naiveMaxSide is the largest square the C baseline's naive sgemm is
// measured at: it runs at about 1 GFLOP/s on lavapipe, so 2048 would take
// minutes per figure, and 512 is where the comparison is set.
const naiveMaxSide = 512

// matmulTolerance is the relative error allowed against the float64
// reference: float32 accumulation over k terms, with room to spare.
const matmulTolerance = 1e-4

// matmulSamples is how many entries of C are checked against the reference.
const matmulSamples = 64

// matmulInputs fills a and b with small integers, so that float32 products
// and sums are exact and any difference is a real error.
func matmulInputs(a, b []float32) {
	for i := range a {
		a[i] = float32((i*7)%13) - 6
	}
	for i := range b {
		b[i] = float32((i*5)%11) - 5
	}
}

// checkMatmul compares about 64 entries of c, spread over rows and columns,
// with a float64 reference.
func checkMatmul(sh matmulShape, a, b, c []float32) error {
	return checkMatmulTolerance(sh, a, b, c, matmulTolerance)
}

// checkMatmulTolerance is checkMatmul with a relative tolerance of its own:
// tol times the sum of the products' magnitudes (and at least tol). A
// batched shape's matrices follow one another in a, b and c.
func checkMatmulTolerance(sh matmulShape, a, b, c []float32, tol float64) error {
	for s := range matmulSamples {
		batch := (s * 7) % sh.batches()
		row := (s * 97) % sh.m
		col := (s*389 + 13) % sh.n
		a, b, c := a[batch*sh.m*sh.k:], b[batch*sh.k*sh.n:], c[batch*sh.m*sh.n:]
		var want, scale float64
		for q := range sh.k {
			p := float64(a[row*sh.k+q]) * float64(b[q*sh.n+col])
			want += p
			scale += math.Abs(p)
		}
		got := float64(c[row*sh.n+col])
		if math.Abs(got-want) > tol*max(scale, 1) {
			return fmt.Errorf("%w: matmul %dx%dx%d: C[%d][%d,%d] = %g, want %g", ErrMismatch, sh.m, sh.n, sh.k, batch, row, col, got, want)
		}
	}
	return nil
}

// runMatmul measures ops.Matmul ("matmul", tuned: its first call per
// shape class, outside the clock, times its variants; with -quick its
// fixed rule picks them instead; a batch is one call)
// in GFLOP/s (2·m·n·k per product), checking every shape's result against
// a float64 reference; for bandwidth-bound shapes also as "matmul-read",
// the bytes of A and B per second, to set beside the transfer suite's
// memcpy. Beside it on the squares the C baseline: its naive sgemm
// ("c-naive") up to naiveMaxSide, its register-blocked sgemm ("c-blocked",
// the 16 x 16 block vkc runs on a CPU driver, written out in plain C and
// GLSL) at every square, 1024 and 2048 included, and on a CPU driver vkc's
// own matmul_texel module run by plain C ("c-texel", the kernel ops.Matmul
// runs there for these shapes).
func runMatmul(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	base, err := openBaseline(cfg, dev)
	if err != nil {
		return nil, err
	}
	for _, sh := range matmulShapes(cfg.quick) {
		if err := matmulShapeRun(cfg, dev, base, sh, env, res); err != nil {
			_ = base.Close()
			return nil, fmt.Errorf("matmul %dx%dx%d: %w", sh.m, sh.n, sh.k, err)
		}
	}
	if err := base.Close(); err != nil {
		res.fail(fmt.Errorf("C baseline: %w", err))
	}
	if !cfg.quick {
		addOpenBLAS(cfg, env, res)
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// matmulShapeRun measures one shape: ops.Matmul and, on squares, the C
// baseline's sgemms round-robin with it.
func matmulShapeRun(cfg settings, dev *vkc.Device, base *cbase.Device, sh matmulShape, env map[string]string, res *suiteResult) error {
	cfg.progress.Printf("matmul: %dx%dx%d (batches %d)", sh.m, sh.n, sh.k, sh.batches())
	nb := sh.batches()
	as := make([]float32, nb*sh.m*sh.k)
	bs := make([]float32, nb*sh.k*sh.n)
	matmulInputs(as, bs)
	a, err := vkc.FromSlice(dev, as)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := vkc.FromSlice(dev, bs)
	if err != nil {
		return err
	}
	defer b.Close()
	c, err := vkc.NewBuffer[float32](dev, nb*sh.m*sh.n)
	if err != nil {
		return err
	}
	defer c.Close()
	s := dev.Stream()
	ctx := context.Background()
	cs := make([]float32, nb*sh.m*sh.n)
	flops := 2 * float64(sh.m) * float64(sh.n) * float64(sh.k) * float64(nb)
	check := func() error {
		if err := c.ReadInto(ctx, s, cs); err != nil {
			return err
		}
		return checkMatmul(sh, as, bs, cs)
	}
	var at, bt, ct ops.Tensor[float32]
	if sh.b > 0 {
		at, bt, ct = ops.Of(a, sh.b, sh.m, sh.k), ops.Of(b, sh.b, sh.k, sh.n), ops.Of(c, sh.b, sh.m, sh.n)
	} else {
		at, bt, ct = ops.Of(a, sh.m, sh.k), ops.Of(b, sh.k, sh.n), ops.Of(c, sh.m, sh.n)
	}
	names := []string{"matmul"}
	specs := []measureSpec{{
		op: func() (float64, error) {
			if err := ops.Matmul(s, at, bt, ct, ops.MatmulOptions[float32]{Heuristic: cfg.quick}); err != nil {
				return 0, err
			}
			return flops, s.Sync(ctx)
		},
		check: check,
	}}
	elems := []string{"float32"} // one per name: matmul's, then each baseline's
	bl, err := matmulBaselines(dev, base, sh, as, bs, flops)
	defer bl.close()
	if err != nil {
		return err
	}
	names, elems, specs = append(names, bl.names...), append(elems, bl.elems...), append(specs, bl.specs...)
	if dev.Info().Features.Has(vkc.FeatureStorage16|vkc.FeatureFloat16) && sh.b == 0 && !sh.bandwidthBound() {
		spec, done, err := matmulF16Spec(dev, sh, as, bs, flops, cfg.quick)
		if err != nil {
			return err
		}
		defer done()
		names, elems, specs = append(names, "matmul-f16"), append(elems, "Float16"), append(specs, spec)
	}
	perFlop, errs := measureInterleaved(cfg, specs)
	matmulFigures(res, env, sh, names, elems, perFlop, errs, flops)
	return nil
}

// matmulRuns are measured runs besides vkc's: their names, element types
// and specs, and what closes them.
type matmulRuns struct {
	names, elems []string
	specs        []measureSpec
	closers      []func()
}

func (r *matmulRuns) close() {
	for _, c := range r.closers {
		c()
	}
}

// matmulBaselines are the C baseline's sgemms that apply to sh (squares
// only): its naive one up to naiveMaxSide, its blocked one, and on a CPU
// driver vkc's own texel kernel in plain C.
func matmulBaselines(dev *vkc.Device, base *cbase.Device, sh matmulShape, as, bs []float32, flops float64) (*matmulRuns, error) {
	square := sh.m == sh.n && sh.n == sh.k && sh.b == 0
	baselines := []struct {
		name string
		ok   bool
		make func(n int, a, b []float32) (*cbase.Sgemm, error)
	}{
		{"c-naive", square && sh.n <= naiveMaxSide, base.NewSgemm},
		{"c-blocked", square && sh.n%4 == 0, base.NewSgemmBlocked},
		// vkc's own texel kernel in plain C, where vkc runs it for the shape.
		{"c-texel", square && sh.n%8 == 0 && dev.Info().Type == vkc.TypeCPU, base.NewSgemmTexel},
	}
	runs := &matmulRuns{}
	for _, bl := range baselines {
		if !bl.ok {
			continue
		}
		sg, err := bl.make(sh.n, as, bs)
		if err != nil {
			return runs, fmt.Errorf("C baseline %s: %w", bl.name, err)
		}
		runs.closers = append(runs.closers, func() { sg.Close() })
		runs.names, runs.elems = append(runs.names, bl.name), append(runs.elems, "float32")
		runs.specs = append(runs.specs, measureSpec{
			op: func() (float64, error) { return flops, sg.Run() },
			check: func() error {
				got, err := sg.C()
				if err != nil {
					return err
				}
				return checkMatmul(sh, as, bs, got)
			},
		})
	}
	return runs, nil
}

// matmulFigures records one shape's figures: GFLOP/s per run, and for
// bandwidth-bound shapes matmul's bytes of A and B read per second.
func matmulFigures(res *suiteResult, env map[string]string, sh matmulShape, names, elems []string, perFlop [][]float64, errs []error, flops float64) {
	for i, name := range names {
		if errs[i] != nil {
			res.fail(fmt.Errorf("%s: %w", name, errs[i]))
			continue
		}
		res.Figures = append(res.Figures, timedFigure(Figure{
			Suite: "matmul", Name: name, Params: sh.params(),
			Unit: "GFLOP/s", Env: env, Elem: elems[i],
		}, perFlop[i], func(s float64) float64 { return 1 / s / 1e9 }))
		if name == "matmul" && sh.bandwidthBound() {
			bytesPerFlop := 4 * float64(sh.batches()) * float64(sh.m*sh.k+sh.k*sh.n) / flops
			res.Figures = append(res.Figures, timedFigure(Figure{
				Suite: "matmul", Name: "matmul-read", Params: sh.params(),
				Unit: "GB/s", Env: env, Elem: elems[i],
			}, perFlop[i], func(s float64) float64 { return bytesPerFlop / s / 1e9 }))
		}
	}
}

// matmulF16Spec is ops.Matmul on Float16 copies of the inputs (small
// integers, exact in Float16), measured beside float32's: loads and
// stores in 16 bits, accumulation in float32; fixed (-quick) picks the
// kernel by rule instead of timing. done closes its buffers.
func matmulF16Spec(dev *vkc.Device, sh matmulShape, as, bs []float32, flops float64, fixed bool) (measureSpec, func(), error) {
	toHalf := func(xs []float32) []vkc.Float16 {
		out := make([]vkc.Float16, len(xs))
		for i, x := range xs {
			out[i] = vkc.Float16From(x)
		}
		return out
	}
	var closers []func() error
	done := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	a, err := vkc.FromSlice(dev, toHalf(as))
	if err != nil {
		return measureSpec{}, done, err
	}
	closers = append(closers, a.Close)
	b, err := vkc.FromSlice(dev, toHalf(bs))
	if err != nil {
		return measureSpec{}, done, err
	}
	closers = append(closers, b.Close)
	c, err := vkc.NewBuffer[vkc.Float16](dev, sh.m*sh.n)
	if err != nil {
		return measureSpec{}, done, err
	}
	closers = append(closers, c.Close)
	s := dev.Stream()
	ctx := context.Background()
	hs := make([]vkc.Float16, sh.m*sh.n)
	cs := make([]float32, sh.m*sh.n)
	return measureSpec{
		op: func() (float64, error) {
			if err := ops.Matmul(s, ops.Of(a, sh.m, sh.k), ops.Of(b, sh.k, sh.n), ops.Of(c, sh.m, sh.n), ops.MatmulOptions[vkc.Float16]{Heuristic: fixed}); err != nil {
				return 0, err
			}
			return flops, s.Sync(ctx)
		},
		check: func() error {
			if err := c.ReadInto(ctx, s, hs); err != nil {
				return err
			}
			for i, h := range hs {
				cs[i] = h.Float32()
			}
			return checkMatmulTolerance(sh, as, bs, cs, matmulF16Tolerance)
		},
	}, done, nil
}

// matmulF16Tolerance is the relative error allowed of a Float16 matmul:
// the inputs' products and sums are exact in float32, so the only error is
// the store's rounding to Float16, at most one unit in the last place
// (2^-10 of the value).
const matmulF16Tolerance = 1.0 / 1024
