package vk

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/glfwvk"
	"github.com/vkcompute/vkc/internal/xvfb"
)

// presentRig is a real window (on Xvfb when DISPLAY is unset) with a
// presenting device on its surface, the validation layer on. Cleanup fails
// the test on any validation message or object left alive.
type presentRig struct {
	win *glfw.Window
	in  *Instance
	d   *Device
	cp  *CommandPool
	cb  *CommandBuffer
	f   *Fence
}

// newPresentRig opens a w x h window. GLFW wants one thread: the caller's
// goroutine stays locked to it for the test.
func newPresentRig(t *testing.T, w, h int) *presentRig {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	xvfb.Start(t)
	require.NoError(t, glfw.Init())
	t.Cleanup(glfw.Terminate)
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	glfw.WindowHint(glfw.Resizable, glfw.True)
	win, err := glfw.CreateWindow(w, h, "vk present test", nil, nil)
	require.NoError(t, err)
	t.Cleanup(win.Destroy)
	exts := glfwvk.Extensions(win)
	require.NotEmpty(t, exts, "GLFW finds no Vulkan surface extensions")
	in, err := NewInstance(InstanceOptions{Validation: true, Extensions: exts})
	require.NoError(t, err)
	require.True(t, in.Validating(), "the validation layer is not installed")
	r := &presentRig{win: win, in: in}
	t.Cleanup(func() {
		e, wn := in.ValidationCounts()
		assert.Zero(t, e+wn, "validation messages: %v", in.RecentMessages())
		in.Close()
	})
	surface, err := glfwvk.SurfaceFunc(win)(in.Handle())
	require.NoError(t, err)
	infos, err := in.Devices()
	require.NoError(t, err)
	idx, err := Select(infos, os.Getenv("VKC_DEVICE"))
	require.NoError(t, err)
	ok, err := in.CanPresent(idx, surface)
	require.NoError(t, err)
	require.True(t, ok, "%s cannot present to an X11 surface", infos[idx].Name)
	r.d, err = in.OpenPresentingDevice(idx, surface)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.Equal(t, map[string]int64{"surface": 1}, r.d.Live(), "live objects before Close")
		r.d.Close()
		assert.Empty(t, r.d.Live(), "live objects after Close")
	})
	require.True(t, r.d.Presents())
	r.cp, err = r.d.NewCommandPool()
	require.NoError(t, err)
	r.cb, err = r.cp.Allocate()
	require.NoError(t, err)
	r.f, err = r.d.NewFence()
	require.NoError(t, err)
	t.Cleanup(func() {
		r.f.Destroy()
		r.cb.Free()
		r.cp.Destroy()
	})
	return r
}

// frame acquires an image of sc, copies src's w x h pixels into it (and
// the result into shot), presents it and waits for the copy.
func (r *presentRig) frame(t *testing.T, sc *Swapchain, frame int, src *Block, w, h uint32, shot *Block) error {
	t.Helper()
	d := r.d
	image, err := d.Acquire(sc, frame, 5*time.Second)
	if err != nil {
		return err
	}
	require.NoError(t, d.Reset(r.cb))
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdFrameCopy(r.cb, sc, &FrameCopy{Src: src, Width: w, Height: h, Image: image, Shot: shot})
	d.CmdBarrier(r.cb, BarrierToHost)
	require.NoError(t, d.End(r.cb))
	require.NoError(t, d.SubmitFrame(r.cb, sc, frame, image, r.f))
	perr := d.Present(sc, image)
	ok, err := d.WaitFence(r.f, -1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, d.ResetFence(r.f))
	return perr
}

// pattern fills a mapped block with w x h distinct RGBA8 pixels.
func pattern(b *Block, w, h uint32) []uint32 {
	px := make([]uint32, w*h)
	m := b.Mapped()
	for i := range px {
		x, y := uint32(i)%w, uint32(i)/w
		px[i] = 0xff000000 | (x*37&0xff)<<16 | (y*53&0xff)<<8 | (x+y*w)&0xff
		binary.LittleEndian.PutUint32(m[4*i:], px[i])
	}
	return px
}

// shotPixels reads a shot back as RGBA8 words (R in the low byte).
func shotPixels(b *Block, sc *Swapchain) []uint32 {
	w, h := sc.Extent()
	m := b.Mapped()
	out := make([]uint32, w*h)
	for i := range out {
		v := binary.LittleEndian.Uint32(m[4*i:])
		if sc.BGRA() {
			v = v&0xff00ff00 | (v>>16)&0xff | (v&0xff)<<16
		}
		out[i] = v
	}
	return out
}

// The frame's pixels reach the swapchain image scaled to fit and centred
// on black (checked exactly: the scales are whole numbers, where nearest
// filtering samples each source pixel's centre), through a recreated
// swapchain after the window is resized, with every object destroyed.
func TestPresentCopiesScalesAndRecreates(t *testing.T) {
	r := newPresentRig(t, 64, 48)
	d := r.d
	sc, err := d.NewSwapchain(SwapchainOptions{Width: 64, Height: 48})
	require.NoError(t, err)
	w, h := sc.Extent()
	require.Equal(t, [2]uint32{64, 48}, [2]uint32{w, h}, "X11 surfaces fix the window's size")
	require.True(t, sc.Copyable(), "lavapipe's swapchain images can be transfer sources")
	require.GreaterOrEqual(t, sc.Images(), 2)

	src, err := d.AllocateBlock(UseUpload, 16*12*4)
	require.NoError(t, err)
	defer src.Release()
	require.NoError(t, d.MapBlock(src))
	shot, err := d.AllocateBlock(UseReadback, 96*96*4)
	require.NoError(t, err)
	defer shot.Release()
	require.NoError(t, d.MapBlock(shot))

	// 16x12 into 64x48: exactly 4x, filling the window.
	px := pattern(src, 16, 12)
	require.NoError(t, sc.SetSource(16, 12))
	for i := 0; i < 3; i++ {
		require.NoError(t, r.frame(t, sc, i%FramesInFlight, src, 16, 12, shot))
	}
	got := shotPixels(shot, sc)
	for y := uint32(0); y < h; y++ {
		for x := uint32(0); x < w; x++ {
			require.Equal(t, px[(y/4)*16+x/4], got[y*w+x], "pixel (%d,%d)", x, y)
		}
	}

	// 8x8 into 64x48: 6x to 48x48, with 8-pixel black bars left and right.
	px = pattern(src, 8, 8)
	require.NoError(t, sc.SetSource(8, 8))
	require.NoError(t, r.frame(t, sc, 0, src, 8, 8, shot))
	got = shotPixels(shot, sc)
	for y := uint32(0); y < h; y++ {
		for x := uint32(0); x < w; x++ {
			want := uint32(0xff000000)
			if x >= 8 && x < 56 {
				want = px[(y/6)*8+(x-8)/6]
			}
			require.Equal(t, want, got[y*w+x], "pixel (%d,%d)", x, y)
		}
	}

	// A frame of another size than the source is refused at End.
	image, err := d.Acquire(sc, 1, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, d.Reset(r.cb))
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdFrameCopy(r.cb, sc, &FrameCopy{Src: src, Width: 16, Height: 12, Image: image})
	assert.ErrorContains(t, d.End(r.cb), "source is 8x8")
	// The acquired image still has to be presented: do it properly.
	require.NoError(t, r.frame2(t, sc, image, src))

	// The window grows: a swapchain recreated from the old one has its size.
	r.win.SetSize(96, 80)
	deadline := time.Now().Add(10 * time.Second)
	for {
		glfw.WaitEventsTimeout(0.05)
		fw, fh := r.win.GetFramebufferSize()
		if fw == 96 && fh == 80 {
			break
		}
		require.True(t, time.Now().Before(deadline), "window never reached 96x80 (is %dx%d)", fw, fh)
	}
	require.NoError(t, d.WaitIdle())
	next, err := d.NewSwapchain(SwapchainOptions{Width: 96, Height: 80, Old: sc})
	require.NoError(t, err)
	sc.Destroy()
	sc.Destroy() // idempotent
	w, h = next.Extent()
	require.Equal(t, [2]uint32{96, 80}, [2]uint32{w, h})
	require.NoError(t, next.SetSource(8, 8))
	require.NoError(t, r.frame(t, next, 0, src, 8, 8, shot))
	got = shotPixels(shot, next)
	for y := uint32(0); y < h; y++ {
		for x := uint32(0); x < w; x++ {
			want := uint32(0xff000000)
			if x >= 8 && x < 88 {
				want = px[(y/10)*8+(x-8)/10]
			}
			require.Equal(t, want, got[y*w+x], "pixel (%d,%d)", x, y)
		}
	}
	require.NoError(t, d.WaitIdle())
	next.Destroy()
	_, err = d.Acquire(next, 0, time.Second)
	assert.ErrorIs(t, err, ErrClosed)
}

// A window larger than the device's images: X11 takes no extent but the
// window's, which no swapchain image can have, so NewSwapchain refuses
// with ErrOutOfDate (as for a minimized window) and the driver is not
// asked for an invalid swapchain (the cleanup checks the validation layer
// stayed silent); once the window shrinks a swapchain is made.
func TestSwapchainNoLargerThanTheDevicesImages(t *testing.T) {
	r := newPresentRig(t, 17000, 16)
	d := r.d
	_, err := d.NewSwapchain(SwapchainOptions{Width: 17000, Height: 16})
	require.ErrorIs(t, err, ErrOutOfDate)
	assert.ErrorContains(t, err, "images are at most")
	assert.NotContains(t, d.Live(), "swapchain", "a refused swapchain was made")
	assert.NotContains(t, d.Live(), "semaphore", "a refused swapchain left semaphores")

	r.win.SetSize(64, 16)
	deadline := time.Now().Add(10 * time.Second)
	for {
		glfw.WaitEventsTimeout(0.05)
		if fw, fh := r.win.GetFramebufferSize(); fw == 64 && fh == 16 {
			break
		}
		require.True(t, time.Now().Before(deadline), "window never reached 64x16")
	}
	sc, err := d.NewSwapchain(SwapchainOptions{Width: 64, Height: 16})
	require.NoError(t, err)
	w, h := sc.Extent()
	assert.Equal(t, [2]uint32{64, 16}, [2]uint32{w, h})
	sc.Destroy()
}

// A frame source wider or taller than the device's images is refused,
// naming the limit, and no image is created (the cleanup fails the test
// on any validation message); the largest one is made.
func TestSetSourceNoLargerThanTheDevicesImages(t *testing.T) {
	r := newPresentRig(t, 32, 32)
	d := r.d
	sc, err := d.NewSwapchain(SwapchainOptions{Width: 32, Height: 32})
	require.NoError(t, err)
	defer sc.Destroy()
	mw, mh := sc.MaxSource()
	require.NotZero(t, mw)
	require.NotZero(t, mh)
	limit := fmt.Sprintf("at most %dx%d", mw, mh)
	assert.ErrorContains(t, sc.SetSource(mw+1, 1), limit)
	assert.ErrorContains(t, sc.SetSource(1, mh+1), limit)
	assert.NotContains(t, d.Live(), "image", "a refused source made an image")
	require.NoError(t, sc.SetSource(mw, 1))
	require.NoError(t, sc.SetSource(1, mh))
}

// frame2 finishes a frame whose image was acquired with frame 1's
// semaphore: a whole copy of the 8x8 source, presented.
func (r *presentRig) frame2(t *testing.T, sc *Swapchain, image uint32, src *Block) error {
	t.Helper()
	d := r.d
	require.NoError(t, d.Reset(r.cb))
	require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
	d.CmdFrameCopy(r.cb, sc, &FrameCopy{Src: src, Width: 8, Height: 8, Image: image})
	require.NoError(t, d.End(r.cb))
	require.NoError(t, d.SubmitFrame(r.cb, sc, 1, image, r.f))
	perr := d.Present(sc, image)
	_, err := d.WaitFence(r.f, -1)
	require.NoError(t, err)
	require.NoError(t, d.ResetFence(r.f))
	return perr
}

// A device opened without presentation refuses swapchains, and the
// default instance and device paths are unchanged by presentation.
func TestSwapchainNeedsAPresentingDevice(t *testing.T) {
	d := fixture(t)
	assert.False(t, d.Presents())
	_, err := d.NewSwapchain(SwapchainOptions{Width: 8, Height: 8})
	assert.ErrorIs(t, err, ErrNoPresentation)
}

// Closing the device with a swapchain alive (a program that quits
// mid-frame) destroys nothing twice and crashes nothing: later calls on
// the swapchain return ErrClosed.
func TestCloseWithSwapchainAlive(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	xvfb.Start(t)
	require.NoError(t, glfw.Init())
	defer glfw.Terminate()
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	win, err := glfw.CreateWindow(32, 32, "vk close test", nil, nil)
	require.NoError(t, err)
	defer win.Destroy()
	in, err := NewInstance(InstanceOptions{Validation: true, Extensions: glfwvk.Extensions(win)})
	require.NoError(t, err)
	defer in.Close()
	surface, err := glfwvk.SurfaceFunc(win)(in.Handle())
	require.NoError(t, err)
	infos, err := in.Devices()
	require.NoError(t, err)
	idx, err := Select(infos, os.Getenv("VKC_DEVICE"))
	require.NoError(t, err)
	d, err := in.OpenPresentingDevice(idx, surface)
	require.NoError(t, err)
	sc, err := d.NewSwapchain(SwapchainOptions{Width: 32, Height: 32})
	require.NoError(t, err)
	require.NoError(t, sc.SetSource(4, 4))
	_, err = d.Acquire(sc, 0, 5*time.Second)
	require.NoError(t, err)
	// Quit with an image acquired: the swapchain goes with the device.
	sc.Destroy()
	d.Close()
	assert.Empty(t, d.Live())
	_, err = d.Acquire(sc, 1, time.Second)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, sc.SetSource(8, 8), ErrClosed)
	sc.Destroy()
	e, w := in.ValidationCounts()
	assert.Zero(t, e+w, "validation messages: %v", in.RecentMessages())
}
