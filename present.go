package vkc

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// Presentation: frames computed on the device shown in a window, with no
// copy through host memory. Open the device with WithPresentation (the
// window system's library makes the surface: GLFW's CreateWindowSurface),
// make a Swapchain of the window's size, and Present a buffer of pixels
// after the work that wrote it:
//
//	win, _ := glfw.CreateWindow(w, h, "title", nil, nil) // glfw.ClientAPI = glfw.NoAPI
//	dev, _ := vkc.Open(vkc.WithPresentation(win.GetRequiredInstanceExtensions(), surfaceOf(win)))
//	sc, _ := dev.NewSwapchain(vkc.SwapchainConfig{Width: w, Height: h})
//	defer sc.Close()
//	for !win.ShouldClose() {
//		graph.Replay()                          // writes pixels
//		err := sc.Present(s, pixels, pw, ph)    // after the replay, on the same stream
//		if errors.Is(err, vkc.ErrOutOfDate) { sc.Resize(win.GetFramebufferSize()) }
//		glfw.PollEvents()
//	}
//
// (cmd/vkview is a whole program; internal/glfwvk has the surface function.)

var (
	// ErrOutOfDate: the swapchain no longer matches its window (resized or
	// minimized), or the window is too large for any swapchain (see
	// NewSwapchain); the frame may not have been shown. Resize, then
	// present again.
	ErrOutOfDate = errs.OutOfDate
	// ErrNoPresentation: the device was not opened with WithPresentation.
	ErrNoPresentation = errs.NoPresentation

	errNilSwapchain = errors.New("vkc: nil swapchain (use Device.NewSwapchain)")
)

// WithPresentation opens the device to show frames in a window. The
// instance enables instanceExtensions (the surface extensions the window
// system needs: GLFW's GetRequiredInstanceExtensions), surface is called
// once with the new VkInstance as a uintptr and returns the window's
// VkSurfaceKHR (made with GLFW's CreateWindowSurface, say), and the device
// chosen (WithDevice, or the best that can present to that surface) gets
// VK_KHR_swapchain and a queue that both computes and presents: Open fails
// with a clear error where no device has one. The device owns the surface
// and destroys it at Close, so close the device before the window.
func WithPresentation(instanceExtensions []string, surface func(instance uintptr) (uint64, error)) Option {
	return func(c *config) {
		c.instanceExtensions = append([]string(nil), instanceExtensions...)
		c.surface = surface
	}
}

// SwapchainConfig chooses a swapchain.
type SwapchainConfig struct {
	// Width and Height are the window's framebuffer size in pixels; where
	// the window system fixes the size (X11, Windows) it decides. Either
	// way the swapchain is no larger than the device's images can be (see
	// NewSwapchain).
	Width, Height int
	// VSync shows one frame per display refresh (FIFO); without it frames
	// are shown as soon as they are ready (mailbox or immediate, where the
	// surface offers one).
	VSync bool
}

// Swapchain shows frames in the device's window. It is safe for concurrent
// use (frames are presented one at a time); Close waits for calls in
// progress, and after it every method returns ErrClosed. A nil or zero
// Swapchain's methods return errors.
type Swapchain struct {
	dev  *Device
	pr   *recorder.Presentation
	life lifetime
}

// NewSwapchain makes a swapchain for the window of a device opened with
// WithPresentation (else ErrNoPresentation). Its images are no larger than
// the device can make images of their format (often 16384 pixels a side):
// for a larger window, where the window system takes a smaller swapchain
// it gets one, smaller than the window (Size says how large) and scaled
// up to it; where it does not (X11 takes only the window's size),
// NewSwapchain and Resize fail with ErrOutOfDate, as for a minimized
// window, until the window is made smaller.
func (d *Device) NewSwapchain(c SwapchainConfig) (*Swapchain, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	if c.Width <= 0 || c.Height <= 0 {
		return nil, fmt.Errorf("vkc: swapchain of %dx%d pixels: %w", c.Width, c.Height, ErrOutOfDate)
	}
	pr, err := d.rec.NewPresentation(uint32(c.Width), uint32(c.Height), c.VSync)
	if err != nil {
		return nil, publicOp("Device.NewSwapchain", err)
	}
	return &Swapchain{dev: d, pr: pr}, nil
}

// enter admits a call, or fails for a nil, zero or closed swapchain; the
// caller calls leave after a nil error.
func (sc *Swapchain) enter() error {
	if sc == nil || sc.pr == nil || sc.dev == nil {
		return errNilSwapchain
	}
	if err := sc.dev.enter(); err != nil {
		return err
	}
	if !sc.life.enter() {
		sc.dev.leave()
		return fmt.Errorf("vkc: swapchain closed: %w", ErrClosed)
	}
	return nil
}

func (sc *Swapchain) leave() {
	sc.life.leave()
	sc.dev.leave()
}

// Size is the swapchain images' size in pixels: the window's, as of the
// last NewSwapchain or Resize, or smaller where the window is larger than
// the device's images can be (see NewSwapchain); 0, 0 for a nil or closed
// Swapchain.
func (sc *Swapchain) Size() (width, height int) {
	if sc.enter() != nil {
		return 0, 0
	}
	defer sc.leave()
	info := sc.pr.Info()
	return int(info.Width), int(info.Height)
}

// maxFrame is the largest frame Present takes (0: no bound); the caller
// is inside enter.
func (sc *Swapchain) maxFrame() (width, height int) {
	info := sc.pr.Info()
	return int(info.MaxFrameWidth), int(info.MaxFrameHeight)
}

// BGRA reports the byte order of the images as PresentAndCopy copies them
// out: blue first (B, G, R, A; 0xAARRGGBB as a uint32), else red first,
// like the pixels Present takes.
func (sc *Swapchain) BGRA() bool {
	if sc.enter() != nil {
		return false
	}
	defer sc.leave()
	return sc.pr.Info().BGRA
}

// Present shows pixels, width x height RGBA8 texels packed into uint32s
// as R | G<<8 | B<<16 | A<<24 (rows packed, row 0 at the top), in the
// window: scaled to fit, keeping the aspect ratio, centred on black. It
// runs on stream s after s's pending work (and other streams' pending
// writes to pixels) — a Replay that wrote pixels on s needs no Sync — and
// returns once the frame is queued for presentation; nothing passes
// through host memory. Pixels never written fail with ErrUnwritten and
// show nothing. ErrOutOfDate asks for Resize; presenting inside s's
// capture window is refused (ErrSyncInCapture) and dooms the capture. A
// frame wider or taller than the device can make an image (often 16384
// pixels) is refused with an error that names the limit, and nothing
// reaches the device: present such pixels scaled down by a kernel.
func (sc *Swapchain) Present(s *Stream, pixels *Buffer[uint32], width, height int) error {
	return sc.present(s, pixels, width, height, nil)
}

// PresentAndCopy is Present that also copies the image as presented into
// shot (Size's width x height texels, in the byte order BGRA reports), for
// tests and screenshots; read shot after it on s.
func (sc *Swapchain) PresentAndCopy(s *Stream, pixels *Buffer[uint32], width, height int, shot *Buffer[uint32]) error {
	if err := shot.valid(); err != nil {
		return err
	}
	return sc.present(s, pixels, width, height, shot)
}

func (sc *Swapchain) present(s *Stream, pixels *Buffer[uint32], width, height int, shot *Buffer[uint32]) error {
	if err := sc.enter(); err != nil {
		return err
	}
	defer sc.leave()
	if err := pixels.valid(); err != nil {
		return err
	}
	if s == nil || s.dev == nil {
		return errNilStream
	}
	if s.dev != sc.dev {
		return fmt.Errorf("vkc: swapchain presented on a stream of another device")
	}
	// Divided, not multiplied: width*height can wrap for sizes no buffer holds.
	if width <= 0 || height <= 0 || width > pixels.Len() || height > pixels.Len()/width {
		return fmt.Errorf("vkc: a frame of %dx%d pixels from a buffer of %d", width, height, pixels.Len())
	}
	if mw, mh := sc.maxFrame(); (mw > 0 && width > mw) || (mh > 0 && height > mh) {
		return fmt.Errorf("vkc: a frame of %dx%d pixels: this device's frame images are at most %dx%d", width, height, mw, mh)
	}
	pc := pixels.core
	if err := pc.use(s); err != nil {
		return err
	}
	defer pc.done()
	var shotClaim alloc.Claim // zero: no shot
	if shot != nil {
		sh := shot.core
		if sh == pc {
			return fmt.Errorf("vkc: a frame copied into its own pixels")
		}
		if err := sh.use(s); err != nil {
			return err
		}
		defer sh.done()
		shotClaim = sh.claim
	}
	return publicOp("Swapchain.Present", sc.pr.Present(s.id, pc.claim, uint32(width), uint32(height), shotClaim))
}

// Resize replaces the swapchain with one of the window's new framebuffer
// size, after the frames in flight; call it when Present returns
// ErrOutOfDate or the window reports a new size. A zero size (a minimized
// window) is ErrOutOfDate: present again once the window has an area. So
// is a window too large for the device's images where the window system
// takes no smaller swapchain (see NewSwapchain); the old swapchain stays
// until a Resize succeeds.
func (sc *Swapchain) Resize(width, height int) error {
	if err := sc.enter(); err != nil {
		return err
	}
	defer sc.leave()
	if width <= 0 || height <= 0 {
		return fmt.Errorf("vkc: swapchain of %dx%d pixels: %w", width, height, ErrOutOfDate)
	}
	return publicOp("Swapchain.Resize", sc.pr.Resize(uint32(width), uint32(height)))
}

// Close waits for calls in progress and the frames in flight, then
// destroys the swapchain, its semaphores and images. Idempotent; Device.Close
// closes a swapchain left open. Closing a nil Swapchain does nothing.
func (sc *Swapchain) Close() error {
	if sc == nil || sc.pr == nil || sc.dev == nil || !sc.life.close() {
		return nil
	}
	defer sc.life.finish()
	if sc.dev.enter() != nil {
		return nil // the device is closing, and closes the swapchain
	}
	defer sc.dev.leave()
	return publicOp("Swapchain.Close", sc.pr.Close())
}
