package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
	"github.com/vkcompute/vkc/ops"
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

// chainWay is one way of running a K-chain, measured as ns per launch: op
// runs the chain once and executes launches launches (0 when it only
// records); reset zeroes y and readY reads it back for the check.
type chainWay struct {
	name     string
	op       func() error
	launches int
	reset    func() error
	readY    func() ([]float32, error)
}

// spec turns the way into a timed figure whose check compares y with the
// launches executed since the last reset.
func (w chainWay) spec(k int, xs []float32) measureSpec {
	var done int
	return measureSpec{
		op: func() (float64, error) {
			done += w.launches
			return float64(k), w.op()
		},
		reset: func() error {
			done = 0
			return w.reset()
		},
		check: func() error {
			ys, err := w.readY()
			if err != nil {
				return err
			}
			return checkChain(w.name, k, xs, ys, done)
		},
		maxReps: maxExactLaunches / k,
	}
}

// wideChainFor is the C chain of vkc's wide axpy (cbase.NewWideChain)
// where vkc launches it, nil elsewhere: on a CPU driver with shaderInt64,
// the rule vkc's element-wise ops follow (see shaders.Wide).
func wideChainFor(dev *vkc.Device, base *cbase.Device, xs []float32, k int) (*cbase.Chain, error) {
	if !wideAxpy(dev) {
		return nil, nil
	}
	ch, err := base.NewWideChain(xs, k)
	if errors.Is(err, cbase.ErrNoInt64) {
		return nil, nil // vkc's device has it; C's does not: no figure
	}
	return ch, err
}

// runDispatch measures a chain of K dependent axpy launches on vkc, each
// a Launch of the catalogue's axpy module through the public kernel API
// (one submit per launch, batched, recorded alone, captured and replayed,
// replayed with a changing length — a LaunchIndirect of the same module
// reading its length from a param —, re-captured), the same captured
// chains through ops.Axpy (ops-replay, ops-replay-dynamic: what the op
// library adds to a launch), two ways on the raw vk/
// path (replay, re-recorded batch) and eight in the C baseline: eager, then
// batched, the recording alone and replay each twice, binding the pipeline
// and set and pushing the constants before every launch (c-batched,
// c-record, c-replay) and once per command buffer (c-*-bound), and the
// bound replay of a kernel with an empty body (c-replay-empty: the driver's
// own cost of a dispatch and a barrier), in ns per launch. The C chains run
// a scalar axpy (one element per invocation), except c-replay-bound-vec4:
// the bound replay of vkc's own axpy module (four elements per invocation,
// vec4), and, where vkc runs axpy's wide variant (a CPU driver with
// shaderInt64: eight elements per invocation in 64-bit words),
// c-replay-bound-wide: the bound replay of that module, so that vkc
// compares with the best plain C with the same kernel. The figures of one
// K are measured round-robin, so each ratio compares runs taken under the
// same conditions.
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
	ks, err := loadAxpyKernels(dev)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := ks.Close(); err != nil {
			res.fail(err)
		}
	}()

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
	base, err := openBaseline(cfg, dev)
	if err != nil {
		return nil, err
	}
	baseClosed := false
	defer func() {
		if !baseClosed {
			_ = base.Close()
		}
	}()

	for _, k := range dispatchKs(cfg.quick) {
		if err := dispatchK(cfg, dev, ks, x, y, xs, raw, base, k, env, res); err != nil {
			return nil, err
		}
	}
	rawClosed = true
	if err := raw.Close(); err != nil {
		res.fail(err)
	}
	baseClosed = true
	if err := base.Close(); err != nil {
		res.fail(fmt.Errorf("C baseline: %w", err))
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// dispatchK measures every way of running the K-chain. Result mismatches
// are failures in res; an error means a way could not even be set up.
func dispatchK(cfg settings, dev *vkc.Device, ks *axpyKernels, x, y *vkc.Buffer[float32], xs []float32, raw *rawDevice, base *cbase.Device,
	k int, env map[string]string, res *suiteResult) error {
	c := &kChain{s: dev.Stream(), ctx: context.Background(), ks: ks, x: x, y: y, k: k, zeros: make([]float32, dispatchN)}
	defer c.close()
	if err := c.capture(dev, res); err != nil {
		return err
	}
	if err := c.buildOthers(dev, raw, base, xs); err != nil {
		return err
	}
	ways, specs := c.ways(xs)
	cfg.progress.Printf("dispatch: K=%d, %d ways round-robin", k, len(ways))
	perLaunch, errs := measureInterleaved(cfg, specs)
	for i, w := range ways {
		if err := errs[i]; err != nil {
			if !errors.Is(err, ErrMismatch) {
				err = fmt.Errorf("dispatch %s K=%d: %w", w.name, k, err)
			}
			res.fail(err)
			continue
		}
		f := dispatchFigure(w.name, k, perLaunch[i], env)
		if _, timed := deviceTimed[w.name]; timed {
			d, err := devicePerLaunch(c.s, w, k)
			if err != nil {
				res.fail(fmt.Errorf("dispatch %s K=%d, device time: %w", w.name, k, err))
				continue
			}
			f.Device = d
		}
		res.Figures = append(res.Figures, f)
	}
	return nil
}

// kChain is the K-chain of dependent axpy launches (y += x, K times) and
// everything that runs it: vkc's static and dynamic graphs of the axpy
// kernels and of ops.Axpy, the raw path and the C baseline's chains. What
// it made is closed by close, in the reverse of the order it was made in.
type kChain struct {
	s     *vkc.Stream
	ctx   context.Context
	ks    *axpyKernels
	x, y  *vkc.Buffer[float32]
	k     int
	zeros []float32

	g, dyn       *vkc.Graph         // the chain captured; the chain of the length-reading kernel sized by n
	opsG, opsDyn *vkc.Graph         // the same two through ops.Axpy
	n            *vkc.Param[uint32] // the dynamic chains' length
	rawChain     *rawAxpy
	cChain       *cbase.Chain // the C baseline's scalar chain
	emptyChain   *cbase.Chain // the same with an empty kernel
	vec4Chain    *cbase.Chain // running vkc's vec4 axpy module
	wideChain    *cbase.Chain // running vkc's wide axpy module; nil where vkc does not
	closers      []func()
}

func (c *kChain) onClose(f func()) { c.closers = append(c.closers, f) }

func (c *kChain) close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
}

// resetY writes zeros into y and waits for it.
func (c *kChain) resetY() error {
	if err := c.y.Write(c.zeros); err != nil {
		return err
	}
	return c.s.Sync(c.ctx)
}

func (c *kChain) readY() ([]float32, error) {
	ys := make([]float32, dispatchN)
	return ys, c.y.ReadInto(c.ctx, c.s, ys)
}

// chain queues the K launches on s.
func (c *kChain) chain(s *vkc.Stream) error {
	for range c.k {
		if err := c.ks.launch(s, c.x, c.y); err != nil {
			return err
		}
	}
	return nil
}

// dynChain queues the K launches of the length-reading kernel, sized by n.
func (c *kChain) dynChain(s *vkc.Stream) error {
	for range c.k {
		if err := c.ks.launchLen(s, c.x, c.y, c.n); err != nil {
			return err
		}
	}
	return nil
}

// opsChain queues the K launches as ops.Axpy over x and y, each sized by
// n where n is not nil.
func (c *kChain) opsChain(n *vkc.Param[uint32]) func(*vkc.Stream) error {
	x, y := ops.Of(c.x), ops.Of(c.y)
	if n != nil {
		x, y = x.Dynamic(n), y.Dynamic(n)
	}
	return func(s *vkc.Stream) error {
		for range c.k {
			if err := ops.Axpy(s, ops.Const(1), x, y); err != nil {
				return err
			}
		}
		return nil
	}
}

// capture makes vkc's four graphs: the chain and the dynamic chain — the
// same K launches of the length-reading kernel, sized by a length param
// that changes before every replay (alternately the whole vector and all
// but its last dynamicShrink elements), so each replay does a different
// amount of work with no re-capture — each through the axpy kernels and
// through ops.Axpy. A graph that fails to close is a failure in res.
func (c *kChain) capture(dev *vkc.Device, res *suiteResult) error {
	var err error
	if c.n, err = vkc.NewParam(dev, uint32(dispatchN)); err != nil {
		return err
	}
	c.onClose(func() { c.n.Close() })
	graphs := []struct {
		g     **vkc.Graph
		what  string
		chain func(*vkc.Stream) error
	}{
		{&c.g, "capture", c.chain},
		{&c.dyn, "dynamic capture", c.dynChain},
		{&c.opsG, "ops capture", c.opsChain(nil)},
		{&c.opsDyn, "ops dynamic capture", c.opsChain(c.n)},
	}
	for _, gr := range graphs {
		if err := c.resetY(); err != nil {
			return err
		}
		g, err := c.s.Capture(gr.chain) // the warmup inside runs the chain once
		if err != nil {
			return fmt.Errorf("%s of K=%d: %w", gr.what, c.k, err)
		}
		*gr.g = g
		what := gr.what
		c.onClose(func() {
			if err := g.Close(); err != nil {
				res.fail(fmt.Errorf("graph of the %s of K=%d: %w", what, c.k, err))
			}
		})
	}
	return nil
}

// buildOthers makes the chain on the raw path and the C baseline's chains.
func (c *kChain) buildOthers(dev *vkc.Device, raw *rawDevice, base *cbase.Device, xs []float32) error {
	k := c.k
	var err error
	if c.rawChain, err = newRawAxpy(raw, xs, k); err != nil {
		return fmt.Errorf("raw path, K=%d: %w", k, err)
	}
	c.onClose(c.rawChain.Close)
	baseline := []struct {
		chain *(*cbase.Chain)
		what  string
		make  func([]float32, int) (*cbase.Chain, error)
	}{
		{&c.cChain, "", base.NewChain},
		{&c.emptyChain, ", empty kernel", base.NewEmptyChain},
		{&c.vec4Chain, ", vec4 kernel", base.NewVec4Chain},
		{&c.wideChain, ", wide kernel", func(xs []float32, k int) (*cbase.Chain, error) { return wideChainFor(dev, base, xs, k) }},
	}
	for _, b := range baseline {
		ch, err := b.make(xs, k)
		if err != nil {
			return fmt.Errorf("C baseline%s, K=%d: %w", b.what, k, err)
		}
		if ch != nil {
			*b.chain = ch
			c.onClose(ch.Close)
		}
	}
	return nil
}

// ways are every way of running the chain, in the order they are measured
// round-robin, and their timed specs.
func (c *kChain) ways(xs []float32) ([]chainWay, []measureSpec) {
	s, ctx, k := c.s, c.ctx, c.k
	ways := []chainWay{
		{"eager", func() error {
			for range k {
				if err := c.ks.launch(s, c.x, c.y); err != nil {
					return err
				}
				if err := s.Sync(ctx); err != nil {
					return err
				}
			}
			return nil
		}, k, c.resetY, c.readY},
		{"eager-batched", func() error {
			if err := c.chain(s); err != nil {
				return err
			}
			return s.Sync(ctx)
		}, k, c.resetY, c.readY},
		{"replay", c.replay(c.g), k, c.resetY, c.readY},
		{"ops-replay", c.replay(c.opsG), k, c.resetY, c.readY},
		{"raw", c.rawChain.Replay, k, c.rawChain.ResetY, c.rawChain.Y},
		{"raw-batched", func() error { return c.rawChain.Batched(k) }, k, c.rawChain.ResetY, c.rawChain.Y},
	}
	ways = append(ways, baselineWays(c.cChain, c.emptyChain, c.vec4Chain, c.wideChain, k)...)
	specs := make([]measureSpec, len(ways))
	for i, w := range ways {
		specs[i] = w.spec(k, xs)
	}
	ways, specs = append(ways, chainWay{name: "record"}), append(specs, recordSpec(s, c.chain, k, c.resetY))
	for _, d := range []struct {
		name string
		g    *vkc.Graph
	}{{"replay-dynamic", c.dyn}, {"ops-replay-dynamic", c.opsDyn}} {
		ways = append(ways, chainWay{name: d.name})
		specs = append(specs, dynamicSpec(d.name, s, d.g, c.n, xs, k, c.resetY, c.readY))
	}
	ways = append(ways, chainWay{name: "recapture"})
	specs = append(specs, chainWay{"recapture", c.recapture, 2 * k, c.resetY, c.readY}.spec(k, xs)) // the warmup and the replay each run the chain
	return ways, specs
}

// replay replays g and waits for it.
func (c *kChain) replay(g *vkc.Graph) func() error {
	return func() error {
		if err := g.Replay(); err != nil {
			return err
		}
		return c.s.Sync(c.ctx)
	}
}

// baselineWays are the C baseline's ways of running the chain; wide is nil
// where vkc does not run the wide axpy.
func baselineWays(cChain, emptyChain, vec4Chain, wideChain *cbase.Chain, k int) []chainWay {
	ways := []chainWay{
		{"c-eager", cChain.Eager, k, cChain.ResetY, cChain.Y},
		{"c-batched", cChain.Batched, k, cChain.ResetY, cChain.Y},
		{"c-record", cChain.Record, 0, cChain.ResetY, cChain.Y},
		{"c-replay", cChain.Replay, k, cChain.ResetY, cChain.Y},
		{"c-batched-bound", cChain.BatchedBound, k, cChain.ResetY, cChain.Y},
		{"c-record-bound", cChain.RecordBound, 0, cChain.ResetY, cChain.Y},
		{"c-replay-bound", cChain.ReplayBound, k, cChain.ResetY, cChain.Y},
		{"c-replay-empty", emptyChain.ReplayBound, 0, emptyChain.ResetY, emptyChain.Y},
		{"c-replay-bound-vec4", vec4Chain.ReplayBound, k, vec4Chain.ResetY, vec4Chain.Y},
	}
	if wideChain != nil {
		ways = append(ways, chainWay{"c-replay-bound-wide", wideChain.ReplayBound, k, wideChain.ResetY, wideChain.Y})
	}
	return ways
}

// recapture captures the chain again, replays it once and closes it: what
// changing a static graph costs.
func (c *kChain) recapture() error {
	g, err := c.s.Capture(c.chain)
	if err != nil {
		return err
	}
	if err := g.Replay(); err != nil {
		return errors.Join(err, g.Close())
	}
	if err := c.s.Sync(c.ctx); err != nil {
		return errors.Join(err, g.Close())
	}
	return g.Close()
}

// deviceTimed names the ways whose work runs on vkc's stream s, and how
// the device's own time is read: a Profile of the eager ways (each
// launch between two timestamps in its own command buffer, so the
// device's idle time while the host syncs does not count), two timed
// events around a replay (the graph itself writes no timestamp).
var deviceTimed = map[string]bool{"eager": true, "eager-batched": true, "replay": false}

// deviceRuns is how many runs the device time of a way is the median of.
const deviceRuns = 5

// devicePerLaunch runs w deviceRuns times with the device's clock read
// as deviceTimed says, and returns the median device time per launch in
// ns; y is reset before each run (measureInterleaved checked the results
// of the same op).
func devicePerLaunch(s *vkc.Stream, w chainWay, k int) (float64, error) {
	profiled := deviceTimed[w.name]
	times := make([]float64, 0, deviceRuns)
	for range deviceRuns {
		if err := w.reset(); err != nil {
			return 0, err
		}
		var d time.Duration
		var err error
		if profiled {
			d, err = profiledTime(s, w.op)
		} else {
			d, err = eventTime(s, w.op)
		}
		if err != nil {
			return 0, err
		}
		times = append(times, float64(d.Nanoseconds())/float64(k))
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// recordSpec times recording the K-chain alone: the launches go into a
// capture window that is then aborted, so nothing is submitted — the
// Go-side cost of a launch, beside the C baseline's c-record.
func recordSpec(s *vkc.Stream, chain func(*vkc.Stream) error, k int, reset func() error) measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			if err := s.PrepareCapture(); err != nil {
				return 0, err
			}
			if err := s.BeginCapture(); err != nil {
				return 0, errors.Join(err, s.AbortCapture())
			}
			if err := chain(s); err != nil {
				return 0, errors.Join(err, s.AbortCapture())
			}
			return float64(k), s.AbortCapture()
		},
		// An aborted window leaves what it recorded unwritten: write y again.
		reset: reset,
		check: reset,
	}
}

// dynamicShrink is how many elements the dynamic chains leave out of
// every other replay: one 64-bit word of eight elements of the wide axpy,
// two quads of the vec4 one. A whole word, so that every replay takes the
// kernel's whole-word path, as the static chain does: a length inside a
// word would add the partial word's element-by-element tail (on lavapipe
// about a third of a launch), the kernel's cost and not the launch path's
// this suite compares.
const dynamicShrink = 8

// dynamicSpec times the dynamic chain: the length param changes before
// every replay, and the check follows how many launches reached each
// element.
func dynamicSpec(name string, s *vkc.Stream, g *vkc.Graph, n *vkc.Param[uint32], xs []float32, k int, reset func() error, readY func() ([]float32, error)) measureSpec {
	counts := make([]int, dispatchN)
	flip := false
	return measureSpec{
		op: func() (float64, error) {
			flip = !flip
			length := dispatchN
			if flip {
				length = dispatchN - dynamicShrink
			}
			if err := n.Set(uint32(length)); err != nil {
				return 0, err
			}
			if err := g.Replay(); err != nil {
				return 0, err
			}
			for i := 0; i < length; i++ {
				counts[i] += k
			}
			return float64(k), s.Sync(context.Background())
		},
		reset: func() error {
			clear(counts)
			return reset()
		},
		check: func() error {
			ys, err := readY()
			if err != nil {
				return err
			}
			for i, x := range xs {
				if want := float32(float64(counts[i]) * float64(x)); ys[i] != want {
					return fmt.Errorf("%w: dispatch %s K=%d: y[%d] = %g, want %g", ErrMismatch, name, k, i, ys[i], want)
				}
			}
			return nil
		},
		maxReps: maxExactLaunches / k,
	}
}

// dispatchFigure is a dispatch figure in ns per launch from its timed runs.
func dispatchFigure(name string, k int, secondsPerLaunch []float64, env map[string]string) Figure {
	return timedFigure(Figure{Suite: "dispatch", Name: name, Params: map[string]int64{"k": int64(k)}, Unit: "ns/launch", Env: env},
		secondsPerLaunch, func(s float64) float64 { return s * 1e9 })
}

// profiledTime is the device time of op's launches on s, summed from a
// Profile.
func profiledTime(s *vkc.Stream, op func() error) (time.Duration, error) {
	p, err := s.Profile(func(*vkc.Stream) error { return op() })
	if err != nil {
		return 0, err
	}
	var d time.Duration
	for _, l := range p.Launches {
		d += l.Device
	}
	return d, nil
}

// eventTime is the device time between two timed events around op on s.
func eventTime(s *vkc.Stream, op func() error) (time.Duration, error) {
	start, err := s.RecordTimed()
	if err != nil {
		return 0, err
	}
	err = op()
	end, rerr := s.RecordTimed()
	var d time.Duration
	if err == nil && rerr == nil {
		d, err = end.Since(start)
	}
	return d, errors.Join(err, rerr, start.Close(), end.Close())
}
