package vk

/*
#include <stdlib.h>
#include "present.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/vkcompute/vkc/internal/lockrank"
)

// Presentation: a device opened for a window's surface (OpenPresentingDevice)
// creates swapchains on it, acquires their images, records the commands that
// copy a buffer's pixels into one (CmdFrameCopy), submits them between the
// acquire and present semaphores (SubmitFrame) and presents (Present). vk
// tracks nothing about frames in flight: the caller makes sure a semaphore
// or image is not reused while work that uses it is pending.

// Results presentation adds.
const (
	Suboptimal       Result = 1000001003
	ErrorOutOfDate   Result = -1000001004
	ErrorSurfaceLost Result = -1000000000
)

// FramesInFlight is how many frames a swapchain has acquire semaphores
// for: the caller waits for frame i's submission before it acquires with
// frame i again.
const FramesInFlight = 2

// SwapchainExtension is the device extension presentation needs.
const SwapchainExtension = "VK_KHR_swapchain"

// cStringArray copies names into C memory (NUL-terminated strings and the
// array of them) for one call; free releases both.
func cStringArray(names []string) (**C.char, func()) {
	if len(names) == 0 {
		return nil, func() {}
	}
	arr := unsafe.Slice((**C.char)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof((*C.char)(nil))))), len(names))
	for i, n := range names {
		arr[i] = C.CString(n)
	}
	return &arr[0], func() {
		for _, p := range arr {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&arr[0]))
	}
}

// Handle is the VkInstance, for a window system's library to create a
// surface with (GLFW's CreateWindowSurface). It is valid until Close.
func (in *Instance) Handle() uintptr { return uintptr(unsafe.Pointer(in.handle)) }

// DestroySurface destroys a surface the caller created on this instance
// and did not hand to OpenPresentingDevice (which then owns it).
func (in *Instance) DestroySurface(surface uint64) {
	if surface == 0 || in.enter() != nil {
		return
	}
	defer in.leave()
	C.vkc_destroy_surface(in.gipa, in.handle, surfaceOf(surface))
}

// surfaceOf turns a surface handle from outside into C's type. A
// non-dispatchable handle is a 64-bit value; it is not Go memory.
func surfaceOf(h uint64) C.VkSurfaceKHR { return *(*C.VkSurfaceKHR)(unsafe.Pointer(&h)) }

// presentFamily returns the first queue family of pd that computes and
// presents to surface, preferring one with graphics (the family presenting
// engines serve first), or -1.
func (in *Instance) presentFamily(pd physical, surface C.VkSurfaceKHR) (int, error) {
	family := -1
	for i, flags := range pd.families {
		if flags&queueCompute == 0 {
			continue
		}
		var ok C.VkBool32
		if err := check("vkGetPhysicalDeviceSurfaceSupportKHR", Result(C.vkc_surface_support(in.gipa, in.handle, pd.handle, C.uint32_t(i), surface, &ok))); err != nil {
			return -1, err
		}
		if ok == 0 {
			continue
		}
		if family < 0 || (flags&queueGraphics != 0 && pd.families[family]&queueGraphics == 0) {
			family = i
		}
	}
	return family, nil
}

// CanPresent reports whether device index has a queue family that both
// computes and presents to surface.
func (in *Instance) CanPresent(index int, surface uint64) (bool, error) {
	if err := in.enter(); err != nil {
		return false, err
	}
	defer in.leave()
	pds, err := in.physicalDevices()
	if err != nil {
		return false, err
	}
	if index < 0 || index >= len(pds) {
		return false, fmt.Errorf("device index %d out of range (have %d devices)", index, len(pds))
	}
	family, err := in.presentFamily(in.describe(index, pds[index]), surfaceOf(surface))
	return family >= 0, err
}

// presentation is what a presenting device holds besides its compute
// state: the surface it owns, the physical device (surface queries) and
// the swapchain function table.
type presentation struct {
	surface C.VkSurfaceKHR
	pd      C.VkPhysicalDevice
	fns     *C.vkc_present_fns // C memory; freed with the device
}

// OpenPresentingDevice opens device index like OpenDevice, with
// VK_KHR_swapchain and one queue of a family that both computes and
// presents to surface (created on this instance, e.g. by GLFW). The device
// owns the surface from here, failure included: Close destroys it after
// the device. The instance must have been created with the surface
// extensions (InstanceOptions.Extensions).
func (in *Instance) OpenPresentingDevice(index int, surface uint64) (*Device, error) {
	if surface == 0 {
		return nil, fmt.Errorf("presenting device without a surface")
	}
	if err := in.enter(); err != nil {
		return nil, err
	}
	defer in.leave()
	sf := surfaceOf(surface)
	fail := func(err error) (*Device, error) {
		C.vkc_destroy_surface(in.gipa, in.handle, sf)
		return nil, err
	}
	pds, err := in.physicalDevices()
	if err != nil {
		return fail(err)
	}
	if index < 0 || index >= len(pds) {
		return fail(fmt.Errorf("device index %d out of range (have %d devices)", index, len(pds)))
	}
	pd := in.describe(index, pds[index])
	family, err := in.presentFamily(pd, sf)
	if err != nil {
		return fail(err)
	}
	if family < 0 {
		return fail(fmt.Errorf("device %d (%s) has no queue family that both computes and presents to this surface", index, pd.info.Name))
	}
	d, err := in.createDevice(pd, family, []string{SwapchainExtension})
	if err != nil {
		return fail(err)
	}
	// The table is loaded before the device takes the surface: on failure
	// d.Close then has no presentation to close, which would enter the
	// instance's gate a second time on this goroutine (a deadlock with an
	// Instance.Close waiting in between), and fail destroys the surface
	// under the hold taken above.
	fns := (*C.vkc_present_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_present_fns{}))))
	if C.vkc_load_present(in.gipa, in.handle, d.fns, fns) == 0 {
		C.free(unsafe.Pointer(fns))
		d.Close()
		return fail(fmt.Errorf("device %d (%s) lacks a VK_KHR_swapchain function", index, pd.info.Name))
	}
	d.pres = &presentation{surface: sf, pd: pd.handle, fns: fns}
	d.live[ObjSurface].Add(1)
	return d, nil
}

// closePresentation destroys the surface once the device is gone; the
// caller holds the device's gate exclusively.
func (d *Device) closePresentation() {
	p := d.pres
	if p == nil {
		return
	}
	d.pres = nil
	C.free(unsafe.Pointer(p.fns))
	in := d.inst
	if in.enter() == nil {
		C.vkc_destroy_surface(in.gipa, in.handle, p.surface)
		in.leave()
	}
	d.live[ObjSurface].Add(-1)
}

// Presents reports whether the device was opened to present.
func (d *Device) Presents() bool { return d.pres != nil }

// SwapchainOptions choose a swapchain.
type SwapchainOptions struct {
	// Width and Height are the window's size in pixels; a surface that
	// fixes its own extent (X11, Windows) overrides them. Either way the
	// swapchain is no larger than the device's images can be (see
	// NewSwapchain).
	Width, Height uint32
	// VSync presents in FIFO mode, one image per display refresh; without
	// it the first of MAILBOX, IMMEDIATE and FIFO the surface offers.
	VSync bool
	// Old is the swapchain this one replaces (nil: none); the caller
	// destroys it after, once no work uses it.
	Old *Swapchain
}

// Swapchain is a VK_KHR_swapchain swapchain with what presenting to it
// needs: a semaphore per frame in flight that acquires signal, one per
// image that submissions signal and presents wait on, and the RGBA8 image
// frames are copied into before being scaled into a swapchain image.
// Methods may be called from several goroutines; Vulkan's external
// synchronisation of the swapchain is the swapchain's mutex.
type Swapchain struct {
	dev      *Device
	handle   C.VkSwapchainKHR
	images   []C.VkImage
	acquired [FramesInFlight]C.VkSemaphore
	rendered []C.VkSemaphore
	width    uint32
	height   uint32
	bgra     bool
	copyable bool

	maxSrcW uint32 // the largest source image SetSource can make
	maxSrcH uint32

	mu        lockrank.Mutex
	source    C.VkImage // the frame's RGBA8 copy, srcW x srcH; nil until SetSource
	sourceMem C.VkDeviceMemory
	srcW      uint32
	srcH      uint32
	destroyed bool
}

// Vulkan values swapchain creation picks from.
const (
	formatR8G8B8A8Unorm    = 37
	formatB8G8R8A8Unorm    = 44
	colorSpaceSRGB         = 0
	featureBlitDst         = 0x800
	usageTransferSrc       = 0x1
	usageTransferDst       = 0x2
	alphaOpaque            = 0x1
	presentModeImmediate   = 0
	presentModeMailbox     = 1
	presentModeFIFO        = 2
	undefinedExtent        = 0xFFFFFFFF
	formatUndefined        = 0
	defaultExtraImages     = 1
	maxSwapchainImageCount = 16
)

// NewSwapchain creates a swapchain for the device's surface. Its extent
// is the surface's (or the window's size, where the surface leaves it to
// the swapchain) made no larger than an image of the swapchain's format
// and usage can be on this device (vkGetPhysicalDeviceImageFormatProperties'
// maxExtent; 16384 a side on many): where the surface takes a smaller
// extent the swapchain is smaller than the window (Extent says so) and the
// presentation engine scales it; where it takes none (X11's only extent is
// the window's), the window is too large to present to and NewSwapchain
// fails with ErrOutOfDate, as for a minimized window, until it shrinks.
func (d *Device) NewSwapchain(o SwapchainOptions) (*Swapchain, error) {
	if err := d.enterUsable(); err != nil {
		return nil, err
	}
	defer d.leave()
	p := d.pres
	if p == nil {
		return nil, ErrNoPresentation
	}
	var info C.vkc_surface_info
	if err := d.surfaceInfo(&info); err != nil {
		return nil, err
	}
	caps := &info.caps
	w, h, err := surfaceExtent(caps, o)
	if err != nil {
		return nil, err
	}
	usage := uint32(caps.supportedUsageFlags)
	if usage&usageTransferDst == 0 {
		return nil, fmt.Errorf("the surface's images cannot be transfer destinations")
	}
	want := uint32(usageTransferDst)
	if usage&usageTransferSrc != 0 {
		want |= usageTransferSrc
	}
	format, space, bgra, err := pickFormat(&info)
	if err != nil {
		return nil, err
	}
	if w, h, err = d.fitImageExtent(caps, format, want, w, h); err != nil {
		return nil, err
	}
	srcW, srcH, err := d.imageMaxExtent(C.VKC_SOURCE_FORMAT, C.VKC_SOURCE_USAGE)
	if err != nil {
		return nil, err
	}
	images, alpha := imageCountAndAlpha(caps)
	mode := pickMode(&info, o.VSync)
	var old C.VkSwapchainKHR
	if o.Old != nil {
		old = o.Old.handle
	}
	sc := &Swapchain{dev: d, width: w, height: h, bgra: bgra, copyable: want&usageTransferSrc != 0, maxSrcW: srcW, maxSrcH: srcH}
	sc.mu.SetRank(lockrank.VkSwapchain, 0)
	if err := d.check("vkCreateSwapchainKHR", Result(C.vkc_create_swapchain(d.fns, p.fns, p.surface, C.uint32_t(images),
		C.VkFormat(format), C.VkColorSpaceKHR(space), C.uint32_t(w), C.uint32_t(h), C.VkImageUsageFlags(want),
		caps.currentTransform, C.VkCompositeAlphaFlagBitsKHR(alpha), C.VkPresentModeKHR(mode), old, &sc.handle))); err != nil {
		return nil, err
	}
	d.live[ObjSwapchain].Add(1)
	if err := sc.getImagesAndSemaphores(p); err != nil {
		sc.destroyLocked()
		return nil, err
	}
	return sc, nil
}

// surfaceInfo reads what the surface offers: its capabilities, formats and
// present modes. A surface lost (its window gone) is ErrOutOfDate, as the
// caller's next try at a new window would be.
func (d *Device) surfaceInfo(info *C.vkc_surface_info) error {
	in, p := d.inst, d.pres
	if err := in.enter(); err != nil {
		return err
	}
	r := Result(C.vkc_surface_info_of(in.gipa, in.handle, p.pd, p.surface, info))
	in.leave()
	if err := d.check("vkGetPhysicalDeviceSurfaceCapabilitiesKHR", r); err != nil {
		if r == ErrorSurfaceLost {
			return fmt.Errorf("%w: %w", ErrOutOfDate, err)
		}
		return err
	}
	return nil
}

// surfaceExtent is the surface's extent, or the window's size within the
// surface's bounds where the surface leaves it to the swapchain; a surface
// with no area (a minimized window) is ErrOutOfDate.
func surfaceExtent(caps *C.VkSurfaceCapabilitiesKHR, o SwapchainOptions) (w, h uint32, err error) {
	w, h = o.Width, o.Height
	if uint32(caps.currentExtent.width) != undefinedExtent {
		w, h = uint32(caps.currentExtent.width), uint32(caps.currentExtent.height)
	} else {
		w = max(uint32(caps.minImageExtent.width), min(w, uint32(caps.maxImageExtent.width)))
		h = max(uint32(caps.minImageExtent.height), min(h, uint32(caps.maxImageExtent.height)))
	}
	if w == 0 || h == 0 {
		return 0, 0, fmt.Errorf("%w: the surface has no area (a minimized window): %dx%d", ErrOutOfDate, w, h)
	}
	return w, h, nil
}

// fitImageExtent makes w x h no larger than an image of format and usage
// can be on the device. The swapchain's images are such images: they must
// be no larger than that (VUID-VkSwapchainCreateInfoKHR-imageFormat-01778),
// and the extent no smaller than the surface's minimum (imageExtent-01274);
// where both cannot hold, the window is too large: ErrOutOfDate.
func (d *Device) fitImageExtent(caps *C.VkSurfaceCapabilitiesKHR, format, usage, w, h uint32) (uint32, uint32, error) {
	maxW, maxH, err := d.imageMaxExtent(C.VkFormat(format), C.VkImageUsageFlags(usage))
	if err != nil {
		return 0, 0, err
	}
	w, h = min(w, maxW), min(h, maxH)
	if minW, minH := uint32(caps.minImageExtent.width), uint32(caps.minImageExtent.height); w < minW || h < minH {
		return 0, 0, fmt.Errorf("%w: the window takes a swapchain of at least %dx%d pixels, and this device's images are at most %dx%d (shrink the window)",
			ErrOutOfDate, minW, minH, maxW, maxH)
	}
	return w, h, nil
}

// imageCountAndAlpha asks for defaultExtraImages more than the surface's
// minimum, within its maximum, and for opaque composition, or the first
// mode the surface offers where it has no opaque one.
func imageCountAndAlpha(caps *C.VkSurfaceCapabilitiesKHR) (images, alpha uint32) {
	images = uint32(caps.minImageCount) + defaultExtraImages
	if caps.maxImageCount != 0 {
		images = min(images, uint32(caps.maxImageCount))
	}
	alpha = uint32(alphaOpaque)
	if uint32(caps.supportedCompositeAlpha)&alphaOpaque == 0 {
		alpha = uint32(caps.supportedCompositeAlpha) & -uint32(caps.supportedCompositeAlpha) // lowest bit offered
	}
	return images, alpha
}

// getImagesAndSemaphores fetches the new swapchain's images and creates
// its semaphores; on an error the caller destroys sc. Each semaphore is
// created into a local and kept only once its create succeeded (a failed
// create leaves its output undefined), so that destroyLocked destroys, and
// uncounts, only what exists.
func (sc *Swapchain) getImagesAndSemaphores(p *presentation) error {
	d := sc.dev
	var all [maxSwapchainImageCount]C.VkImage
	n := C.uint32_t(len(all))
	if err := d.check("vkGetSwapchainImagesKHR", Result(C.vkc_swapchain_images(d.fns, p.fns, sc.handle, &n, &all[0]))); err != nil {
		return err
	}
	sc.images = append([]C.VkImage(nil), all[:n]...)
	newSemaphore := func() (C.VkSemaphore, error) {
		var s C.VkSemaphore
		if err := d.check("vkCreateSemaphore", Result(C.vkc_create_semaphore(d.fns, p.fns, &s))); err != nil {
			return s, err
		}
		d.live[ObjSemaphore].Add(1)
		return s, nil
	}
	for i := range sc.acquired {
		s, err := newSemaphore()
		if err != nil {
			return err
		}
		sc.acquired[i] = s
	}
	for range sc.images {
		s, err := newSemaphore()
		if err != nil {
			return err
		}
		sc.rendered = append(sc.rendered, s)
	}
	return nil
}

// imageMaxExtent is the largest 2-D optimal-tiling image of format and
// usage the device can make; the caller is inside the device's gate.
func (d *Device) imageMaxExtent(format C.VkFormat, usage C.VkImageUsageFlags) (width, height uint32, err error) {
	in := d.inst
	if err := in.enter(); err != nil {
		return 0, 0, err
	}
	var e C.VkExtent2D
	r := Result(C.vkc_image_max_extent(in.gipa, in.handle, d.pres.pd, format, usage, &e))
	in.leave()
	if err := d.check("vkGetPhysicalDeviceImageFormatProperties", r); err != nil {
		return 0, 0, err
	}
	return uint32(e.width), uint32(e.height), nil
}

// pickFormat prefers 8-bit UNORM BGRA or RGBA (the frame's bytes shown as
// they are, not re-encoded as sRGB) among the formats a blit can write.
func pickFormat(info *C.vkc_surface_info) (format, space uint32, bgra bool, err error) {
	n := int(info.format_count)
	if n == 1 && uint32(info.formats[0].format) == formatUndefined {
		return formatB8G8R8A8Unorm, colorSpaceSRGB, true, nil // the surface takes any format
	}
	best := -1
	for i := 0; i < n; i++ {
		f := uint32(info.formats[i].format)
		if uint32(info.features[i])&featureBlitDst == 0 {
			continue
		}
		if (f == formatB8G8R8A8Unorm || f == formatR8G8B8A8Unorm) && uint32(info.formats[i].colorSpace) == colorSpaceSRGB {
			best = i
			break
		}
		if best < 0 {
			best = i
		}
	}
	if best < 0 {
		return 0, 0, false, fmt.Errorf("no surface format can be the destination of a blit")
	}
	f := uint32(info.formats[best].format)
	return f, uint32(info.formats[best].colorSpace), f == formatB8G8R8A8Unorm, nil
}

// pickMode is FIFO with vsync, else the lowest-latency mode offered.
func pickMode(info *C.vkc_surface_info, vsync bool) uint32 {
	if vsync {
		return presentModeFIFO // every surface offers it
	}
	offered := map[uint32]bool{}
	for _, m := range info.modes[:info.mode_count] {
		offered[uint32(m)] = true
	}
	for _, m := range []uint32{presentModeMailbox, presentModeImmediate} {
		if offered[m] {
			return m
		}
	}
	return presentModeFIFO
}

// Extent is the swapchain images' size: the window's, or smaller where the
// window is larger than the device's images can be (NewSwapchain).
func (sc *Swapchain) Extent() (width, height uint32) { return sc.width, sc.height }

// MaxSource is the largest frame SetSource takes: the largest RGBA8 image
// the device can copy a frame into.
func (sc *Swapchain) MaxSource() (width, height uint32) { return sc.maxSrcW, sc.maxSrcH }

// Images is the number of swapchain images.
func (sc *Swapchain) Images() int { return len(sc.images) }

// BGRA reports whether the images store blue in the first byte of a texel
// (B8G8R8A8); otherwise red (R8G8B8A8). A frame copied out of an image
// (CmdFrameCopy's shot) comes in this order.
func (sc *Swapchain) BGRA() bool { return sc.bgra }

// Copyable reports whether the images can be copied out (a shot).
func (sc *Swapchain) Copyable() bool { return sc.copyable }

// Destroy destroys the swapchain, its semaphores and its source image;
// idempotent, and a no-op once the device is closed. No pending work may
// use them.
func (sc *Swapchain) Destroy() {
	if sc == nil || sc.dev.enter() != nil {
		return
	}
	defer sc.dev.leave()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.destroyLocked()
}

// destroyLocked destroys what exists; the caller is inside the gate and
// holds sc.mu or owns sc alone.
func (sc *Swapchain) destroyLocked() {
	if sc.destroyed {
		return
	}
	sc.destroyed = true
	d := sc.dev
	p := d.pres.fns
	sc.releaseSource()
	for _, s := range append(sc.acquired[:], sc.rendered...) {
		if s != nil {
			C.vkc_destroy_semaphore(d.fns, p, s)
			d.live[ObjSemaphore].Add(-1)
		}
	}
	if sc.handle != nil {
		C.vkc_destroy_swapchain(d.fns, p, sc.handle)
		d.live[ObjSwapchain].Add(-1)
	}
}

func (sc *Swapchain) releaseSource() {
	d := sc.dev
	if sc.source != nil {
		C.vkc_destroy_image(d.fns, d.pres.fns, sc.source)
		d.live[ObjImage].Add(-1)
		sc.source = nil
	}
	if sc.sourceMem != nil {
		C.vkc_free_memory(d.fns, sc.sourceMem)
		d.live[ObjMemory].Add(-1)
		sc.sourceMem = nil
	}
	sc.srcW, sc.srcH = 0, 0
}

// SetSource makes the image frames are copied into width x height, (re)creating
// it when its size changes. No pending work may use the old one. A frame
// wider or taller than MaxSource is refused, and the driver sees nothing.
func (sc *Swapchain) SetSource(width, height uint32) error {
	if width == 0 || height == 0 {
		return fmt.Errorf("frame of %dx%d pixels", width, height)
	}
	if width > sc.maxSrcW || height > sc.maxSrcH {
		return fmt.Errorf("a frame of %dx%d pixels: this device's frame images are at most %dx%d", width, height, sc.maxSrcW, sc.maxSrcH)
	}
	d := sc.dev
	if err := d.enterUsable(); err != nil {
		return err
	}
	defer d.leave()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.destroyed {
		return ErrClosed
	}
	if sc.source != nil && sc.srcW == width && sc.srcH == height {
		return nil
	}
	sc.releaseSource()
	p := d.pres.fns
	var img C.VkImage
	if err := d.check("vkCreateImage", Result(C.vkc_create_image(d.fns, p, C.uint32_t(width), C.uint32_t(height), &img))); err != nil {
		return err
	}
	sc.source = img
	d.live[ObjImage].Add(1)
	var req C.VkMemoryRequirements
	C.vkc_image_requirements(d.fns, p, img, &req)
	ti, _, err := d.memoryType(uint32(req.memoryTypeBits), UseDeviceLocal)
	if err != nil {
		sc.releaseSource()
		return err
	}
	var mem C.VkDeviceMemory
	if err := d.check("vkAllocateMemory", Result(C.vkc_allocate_memory(d.fns, req.size, C.uint32_t(ti), &mem))); err != nil {
		sc.releaseSource()
		return err
	}
	sc.sourceMem = mem
	d.live[ObjMemory].Add(1)
	if err := d.check("vkBindImageMemory", Result(C.vkc_bind_image_memory(d.fns, p, img, mem))); err != nil {
		sc.releaseSource()
		return err
	}
	sc.srcW, sc.srcH = width, height
	return nil
}

// acquireSlice bounds one vkAcquireNextImageKHR call, so that Close is
// never held up by a wait for an image (as waitSlice does for fences).
const acquireSlice = 100 * time.Millisecond

// Acquire waits up to timeout (negative: until an image comes, or the
// device closes) for the next image, which the acquire
// semaphore of frame (0..FramesInFlight-1) signals when it is free to
// write. The swapchain no longer matching its surface is ErrOutOfDate; an
// image acquired on a suboptimal swapchain is returned with no error (the
// next Present says so).
func (d *Device) Acquire(sc *Swapchain, frame int, timeout time.Duration) (uint32, error) {
	if frame < 0 || frame >= FramesInFlight {
		return 0, fmt.Errorf("frame %d of %d", frame, FramesInFlight)
	}
	forever := timeout < 0
	for {
		slice := acquireSlice
		if !forever && timeout < slice {
			slice = timeout
		}
		if err := d.enterUsable(); err != nil {
			return 0, err
		}
		sc.mu.Lock()
		if sc.destroyed {
			sc.mu.Unlock()
			d.leave()
			return 0, ErrClosed
		}
		var index C.uint32_t
		r := Result(C.vkc_acquire(d.fns, d.pres.fns, sc.handle, C.uint64_t(slice), sc.acquired[frame], &index))
		sc.mu.Unlock()
		d.leave()
		switch r {
		case Success, Suboptimal:
			return uint32(index), nil
		case Timeout, NotReady:
			if timeout -= slice; !forever && timeout <= 0 {
				return 0, d.check("vkAcquireNextImageKHR", Timeout)
			}
			continue
		case ErrorOutOfDate, ErrorSurfaceLost:
			return 0, fmt.Errorf("%w: %w", ErrOutOfDate, d.check("vkAcquireNextImageKHR", r))
		}
		return 0, d.check("vkAcquireNextImageKHR", r)
	}
}

// FrameCopy is one frame's copy: the pixels (Width x Height RGBA8 texels,
// rows packed, at SrcOffset of Src) into swapchain image Image, scaled to
// fit and centred on black; and, with Shot, the image as it will be
// presented copied into Shot at ShotOffset (Extent's size, rows packed, in
// the swapchain's byte order). SetSource must have been given the size.
type FrameCopy struct {
	Src           *Block
	SrcOffset     uint64
	Width, Height uint32
	Image         uint32
	Shot          *Block
	ShotOffset    uint64
}

// CmdFrameCopy records x's commands, with the layout transitions: the
// image goes from undefined (whatever the last present left) to transfer
// destination, and ends ready to present. A released block, a destroyed
// swapchain or a source of another size records nothing and fails End.
func (d *Device) CmdFrameCopy(cb *CommandBuffer, sc *Swapchain, x *FrameCopy) {
	if !d.enterRecording(cb) {
		return
	}
	defer d.leave()
	if x.Src.released.Load() || (x.Shot != nil && x.Shot.released.Load()) {
		cb.fail(errReleasedBlock)
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.destroyed:
		cb.fail(fmt.Errorf("command records a destroyed swapchain: %w", ErrClosed))
		return
	case sc.source == nil || sc.srcW != x.Width || sc.srcH != x.Height:
		cb.fail(fmt.Errorf("frame of %dx%d, swapchain source is %dx%d", x.Width, x.Height, sc.srcW, sc.srcH))
		return
	case int(x.Image) >= len(sc.images):
		cb.fail(fmt.Errorf("swapchain image %d of %d", x.Image, len(sc.images)))
		return
	case x.Shot != nil && !sc.copyable:
		cb.fail(fmt.Errorf("the swapchain's images cannot be copied out"))
		return
	}
	fc := C.vkc_frame_copy{src: x.Src.buf, src_off: C.VkDeviceSize(x.SrcOffset), src_w: C.uint32_t(x.Width),
		src_h: C.uint32_t(x.Height), source: sc.source, target: sc.images[x.Image],
		dst_w: C.uint32_t(sc.width), dst_h: C.uint32_t(sc.height)}
	if x.Shot != nil {
		fc.shot, fc.shot_off = x.Shot.buf, C.VkDeviceSize(x.ShotOffset)
	}
	C.vkc_cmd_frame_copy(d.fns, d.pres.fns, cb.state.cb, &fc)
}

// SubmitFrame submits cb, which CmdFrameCopy recorded into for image, after
// frame's acquire semaphore; it signals image's present semaphore and
// fence when it completes.
func (d *Device) SubmitFrame(cb *CommandBuffer, sc *Swapchain, frame int, image uint32, fence *Fence) error {
	if frame < 0 || frame >= FramesInFlight {
		return fmt.Errorf("frame %d of %d", frame, FramesInFlight)
	}
	if cb.state == nil || fence.destroyed.Load() {
		return ErrClosed
	}
	if cb.err != nil {
		return cb.err
	}
	if err := d.enterUsable(); err != nil {
		return err
	}
	defer d.leave()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.destroyed {
		return ErrClosed
	}
	if int(image) >= len(sc.images) {
		return fmt.Errorf("swapchain image %d of %d", image, len(sc.images))
	}
	d.queueMu.Lock()
	r := C.vkc_submit_frame(d.fns, cb.state.cb, sc.acquired[frame], sc.rendered[image], fence.fence)
	d.queueMu.Unlock()
	return d.check("vkQueueSubmit", Result(r))
}

// Present queues image for presentation once its submission is done. A
// swapchain that no longer matches its surface (suboptimal or out of date)
// is ErrOutOfDate: the frame may or may not have been shown, and its
// semaphore wait happens either way.
func (d *Device) Present(sc *Swapchain, image uint32) error {
	if err := d.enterUsable(); err != nil {
		return err
	}
	defer d.leave()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.destroyed {
		return ErrClosed
	}
	if int(image) >= len(sc.images) {
		return fmt.Errorf("swapchain image %d of %d", image, len(sc.images))
	}
	d.queueMu.Lock()
	r := Result(C.vkc_queue_present(d.fns, d.pres.fns, sc.handle, C.uint32_t(image), sc.rendered[image]))
	d.queueMu.Unlock()
	switch r {
	case Success:
		return nil
	case Suboptimal, ErrorOutOfDate, ErrorSurfaceLost:
		return fmt.Errorf("%w: %w", ErrOutOfDate, &Error{Call: "vkQueuePresentKHR", Result: r})
	}
	return d.check("vkQueuePresentKHR", r)
}
