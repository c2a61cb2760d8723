package main

import (
	"context"
	"fmt"
	"math"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
)

// matmulShape is C[m x n] = A[m x k] · B[k x n].
type matmulShape struct{ m, n, k int }

// matmulShapes are the squares 256..2048 and one non-square shape whose
// sides are not multiples of any tile.
func matmulShapes(quick bool) []matmulShape {
	if quick {
		return []matmulShape{{64, 64, 64}}
	}
	return []matmulShape{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1000, 3000, 500}}
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
// tol times the sum of the products' magnitudes (and at least tol).
func checkMatmulTolerance(sh matmulShape, a, b, c []float32, tol float64) error {
	for s := range matmulSamples {
		row := (s * 97) % sh.m
		col := (s*389 + 13) % sh.n
		var want, scale float64
		for q := range sh.k {
			p := float64(a[row*sh.k+q]) * float64(b[q*sh.n+col])
			want += p
			scale += math.Abs(p)
		}
		got := float64(c[row*sh.n+col])
		if math.Abs(got-want) > tol*max(scale, 1) {
			return fmt.Errorf("%w: matmul %dx%dx%d: C[%d,%d] = %g, want %g", ErrMismatch, sh.m, sh.n, sh.k, row, col, got, want)
		}
	}
	return nil
}

// runMatmul measures vkc.Matmul in GFLOP/s (2·m·n·k per product), checking
// every shape's result against a float64 reference, and beside it on the
// squares the C baseline: its naive sgemm ("c-naive") up to naiveMaxSide,
// its register-blocked sgemm ("c-blocked", the 16 x 16 block vkc runs on a
// CPU driver, written out in plain C and GLSL) at every square, 1024 and
// 2048 included, and on a CPU driver vkc's own matmul_texel module run by
// plain C ("c-texel", the kernel vkc runs there for these shapes).
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

// matmulShapeRun measures one shape: vkc's matmul and, on squares, the C
// baseline's sgemms round-robin with it.
func matmulShapeRun(cfg settings, dev *vkc.Device, base *cbase.Device, sh matmulShape, env map[string]string, res *suiteResult) error {
	cfg.progress.Printf("matmul: %dx%dx%d", sh.m, sh.n, sh.k)
	as := make([]float32, sh.m*sh.k)
	bs := make([]float32, sh.k*sh.n)
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
	c, err := vkc.NewBuffer[float32](dev, sh.m*sh.n)
	if err != nil {
		return err
	}
	defer c.Close()
	s := dev.Stream()
	ctx := context.Background()
	cs := make([]float32, sh.m*sh.n)
	flops := 2 * float64(sh.m) * float64(sh.n) * float64(sh.k)
	names := []string{"matmul"}
	specs := []measureSpec{{
		op: func() (float64, error) {
			if err := vkc.Matmul(s, a, b, c, sh.m, sh.n, sh.k); err != nil {
				return 0, err
			}
			return flops, s.Sync(ctx)
		},
		check: func() error {
			if err := c.ReadInto(ctx, s, cs); err != nil {
				return err
			}
			return checkMatmul(sh, as, bs, cs)
		},
	}}
	square := sh.m == sh.n && sh.n == sh.k
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
	elems := []string{"float32"} // one per name: matmul's, then each baseline's
	for _, bl := range baselines {
		if !bl.ok {
			continue
		}
		sg, err := bl.make(sh.n, as, bs)
		if err != nil {
			return fmt.Errorf("C baseline %s: %w", bl.name, err)
		}
		defer sg.Close()
		names, elems = append(names, bl.name), append(elems, "float32")
		specs = append(specs, measureSpec{
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
	if dev.Info().Features.Has(vkc.FeatureStorage16 | vkc.FeatureFloat16) {
		spec, done, err := matmulF16Spec(dev, sh, as, bs, flops)
		if err != nil {
			return err
		}
		defer done()
		names, elems, specs = append(names, "matmul-f16"), append(elems, "Float16"), append(specs, spec)
	}
	perFlop, errs := measureInterleaved(cfg, specs)
	for i, name := range names {
		if errs[i] != nil {
			res.fail(fmt.Errorf("%s: %w", name, errs[i]))
			continue
		}
		res.Figures = append(res.Figures, timedFigure(Figure{
			Suite: "matmul", Name: name,
			Params: map[string]int64{"m": int64(sh.m), "n": int64(sh.n), "k": int64(sh.k)},
			Unit:   "GFLOP/s", Env: env, Elem: elems[i],
		}, perFlop[i], func(s float64) float64 { return 1 / s / 1e9 }))
	}
	return nil
}

// matmulF16Spec is vkc.MatmulOf on Float16 copies of the inputs (small
// integers, exact in Float16), measured beside float32's: loads and
// stores in 16 bits, accumulation in float32. done closes its buffers.
func matmulF16Spec(dev *vkc.Device, sh matmulShape, as, bs []float32, flops float64) (measureSpec, func(), error) {
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
			if err := vkc.MatmulOf(s, a, b, c, sh.m, sh.n, sh.k); err != nil {
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
