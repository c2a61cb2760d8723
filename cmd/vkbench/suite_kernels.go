package main

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/wgsl"
)

//go:generate glslc --target-env=vulkan1.1 -O -o kernels/reduce.spv kernels/reduce.comp

// The kernels suite's sources: a tiled matmul whose WGSL compilation is
// timed, and one pass of a sum written twice, in WGSL (compiled by package
// wgsl at run time) and in GLSL (compiled by glslc, committed), whose
// device times are compared.
var (
	//go:embed kernels/matmul.wgsl
	matmulWGSL string
	//go:embed kernels/reduce.wgsl
	reduceWGSL string
	//go:embed kernels/reduce.spv
	reduceGLSLSPIRV []byte
)

// The kernels suite's targets: compiling the tiled matmul from WGSL in a
// process whose cache does not hold it, compiling it again, and the WGSL
// sum's device time over the same sum compiled from GLSL by glslc.
const (
	compileColdTargetMs   = 5
	compileCachedTargetUs = 50
	reduceWGSLOverGLSL    = 1.2
)

// reduceWorkgroup is WG of reduce.wgsl and reduce.comp, and reducePartials
// the most workgroups the first pass runs.
const (
	reduceWorkgroup = 256
	reducePartials  = 64
)

// reduceLength is the number of floats the sum reads.
func reduceLength(quick bool) int {
	if quick {
		return 1 << 14
	}
	return 1 << 22
}

// runKernels measures the kernels suite: compile-cold (each timed compile
// of a source the cache has not seen: the matmul with a different comment
// appended), compile-cached (the same source again), and the device time
// of the two-pass sum from WGSL (with the translator's zeroing of
// workgroup memory dropped, as wgsl does by default, and kept) and from
// GLSL.
func runKernels(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()

	cfg.progress.Printf("kernels: compiling the tiled matmul from WGSL")
	variant := 0
	cold, err := measure(cfg, measureSpec{op: func() (float64, error) {
		variant++
		_, err := wgsl.Compile(fmt.Sprintf("%s\n// variant %d\n", matmulWGSL, variant), wgsl.Options{Name: "matmul"})
		return 1, err
	}})
	if err != nil {
		return nil, err
	}
	cached, err := measure(cfg, measureSpec{op: func() (float64, error) {
		_, err := wgsl.Compile(matmulWGSL, wgsl.Options{Name: "matmul"})
		return 1, err
	}})
	if err != nil {
		return nil, err
	}
	res.Figures = append(res.Figures,
		timedFigure(Figure{Suite: "kernels", Name: "compile-cold", Unit: "ms", Env: env}, cold, func(s float64) float64 { return s * 1e3 }),
		timedFigure(Figure{Suite: "kernels", Name: "compile-cached", Unit: "us", Env: env}, cached, func(s float64) float64 { return s * 1e6 }))
	if err := checkWGSLMatmul(dev); err != nil {
		res.fail(err)
	}

	n := reduceLength(cfg.quick)
	figs, err := reduceFigures(cfg, dev, n, env)
	if err != nil {
		return nil, err
	}
	res.Figures = append(res.Figures, figs.figures...)
	res.Failures = append(res.Failures, figs.failures...)
	return res, nil
}

// reduceResults are the sum's figures and the checks that failed.
type reduceResults struct {
	figures  []Figure
	failures []string
}

// reduceFigures times the two-pass sum over n floats from each module as
// device time (timeSums) and checks each module's total against Go.
func reduceFigures(cfg settings, dev *vkc.Device, n int, env map[string]string) (reduceResults, error) {
	var out reduceResults
	wgslSpec, err := wgsl.Compile(reduceWGSL, wgsl.Options{Name: "reduce-wgsl"})
	if err != nil {
		return out, err
	}
	zeroedSpec, err := wgsl.Compile(reduceWGSL, wgsl.Options{Name: "reduce-wgsl-zeroed", ZeroWorkgroupMemory: true})
	if err != nil {
		return out, err
	}
	specs := []vkc.KernelSpec{wgslSpec, {Name: "reduce-glsl", SPIRV: reduceGLSLSPIRV}, zeroedSpec}
	kernels := make([]*vkc.Kernel, len(specs))
	for i, spec := range specs {
		if kernels[i], err = dev.LoadKernel(spec); err != nil {
			return out, err
		}
		defer kernels[i].Close()
	}

	r := rand.New(rand.NewPCG(17, 19))
	x := make([]float32, n)
	var want, abs float64
	for i := range x {
		x[i] = r.Float32()*2 - 1
		want += float64(x[i])
		abs += math.Abs(float64(x[i]))
	}
	xb, err := vkc.FromSlice(dev, x)
	if err != nil {
		return out, err
	}
	defer xb.Close()
	groups := min((n+reduceWorkgroup-1)/reduceWorkgroup, reducePartials)
	partials, err := vkc.NewBuffer[float32](dev, groups)
	if err != nil {
		return out, err
	}
	defer partials.Close()
	total, err := vkc.NewBuffer[float32](dev, 1)
	if err != nil {
		return out, err
	}
	defer total.Close()
	s := dev.Stream()
	sum := func(k *vkc.Kernel) error {
		if err := k.Launch(s, [3]uint32{uint32(groups), 1, 1}, nil, xb, partials); err != nil {
			return err
		}
		return k.Launch(s, [3]uint32{1, 1, 1}, nil, partials, total)
	}

	for i, k := range kernels {
		if err := sum(k); err != nil { // warm-up, outside the figures
			return out, err
		}
		if err := checkTotal(specs[i].Name, total, want, abs, n); err != nil {
			out.failures = append(out.failures, err.Error())
		}
	}
	runs, err := timeSums(cfg, s, kernels, specs, sum)
	if err != nil {
		return out, err
	}
	for i, spec := range specs {
		out.figures = append(out.figures, timedFigure(Figure{Suite: "kernels", Name: spec.Name,
			Params: map[string]int64{"n": int64(n)}, Unit: "ms", Env: env}, runs[i], func(s float64) float64 { return s * 1e3 }))
	}
	return out, nil
}

// timeSums times sum with each kernel: each timed run is one Profile of
// reps rounds, each round one sum by every kernel in turn (the order
// rotating from round to round), so the kernels are compared launch by
// launch under the same load from whatever else runs on the machine. A
// kernel's figure for the run is the median of its sums' device times,
// which a sum slowed by another process does not move. runs[i] holds
// kernel i's seconds per sum, one per run.
func timeSums(cfg settings, s *vkc.Stream, kernels []*vkc.Kernel, specs []vkc.KernelSpec, sum func(*vkc.Kernel) error) (runs [][]float64, err error) {
	reps := 16
	if cfg.quick {
		reps = 2
	}
	runs = make([][]float64, len(kernels))
	for run := range cfg.count {
		cfg.progress.Printf("kernels: the sums, run %d of %d", run+1, cfg.count)
		p, err := s.Profile(func(*vkc.Stream) error {
			for round := range reps {
				for j := range kernels {
					if err := sum(kernels[(round+j)%len(kernels)]); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// A sum is two launches in a row of one kernel.
		sums := map[string][]float64{}
		for j := 0; j+1 < len(p.Launches); j += 2 {
			first, second := p.Launches[j], p.Launches[j+1]
			sums[first.Kernel] = append(sums[first.Kernel], (first.Device + second.Device).Seconds())
		}
		for i, spec := range specs {
			runs[i] = append(runs[i], median(sums[spec.Name]))
		}
	}
	return runs, nil
}

// checkTotal compares the sum's result with Go's float64 sum, within the
// error bound of float32 additions in any order.
func checkTotal(name string, total *vkc.Buffer[float32], want, abs float64, n int) error {
	got, err := total.Read(context.Background())
	if err != nil {
		return err
	}
	bound := (math.Ceil(math.Log2(float64(n))) + float64(n)/(reduceWorkgroup*reducePartials) + 2) * abs / (1 << 24)
	if math.Abs(float64(got[0])-want) > bound {
		return fmt.Errorf("kernels: %s summed %d floats to %g, Go to %g (bound %g)", name, n, got[0], want, bound)
	}
	return nil
}

// checkWGSLMatmul runs the compiled tiled matmul once on sizes no tile divides
// and compares it with Go, so the timed compilation is of a working kernel.
func checkWGSLMatmul(dev *vkc.Device) error {
	const m, n, k = 37, 29, 41
	spec, err := wgsl.Compile(matmulWGSL, wgsl.Options{Name: "matmul"})
	if err != nil {
		return err
	}
	kern, err := dev.LoadKernel(spec)
	if err != nil {
		return err
	}
	defer kern.Close()
	r := rand.New(rand.NewPCG(23, 29))
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = r.Float32()*2 - 1
	}
	for i := range b {
		b[i] = r.Float32()*2 - 1
	}
	ab, err := vkc.FromSlice(dev, a)
	if err != nil {
		return err
	}
	defer ab.Close()
	bb, err := vkc.FromSlice(dev, b)
	if err != nil {
		return err
	}
	defer bb.Close()
	db, err := vkc.FromSlice(dev, []uint32{m, n, k})
	if err != nil {
		return err
	}
	defer db.Close()
	cb, err := vkc.NewBuffer[float32](dev, m*n)
	if err != nil {
		return err
	}
	defer cb.Close()
	if err := kern.Launch(dev.Stream(), [3]uint32{(n + 15) / 16, (m + 15) / 16, 1}, nil, ab, bb, cb, db); err != nil {
		return err
	}
	c, err := cb.Read(context.Background())
	if err != nil {
		return err
	}
	for i := range m {
		for j := range n {
			var want, abs float64
			for l := range k {
				p := float64(a[i*k+l]) * float64(b[l*n+j])
				want += p
				abs += math.Abs(p)
			}
			if got := float64(c[i*n+j]); math.Abs(got-want) > float64(k)*abs/(1<<23) {
				return fmt.Errorf("kernels: the WGSL matmul's C[%d][%d] is %g, Go's %g", i, j, got, want)
			}
		}
	}
	return nil
}
