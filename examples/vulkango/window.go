package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/glfwvk"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// The window: the program opens a GLFW window, makes its device present
// to it, has vkc compute a colour strip into a buffer (a blue ramp across
// the window: a*column converted to uint32, one B8G8R8A8 texel per pixel)
// and, each frame, copies that buffer into the acquired swapchain image
// with its own command buffer, waiting on a semaphore vkc signals, and
// presents it. Where the swapchain images can be read back, the first
// frame's image of each swapchain is checked against Go's ramp. A resize
// (the framebuffer no longer matching, or the swapchain reported out of
// date or suboptimal) makes a new swapchain and a new strip.

// windowWidth and windowHeight are the window's size in pixels.
const windowWidth, windowHeight = 256, 32

// runWindow is run with a window: frames frames of vkc's colour strip.
// The caller's goroutine must be locked to its thread (GLFW's calls stay
// on one).
func runWindow(w io.Writer, validate bool, frames int) error {
	return runWindowWith(w, validate, frames, true, nil)
}

// maxStaleInARow bounds the swapchains made for one frame: a surface
// that reports every new swapchain out of date is an error, not a loop.
const maxStaleInARow = 8

// runWindowWith is runWindow calling beforeFrame (if not nil) before each
// frame with the frame's number and the window, as a user's resize would
// come between frames. The window is resizable: when its framebuffer no
// longer matches the swapchain (checked before each frame if watchSize),
// or acquire or present report the swapchain out of date or suboptimal,
// the program makes a new swapchain of the new size and has vkc compute
// the strip for it; a minimised window (a zero framebuffer) waits for
// events. Without watchSize only the swapchain's own results say when.
func runWindowWith(w io.Writer, validate bool, frames int, watchSize bool, beforeFrame func(frame int, win *glfw.Window)) (err error) {
	start, _ := validationMessages()
	if err := glfwvk.Init(); err != nil {
		return err
	}
	defer glfw.Terminate()
	win, err := glfwvk.CreateWindow(windowWidth, windowHeight, "vkc on a vulkan-go device", true)
	if err != nil {
		return err
	}
	defer win.Destroy()
	r, err := newRendererFor(rendererOptions{validate: validate, instanceExtensions: glfwvk.Extensions(win),
		surface: glfwvk.SurfaceFunc(win)})
	if err != nil {
		return err
	}
	defer r.destroy()
	f := &windowFrames{w: w, r: r, win: win}
	if f.sc, err = r.newSwapchain(); err != nil {
		return err
	}
	defer func() { f.sc.destroy() }()
	fmt.Fprintf(w, "the program's window: %dx%d, swapchain of %d images, validation layer on: %v\n",
		f.sc.extent.Width, f.sc.extent.Height, len(f.sc.images), r.validating)

	dev, err := vulkango.Adopt(vulkango.Device{Instance: r.instance, PhysicalDevice: r.gpu, Device: r.device,
		Queue: r.queue, QueueFamily: r.family, APIVersion: apiVersion, QueueLock: &r.queueMu})
	if err != nil {
		return err
	}
	defer dev.Close()
	f.dev = dev
	if f.strip, f.want, err = colourStrip(dev, int(f.sc.extent.Width), int(f.sc.extent.Height)); err != nil {
		return err
	}
	defer func() { f.strip.Close() }()
	shown, err := f.present(frames, watchSize, beforeFrame)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "presented %d frames\n", shown)
	if err := f.strip.Close(); err != nil {
		return err
	}
	if err := dev.Close(); err != nil {
		return err
	}
	if r.validating {
		n, msgs := validationMessages()
		fmt.Fprintf(w, "validation messages: %d\n", n-start)
		if n != start {
			return fmt.Errorf("validation messages: %q", msgs[min(int(start), len(msgs)):])
		}
	}
	return nil
}

// windowFrames is what the frame loop of runWindowWith works on: the
// current swapchain and the strip vkc computed for its size, which a resize
// replaces together.
type windowFrames struct {
	w     io.Writer
	r     *renderer
	win   *glfw.Window
	dev   *vkc.Device
	sc    *swapchain
	strip *vkc.Buffer[uint32]
	want  []uint32 // the strip's texels as Go computes them
}

// present shows up to frames frames and returns how many it showed.
func (f *windowFrames) present(frames int, watchSize bool, beforeFrame func(frame int, win *glfw.Window)) (int, error) {
	shown, checked, stale, staleInARow := 0, false, false, 0
	for shown < frames && !f.win.ShouldClose() {
		if beforeFrame != nil {
			beforeFrame(shown, f.win)
		}
		glfw.PollEvents()
		fw, fh := f.win.GetFramebufferSize()
		if fw == 0 || fh == 0 {
			glfw.WaitEvents() // minimised: nothing to present to
			continue
		}
		if stale || (watchSize && (uint32(fw) != f.sc.extent.Width || uint32(fh) != f.sc.extent.Height)) {
			if staleInARow++; staleInARow > maxStaleInARow {
				return shown, fmt.Errorf("frame %d: %d swapchains in a row out of date", shown, maxStaleInARow)
			}
			if err := f.remake(shown); err != nil {
				return shown, err
			}
			stale, checked = false, false
		}
		got, status, err := f.sc.presentFrame(f.dev.Stream(), f.strip)
		if err != nil {
			return shown, fmt.Errorf("frame %d: %w", shown, err)
		}
		if status == frameOutOfDate {
			stale = true // not shown: a new swapchain first
			continue
		}
		stale = status == frameSuboptimal
		staleInARow = 0
		if !checked && got != nil {
			if err := f.check(shown, got); err != nil {
				return shown, err
			}
			checked = true
		}
		shown++
	}
	return shown, nil
}

// remake replaces the swapchain and the strip for the window's new size.
// The old swapchain goes first (destroy waits for the queue); the strip is
// vkc's again, for the new size.
func (f *windowFrames) remake(shown int) error {
	f.sc.destroy()
	sc, err := f.r.newSwapchain()
	if err != nil {
		f.sc = &swapchain{r: f.r}
		return err
	}
	f.sc = sc
	if err := f.strip.Close(); err != nil {
		return err
	}
	if f.strip, f.want, err = colourStrip(f.dev, int(sc.extent.Width), int(sc.extent.Height)); err != nil {
		return err
	}
	fmt.Fprintf(f.w, "frame %d: swapchain made again for %dx%d\n", shown, sc.extent.Width, sc.extent.Height)
	return nil
}

// check compares a frame's image, read back, with the strip.
func (f *windowFrames) check(shown int, got []uint32) error {
	if !slices.Equal(got, f.want) {
		return fmt.Errorf("frame %d: the swapchain image does not hold vkc's strip", shown)
	}
	if shown == 0 {
		fmt.Fprintln(f.w, "the first frame's image holds vkc's strip: ok")
	} else {
		fmt.Fprintf(f.w, "frame %d's image holds vkc's %dx%d strip: ok\n", shown, f.sc.extent.Width, f.sc.extent.Height)
	}
	return nil
}

// colourStrip has vkc compute width*height texels, each a blue level
// that grows across the window (a*column + 0, converted to uint32), and
// returns them with the texels Go expects.
func colourStrip(dev *vkc.Device, width, height int) (*vkc.Buffer[uint32], []uint32, error) {
	columns := make([]float32, width*height)
	for i := range columns {
		columns[i] = float32(i % width)
	}
	slope := float32(255) / float32(max(width-1, 1))
	want := make([]uint32, len(columns))
	for i, c := range columns {
		want[i] = uint32(slope*c + 0) // Axpy's a*x + y, truncated as Convert does
	}
	x, err := vkc.FromSlice(dev, columns)
	if err != nil {
		return nil, nil, err
	}
	defer x.Close()
	y, err := vkc.FromSlice(dev, make([]float32, len(columns)))
	if err != nil {
		return nil, nil, err
	}
	defer y.Close()
	texels, err := vkc.NewBuffer[uint32](dev, len(columns))
	if err != nil {
		return nil, nil, err
	}
	s := dev.Stream()
	if err := ops.Axpy(s, ops.Const(float64(slope)), ops.Of(x), ops.Of(y)); err != nil {
		texels.Close()
		return nil, nil, err
	}
	if err := ops.Convert(s, ops.Of(y), ops.Of(texels)); err != nil {
		texels.Close()
		return nil, nil, err
	}
	got, err := texels.Read(context.Background())
	if err != nil {
		texels.Close()
		return nil, nil, err
	}
	if !slices.Equal(got, want) {
		texels.Close()
		return nil, nil, errors.New("vkc's strip differs from Go's")
	}
	return texels, want, nil
}

// swapchain is the program's swapchain on its window's surface.
type swapchain struct {
	r        *renderer
	handle   vk.Swapchain
	images   []vk.Image
	extent   vk.Extent2D
	readable bool // the images are transfer sources: a frame can be read back
	// drawn are the semaphores each image's present waits on, by image:
	// one is reused only once its image is acquired again, when the
	// present that waited on it is done (a host fence cannot tell).
	drawn []vk.Semaphore
}

// newSwapchain makes a swapchain of B8G8R8A8 images the program copies
// into (transfer destinations), presented in FIFO order.
func (r *renderer) newSwapchain() (*swapchain, error) {
	var caps vk.SurfaceCapabilities
	if err := paused("vkGetPhysicalDeviceSurfaceCapabilitiesKHR", func() vk.Result {
		return vk.GetPhysicalDeviceSurfaceCapabilities(r.gpu, r.surface, &caps)
	}); err != nil {
		return nil, err
	}
	caps.Deref()
	caps.CurrentExtent.Deref()
	usable := vk.ImageUsageFlags(caps.SupportedUsageFlags)
	if usable&vk.ImageUsageFlags(vk.ImageUsageTransferDstBit) == 0 {
		return nil, errors.New("the surface's images cannot be copied into")
	}
	usage := vk.ImageUsageFlags(vk.ImageUsageTransferDstBit)
	readable := usable&vk.ImageUsageFlags(vk.ImageUsageTransferSrcBit) != 0
	if readable {
		usage |= vk.ImageUsageFlags(vk.ImageUsageTransferSrcBit)
	}
	var n uint32
	if err := vulkango.Result("vkGetPhysicalDeviceSurfaceFormatsKHR", vk.GetPhysicalDeviceSurfaceFormats(r.gpu, r.surface, &n, nil)); err != nil {
		return nil, err
	}
	formats := make([]vk.SurfaceFormat, n)
	if err := paused("vkGetPhysicalDeviceSurfaceFormatsKHR", func() vk.Result {
		return vk.GetPhysicalDeviceSurfaceFormats(r.gpu, r.surface, &n, formats)
	}); err != nil {
		return nil, err
	}
	format := -1
	for i := range formats[:n] {
		formats[i].Deref()
		if formats[i].Format == vk.FormatB8g8r8a8Unorm {
			format = i
		}
	}
	if format < 0 {
		return nil, errors.New("the surface offers no B8G8R8A8_UNORM format")
	}
	extent := caps.CurrentExtent
	if extent.Width == vk.MaxUint32 {
		extent = vk.Extent2D{Width: windowWidth, Height: windowHeight}
	}
	count := caps.MinImageCount + 1
	if caps.MaxImageCount != 0 {
		count = min(count, caps.MaxImageCount)
	}
	ci := vk.SwapchainCreateInfo{SType: vk.StructureTypeSwapchainCreateInfo, Surface: r.surface, MinImageCount: count,
		ImageFormat: formats[format].Format, ImageColorSpace: formats[format].ColorSpace, ImageExtent: extent,
		ImageArrayLayers: 1, ImageUsage: usage, ImageSharingMode: vk.SharingModeExclusive,
		PreTransform: caps.CurrentTransform, CompositeAlpha: opaqueOr(caps.SupportedCompositeAlpha),
		PresentMode: vk.PresentModeFifo, Clipped: vk.True}
	var handle vk.Swapchain
	if err := paused("vkCreateSwapchainKHR", func() vk.Result { return vk.CreateSwapchain(r.device, &ci, nil, &handle) }); err != nil {
		return nil, err
	}
	sc := &swapchain{r: r, handle: handle, extent: extent, readable: readable}
	if err := vulkango.Result("vkGetSwapchainImagesKHR", vk.GetSwapchainImages(r.device, handle, &n, nil)); err != nil {
		sc.destroy()
		return nil, err
	}
	sc.images = make([]vk.Image, n)
	if err := paused("vkGetSwapchainImagesKHR", func() vk.Result { return vk.GetSwapchainImages(r.device, handle, &n, sc.images) }); err != nil {
		sc.destroy()
		return nil, err
	}
	sc.images = sc.images[:n]
	sc.drawn = make([]vk.Semaphore, n)
	for i := range sc.drawn {
		drawn, err := r.newSemaphore()
		if err != nil {
			sc.destroy()
			return nil, err
		}
		sc.drawn[i] = drawn
	}
	return sc, nil
}

// opaqueOr is the opaque composite-alpha mode where the surface supports
// it, else the first it does.
func opaqueOr(supported vk.CompositeAlphaFlags) vk.CompositeAlphaFlagBits {
	if supported&vk.CompositeAlphaFlags(vk.CompositeAlphaOpaqueBit) != 0 {
		return vk.CompositeAlphaOpaqueBit
	}
	for bit := vk.CompositeAlphaFlags(1); bit != 0; bit <<= 1 {
		if supported&bit != 0 {
			return vk.CompositeAlphaFlagBits(bit)
		}
	}
	return vk.CompositeAlphaOpaqueBit
}

func (sc *swapchain) destroy() {
	if sc.handle == vk.NullSwapchain {
		return
	}
	sc.r.queueMu.Lock()
	vk.QueueWaitIdle(sc.r.queue)
	sc.r.queueMu.Unlock()
	for _, s := range sc.drawn {
		if s != vk.NullSemaphore {
			vk.DestroySemaphore(sc.r.device, s, nil)
		}
	}
	vk.DestroySwapchain(sc.r.device, sc.handle, nil)
	sc.handle, sc.drawn = vk.NullSwapchain, nil
}

// frameStatus is what a frame says of its swapchain.
type frameStatus int

const (
	frameShown      frameStatus = iota
	frameSuboptimal             // shown, but the swapchain no longer matches the surface
	frameOutOfDate              // not shown: the swapchain cannot present to the surface
)

// statusOf sorts acquire's and present's results: success, the two that
// ask for a new swapchain, or an error naming call.
func statusOf(call string, res vk.Result) (frameStatus, error) {
	switch res {
	case vk.Success:
		return frameShown, nil
	case vk.Suboptimal:
		return frameSuboptimal, nil
	case vk.ErrorOutOfDate:
		return frameOutOfDate, nil
	}
	return frameShown, vulkango.Result(call, res)
}

// presentFrame acquires an image, copies the strip into it after vkc's
// semaphore signals, presents it, and declares the read to vkc once its
// fence says the copy is done. Where the images are readable it returns
// the image's texels as the copy left them. A swapchain out of date at
// acquire shows nothing (frameOutOfDate, before vkc signals anything);
// suboptimal at acquire or present, or out of date at present, it says
// so after the frame's work is done.
func (sc *swapchain) presentFrame(s *vkc.Stream, strip *vkc.Buffer[uint32]) (texels []uint32, status frameStatus, err error) {
	r := sc.r
	// computed and acquired are waited on by the copy's submission, done
	// once its fence signaled, before they are destroyed.
	var sems [2]vk.Semaphore
	for i := range sems {
		if sems[i], err = r.newSemaphore(); err != nil {
			return nil, status, err
		}
		defer vk.DestroySemaphore(r.device, sems[i], nil)
	}
	computed, acquired := sems[0], sems[1]
	fence, err := r.newFence()
	if err != nil {
		return nil, status, err
	}
	defer vk.DestroyFence(r.device, fence, nil)
	var index uint32
	status, err = statusOf("vkAcquireNextImageKHR", vk.AcquireNextImage(r.device, sc.handle, vk.MaxUint64, acquired, vk.NullFence, &index))
	if err != nil || status == frameOutOfDate {
		return nil, status, err
	}
	if err := vulkango.SignalOutside(s, computed, vk.NullFence); err != nil {
		return nil, status, err
	}
	src, err := vulkango.BufferOf(strip)
	if err != nil {
		return nil, status, err
	}
	var back *hostBuffer
	if sc.readable {
		if back, err = r.newHostBuffer(src.Range); err != nil {
			return nil, status, err
		}
		defer r.destroyHostBuffer(back)
	}
	image, drawn := sc.images[index], sc.drawn[index]
	whole := vk.ImageSubresourceRange{AspectMask: vk.ImageAspectFlags(vk.ImageAspectColorBit), LevelCount: 1, LayerCount: 1}
	layers := vk.ImageSubresourceLayers{AspectMask: vk.ImageAspectFlags(vk.ImageAspectColorBit), LayerCount: 1}
	// vulkan-go caches its C copy of a struct in the struct: each copy
	// region is a fresh value, never a modified one.
	region := func(offset vk.DeviceSize) []vk.BufferImageCopy {
		return []vk.BufferImageCopy{{BufferOffset: offset, ImageSubresource: layers,
			ImageExtent: vk.Extent3D{Width: sc.extent.Width, Height: sc.extent.Height, Depth: 1}}}
	}
	cb, err := r.record(func(cb vk.CommandBuffer) {
		barrier(cb, image, whole, vk.ImageLayoutUndefined, vk.ImageLayoutTransferDstOptimal, 0, vk.AccessTransferWriteBit,
			vk.PipelineStageTransferBit, vk.PipelineStageTransferBit)
		vk.CmdCopyBufferToImage(cb, src.Buffer, image, vk.ImageLayoutTransferDstOptimal, 1, region(src.Offset))
		final := vk.ImageLayoutTransferDstOptimal
		if back != nil {
			barrier(cb, image, whole, vk.ImageLayoutTransferDstOptimal, vk.ImageLayoutTransferSrcOptimal,
				vk.AccessTransferWriteBit, vk.AccessTransferReadBit, vk.PipelineStageTransferBit, vk.PipelineStageTransferBit)
			vk.CmdCopyImageToBuffer(cb, image, vk.ImageLayoutTransferSrcOptimal, back.buf, 1, region(0))
			toHost(cb)
			final = vk.ImageLayoutTransferSrcOptimal
		}
		barrier(cb, image, whole, final, vk.ImageLayoutPresentSrc, vk.AccessTransferWriteBit, 0,
			vk.PipelineStageTransferBit, vk.PipelineStageBottomOfPipeBit)
	})
	if err != nil {
		return nil, status, err
	}
	defer r.free(cb)
	if err := r.submitFrame(cb, []vk.Semaphore{computed, acquired}, []vk.Semaphore{drawn}, fence); err != nil {
		return nil, status, err
	}
	pi := vk.PresentInfo{SType: vk.StructureTypePresentInfo, WaitSemaphoreCount: 1, PWaitSemaphores: []vk.Semaphore{drawn},
		SwapchainCount: 1, PSwapchains: []vk.Swapchain{sc.handle}, PImageIndices: []uint32{index}}
	var presented vk.Result
	r.queueMu.Lock()
	_ = vulkango.WithCollectorPaused(func() error { presented = vk.QueuePresent(r.queue, &pi); return nil },
		&pi.PWaitSemaphores[0], &pi.PSwapchains[0], &pi.PImageIndices[0])
	r.queueMu.Unlock()
	// The copy was submitted whatever the present says: its fence
	// signals, and the read is declared, before the frame returns.
	if err := r.wait(fence); err != nil {
		return nil, status, err
	}
	// The copy is done: the read is declared as complete (no semaphore).
	if err := strip.ReadOutside(s, 0); err != nil {
		return nil, status, err
	}
	onPresent, err := statusOf("vkQueuePresentKHR", presented)
	if err != nil {
		return nil, status, err
	}
	status = max(status, onPresent)
	if back == nil {
		return nil, status, nil
	}
	return append([]uint32(nil), unsafe.Slice((*uint32)(back.mapped), back.size/4)...), status, nil
}

// barrier moves image from one layout to another, ordering the access
// before it against the access after it.
func barrier(cb vk.CommandBuffer, image vk.Image, whole vk.ImageSubresourceRange, from, to vk.ImageLayout,
	srcAccess, dstAccess vk.AccessFlagBits, srcStage, dstStage vk.PipelineStageFlagBits) {
	vk.CmdPipelineBarrier(cb, vk.PipelineStageFlags(srcStage), vk.PipelineStageFlags(dstStage), 0, 0, nil, 0, nil,
		1, []vk.ImageMemoryBarrier{{SType: vk.StructureTypeImageMemoryBarrier, SrcAccessMask: vk.AccessFlags(srcAccess),
			DstAccessMask: vk.AccessFlags(dstAccess), OldLayout: from, NewLayout: to,
			SrcQueueFamilyIndex: vk.QueueFamilyIgnored, DstQueueFamilyIndex: vk.QueueFamilyIgnored,
			Image: image, SubresourceRange: whole}})
}

// submitFrame queues cb under the queue lock after every semaphore of
// wait (at the transfer stage), signalling every one of signal and fence.
func (r *renderer) submitFrame(cb vk.CommandBuffer, wait, signal []vk.Semaphore, fence vk.Fence) error {
	stages := make([]vk.PipelineStageFlags, len(wait))
	for i := range stages {
		stages[i] = vk.PipelineStageFlags(vk.PipelineStageTransferBit)
	}
	si := vk.SubmitInfo{SType: vk.StructureTypeSubmitInfo, CommandBufferCount: 1, PCommandBuffers: []vk.CommandBuffer{cb},
		WaitSemaphoreCount: uint32(len(wait)), PWaitSemaphores: wait, PWaitDstStageMask: stages,
		SignalSemaphoreCount: uint32(len(signal)), PSignalSemaphores: signal}
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	return paused("vkQueueSubmit", func() vk.Result { return vk.QueueSubmit(r.queue, 1, []vk.SubmitInfo{si}, fence) },
		&si.PCommandBuffers[0], &wait[0], &stages[0], &signal[0])
}
