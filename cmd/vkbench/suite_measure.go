package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
)

// ErrMismatch means a suite's result check failed: the figure measured wrong
// work, so vkbench reports what differed and exits non-zero.
var ErrMismatch = errors.New("vkbench: result mismatch")

// settings are what every suite needs from the command line.
type settings struct {
	// count is the number of timed runs per figure; the figure is their median.
	count int
	// minTime is how long one timed run repeats the operation at least.
	minTime time.Duration
	// quick shrinks every size so that a test can run each suite in moments.
	quick bool
	// device picks the device by index or name substring ("" is the best).
	device string
	// validate turns on the Khronos validation layer.
	validate bool
	// progress shows which figure is being measured, on a terminal only.
	progress *progress
}

// suiteResult is what one suite measured, and what a child process prints
// to its parent as JSON.
type suiteResult struct {
	Device  DeviceDesc `json:"device"`
	Figures []Figure   `json:"figures"`
	Notes   []string   `json:"notes,omitempty"`
	// Failures lists every correctness check that failed, with what differed.
	Failures []string `json:"failures,omitempty"`
}

// fail records a failed check; the suite carries on so that one wrong
// figure does not hide the others.
func (r *suiteResult) fail(err error) {
	r.Failures = append(r.Failures, err.Error())
}

// measureSpec describes one timed figure: op does the work once and reports
// how many units (launches, bytes, operations) it did; reset runs before
// each timed run, outside the clock, and check after it, also outside.
type measureSpec struct {
	op    func() (units float64, err error)
	reset func() error
	check func() error
	// maxReps caps the repetitions of op per run (0: no cap), for work whose
	// result check only holds up to some number of repetitions.
	maxReps int
}

// measure times spec.op: count runs, each repeating op until minTime has
// passed, and returns each run's seconds per unit, in the order they ran.
// One untimed op first warms caches, pipelines and memory pools.
func measure(cfg settings, spec measureSpec) (secondsPerUnit []float64, err error) {
	runs, errs := measureInterleaved(cfg, []measureSpec{spec})
	return runs[0], errs[0]
}

// measureInterleaved times several figures round-robin: each of the count
// rounds takes one run of every spec in turn, so figures that are compared
// with each other (a copy and memcpy) see the same machine conditions
// rather than whatever a shared host was doing seconds apart. A spec that
// fails drops out with its error; the others go on. runs[i] holds spec i's
// seconds per unit, one per timed run.
func measureInterleaved(cfg settings, specs []measureSpec) (runs [][]float64, errs []error) {
	errs = make([]error, len(specs))
	samples := make([][]float64, len(specs))
	for i, spec := range specs {
		if spec.reset != nil {
			errs[i] = spec.reset()
		}
		if errs[i] == nil {
			_, errs[i] = spec.op()
		}
	}
	for range cfg.count {
		for i, spec := range specs {
			if errs[i] != nil {
				continue
			}
			var per float64
			per, errs[i] = sampleRun(cfg, spec)
			samples[i] = append(samples[i], per)
		}
	}
	return samples, errs
}

// timedFigure completes f from its timed runs, given in seconds per unit:
// toUnit converts one into f.Unit, Runs keeps every run so converted,
// Value is their median and Samples their count.
func timedFigure(f Figure, secondsPerUnit []float64, toUnit func(float64) float64) Figure {
	f.Runs = make([]float64, len(secondsPerUnit))
	for i, s := range secondsPerUnit {
		f.Runs[i] = toUnit(s)
	}
	f.Value = median(f.Runs)
	f.Samples = len(f.Runs)
	return f
}

// sampleRun is one timed run of spec: reset, op repeated until minTime (or
// maxReps), then check; it returns seconds per unit.
func sampleRun(cfg settings, spec measureSpec) (float64, error) {
	if spec.reset != nil {
		if err := spec.reset(); err != nil {
			return 0, err
		}
	}
	var units float64
	reps := 0
	start := time.Now()
	for {
		u, err := spec.op()
		if err != nil {
			return 0, err
		}
		units += u
		reps++
		if time.Since(start) >= cfg.minTime || (spec.maxReps > 0 && reps >= spec.maxReps) {
			break
		}
	}
	elapsed := time.Since(start).Seconds()
	if spec.check != nil {
		if err := spec.check(); err != nil {
			return 0, err
		}
	}
	return elapsed / units, nil
}

// median is the middle of xs (the mean of the two middle values for an even
// count); it does not reorder xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// openDevice opens the device the settings name; with none named, vkc's
// own choice (VKC_DEVICE, else the best) stands.
func openDevice(cfg settings, extra ...vkc.Option) (*vkc.Device, error) {
	opts := []vkc.Option{vkc.WithValidation(cfg.validate)}
	if cfg.device != "" {
		opts = append(opts, vkc.WithDevice(cfg.device))
	}
	return vkc.Open(append(opts, extra...)...)
}

// openSuite opens the device a suite measures and starts its result with
// the device header and the environment its figures ran under.
func openSuite(cfg settings) (*vkc.Device, *suiteResult, map[string]string, error) {
	dev, err := openDevice(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return dev, &suiteResult{Device: describeDevice(dev.Info())}, lavapipeEnv(dev.Info()), nil
}

// openBaseline opens the C baseline on the device vkc opened (the same index
// and name) with the same validation setting, so that its figures describe
// the same device under the same checks.
func openBaseline(cfg settings, dev *vkc.Device) (*cbase.Device, error) {
	info := dev.Info()
	base, err := cbase.Open(info.Index, info.Name, cfg.validate)
	if err != nil {
		return nil, fmt.Errorf("C baseline: %w", err)
	}
	return base, nil
}

// describeDevice turns the device's information into the report's header.
func describeDevice(info vkc.DeviceInfo) DeviceDesc {
	return DeviceDesc{
		Name:        info.Name,
		Type:        info.Type.String(),
		Driver:      info.DriverVersion,
		API:         info.APIVersion,
		MemoryBytes: info.DeviceLocalBytes(),
	}
}

// lavapipeEnv is the environment a figure depends on: on lavapipe, whether
// LP_NUM_THREADS was set (and to what) changes per-dispatch costs several
// times over; other drivers ignore it, so nothing is recorded for them.
func lavapipeEnv(info vkc.DeviceInfo) map[string]string {
	if !isLavapipe(info.Name) {
		return nil
	}
	if v, ok := os.LookupEnv("LP_NUM_THREADS"); ok {
		return map[string]string{"LP_NUM_THREADS": v}
	}
	return map[string]string{"LP_NUM_THREADS": "default"}
}

// isLavapipe reports whether a device name is Mesa's CPU driver.
func isLavapipe(name string) bool {
	return strings.Contains(strings.ToLower(name), "llvmpipe")
}

// validationFailures turns validation messages into failures when the layer
// is on: a figure measured while the layer complains is not trustworthy.
func validationFailures(dev *vkc.Device) error {
	errs, warns, recent := dev.ValidationMessages()
	if errs+warns == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d validation errors and %d warnings: %q", ErrMismatch, errs, warns, recent)
}
