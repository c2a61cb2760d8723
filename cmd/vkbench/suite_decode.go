package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vkcompute/vkc"
)

// decodeFirstToken starts every decoded sequence; each step's argmax is
// the next step's token (greedy decoding).
const decodeFirstToken = 7

// decoder runs steps of a decodeNet on a stream, one sequence at a time:
// tok and pos are the next step's inputs.
type decoder struct {
	net      *decodeNet
	s        *vkc.Stream
	ctx      context.Context
	tok, pos int
}

// reset starts a new sequence: empty caches, the first token at
// position 0.
func (d *decoder) reset() error {
	d.tok, d.pos = decodeFirstToken%d.net.c.vocab, 0
	if err := d.net.startSequence(d.s); err != nil {
		return err
	}
	return d.s.Sync(d.ctx)
}

// next runs one step with run (eager ops or a replay): writes the token
// and position, runs it and reads back the argmax, the next token.
func (d *decoder) next(run func() error) error {
	if err := d.net.setInputs(d.s, d.tok, d.pos); err != nil {
		return err
	}
	if err := run(); err != nil {
		return err
	}
	tok, err := d.net.readArgmax(d.ctx, d.s)
	if err != nil {
		return err
	}
	d.tok, d.pos = int(tok), d.pos+1
	return nil
}

// check decodes a whole context window with run from a fresh sequence and
// compares every step's logits and argmax with the float64 reference's,
// fed the same tokens.
func (d *decoder) check(what string, ref *decodeRef, run func() error) error {
	if err := d.reset(); err != nil {
		return err
	}
	ref.reset()
	logits := make([]float32, d.net.c.vocab)
	for step := range d.net.c.ctx {
		tok, pos := d.tok, d.pos
		if err := d.next(run); err != nil {
			return err
		}
		if err := d.net.logits.ReadInto(d.ctx, d.s, logits); err != nil {
			return err
		}
		want, scale := ref.step(tok, pos)
		coef := decodeErrorCoefficient(d.net.c, ref.spread)
		if err := checkDecodeStep(what, step, logits, uint32(d.tok), want, scale, coef); err != nil {
			return err
		}
	}
	return nil
}

// runDecode measures the decode suite: one step of a small transformer
// decoder built from package ops alone, run eagerly (the ops launched on
// a stream) and as a graph captured once and replayed per token, host
// microseconds per step with the device's own time beside each. Both are
// checked over a whole context window against a float64 model first.
func runDecode(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	c := decodeConfigFor(cfg.quick)
	w := newDecodeWeights(c)
	net, err := newDecodeNet(dev, c, w)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := net.close(); err != nil {
			res.fail(err)
		}
	}()
	d := &decoder{net: net, s: dev.Stream(), ctx: context.Background()}
	eager := func() error { return net.step(d.s) }
	cfg.progress.Printf("decode: checking %d eager steps against the float64 model", c.ctx)
	ref := newDecodeRef(c, w)
	if err := d.check("eager", ref, eager); err != nil {
		return nil, err
	}
	g, err := d.capture()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := g.Close(); err != nil {
			res.fail(err)
		}
	}()
	replay := g.Replay
	cfg.progress.Printf("decode: checking %d replayed steps", c.ctx)
	if err := d.check("replay", ref, replay); err != nil {
		res.fail(err)
		return res, nil
	}
	figs, err := d.measure(cfg, env, map[string]func() error{"eager": eager, "replay": replay})
	if err != nil {
		return nil, err
	}
	res.Figures = append(res.Figures, figs...)
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// capture records one step as a graph; its warmup runs the step once on a
// fresh sequence, whose state reset then clears.
func (d *decoder) capture() (*vkc.Graph, error) {
	if err := d.reset(); err != nil {
		return nil, err
	}
	if err := d.net.setInputs(d.s, d.tok, d.pos); err != nil {
		return nil, err
	}
	g, err := d.s.Capture(d.net.step)
	if err != nil {
		return nil, fmt.Errorf("decode: capture of the step: %w", err)
	}
	return g, nil
}

// decodeWays are the figures' names in the order they print.
var decodeWays = []string{"eager", "replay"}

// measure times each way round-robin, a step per op, each timed run one
// sequence from its start (at most a context window of steps), then
// reads each way's device time per step.
func (d *decoder) measure(cfg settings, env map[string]string, runs map[string]func() error) ([]Figure, error) {
	specs := make([]measureSpec, len(decodeWays))
	for i, name := range decodeWays {
		run := runs[name]
		specs[i] = measureSpec{
			reset:   d.reset,
			op:      func() (float64, error) { return 1, d.next(run) },
			maxReps: d.net.c.ctx,
		}
	}
	cfg.progress.Printf("decode: timing eager and replayed steps")
	perStep, errs := measureInterleaved(cfg, specs)
	var figs []Figure
	for i, name := range decodeWays {
		if errs[i] != nil {
			return nil, fmt.Errorf("decode %s: %w", name, errs[i])
		}
		f := timedFigure(Figure{Suite: "decode", Name: name, Params: d.net.c.params(), Unit: "us/step", Env: env},
			perStep[i], func(s float64) float64 { return s * 1e6 })
		dt, err := d.deviceTime(name == "eager", runs[name])
		if err != nil {
			return nil, fmt.Errorf("decode %s, device time: %w", name, err)
		}
		f.Device = dt
		figs = append(figs, f)
	}
	return figs, nil
}

// deviceTime is the median over deviceRuns steps of the device's time
// for one step in µs: a Profile of the eager ops (the launches' own
// times), two timed events around a replay.
func (d *decoder) deviceTime(profiled bool, run func() error) (float64, error) {
	if err := d.reset(); err != nil {
		return 0, err
	}
	times := make([]float64, 0, deviceRuns)
	for range deviceRuns {
		var dt time.Duration
		timed := func() error {
			var err error
			if profiled {
				dt, err = profiledTime(d.s, run)
			} else {
				dt, err = eventTime(d.s, run)
			}
			return err
		}
		if err := d.next(timed); err != nil {
			return 0, err
		}
		times = append(times, float64(dt.Nanoseconds())/1e3)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
