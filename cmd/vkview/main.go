// Command vkview shows a live Gray-Scott reaction-diffusion simulation
// computed by vkc: every frame replays one captured Graph (several
// simulation steps and a colour map, two kernels written in GLSL in this
// directory) and presents the pixels it wrote through a Vulkan swapchain on
// the same device, with no copy through host memory.
//
//	vkview                          # a 512x512 grid in a window
//	vkview -size 256 -steps 16      # smaller grid, more steps per frame
//	vkview -eager                   # launch each kernel per frame instead of replaying
//	vkview -frames 300 -png out.png # no window: 300 frames, the last one as PNG
//	vkview -headless -frames 300    # no window, no file: just the timing
//
// Keys: Space pauses, R restarts from new spots, 1-4 choose a preset
// (coral, mitosis, worms, chaos), Up/Down change the feed rate and
// Left/Right the kill rate (each a write of the parameter buffer between
// replays), the left mouse button seeds where it is held, Escape quits.
// The window may be resized; the simulation keeps its grid and is scaled to
// fit. The title shows frames per second and the measured time per step.
//
// After editing a .comp file, rebuild its module with go generate (glslc);
// a test fails when a committed .spv no longer matches its source.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"log"
	"os"
	"runtime"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/glfwvk"
)

func init() {
	// GLFW's calls belong on the main thread: keep main's goroutine on it.
	runtime.LockOSThread()
}

// options are the command line.
type options struct {
	sim      SimConfig
	frames   int
	png      string
	headless bool
	vsync    bool
	width    int
	height   int
}

func parseFlags(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("vkview", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	fs.IntVar(&o.sim.Size, "size", 512, "grid side in cells (the frame's size in pixels; 2..8192, and the state's two buffers of 2*size*size floats must fit the device's largest storage buffer)")
	fs.IntVar(&o.sim.Steps, "steps", 8, "simulation steps per frame (rounded up to even)")
	seed := fs.Uint64("seed", 1, "seed of the initial spots")
	preset := fs.Int("preset", 1, "parameter preset: 1 coral, 2 mitosis, 3 worms, 4 chaos")
	fs.BoolVar(&o.sim.Eager, "eager", false, "launch the kernels one by one every frame instead of replaying the captured graph")
	fs.IntVar(&o.frames, "frames", 0, "stop after this many frames (0: when the window closes; headless needs it)")
	fs.StringVar(&o.png, "png", "", "run headless (no window) and write the last frame to this PNG file")
	fs.BoolVar(&o.headless, "headless", false, "run without a window")
	fs.BoolVar(&o.vsync, "vsync", false, "present one frame per display refresh")
	fs.IntVar(&o.width, "width", 0, "window width (default: the grid's size)")
	fs.IntVar(&o.height, "height", 0, "window height (default: the grid's size)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("vkview: unexpected arguments %q", fs.Args())
	}
	if *preset < 1 || *preset > len(Presets) {
		return o, fmt.Errorf("vkview: -preset %d (have 1..%d)", *preset, len(Presets))
	}
	o.sim.Seed, o.sim.Params = *seed, Presets[*preset-1]
	o.headless = o.headless || o.png != ""
	if o.headless && o.frames <= 0 {
		return o, fmt.Errorf("vkview: headless needs -frames N")
	}
	if o.sim.Size < 2 || o.sim.Size > 8192 {
		return o, fmt.Errorf("vkview: -size %d (2..8192)", o.sim.Size)
	}
	if o.sim.Steps > MaxSteps {
		return o, fmt.Errorf("vkview: -steps %d (at most %d)", o.sim.Steps, MaxSteps)
	}
	if o.width <= 0 {
		o.width = o.sim.Size
	}
	if o.height <= 0 {
		o.height = o.sim.Size
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		log.Fatal(err)
	}
	var st stats
	if o.headless {
		st, err = runHeadless(o)
	} else {
		st, err = runWindow(o)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st)
}

// stats are a run's figures.
type stats struct {
	device  string
	mode    string
	size    int
	steps   int
	frames  int
	elapsed time.Duration
	step    time.Duration // measured time per step (device work, host wait included)
}

func (s stats) fps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.frames) / s.elapsed.Seconds()
}

func (s stats) String() string {
	return fmt.Sprintf("vkview: %s, %s, %dx%d grid, %d steps/frame: %d frames in %.2fs = %.1f fps, %.3f ms/step",
		s.device, s.mode, s.size, s.size, s.steps, s.frames, s.elapsed.Seconds(), s.fps(), float64(s.step.Microseconds())/1000)
}

func modeName(eager bool, window bool) string {
	m := "replay"
	if eager {
		m = "eager"
	}
	if window {
		return m + ", window"
	}
	return m + ", headless"
}

// runHeadless runs o.frames frames with no window and, with o.png, writes
// the last one.
func runHeadless(o options) (stats, error) {
	dev, err := vkc.Open()
	if err != nil {
		return stats{}, err
	}
	st, err := headless(dev, o)
	if cerr := dev.Close(); err == nil {
		err = cerr
	}
	return st, err
}

func headless(dev *vkc.Device, o options) (stats, error) {
	sim, err := NewSim(dev, o.sim)
	if err != nil {
		return stats{}, err
	}
	defer sim.Close()
	st := stats{device: dev.Info().Name, mode: modeName(o.sim.Eager, false), size: sim.Size(), steps: sim.Steps()}
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < o.frames; i++ {
		if err := sim.Frame(); err != nil {
			return st, err
		}
	}
	if err := sim.Stream().Sync(ctx); err != nil {
		return st, err
	}
	st.elapsed, st.frames = time.Since(start), o.frames
	st.step = st.elapsed / time.Duration(o.frames*sim.Steps())
	if o.png == "" {
		return st, nil
	}
	img, err := sim.Image(ctx)
	if err != nil {
		return st, err
	}
	f, err := os.Create(o.png)
	if err != nil {
		return st, err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return st, err
	}
	return st, f.Close()
}

// runWindow opens the window and runs until it closes (or o.frames).
func runWindow(o options) (stats, error) {
	if err := glfwvk.Init(); err != nil {
		return stats{}, fmt.Errorf("vkview: no window system (try -headless): %w", err)
	}
	defer glfw.Terminate()
	v, err := openViewer(o)
	if err != nil {
		return stats{}, err
	}
	st, err := v.loop(o.frames)
	if cerr := v.Close(); err == nil {
		err = cerr
	}
	return st, err
}
