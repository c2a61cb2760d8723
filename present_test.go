package vkc

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/glfwvk"
	"github.com/vkcompute/vkc/internal/xvfb"
)

// openWindowTest opens a w x h window (on Xvfb when DISPLAY is unset) and
// a device presenting to it with the validation layer on (sync validation
// too, where asked); cleanup closes the device, checks it leaked nothing
// and the layer stayed silent, then closes the window. The caller's
// goroutine stays on one thread for GLFW.
func openWindowTest(t *testing.T, w, h int) (*Device, *glfw.Window) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	xvfb.Start(t)
	require.NoError(t, glfw.Init())
	t.Cleanup(glfw.Terminate)
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	win, err := glfw.CreateWindow(w, h, "vkc present test", nil, nil)
	require.NoError(t, err)
	t.Cleanup(win.Destroy)
	dev := openTest(t, WithSyncValidation(syncValidation()),
		WithPresentation(glfwvk.Extensions(win), glfwvk.SurfaceFunc(win)))
	return dev, win
}

// Nil and zero swapchains return errors, a device opened without
// presentation refuses swapchains, and no window is needed to see it.
func TestSwapchainRefusals(t *testing.T) {
	var nilSC *Swapchain
	assert.ErrorIs(t, nilSC.Present(nil, nil, 1, 1), errNilSwapchain)
	assert.ErrorIs(t, (&Swapchain{}).Resize(1, 1), errNilSwapchain)
	assert.NoError(t, nilSC.Close())
	assert.NoError(t, (&Swapchain{}).Close())
	w, h := nilSC.Size()
	assert.Zero(t, w+h)
	assert.False(t, nilSC.BGRA())
	var nilDev *Device
	_, err := nilDev.NewSwapchain(SwapchainConfig{Width: 8, Height: 8})
	assert.ErrorIs(t, err, errNilDevice)

	dev := openTest(t)
	_, err = dev.NewSwapchain(SwapchainConfig{Width: 8, Height: 8})
	assert.ErrorIs(t, err, ErrNoPresentation)
	_, err = dev.NewSwapchain(SwapchainConfig{})
	assert.ErrorIs(t, err, ErrOutOfDate)
}

// The public API on a real window: unwritten pixels present nothing, a
// written frame comes back from the swapchain image as presented, misuse
// is refused, a capture window refuses a presentation and is doomed by
// it, and Close is idempotent with ErrClosed after it. The device's Close
// destroys a swapchain left open (checked by the cleanup's live counts).
func TestSwapchainPresents(t *testing.T) {
	dev, _ := openWindowTest(t, 32, 32)
	s := dev.NewStream()
	sc, err := dev.NewSwapchain(SwapchainConfig{Width: 32, Height: 32})
	require.NoError(t, err)
	w, h := sc.Size()
	require.Equal(t, [2]int{32, 32}, [2]int{w, h})

	pixels, err := NewBuffer[uint32](dev, 32*32)
	require.NoError(t, err)
	shot, err := NewBuffer[uint32](dev, 32*32)
	require.NoError(t, err)
	assert.ErrorIs(t, sc.Present(s, pixels, 32, 32), ErrUnwritten, "never-written pixels")

	const red = 0xff0000ff // R | A<<24
	require.NoError(t, Fill(s, pixels, uint32(red)))
	for i := 0; i < 3; i++ {
		require.NoError(t, sc.PresentAndCopy(s, pixels, 32, 32, shot))
	}
	got, err := shot.ReadOn(context.Background(), s)
	require.NoError(t, err)
	want := uint32(red)
	if sc.BGRA() {
		want = 0xffff0000
	}
	for i, v := range got {
		require.Equal(t, want, v, "texel %d of the presented image", i)
	}

	assert.Error(t, sc.Present(s, pixels, 64, 64), "more pixels than the buffer holds")
	assert.Error(t, sc.Present(s, pixels, 0, 32))
	assert.Error(t, sc.Present(s, pixels, 1<<31, 1<<31+1<<32), "a width*height that wraps to a negative int64")
	assert.Error(t, sc.Present(s, pixels, 1<<32, 1<<32), "a width*height that wraps to 0")
	assert.Error(t, sc.PresentAndCopy(s, pixels, 32, 32, pixels), "a shot into its own pixels")
	small, err := NewBuffer[uint32](dev, 16)
	require.NoError(t, err)
	require.NoError(t, Fill(s, small, 7))
	assert.Error(t, sc.PresentAndCopy(s, pixels, 32, 32, small), "a shot smaller than the window")
	assert.ErrorIs(t, sc.Resize(0, 0), ErrOutOfDate)
	require.NoError(t, sc.Resize(32, 32))
	require.NoError(t, sc.Present(s, small, 4, 4), "a frame of another size than the last")

	_, err = s.Capture(func(s *Stream) error { return sc.Present(s, pixels, 32, 32) })
	assert.ErrorIs(t, err, ErrSyncInCapture)
	require.NoError(t, sc.Present(s, pixels, 32, 32), "the slot is usable after the refused capture")

	require.NoError(t, sc.Close())
	require.NoError(t, sc.Close())
	assert.ErrorIs(t, sc.Present(s, pixels, 32, 32), ErrClosed)
	assert.ErrorIs(t, sc.Resize(32, 32), ErrClosed)

	open, err := dev.NewSwapchain(SwapchainConfig{Width: 32, Height: 32, VSync: true})
	require.NoError(t, err)
	require.NoError(t, open.Present(s, pixels, 32, 32))
	// Left open: Device.Close (in the cleanup) destroys it.
}

// A window larger than the device's images: X11 takes no swapchain
// smaller than the window, so NewSwapchain refuses with ErrOutOfDate
// rather than asking the driver for images it cannot make (the cleanup
// fails the test on any validation message).
func TestSwapchainOfAWindowTooLarge(t *testing.T) {
	dev, _ := openWindowTest(t, 17000, 16)
	sc, err := dev.NewSwapchain(SwapchainConfig{Width: 17000, Height: 16})
	assert.ErrorIs(t, err, ErrOutOfDate)
	assert.ErrorContains(t, err, "images are at most")
	assert.Nil(t, sc)
}

// A frame wider or taller than the device can make an image is refused
// at Present with the limit named, before anything reaches the driver
// (the cleanup fails the test on any validation message); a frame that
// fits presents after it.
func TestPresentRefusesAFrameLargerThanTheDevicesImages(t *testing.T) {
	dev, _ := openWindowTest(t, 64, 64)
	s := dev.NewStream()
	sc, err := dev.NewSwapchain(SwapchainConfig{Width: 64, Height: 64})
	require.NoError(t, err)
	defer sc.Close()
	pixels, err := NewBuffer[uint32](dev, 20000)
	require.NoError(t, err)
	require.NoError(t, Fill(s, pixels, uint32(0xff0000ff)))
	for _, size := range [][2]int{{20000, 1}, {1, 20000}} {
		assert.ErrorContains(t, sc.Present(s, pixels, size[0], size[1]), "frame images are at most", "%dx%d", size[0], size[1])
	}
	require.NoError(t, sc.Present(s, pixels, 100, 200), "a frame that fits")
	require.NoError(t, s.Sync(context.Background()))
}
