package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/glfwvk"
)

// viewer is the window, the device presenting to it and the simulation.
// Its methods run on the thread that called glfw.Init.
type viewer struct {
	win *glfw.Window
	dev *vkc.Device
	sim *Sim
	sc  *vkc.Swapchain

	paused   bool
	resized  bool
	reset    bool
	prm      Params // wanted; written before the next frame when it differs
	brushing bool

	// Figures for the title: frames since the last update, the last
	// measured time per step.
	shown       time.Time
	shownCount  int
	lastMeasure time.Time
	stepTime    time.Duration
	fps         float64
}

// openViewer opens o's window (glfwvk.Init done), a device presenting to it
// with the validation layer as VKC_VALIDATION says, the simulation and a
// swapchain.
func openViewer(o options) (v *viewer, err error) {
	win, err := glfwvk.CreateWindow(o.width, o.height, "vkview", true)
	if err != nil {
		return nil, fmt.Errorf("vkview: opening the window: %w", err)
	}
	v = &viewer{win: win}
	opened := v // the returns below set v to nil
	defer func() {
		if err != nil {
			_ = opened.Close()
		}
	}()
	exts := glfwvk.Extensions(win)
	if len(exts) == 0 {
		return nil, fmt.Errorf("vkview: GLFW finds no Vulkan surface support on this display (try -headless)")
	}
	if v.dev, err = vkc.Open(vkc.WithPresentation(exts, glfwvk.SurfaceFunc(win))); err != nil {
		return nil, err
	}
	if v.sim, err = NewSim(v.dev, o.sim); err != nil {
		return nil, err
	}
	v.prm = v.sim.Params()
	fw, fh := win.GetFramebufferSize()
	if v.sc, err = v.dev.NewSwapchain(vkc.SwapchainConfig{Width: fw, Height: fh, VSync: o.vsync}); err != nil {
		return nil, err
	}
	win.SetKeyCallback(v.onKey)
	win.SetFramebufferSizeCallback(func(*glfw.Window, int, int) { v.resized = true })
	win.SetMouseButtonCallback(func(_ *glfw.Window, b glfw.MouseButton, a glfw.Action, _ glfw.ModifierKey) {
		if b == glfw.MouseButtonLeft {
			v.brushing = a != glfw.Release
		}
	})
	return v, nil
}

// onKey is the keyboard: see the package comment.
func (v *viewer) onKey(w *glfw.Window, key glfw.Key, _ int, action glfw.Action, _ glfw.ModifierKey) {
	if action == glfw.Release {
		return
	}
	switch key {
	case glfw.KeyEscape:
		w.SetShouldClose(true)
	case glfw.KeySpace:
		if action == glfw.Press {
			v.paused = !v.paused
		}
	case glfw.KeyR:
		v.reset = true
	case glfw.Key1, glfw.Key2, glfw.Key3, glfw.Key4:
		v.prm = Presets[key-glfw.Key1]
	case glfw.KeyUp:
		v.prm.Feed += 0.001
	case glfw.KeyDown:
		v.prm.Feed = max(0, v.prm.Feed-0.001)
	case glfw.KeyRight:
		v.prm.Kill += 0.001
	case glfw.KeyLeft:
		v.prm.Kill = max(0, v.prm.Kill-0.001)
	}
}

// brush places the brush under the cursor while the button is held.
func (v *viewer) brush() Params {
	p := v.prm
	p.BrushX, p.BrushY, p.BrushR = 0, 0, 0
	if !v.brushing {
		return p
	}
	cx, cy := v.win.GetCursorPos()
	ww, wh := v.win.GetSize()
	n := float64(v.sim.Size())
	// The frame is scaled to fit and centred: undo that.
	scale := min(float64(ww)/n, float64(wh)/n)
	if scale <= 0 {
		return p
	}
	x := (cx - (float64(ww)-n*scale)/2) / scale
	y := (cy - (float64(wh)-n*scale)/2) / scale
	if x >= 0 && y >= 0 && x < n && y < n {
		p.BrushX, p.BrushY, p.BrushR = float32(x), float32(y), float32(max(3, n/64))
	}
	return p
}

// frame handles the window's events, advances the simulation one frame
// (unless paused) and presents it; with shot, the presented image is also
// copied into it. It reports whether a frame was presented: a window with
// no area presents nothing.
func (v *viewer) frame(shot *vkc.Buffer[uint32]) (bool, error) {
	glfw.PollEvents()
	if v.reset {
		v.reset = false
		if err := v.sim.Reset(rand.Uint64()); err != nil {
			return false, err
		}
	}
	if want := v.brush(); want != v.sim.Params() {
		if err := v.sim.SetParams(want); err != nil {
			return false, err
		}
	}
	if v.resized {
		fw, fh := v.win.GetFramebufferSize()
		if fw == 0 || fh == 0 {
			glfw.WaitEventsTimeout(0.05) // minimized: nothing to show
			return false, nil
		}
		if err := v.sc.Resize(fw, fh); err != nil && !errors.Is(err, vkc.ErrOutOfDate) {
			return false, err
		}
		v.resized = false
	}
	if !v.paused {
		if err := v.step(); err != nil {
			return false, err
		}
	} else {
		glfw.WaitEventsTimeout(1.0 / 60) // nothing changes: do not spin
	}
	n := v.sim.Size()
	var err error
	if shot != nil {
		err = v.sc.PresentAndCopy(v.sim.Stream(), v.sim.Pixels(), n, n, shot)
	} else {
		err = v.sc.Present(v.sim.Stream(), v.sim.Pixels(), n, n)
	}
	if errors.Is(err, vkc.ErrOutOfDate) {
		v.resized = true
		return false, nil
	}
	return err == nil, err
}

// step runs one frame of the simulation; twice a second it waits for it,
// to measure the time per step.
func (v *viewer) step() error {
	now := time.Now()
	if now.Sub(v.lastMeasure) < 500*time.Millisecond {
		return v.sim.Frame()
	}
	v.lastMeasure = now
	if err := v.sim.Stream().Sync(context.Background()); err != nil {
		return err
	}
	start := time.Now()
	if err := v.sim.Frame(); err != nil {
		return err
	}
	if err := v.sim.Stream().Sync(context.Background()); err != nil {
		return err
	}
	v.stepTime = time.Since(start) / time.Duration(v.sim.Steps())
	return nil
}

// loop presents frames until the window closes (or frames, when > 0),
// keeping the title's figures current, and returns the run's figures.
func (v *viewer) loop(frames int) (stats, error) {
	st := stats{device: v.dev.Info().Name, mode: modeName(v.sim.cfg.Eager, true), size: v.sim.Size(), steps: v.sim.Steps()}
	start := time.Now()
	v.shown = start
	for !v.win.ShouldClose() && (frames <= 0 || st.frames < frames) {
		ok, err := v.frame(nil)
		if err != nil {
			return st, err
		}
		if ok {
			st.frames++
			v.shownCount++
		}
		if since := time.Since(v.shown); since >= 500*time.Millisecond {
			v.fps = float64(v.shownCount) / since.Seconds()
			v.shown, v.shownCount = time.Now(), 0
			v.win.SetTitle(v.title())
		}
	}
	st.elapsed, st.step = time.Since(start), v.stepTime
	return st, nil
}

func (v *viewer) title() string {
	p := v.sim.Params()
	state := ""
	if v.paused {
		state = " [paused]"
	}
	mode := "replay"
	if v.sim.cfg.Eager {
		mode = "eager"
	}
	return fmt.Sprintf("vkview — Gray-Scott %dx%d, %d steps/frame (%s), feed %.4f kill %.4f — %.1f fps, %.3f ms/step%s",
		v.sim.Size(), v.sim.Size(), v.sim.Steps(), mode, p.Feed, p.Kill, v.fps, float64(v.stepTime.Microseconds())/1000, state)
}

// Close closes the swapchain, the simulation and the device, then the
// window (the device owns the window's surface, so it goes first).
func (v *viewer) Close() error {
	var errs []error
	if v.sc != nil {
		errs = append(errs, v.sc.Close())
	}
	if v.sim != nil {
		errs = append(errs, v.sim.Close())
	}
	if v.dev != nil {
		errs = append(errs, v.dev.Close())
	}
	if v.win != nil {
		v.win.Destroy()
		v.win = nil
	}
	return errors.Join(errs...)
}
