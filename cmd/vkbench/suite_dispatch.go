package main

import (
	"context"
	"fmt"

	"github.com/vkcompute/vkc"
)

// dispatchN is the vector length of every dispatch figure: one workgroup,
// so the figure is the cost of a launch and not of the work.
const dispatchN = 256

// maxExactLaunches caps the launches between two result checks: y grows by
// x (0 or 1) per launch, and float32 counts exactly only up to 2^24.
const maxExactLaunches = 1 << 23

// dispatchKs are the chain lengths measured.
func dispatchKs(quick bool) []int {
	if quick {
		return []int{1, 10}
	}
	return []int{1, 10, 100, 1000}
}

// dispatchX is the chain's x: zeros and ones, so y after n launches is
// exactly n*x while n < 2^24.
func dispatchX() []float32 {
	xs := make([]float32, dispatchN)
	for i := range xs {
		xs[i] = float32(i % 2)
	}
	return xs
}

// checkChain compares y with launches*x and describes the first entries
// that differ.
func checkChain(what string, k int, xs, ys []float32, launches int) error {
	bad := 0
	var first string
	for i, x := range xs {
		want := float32(float64(launches) * float64(x))
		if ys[i] != want {
			if bad == 0 {
				first = fmt.Sprintf("y[%d] = %g, want %g", i, ys[i], want)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: dispatch %s K=%d after %d launches: %d of %d entries differ, first %s", ErrMismatch, what, k, launches, bad, len(xs), first)
	}
	return nil
}

// runDispatch measures a chain of K dependent axpy launches four ways on
// vkc (one submit per launch, batched, captured and replayed) and two on
// the raw vk/ path (replay, re-recorded batch), in ns per launch.
func runDispatch(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	xs := dispatchX()
	x, err := vkc.FromSlice(dev, xs)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	y, err := vkc.NewBuffer[float32](dev, dispatchN)
	if err != nil {
		return nil, err
	}
	defer y.Close()
	s := dev.Stream()
	ctx := context.Background()
	zeros := make([]float32, dispatchN)
	ys := make([]float32, dispatchN)

	raw, err := openRaw(cfg)
	if err != nil {
		return nil, fmt.Errorf("raw path: %w", err)
	}
	rawClosed := false
	defer func() {
		if !rawClosed {
			_ = raw.Close()
		}
	}()

	for _, k := range dispatchKs(cfg.quick) {
		var launches int
		resetY := func() error {
			launches = 0
			if err := y.Write(zeros); err != nil {
				return err
			}
			return s.Sync(ctx)
		}
		checkY := func(what string) func() error {
			return func() error {
				if err := y.ReadInto(ctx, s, ys); err != nil {
					return err
				}
				return checkChain(what, k, xs, ys, launches)
			}
		}
		chain := func(s *vkc.Stream) error {
			for range k {
				if err := vkc.Axpy(s, 1, x, y); err != nil {
					return err
				}
			}
			return nil
		}
		maxReps := maxExactLaunches / k
		ways := []struct {
			name string
			op   func() error
		}{
			{"eager", func() error {
				for range k {
					if err := vkc.Axpy(s, 1, x, y); err != nil {
						return err
					}
					if err := s.Sync(ctx); err != nil {
						return err
					}
				}
				return nil
			}},
			{"eager-batched", func() error {
				if err := chain(s); err != nil {
					return err
				}
				return s.Sync(ctx)
			}},
		}
		for _, way := range ways {
			cfg.progress.Printf("dispatch: %s K=%d", way.name, k)
			perLaunch, err := measure(cfg, measureSpec{
				op: func() (float64, error) {
					launches += k
					return float64(k), way.op()
				},
				reset: resetY, check: checkY(way.name), maxReps: maxReps,
			})
			if err != nil {
				res.fail(err)
				continue
			}
			res.Figures = append(res.Figures, dispatchFigure(way.name, k, perLaunch, cfg, env))
		}

		cfg.progress.Printf("dispatch: replay K=%d", k)
		if err := resetY(); err != nil {
			return nil, err
		}
		g, err := s.Capture(chain) // the warmup inside runs the chain once
		if err != nil {
			return nil, fmt.Errorf("capture of K=%d: %w", k, err)
		}
		perLaunch, err := measure(cfg, measureSpec{
			op: func() (float64, error) {
				launches += k
				if err := g.Replay(); err != nil {
					return 0, err
				}
				return float64(k), s.Sync(ctx)
			},
			reset: resetY, check: checkY("replay"), maxReps: maxReps,
		})
		if cerr := g.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			res.fail(err)
		} else {
			res.Figures = append(res.Figures, dispatchFigure("replay", k, perLaunch, cfg, env))
		}

		if err := measureRawDispatch(cfg, raw, res, xs, k, env); err != nil {
			return nil, fmt.Errorf("raw path, K=%d: %w", k, err)
		}
	}
	rawClosed = true
	if err := raw.Close(); err != nil {
		res.fail(err)
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// measureRawDispatch adds the raw path's replay and re-recorded batch of a
// K-chain to res. Result mismatches are failures in res; an error means the
// raw path itself could not run.
func measureRawDispatch(cfg settings, raw *rawDevice, res *suiteResult, xs []float32, k int, env map[string]string) error {
	chain, err := newRawAxpy(raw, xs, k)
	if err != nil {
		return err
	}
	defer chain.Close()
	var launches int
	reset := func() error {
		launches = 0
		return chain.ResetY()
	}
	check := func(what string) func() error {
		return func() error {
			ys, err := chain.Y()
			if err != nil {
				return err
			}
			return checkChain(what, k, xs, ys, launches)
		}
	}
	ways := []struct {
		name string
		op   func() error
	}{
		{"raw", chain.Replay},
		{"raw-batched", func() error { return chain.Batched(k) }},
	}
	for _, way := range ways {
		cfg.progress.Printf("dispatch: %s K=%d", way.name, k)
		perLaunch, err := measure(cfg, measureSpec{
			op: func() (float64, error) {
				launches += k
				return float64(k), way.op()
			},
			reset: reset, check: check(way.name), maxReps: maxExactLaunches / k,
		})
		if err != nil {
			res.fail(err)
			continue
		}
		res.Figures = append(res.Figures, dispatchFigure(way.name, k, perLaunch, cfg, env))
	}
	return nil
}

func dispatchFigure(name string, k int, secondsPerLaunch float64, cfg settings, env map[string]string) Figure {
	return Figure{
		Suite: "dispatch", Name: name, Params: map[string]int64{"k": int64(k)},
		Value: secondsPerLaunch * 1e9, Unit: "ns/launch", Samples: cfg.count, Env: env,
	}
}
