package main

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/cmd/vkbench/internal/openblas"
)

// openblasSides are the squares at which the matmul suite shows OpenBLAS's
// cblas_sgemm: the sizes of the project's matmul target.
var openblasSides = []int{1024, 2048}

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
	for _, n := range openblasSides {
		sh := matmulShape{n, n, n}
		cfg.progress.Printf("matmul: openblas %dx%dx%d", n, n, n)
		as, bs, cs := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		matmulInputs(as, bs)
		flops := 2 * float64(n) * float64(n) * float64(n)
		perFlop, err := measure(cfg, measureSpec{
			op:    func() (float64, error) { return flops, openblas.Sgemm(n, as, bs, cs) },
			reset: func() error { clear(cs); return nil },
			check: func() error { return checkMatmul(sh, as, bs, cs) },
		})
		if err != nil {
			res.fail(fmt.Errorf("openblas %dx%dx%d: %w", n, n, n, err))
			continue
		}
		res.Figures = append(res.Figures, timedFigure(Figure{
			Suite: "matmul", Name: "openblas",
			Params: map[string]int64{"m": int64(n), "n": int64(n), "k": int64(n)},
			Unit:   "GFLOP/s", Env: env, Elem: "float32",
		}, perFlop, func(s float64) float64 { return 1 / s / 1e9 }))
	}
	res.Notes = append(res.Notes, "matmul: openblas is OpenBLAS's cblas_sgemm ("+openblas.Library+", loaded at run time) on the same inputs and cores: a tuned CPU sgemm, the ceiling on a CPU driver, not a target")
}
