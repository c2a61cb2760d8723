package main

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/cmd/vkbench/internal/openblas"
)

// openblasShapes are the shapes at which the matmul suite shows OpenBLAS's
// cblas_sgemm: the squares of the project's matmul target and every shape
// that is not a square (a batch is one call per product).
func openblasShapes() []matmulShape {
	out := []matmulShape{{m: 1024, n: 1024, k: 1024}, {m: 2048, n: 2048, k: 2048}}
	for _, sh := range matmulShapes(false) {
		if sh.m != sh.n || sh.n != sh.k || sh.b > 0 {
			out = append(out, sh)
		}
	}
	return out
}

// addOpenBLAS appends the "openblas" matmul figures (GFLOP/s of
// cblas_sgemm on the same inputs, its own threads on the same cores,
// checked against the float64 reference as vkc's matmul is) where
// libopenblas.so.0 loads at run time, and a note where it does not: a tuned
// CPU sgemm as the ceiling beside vkc's matmul and the C baseline, never a
// build dependency. It is measured after the suite's shapes, alone, so its
// threads do not share the cores with vkc's.
func addOpenBLAS(cfg settings, env map[string]string, res *suiteResult) {
	if err := openblas.Open(); err != nil {
		if errors.Is(err, openblas.ErrMissing) {
			res.Notes = append(res.Notes, fmt.Sprintf("matmul: no openblas figure: %v (install OpenBLAS, e.g. libopenblas0, to show it)", err))
			return
		}
		res.fail(err)
		return
	}
	for _, sh := range openblasShapes() {
		cfg.progress.Printf("matmul: openblas %dx%dx%d (batches %d)", sh.m, sh.n, sh.k, sh.batches())
		nb := sh.batches()
		as, bs, cs := make([]float32, nb*sh.m*sh.k), make([]float32, nb*sh.k*sh.n), make([]float32, nb*sh.m*sh.n)
		matmulInputs(as, bs)
		flops := 2 * float64(sh.m) * float64(sh.n) * float64(sh.k) * float64(nb)
		perFlop, err := measure(cfg, measureSpec{
			op: func() (float64, error) {
				for i := range nb {
					a, b, c := as[i*sh.m*sh.k:(i+1)*sh.m*sh.k], bs[i*sh.k*sh.n:(i+1)*sh.k*sh.n], cs[i*sh.m*sh.n:(i+1)*sh.m*sh.n]
					if err := openblas.SgemmShape(sh.m, sh.n, sh.k, a, b, c); err != nil {
						return 0, err
					}
				}
				return flops, nil
			},
			reset: func() error { clear(cs); return nil },
			check: func() error { return checkMatmul(sh, as, bs, cs) },
		})
		if err != nil {
			res.fail(fmt.Errorf("openblas %dx%dx%d: %w", sh.m, sh.n, sh.k, err))
			continue
		}
		res.Figures = append(res.Figures, timedFigure(Figure{
			Suite: "matmul", Name: "openblas", Params: sh.params(),
			Unit: "GFLOP/s", Env: env, Elem: "float32",
		}, perFlop, func(s float64) float64 { return 1 / s / 1e9 }))
	}
	res.Notes = append(res.Notes, "matmul: openblas is OpenBLAS's cblas_sgemm ("+openblas.Library+", loaded at run time) on the same inputs and cores: a tuned CPU sgemm, the ceiling on a CPU driver, not a target")
}
