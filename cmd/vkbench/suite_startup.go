package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// startupSize is the side of the square Matmul a startup probe runs first.
func startupSize(quick bool) int {
	if quick {
		return 64
	}
	return 256
}

// The startup figures: what a fresh process waits for before its first
// result, with every cache empty, with the caches an earlier process left,
// and with those of the driver but not vkc's pipeline cache.
const (
	startupCold     = "cold"
	startupWarm     = "warm"
	startupWarmNoVK = "warm-vkc-cache-off"
)

// runStartup measures Open plus the first Matmul (upload, launch, read
// back) in fresh processes (vkbench -startup-probe): cold, with an empty
// cache directory, and warm, with what the previous process saved there.
// Each process gets the directory as $XDG_CACHE_HOME, so the driver's own
// disk cache (Mesa keeps one) is cold or warm with vkc's; the third figure
// turns vkc's pipeline cache off with the driver's cache warm, to show
// what vkc's adds. The rounds interleave the three, so each sees the same
// machine conditions.
func runStartup(cfg settings) (*suiteResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	if err := dev.Close(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "vkbench-startup-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	probe := func(cache string) (float64, error) {
		return runStartupProbe(exe, dir, cache, cfg)
	}
	empty := func() error {
		entries, err := os.ReadDir(dir)
		for _, e := range entries {
			if err == nil {
				err = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		return err
	}
	specs := []struct {
		name, cache string
		before      func() error
	}{
		{startupCold, "on", empty},
		{startupWarm, "on", nil},
		{startupWarmNoVK, "off", nil},
	}
	runs := make([][]float64, len(specs))
	for round := range cfg.count {
		for i, s := range specs {
			cfg.progress.Printf("startup: %s, run %d of %d", s.name, round+1, cfg.count)
			// A warm run follows the round's cold one, whose process left
			// the caches behind.
			if s.before != nil {
				if err := s.before(); err != nil {
					return nil, err
				}
			}
			secs, err := probe(s.cache)
			if err != nil {
				return nil, fmt.Errorf("startup %s: %w", s.name, err)
			}
			runs[i] = append(runs[i], secs)
		}
	}
	n := int64(startupSize(cfg.quick))
	for i, s := range specs {
		res.Figures = append(res.Figures, timedFigure(Figure{Suite: "startup", Name: s.name,
			Params: map[string]int64{"m": n, "n": n, "k": n}, Unit: "ms", Env: env},
			runs[i], func(sec float64) float64 { return sec * 1e3 }))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "vkc", "*.vkpc"))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("startup: vkc's pipeline-cache file after a warm start: %d bytes", st.Size()))
		}
	}
	return res, nil
}

// startupProbeResult is what one probe process prints.
type startupProbeResult struct {
	Seconds float64 `json:"seconds"`
	Failure string  `json:"failure,omitempty"`
}

// runStartupProbe runs one fresh process that opens the device with its
// caches in dir and runs the first Matmul, and returns how long that took.
func runStartupProbe(exe, dir, cache string, cfg settings) (float64, error) {
	args := append([]string{"-startup-probe", cache}, childArgs("startup", cfg)[2:]...)
	cmd := exec.CommandContext(context.Background(), exe, args...)
	cmd.WaitDelay = killWaitDelay
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") && !strings.HasPrefix(kv, "VKC_PIPELINE_CACHE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+dir)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(os.Stderr)
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%w: startup probe: %v", ErrChild, err)
	}
	var r startupProbeResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return 0, fmt.Errorf("%w: startup probe: output is not a result: %v", ErrChild, err)
	}
	if r.Failure != "" {
		return 0, fmt.Errorf("%w: startup probe: %s", ErrMismatch, r.Failure)
	}
	return r.Seconds, nil
}

// startupProbe is the process runStartupProbe starts: it times Open with
// vkc's pipeline cache on (its default place, the user's cache
// directory) or off, the upload of two matrices, the first Matmul and the
// read of its result; then it checks the result against a float64
// reference and closes the device (saving the cache), off the clock.
func startupProbe(stdout io.Writer, cache string, cfg settings) error {
	n := startupSize(cfg.quick)
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = rng.Float32()*2-1, rng.Float32()*2-1
	}
	opts := []vkc.Option{vkc.WithValidation(cfg.validate)}
	if cfg.device != "" {
		opts = append(opts, vkc.WithDevice(cfg.device))
	}
	if cache == "off" {
		opts = append(opts, vkc.WithPipelineCache(""))
	}
	start := time.Now()
	dev, err := vkc.Open(opts...)
	if err != nil {
		return err
	}
	defer dev.Close()
	got, err := firstMatmul(dev, a, b, n)
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	r := startupProbeResult{Seconds: elapsed.Seconds()}
	if err := checkStartupMatmul(a, b, got, n); err != nil {
		r.Failure = err.Error()
	}
	if err := dev.Close(); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(r)
}

// firstMatmul uploads a and b, multiplies them and reads the product.
func firstMatmul(dev *vkc.Device, a, b []float32, n int) ([]float32, error) {
	ab, err := vkc.FromSlice(dev, a)
	if err != nil {
		return nil, err
	}
	bb, err := vkc.FromSlice(dev, b)
	if err != nil {
		return nil, err
	}
	cb, err := vkc.NewBuffer[float32](dev, n*n)
	if err != nil {
		return nil, err
	}
	// The variant by rule, not by timing the ones that apply: the figure
	// is Open, one kernel's pipeline and the product, as it was when the
	// product had one kernel per shape.
	err = ops.Matmul(dev.Stream(), ops.Of(ab, n, n), ops.Of(bb, n, n), ops.Of(cb, n, n), ops.MatmulOptions[float32]{Heuristic: true})
	if err != nil {
		return nil, err
	}
	return cb.Read(context.Background())
}

// checkStartupMatmul compares every entry of c with a float64 product of
// a and b, relative to the sum of the terms' magnitudes, at the tolerance
// of the matmul suite (1e-4: float32 accumulation with room to spare).
func checkStartupMatmul(a, b, c []float32, n int) error {
	for i := range n {
		for j := range n {
			var want, scale float64
			for p := range n {
				t := float64(a[i*n+p]) * float64(b[p*n+j])
				want += t
				scale += math.Abs(t)
			}
			if math.Abs(want-float64(c[i*n+j])) > 1e-4*max(scale, 1) {
				return fmt.Errorf("startup Matmul: C[%d,%d] = %g, want %g", i, j, c[i*n+j], want)
			}
		}
	}
	return nil
}
