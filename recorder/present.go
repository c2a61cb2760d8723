package recorder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/vk"
)

// Swapchain names a swapchain a Presenter created; the zero value names none.
type Swapchain uint64

// SwapchainInfo describes a swapchain in plain values.
type SwapchainInfo struct {
	// Width and Height are its images' size in pixels.
	Width, Height uint32
	// Images is how many images it has.
	Images int
	// Frames is how many frames may be in flight: Acquire takes a frame
	// index below it, and the recorder waits for a frame's last submission
	// before it acquires with that frame again.
	Frames int
	// BGRA: a texel's first byte is blue (B8G8R8A8), else red (R8G8B8A8).
	BGRA bool
	// Copyable: the images can be copied out (FrameCopy.Shot).
	Copyable bool
	// MaxFrameWidth and MaxFrameHeight bound the frames SetFrameSource
	// takes (the largest image the device copies a frame into); Present
	// refuses a larger frame before the Presenter sees it. Zero: no bound.
	MaxFrameWidth, MaxFrameHeight uint32
}

// FrameCopy is one frame's commands: Width x Height RGBA8 texels (rows
// packed) at SrcOffset of Src into swapchain image Image, scaled to fit and
// centred on black; with Shot non-zero, the image as it will be presented
// copied into Shot at ShotOffset (the swapchain's size, rows packed, in
// its byte order).
type FrameCopy struct {
	Src           Memory
	SrcOffset     uint64
	Width, Height uint32
	Image         uint32
	Shot          Memory
	ShotOffset    uint64
}

// Presenter is what a Device opened for a window's surface offers besides
// compute: the recorder asks for it with a type assertion. It is
// implemented by the Vulkan device (OpenVulkan with VulkanOptions.Surface),
// not by the host device. Errors wrap ErrOutOfDate where the swapchain no
// longer matches its surface.
type Presenter interface {
	// NewSwapchain creates a swapchain for the surface, of the window's
	// size (a surface that fixes its extent decides), replacing old (zero:
	// none), which the caller destroys once no work uses it.
	NewSwapchain(width, height uint32, vsync bool, old Swapchain) (Swapchain, SwapchainInfo, error)
	// DestroySwapchain destroys a swapchain no pending work uses.
	DestroySwapchain(sc Swapchain)
	// SetFrameSource sizes the image frames are copied into; no pending
	// work may use the swapchain.
	SetFrameSource(sc Swapchain, width, height uint32) error
	// Acquire takes the next image, signalling frame's acquire semaphore
	// when it is free to write.
	Acquire(sc Swapchain, frame int, timeout time.Duration) (uint32, error)
	// CmdFrameCopy records a frame's copy, layout transitions included.
	CmdFrameCopy(cb CommandBuffer, sc Swapchain, x *FrameCopy)
	// SubmitFrame submits cb after frame's acquire semaphore; it signals
	// image's present semaphore and f when done.
	SubmitFrame(cb CommandBuffer, sc Swapchain, frame int, image uint32, f Fence) error
	// Present queues image for presentation after its submission.
	Present(sc Swapchain, image uint32) error
}

var (
	// ErrOutOfDate: the swapchain no longer matches its surface (the window
	// was resized or minimized, or is too large for the device's images);
	// Resize, then present again.
	ErrOutOfDate = errors.New("recorder: swapchain out of date with its window")
	// ErrNoPresentation: the device was not opened to present.
	ErrNoPresentation = errors.New("recorder: device not opened for presentation (open it with a surface)")
)

// acquireTimeout bounds the wait for a swapchain image.
const acquireTimeout = 10 * time.Second

// maxFrames bounds SwapchainInfo.Frames.
const maxFrames = 8

// Presentation is a swapchain as the recorder tracks it: which slot and
// submission last used each frame's semaphore, and the size of the frames
// it is given. Its methods are safe from several goroutines (one mutex
// serialises them); it takes a slot lock only under that mutex, one at a
// time.
type Presentation struct {
	r  *Recorder
	p  Presenter
	mu sync.Mutex

	sc     Swapchain
	info   SwapchainInfo
	vsync  bool
	srcW   uint32
	srcH   uint32
	frames [maxFrames]frameUse
	next   int
	// broken: an image was acquired and its frame not submitted, so the
	// swapchain's semaphores are in a state no frame can use: Present
	// refuses with ErrOutOfDate until Resize makes a new one.
	broken bool
	closed bool
}

// frameUse is the submission that last waited on a frame's semaphore.
type frameUse struct {
	slot   *slot
	serial uint64
}

// NewPresentation creates a swapchain of the window's size on the
// recorder's device, which must be a Presenter.
func (r *Recorder) NewPresentation(width, height uint32, vsync bool) (*Presentation, error) {
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	if err := r.usable(); err != nil {
		return nil, err
	}
	p, ok := r.dev.(Presenter)
	if !ok {
		return nil, ErrNoPresentation
	}
	sc, info, err := p.NewSwapchain(width, height, vsync, 0)
	if err != nil {
		return nil, r.observe(err)
	}
	if info.Frames < 1 || info.Frames > maxFrames {
		p.DestroySwapchain(sc)
		return nil, fmt.Errorf("recorder: a swapchain with %d frames in flight (1..%d)", info.Frames, maxFrames)
	}
	pr := &Presentation{r: r, p: p, sc: sc, info: info, vsync: vsync}
	r.presMu.Lock()
	if r.presentations == nil {
		r.presentations = map[*Presentation]struct{}{}
	}
	r.presentations[pr] = struct{}{}
	r.presMu.Unlock()
	return pr, nil
}

// Info describes the current swapchain.
func (pr *Presentation) Info() SwapchainInfo {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.info
}

// waitFrame waits for the submission that last used frame k, taking that
// submission's slot lock unless the caller holds it (held).
func (pr *Presentation) waitFrame(k int, held *slot) error {
	u := pr.frames[k]
	if u.slot == nil {
		return nil
	}
	b := u.slot
	if b != held {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if pr.r.closed.Load() {
		return ErrClosed
	}
	for len(b.inflight) > 0 && b.inflight[0].serial <= u.serial {
		if err := b.waitOldest(context.Background()); err != nil {
			pr.broken = true // the frame's semaphore may still be waited on
			return err
		}
	}
	for _, x := range b.failed {
		if x.serial == u.serial {
			pr.broken = true
			return fmt.Errorf("%w: the frame's submission failed its fence wait", ErrOutOfDate)
		}
	}
	pr.frames[k] = frameUse{}
	return nil
}

// quiesce waits for every frame's submission and for the queue, so the
// swapchain and its semaphores can be destroyed or the source resized
// (a present is queue work a fence does not cover).
func (pr *Presentation) quiesce() error {
	var first error
	for k := 0; k < pr.info.Frames; k++ {
		if err := pr.waitFrame(k, nil); err != nil && first == nil {
			first = err
		}
	}
	if err := pr.r.observe(pr.r.dev.WaitIdle()); err != nil && first == nil {
		first = err
	}
	return first
}

// Present shows width x height RGBA8 pixels held by src in the window,
// after the work of stream s and of other streams that writes src: the
// slot's open batch is submitted, an image acquired, and a batch that
// copies src into it (and the presented image into shot, when shot is not
// the zero claim) submitted between the acquire and present semaphores,
// then the image is presented. Nothing passes through host memory. src
// holding unwritten bytes presents nothing and fails with ErrUnwritten; a
// stream whose slot has a capture window open is refused (a presentation
// cannot be recorded). ErrOutOfDate asks for Resize. A frame wider or
// taller than the swapchain's MaxFrameWidth or MaxFrameHeight is refused
// before anything reaches the device.
func (pr *Presentation) Present(s StreamID, src alloc.Claim, width, height uint32, shot alloc.Claim) (err error) {
	// width*height fits in 64 bits; times 4 it may not (1<<31 squared
	// wraps to 0), so the pixel count is compared with src's.
	if width == 0 || height == 0 || uint64(width)*uint64(height) > src.Size/4 {
		return fmt.Errorf("recorder: a frame of %dx%d pixels from a claim of %d bytes", width, height, src.Size)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	r := pr.r
	if pr.closed {
		return fmt.Errorf("recorder: present on a closed swapchain: %w", ErrClosed)
	}
	if pr.broken {
		return fmt.Errorf("%w: an earlier frame failed; Resize makes a new swapchain", ErrOutOfDate)
	}
	if mw, mh := pr.info.MaxFrameWidth, pr.info.MaxFrameHeight; (mw != 0 && width > mw) || (mh != 0 && height > mh) {
		return fmt.Errorf("recorder: a frame of %dx%d pixels: this device's frame images are at most %dx%d", width, height, mw, mh)
	}
	withShot := shot.Size > 0
	if withShot {
		if !pr.info.Copyable {
			return fmt.Errorf("recorder: this swapchain's images cannot be copied out")
		}
		if uint64(pr.info.Width)*uint64(pr.info.Height) > shot.Size/4 {
			return fmt.Errorf("recorder: a shot of %dx%d pixels into a claim of %d bytes", pr.info.Width, pr.info.Height, shot.Size)
		}
	}
	b := r.slotOf(s)
	k := pr.next
	if pr.frames[k].slot != b {
		if err := pr.waitFrame(k, nil); err != nil {
			return err
		}
	}
	if width != pr.srcW || height != pr.srcH {
		if err := pr.quiesce(); err != nil {
			return err
		}
		if err := r.observe(pr.p.SetFrameSource(pr.sc, width, height)); err != nil {
			return err
		}
		pr.srcW, pr.srcH = width, height
	}
	claims := []alloc.Claim{src}
	if withShot {
		claims = append(claims, shot)
	}
	if err := r.settleOthers(context.Background(), b.index, claims, ordered); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.refuseNeighbour(s, "present"); err != nil {
		return err
	}
	if b.win.IsActive() {
		err := fmt.Errorf("recorder: stream %d presents inside its capture window (a presentation cannot be recorded): %w", s, ErrSyncInCapture)
		b.win.Fail(err)
		return err
	}
	if err := pr.waitFrame(k, b); err != nil {
		return err
	}
	if err := r.ledger.Check(claims[:1]); err != nil {
		return err
	}
	if withShot {
		defer r.taintIfFailed(&err, claims[1:])
	}
	if err := b.submit(); err != nil {
		return err
	}
	image, err := pr.p.Acquire(pr.sc, k, acquireTimeout)
	if err != nil {
		return r.observe(err)
	}
	// From here the acquire semaphore is signalled: a frame that is not
	// submitted leaves the swapchain for Resize to replace.
	x, err := b.newBatch(true)
	if err != nil {
		pr.broken = true
		return err
	}
	d := r.dev
	err = r.observe(d.Begin(x.cb, Eager))
	if err == nil {
		fc := FrameCopy{Src: r.memoryOf(src), SrcOffset: src.Offset, Width: width, Height: height, Image: image}
		if withShot {
			fc.Shot, fc.ShotOffset = r.memoryOf(shot), shot.Offset
		}
		pr.p.CmdFrameCopy(x.cb, pr.sc, &fc)
		d.CmdBarrier(x.cb, BarrierToHost)
		err = r.observe(d.End(x.cb))
	}
	if err == nil {
		err = r.observe(pr.p.SubmitFrame(x.cb, pr.sc, k, image, x.fence))
	}
	if err != nil {
		pr.broken = true
		b.recycle(x)
		return err
	}
	// The copy reads src until the batch's fence signals: a host write to
	// it (SetHost, or a mapped write on unified memory) from any stream
	// settles only busy slots and waits only for batches whose reads or
	// writes name it, so both are set whether or not a shot is taken.
	r.busy.Or(1 << uint(b.index))
	x.reads = append(x.reads, src)
	if withShot {
		r.ledger.Written(claims[1:])
		x.writes = append(x.writes, shot)
	}
	b.enqueued(x)
	pr.frames[k] = frameUse{slot: b, serial: x.serial}
	pr.next = (k + 1) % pr.info.Frames
	perr := r.observe(pr.p.Present(pr.sc, image))
	if err := b.bound(); err != nil && perr == nil {
		perr = err
	}
	return perr
}

// Resize replaces the swapchain with one of the window's new size, once
// every frame in flight is done; the frames' source size carries over.
func (pr *Presentation) Resize(width, height uint32) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return fmt.Errorf("recorder: resize of a closed swapchain: %w", ErrClosed)
	}
	if err := pr.r.usable(); err != nil {
		return err
	}
	if err := pr.quiesce(); err != nil && !errors.Is(err, ErrOutOfDate) {
		return err
	}
	sc, info, err := pr.p.NewSwapchain(width, height, pr.vsync, pr.sc)
	if err != nil {
		return pr.r.observe(err)
	}
	pr.p.DestroySwapchain(pr.sc)
	pr.sc, pr.info, pr.broken = sc, info, false
	pr.frames, pr.next = [maxFrames]frameUse{}, 0
	if pr.srcW != 0 {
		if err := pr.r.observe(pr.p.SetFrameSource(sc, pr.srcW, pr.srcH)); err != nil {
			pr.srcW, pr.srcH = 0, 0
			return err
		}
	}
	return nil
}

// Close waits for the frames in flight and destroys the swapchain;
// idempotent. Recorder.Close closes every presentation still open.
func (pr *Presentation) Close() error {
	r := pr.r
	r.devMu.RLock()
	defer r.devMu.RUnlock()
	return pr.close()
}

// close is Close where the caller holds devMu (either way).
func (pr *Presentation) close() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return nil
	}
	pr.closed = true
	r := pr.r
	r.presMu.Lock()
	delete(r.presentations, pr)
	r.presMu.Unlock()
	var err error
	if !r.closed.Load() {
		err = pr.quiesce()
		if errors.Is(err, ErrOutOfDate) {
			err = nil
		}
	}
	pr.p.DestroySwapchain(pr.sc)
	return err
}

// closePresentations destroys the swapchains still open; Close calls it
// with the device idle and every slot torn down.
func (r *Recorder) closePresentations() {
	r.presMu.Lock()
	open := make([]*Presentation, 0, len(r.presentations))
	for pr := range r.presentations {
		open = append(open, pr)
	}
	r.presMu.Unlock()
	for _, pr := range open {
		_ = pr.close()
	}
}

// surfaceOn calls the user's surface function on the instance; if it
// panics, the instance is closed before the panic goes on, so it does not
// leak with the Open that never returns.
func surfaceOn(in *vk.Instance, create func(instance uintptr) (uint64, error)) (surface uint64, err error) {
	defer func() {
		if p := recover(); p != nil {
			in.Close()
			panic(p)
		}
	}()
	return create(in.Handle())
}

// openPresentingVulkan is OpenVulkan for a window: the instance enables
// o.InstanceExtensions, o.Surface creates the window's surface on it, and
// the device chosen (o.Device, or the best that can present to the surface)
// gets VK_KHR_swapchain and a queue family that computes and presents. The
// result is also a Presenter.
func openPresentingVulkan(o VulkanOptions) (Device, error) {
	in, err := vk.NewInstance(vk.InstanceOptions{Validation: o.Validation || o.SyncValidation, SyncValidation: o.SyncValidation,
		Logger: o.Logger, Extensions: o.InstanceExtensions, WithoutFeatures: vkFeatures(o.WithoutFeatures)})
	if err != nil {
		return nil, fromVK(err)
	}
	surface, err := surfaceOn(in, o.Surface)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("recorder: creating the window's surface: %w", err)
	}
	if surface == 0 {
		in.Close()
		return nil, fmt.Errorf("recorder: the surface function returned no surface")
	}
	fail := func(err error) (Device, error) {
		in.DestroySurface(surface)
		in.Close()
		return nil, fromVK(err)
	}
	infos, err := in.Devices()
	if err != nil {
		return fail(err)
	}
	var idx int
	if o.Device != "" {
		if idx, err = vk.Select(infos, o.Device); err != nil {
			return fail(err)
		}
	} else {
		var able []vk.DeviceInfo
		for _, info := range infos {
			ok, err := in.CanPresent(info.Index, surface)
			if err != nil {
				return fail(err)
			}
			if ok {
				able = append(able, info)
			}
		}
		if len(able) == 0 {
			return fail(fmt.Errorf("recorder: no Vulkan device can present to the window's surface"))
		}
		best, _ := vk.Select(able, "")
		idx = able[best].Index
	}
	d, err := in.OpenPresentingDevice(idx, surface) // owns the surface from here
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	return &presentingDevice{vulkanDevice: &vulkanDevice{in: in, d: d, info: infoFromVK(d.Info())}}, nil
}

// presentingDevice is the Vulkan device with presentation: a Device and a
// Presenter.
type presentingDevice struct {
	*vulkanDevice
	scs table[*vk.Swapchain]
}

// fromVKPresent maps vk's presentation errors onto the recorder's.
func fromVKPresent(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, vk.ErrOutOfDate):
		return &vkError{sentinel: ErrOutOfDate, err: err}
	case errors.Is(err, vk.ErrNoPresentation):
		return &vkError{sentinel: ErrNoPresentation, err: err}
	}
	return fromVK(err)
}

func (v *presentingDevice) NewSwapchain(width, height uint32, vsync bool, old Swapchain) (Swapchain, SwapchainInfo, error) {
	o := vk.SwapchainOptions{Width: width, Height: height, VSync: vsync}
	if old != 0 {
		o.Old = v.scs.get(uint64(old))
	}
	sc, err := v.d.NewSwapchain(o)
	if err != nil {
		return 0, SwapchainInfo{}, fromVKPresent(err)
	}
	w, h := sc.Extent()
	mw, mh := sc.MaxSource()
	info := SwapchainInfo{Width: w, Height: h, Images: sc.Images(), Frames: vk.FramesInFlight, BGRA: sc.BGRA(),
		Copyable: sc.Copyable(), MaxFrameWidth: mw, MaxFrameHeight: mh}
	return Swapchain(v.scs.add(sc)), info, nil
}

func (v *presentingDevice) DestroySwapchain(sc Swapchain) { v.scs.remove(uint64(sc)).Destroy() }

func (v *presentingDevice) SetFrameSource(sc Swapchain, width, height uint32) error {
	return fromVKPresent(v.scs.get(uint64(sc)).SetSource(width, height))
}

func (v *presentingDevice) Acquire(sc Swapchain, frame int, timeout time.Duration) (uint32, error) {
	image, err := v.d.Acquire(v.scs.get(uint64(sc)), frame, timeout)
	return image, fromVKPresent(err)
}

func (v *presentingDevice) CmdFrameCopy(cb CommandBuffer, sc Swapchain, x *FrameCopy) {
	fc := vk.FrameCopy{Src: v.mems.get(uint64(x.Src)), SrcOffset: x.SrcOffset, Width: x.Width, Height: x.Height, Image: x.Image}
	if x.Shot != 0 {
		fc.Shot, fc.ShotOffset = v.mems.get(uint64(x.Shot)), x.ShotOffset
	}
	v.d.CmdFrameCopy(v.cbs.get(uint64(cb)), v.scs.get(uint64(sc)), &fc)
}

func (v *presentingDevice) SubmitFrame(cb CommandBuffer, sc Swapchain, frame int, image uint32, f Fence) error {
	return fromVKPresent(v.d.SubmitFrame(v.cbs.get(uint64(cb)), v.scs.get(uint64(sc)), frame, image, v.fences.get(uint64(f))))
}

func (v *presentingDevice) Present(sc Swapchain, image uint32) error {
	return fromVKPresent(v.d.Present(v.scs.get(uint64(sc)), image))
}
