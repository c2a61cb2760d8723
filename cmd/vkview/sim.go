package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math/rand/v2"
	"sync/atomic"

	"github.com/vkcompute/vkc"
)

//go:generate glslc --target-env=vulkan1.1 -O -o grayscott.spv grayscott.comp
//go:generate glslc --target-env=vulkan1.1 -O -o colormap.spv colormap.comp

// grayscottSPIRV is one simulation step, compiled from grayscott.comp.
//
//go:embed grayscott.spv
var grayscottSPIRV []byte

// colormapSPIRV turns a state into pixels, compiled from colormap.comp.
//
//go:embed colormap.spv
var colormapSPIRV []byte

// Params are the simulation's parameters, in the order of grayscott.comp's
// parameter buffer.
type Params struct {
	Du, Dv, Feed, Kill, Dt float32
	// BrushX, BrushY, BrushR seed v in a disc (cells; BrushR 0: no brush).
	BrushX, BrushY, BrushR float32
}

// Presets are parameter sets that look alive within seconds (keys 1-4).
var Presets = []Params{
	{Du: 0.21, Dv: 0.105, Feed: 0.0545, Kill: 0.062, Dt: 1},  // coral
	{Du: 0.21, Dv: 0.105, Feed: 0.0367, Kill: 0.0649, Dt: 1}, // mitosis
	{Du: 0.21, Dv: 0.105, Feed: 0.029, Kill: 0.057, Dt: 1},   // worms and loops
	{Du: 0.21, Dv: 0.105, Feed: 0.026, Kill: 0.051, Dt: 1},   // chaos
}

func (p Params) words() []float32 {
	return []float32{p.Du, p.Dv, p.Feed, p.Kill, p.Dt, p.BrushX, p.BrushY, p.BrushR}
}

// SimConfig sizes a simulation.
type SimConfig struct {
	// Size is the grid's side in cells (and the frame's in pixels).
	Size int
	// Steps is how many steps one frame advances (rounded up to even: the
	// state ping-pongs between two buffers and ends where it began).
	Steps int
	// Seed places the initial spots.
	Seed uint64
	// Eager launches every frame's kernels one by one instead of replaying
	// the captured graph, for comparison.
	Eager bool
	// Params start the simulation (zero: Presets[0]).
	Params Params
}

// Sim is Gray-Scott reaction-diffusion on the device: a frame is Steps
// steps and a colour map, captured once into a Graph and replayed.
type Sim struct {
	cfg    SimConfig
	s      *vkc.Stream
	step   *vkc.Kernel
	paint  *vkc.Kernel
	a, b   *vkc.Buffer[float32] // the state, (u, v) per cell; a holds it between frames
	params *vkc.Buffer[float32]
	pixels *vkc.Buffer[uint32]
	graph  *vkc.Graph
	push   []byte
	groups [3]uint32
	prm    Params
	frames atomic.Int64 // frames run since the last Reset (read from any goroutine)
}

// MaxSteps bounds SimConfig.Steps: a frame's graph records two launches a
// step, and a frame of more steps than this is not a frame to watch.
const MaxSteps = 1 << 12

// NewSim loads the kernels, allocates the state, captures a frame into a
// graph and writes the initial state.
func NewSim(dev *vkc.Device, cfg SimConfig) (_ *Sim, err error) {
	if cfg.Size < 2 {
		return nil, fmt.Errorf("vkview: grid of %d cells a side", cfg.Size)
	}
	if cfg.Steps > MaxSteps {
		return nil, fmt.Errorf("vkview: %d steps a frame (at most %d)", cfg.Steps, MaxSteps)
	}
	cfg.Steps = max(2, cfg.Steps+cfg.Steps%2)
	if cfg.Params == (Params{}) {
		cfg.Params = Presets[0]
	}
	n := cfg.Size
	sim := &Sim{cfg: cfg, s: dev.NewStream(), prm: cfg.Params}
	defer func() {
		if err != nil {
			sim.Close() // what was built so far; the error says why
		}
	}()
	if sim.step, err = dev.LoadKernel(vkc.KernelSpec{Name: "grayscott", SPIRV: grayscottSPIRV}); err != nil {
		return nil, err
	}
	if sim.paint, err = dev.LoadKernel(vkc.KernelSpec{Name: "colormap", SPIRV: colormapSPIRV}); err != nil {
		return nil, err
	}
	if sim.a, err = vkc.NewBuffer[float32](dev, 2*n*n); err != nil {
		return nil, err
	}
	if sim.b, err = vkc.NewBuffer[float32](dev, 2*n*n); err != nil {
		return nil, err
	}
	if sim.params, err = vkc.FromSlice(dev, sim.prm.words()); err != nil {
		return nil, err
	}
	if sim.pixels, err = vkc.NewBuffer[uint32](dev, n*n); err != nil {
		return nil, err
	}
	sim.push = binary.LittleEndian.AppendUint32(nil, uint32(n))
	sim.push = binary.LittleEndian.AppendUint32(sim.push, uint32(n))
	g := uint32(n+15) / 16
	sim.groups = [3]uint32{g, g, 1}
	if err = sim.a.WriteOn(sim.s, InitialState(n, cfg.Seed)); err != nil {
		return nil, err
	}
	if !cfg.Eager {
		// The warmup runs a frame; Reset below starts from the beginning.
		if sim.graph, err = sim.s.Capture(sim.run); err != nil {
			return nil, err
		}
	}
	return sim, sim.Reset(cfg.Seed)
}

// run launches one frame's work on s: Steps steps, then the colour map.
func (sim *Sim) run(s *vkc.Stream) error {
	for i := 0; i < sim.cfg.Steps; i += 2 {
		if err := sim.step.Launch(s, sim.groups, sim.push, sim.a, sim.b, sim.params); err != nil {
			return err
		}
		if err := sim.step.Launch(s, sim.groups, sim.push, sim.b, sim.a, sim.params); err != nil {
			return err
		}
	}
	return sim.paint.Launch(s, sim.groups, sim.push, sim.a, sim.pixels)
}

// Frame advances the simulation one frame and colour-maps it into Pixels,
// on Stream: a replay of the captured graph (or the launches, eagerly).
func (sim *Sim) Frame() error {
	var err error
	if sim.graph == nil {
		err = sim.run(sim.s)
	} else {
		err = sim.graph.Replay()
	}
	if err == nil {
		sim.frames.Add(1)
	}
	return err
}

// Frames is how many frames ran since the last Reset.
func (sim *Sim) Frames() int { return int(sim.frames.Load()) }

// Stream is the stream the simulation's work runs on.
func (sim *Sim) Stream() *vkc.Stream { return sim.s }

// Pixels is the last frame, Size x Size RGBA8 (vkc.Swapchain.Present's layout).
func (sim *Sim) Pixels() *vkc.Buffer[uint32] { return sim.pixels }

// Size is the grid's side.
func (sim *Sim) Size() int { return sim.cfg.Size }

// Steps is the number of steps per frame.
func (sim *Sim) Steps() int { return sim.cfg.Steps }

// Params are the parameters in effect.
func (sim *Sim) Params() Params { return sim.prm }

// SetParams writes new parameters between frames: the graph reads the
// parameter buffer when it runs, so nothing is captured again.
func (sim *Sim) SetParams(p Params) error {
	if err := sim.params.WriteOn(sim.s, p.words()); err != nil {
		return err
	}
	sim.prm = p
	return nil
}

// Reset starts over from the initial state of seed.
func (sim *Sim) Reset(seed uint64) error {
	return sim.a.WriteOn(sim.s, InitialState(sim.cfg.Size, seed))
}

// Image reads the last frame back as an image (waiting for it).
func (sim *Sim) Image(ctx context.Context) (*image.RGBA, error) {
	px, err := sim.pixels.ReadOn(ctx, sim.s)
	if err != nil {
		return nil, err
	}
	return PixelsImage(px, sim.cfg.Size, sim.cfg.Size), nil
}

// Close releases the graph, kernels and buffers; nil fields are skipped,
// and closing a nil Sim does nothing.
func (sim *Sim) Close() error {
	if sim == nil {
		return nil
	}
	var errs []error
	if sim.graph != nil {
		errs = append(errs, sim.graph.Close())
	}
	for _, b := range []*vkc.Buffer[float32]{sim.a, sim.b, sim.params} {
		if b != nil {
			errs = append(errs, b.Close())
		}
	}
	if sim.pixels != nil {
		errs = append(errs, sim.pixels.Close())
	}
	for _, k := range []*vkc.Kernel{sim.step, sim.paint} {
		if k != nil {
			errs = append(errs, k.Close())
		}
	}
	return errors.Join(errs...)
}

// InitialState is u = 1, v = 0 everywhere but in 40 squares (u = 0.5,
// v = 0.25, with a little noise so that they do not stay symmetric),
// placed by seed: (u, v) per cell, row by row.
func InitialState(n int, seed uint64) []float32 {
	st := make([]float32, 2*n*n)
	for i := 0; i < n*n; i++ {
		st[2*i] = 1
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	side := max(6, n/24)
	for k := 0; k < 40; k++ {
		x0, y0 := r.IntN(n), r.IntN(n)
		for y := y0; y < y0+side; y++ {
			for x := x0; x < x0+side; x++ {
				i := (y%n)*n + x%n
				st[2*i] = 0.5 + 0.02*(r.Float32()-0.5)
				st[2*i+1] = 0.25 + 0.02*(r.Float32()-0.5)
			}
		}
	}
	return st
}

// PixelsImage wraps RGBA8 pixels packed R | G<<8 | B<<16 | A<<24 as an image.
func PixelsImage(px []uint32, w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i, v := range px[:w*h] {
		binary.LittleEndian.PutUint32(img.Pix[4*i:], v)
	}
	return img
}
