// Command vulkango is a program that draws with vulkan-go sharing its
// device with vkc: it creates its instance, device and queue with
// vulkan-go, hands them to vkc (vulkango.Adopt, with the lock it takes
// around its queue), has vkc compute y = a*x + y, copies y into a buffer
// of its own with its own command buffer, waiting on a semaphore vkc
// signals after the computation, reads the copy back and checks it
// against Go. Then it closes vkc, keeps using its device for a fill of
// its own, and destroys everything it created.
//
// With VKC_VALIDATION=1 the program's instance enables the Khronos
// validation layer, whose messages (vkc's calls included: vkc adopted the
// instance) reach the program's debug-report callback; the program fails
// on any.
//
// With a display (DISPLAY or WAYLAND_DISPLAY set; -window=false leaves
// it out, -window forces it) the program then opens a GLFW window, has vkc
// compute a colour strip and presents it for -frames frames, copying it
// into each swapchain image with its own command buffer after a
// semaphore vkc signals (window.go). The window may be resized: the
// program then makes a new swapchain of the new size and has vkc compute
// the strip for it. Without a display it runs headless, as in CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"slices"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// The input: a*x + y is exact in float32 for these, so the device must
// match Go bit for bit.
var (
	a  float32 = 2.5
	xs         = []float32{1, 2, 3, 4, 5, 6, 7, 8}
	ys         = []float32{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}
)

// GLFW's calls stay on the main thread, which main keeps.
func init() { runtime.LockOSThread() }

func main() {
	display := os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
	window := flag.Bool("window", display, "also present vkc's result in a window (default: when a display exists)")
	frames := flag.Int("frames", 180, "frames the window shows")
	flag.Parse()
	validate := os.Getenv("VKC_VALIDATION") == "1"
	if err := run(os.Stdout, validate); err != nil {
		log.Fatal(err)
	}
	if *window {
		if err := runWindow(os.Stdout, validate, *frames); err != nil {
			log.Fatal(err)
		}
	}
}

// reference is a*x + y in Go.
func reference(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// run is the whole program; it prints what it did to w.
func run(w io.Writer, validate bool) (err error) {
	start, _ := validationMessages()
	r, err := newRenderer(validate)
	if err != nil {
		return err
	}
	defer r.destroy()
	fmt.Fprintf(w, "the program's device: %s (queue family %d), validation layer on: %v\n", r.name, r.family, r.validating)

	dev, err := vulkango.Adopt(vulkango.Device{Instance: r.instance, PhysicalDevice: r.gpu, Device: r.device,
		Queue: r.queue, QueueFamily: r.family, APIVersion: apiVersion, QueueLock: &r.queueMu})
	if err != nil {
		return err
	}
	defer dev.Close()
	got, err := share(r, dev)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "vkc computed y = %g*x + y; the program's copy of y reads %v\n", a, got)
	if want := reference(a, xs, ys); !slices.Equal(got, want) {
		return fmt.Errorf("the program read %v, Go computes %v", got, want)
	}

	if err := dev.Close(); err != nil {
		return err
	}
	if live := dev.LiveObjects(); len(live) != 0 {
		return fmt.Errorf("vkc objects alive after Close: %v", live)
	}
	fmt.Fprintln(w, "vkc closed: 0 live vkc objects")

	// The device is the program's again: it fills a buffer of its own.
	h, err := r.newHostBuffer(64)
	if err != nil {
		return err
	}
	defer r.destroyHostBuffer(h)
	if err := r.fill(h, 0x3f800000); err != nil {
		return err
	}
	for i, v := range h.floats() {
		if v != 1 {
			return fmt.Errorf("after vkc closed, the program's fill left %g at %d", v, i)
		}
	}
	fmt.Fprintln(w, "after vkc closed, the program's own fill on its device: ok")
	if r.validating {
		n, msgs := validationMessages()
		fmt.Fprintf(w, "validation messages: %d\n", n-start)
		if n != start {
			return fmt.Errorf("validation messages: %q", msgs[min(int(start), len(msgs)):])
		}
	}
	return nil
}

// share is the exchange: vkc computes into y, signals the program's
// semaphore; the program copies y into its own buffer after it and
// declares the read; vkc then writes y again, which waits for that read.
// It returns what the program's copy read.
func share(r *renderer, dev *vkc.Device) ([]float32, error) {
	x, err := vkc.FromSlice(dev, xs)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	y, err := vkc.FromSlice(dev, ys)
	if err != nil {
		return nil, err
	}
	defer y.Close()
	s := dev.Stream()
	if err := ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)); err != nil {
		return nil, err
	}

	computed, err := r.newSemaphore()
	if err != nil {
		return nil, err
	}
	// The semaphores live until vkc's work that waits on them is done:
	// vkc's Close (run closes it before the deferred destroys run).
	defer vk.DestroySemaphore(r.device, computed, nil)
	copied, err := r.newSemaphore()
	if err != nil {
		return nil, err
	}
	defer vk.DestroySemaphore(r.device, copied, nil)
	fence, err := r.newFence()
	if err != nil {
		return nil, err
	}
	defer vk.DestroyFence(r.device, fence, nil)

	if err := vulkango.SignalOutside(s, computed, vk.NullFence); err != nil {
		return nil, err
	}
	src, err := vulkango.BufferOf(y)
	if err != nil {
		return nil, err
	}
	dst, err := r.newHostBuffer(src.Range)
	if err != nil {
		return nil, err
	}
	defer r.destroyHostBuffer(dst)
	cb, err := r.copyAfter(computed, src, dst, copied, fence)
	if err != nil {
		return nil, err
	}
	defer r.free(cb)
	if err := vulkango.ReadOutside(y, s, copied); err != nil {
		return nil, err
	}
	// vkc's next write of y waits for the program's copy.
	if err := ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)); err != nil {
		return nil, err
	}
	if err := r.wait(fence); err != nil {
		return nil, err
	}
	got := dst.floats()
	again, err := y.Read(context.Background())
	if err != nil {
		return nil, err
	}
	if want := reference(a, xs, reference(a, xs, ys)); !slices.Equal(again, want) {
		return nil, fmt.Errorf("vkc's second axpy read %v, Go computes %v", again, want)
	}
	return got, nil
}
