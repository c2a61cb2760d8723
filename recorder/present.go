package recorder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
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
// implemented by the Vulkan device (vkdev.Open with vkdev.Options.Surface),
// not by the host device. Errors wrap errs.OutOfDate where the swapchain no
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
	mu lockrank.Mutex

	sc     Swapchain
	info   SwapchainInfo
	vsync  bool
	srcW   uint32
	srcH   uint32
	frames frames
	closed bool
}

// frameUse is the submission that last waited on a frame's semaphore.
type frameUse struct {
	slot   *slot
	serial uint64
}

// frames is a swapchain's frames in flight, a state machine of its own:
// which submission last used each frame's semaphores, the frame the next
// present acquires with (frames are used in turn), and whether the
// semaphores broke (an image was acquired and its frame not submitted, so
// they are in a state no frame can use: Present refuses with errs.OutOfDate
// until Resize makes a new swapchain, which resets them).
type frames struct {
	use    [maxFrames]frameUse
	count  int // SwapchainInfo.Frames
	next   int
	broken bool
}

// errFrameOrder refuses a frame submitted out of turn.
var errFrameOrder = errors.New("a frame submitted out of turn")

func newFrames(count int) frames { return frames{count: count} }

// usable refuses a present once the semaphores broke.
func (f *frames) usable() error {
	if f.broken {
		return fmt.Errorf("%w: an earlier frame failed; Resize makes a new swapchain", errs.OutOfDate)
	}
	return nil
}

// submitted records that frame k's submission is serial on slot b and
// moves to the next frame. Refused, changing nothing, unless k is the
// frame whose turn it is.
func (f *frames) submitted(k int, b *slot, serial uint64) error {
	if k != f.next {
		return errFrameOrder
	}
	f.use[k] = frameUse{slot: b, serial: serial}
	f.next = (k + 1) % f.count
	return nil
}

// completed forgets frame k's submission, which has finished.
func (f *frames) completed(k int) { f.use[k] = frameUse{} }

// breakSemaphores marks the semaphores unusable until a reset.
func (f *frames) breakSemaphores() { f.broken = true }

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
		return nil, errs.NoPresentation
	}
	sc, info, err := p.NewSwapchain(width, height, vsync, 0)
	if err != nil {
		return nil, r.observe(err)
	}
	if info.Frames < 1 || info.Frames > maxFrames {
		p.DestroySwapchain(sc)
		return nil, fmt.Errorf("a swapchain with %d frames in flight (1..%d)", info.Frames, maxFrames)
	}
	pr := &Presentation{r: r, p: p, sc: sc, info: info, vsync: vsync, frames: newFrames(info.Frames)}
	pr.mu.SetRank(lockrank.Presentation, 0)
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
	u := pr.frames.use[k]
	if u.slot == nil {
		return nil
	}
	b := u.slot
	if b != held {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if pr.r.closed.Load() {
		return errs.Closed
	}
	if err := b.subs.waitThrough(context.Background(), u.serial); err != nil {
		pr.frames.breakSemaphores() // the frame's semaphore may still be waited on
		return err
	}
	if b.subs.failedAt(u.serial) {
		pr.frames.breakSemaphores()
		return fmt.Errorf("%w: the frame's submission failed its fence wait", errs.OutOfDate)
	}
	pr.frames.completed(k)
	return nil
}

// quiesce waits for every frame's submission and for the queue, so the
// swapchain and its semaphores can be destroyed or the source resized
// (a present is queue work a fence does not cover).
func (pr *Presentation) quiesce() error {
	var first error
	for k := 0; k < pr.frames.count; k++ {
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
// cannot be recorded). errs.OutOfDate asks for Resize. A frame wider or
// taller than the swapchain's MaxFrameWidth or MaxFrameHeight is refused
// before anything reaches the device.
func (pr *Presentation) Present(s StreamID, src alloc.Claim, width, height uint32, shot alloc.Claim) (err error) {
	// width*height fits in 64 bits; times 4 it may not (1<<31 squared
	// wraps to 0), so the pixel count is compared with src's.
	if width == 0 || height == 0 || uint64(width)*uint64(height) > src.Size/4 {
		return fmt.Errorf("a frame of %dx%d pixels from a claim of %d bytes", width, height, src.Size)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	r := pr.r
	if err := pr.checkFrame(width, height, shot); err != nil {
		return err
	}
	b := r.slotOf(s)
	k := pr.frames.next
	if err := pr.prepareSource(b, k, width, height); err != nil {
		return err
	}
	claims := []alloc.Claim{src}
	if shot.Size > 0 {
		claims = append(claims, shot)
	}
	if err := r.settleOthers(context.Background(), b.index, claims, ordered); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := pr.admit(b, s, k, src); err != nil {
		return err
	}
	defer r.taintIfFailed(&err, claims[1:])
	if err := b.subs.submit(); err != nil {
		return err
	}
	image, err := pr.submitFrame(b, k, src, width, height, shot)
	if err != nil {
		return err
	}
	perr := r.observe(pr.p.Present(pr.sc, image))
	if err := b.subs.bound(); err != nil && perr == nil {
		perr = err
	}
	return perr
}

// checkFrame refuses, before anything waits or reaches the device, a
// present on a closed or broken swapchain, a frame larger than the
// device's frame images, and a shot the swapchain cannot take.
func (pr *Presentation) checkFrame(width, height uint32, shot alloc.Claim) error {
	if pr.closed {
		return fmt.Errorf("present on a closed swapchain: %w", errs.Closed)
	}
	if err := pr.frames.usable(); err != nil {
		return err
	}
	if mw, mh := pr.info.MaxFrameWidth, pr.info.MaxFrameHeight; (mw != 0 && width > mw) || (mh != 0 && height > mh) {
		return fmt.Errorf("a frame of %dx%d pixels: this device's frame images are at most %dx%d", width, height, mw, mh)
	}
	if shot.Size == 0 {
		return nil
	}
	if !pr.info.Copyable {
		return fmt.Errorf("this swapchain's images cannot be copied out")
	}
	if uint64(pr.info.Width)*uint64(pr.info.Height) > shot.Size/4 {
		return fmt.Errorf("a shot of %dx%d pixels into a claim of %d bytes", pr.info.Width, pr.info.Height, shot.Size)
	}
	return nil
}

// prepareSource waits for frame k's last submission when another slot
// made it (the caller's own slot is waited for under its lock), and sizes
// the frame image to width x height once no frame uses it.
func (pr *Presentation) prepareSource(b *slot, k int, width, height uint32) error {
	if pr.frames.use[k].slot != b {
		if err := pr.waitFrame(k, nil); err != nil {
			return err
		}
	}
	if width == pr.srcW && height == pr.srcH {
		return nil
	}
	if err := pr.quiesce(); err != nil {
		return err
	}
	if err := pr.r.observe(pr.p.SetFrameSource(pr.sc, width, height)); err != nil {
		return err
	}
	pr.srcW, pr.srcH = width, height
	return nil
}

// admit is Present's gate under slot b's lock: the recorder usable, no
// neighbour's window and no window of s's own (a presentation cannot be
// recorded; the window is doomed), frame k free, and src written.
func (pr *Presentation) admit(b *slot, s StreamID, k int, src alloc.Claim) error {
	r := pr.r
	if err := r.usable(); err != nil {
		return err
	}
	if err := b.refuseNeighbour(s, "present"); err != nil {
		return err
	}
	if b.win.IsActive() {
		err := fmt.Errorf("stream %d presents inside its capture window (a presentation cannot be recorded): %w", s, errs.SyncInCapture)
		b.win.Fail(err)
		return err
	}
	if err := pr.waitFrame(k, b); err != nil {
		return err
	}
	return r.ledger.Check([]alloc.Claim{src})
}

// submitFrame acquires an image with frame k's semaphore and submits the
// frame's copy on slot b between the acquire and present semaphores, as a
// batch the slot retires like any other. From the acquire on, a frame
// that is not submitted breaks the semaphores.
func (pr *Presentation) submitFrame(b *slot, k int, src alloc.Claim, width, height uint32, shot alloc.Claim) (uint32, error) {
	r := pr.r
	image, err := pr.p.Acquire(pr.sc, k, acquireTimeout)
	if err != nil {
		return 0, r.observe(err)
	}
	x, err := b.subs.take(true)
	if err != nil {
		pr.frames.breakSemaphores()
		return 0, err
	}
	if err := pr.recordFrame(x, k, image, src, width, height, shot); err != nil {
		pr.frames.breakSemaphores()
		b.subs.recycle(x)
		return 0, err
	}
	// The copy reads src until the batch's fence signals: a host write to
	// it (SetHost, or a mapped write on unified memory) from any stream
	// settles only busy slots and waits only for batches whose reads or
	// writes name it, so both are set whether or not a shot is taken.
	x.reads = append(x.reads, src)
	if shot.Size > 0 {
		r.ledger.Written([]alloc.Claim{shot})
		x.writes = append(x.writes, shot)
	}
	if err := b.subs.enqueue(x); err != nil {
		pr.frames.breakSemaphores()
		return 0, err
	}
	if err := pr.frames.submitted(k, b, x.serial); err != nil {
		pr.frames.breakSemaphores()
		return 0, err
	}
	return image, nil
}

// recordFrame records the frame's copy into x's command buffer and
// submits it after frame k's acquire semaphore.
func (pr *Presentation) recordFrame(x *batch, k int, image uint32, src alloc.Claim, width, height uint32, shot alloc.Claim) error {
	r, d := pr.r, pr.r.dev
	if err := r.observe(d.Begin(x.cb, Eager)); err != nil {
		return err
	}
	fc := FrameCopy{Src: r.memoryOf(src), SrcOffset: src.Offset, Width: width, Height: height, Image: image}
	if shot.Size > 0 {
		fc.Shot, fc.ShotOffset = r.memoryOf(shot), shot.Offset
	}
	pr.p.CmdFrameCopy(x.cb, pr.sc, &fc)
	d.CmdBarrier(x.cb, BarrierToHost)
	if err := r.observe(d.End(x.cb)); err != nil {
		return err
	}
	return r.observe(pr.p.SubmitFrame(x.cb, pr.sc, k, image, x.fence))
}

// Resize replaces the swapchain with one of the window's new size, once
// every frame in flight is done; the frames' source size carries over.
func (pr *Presentation) Resize(width, height uint32) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return fmt.Errorf("resize of a closed swapchain: %w", errs.Closed)
	}
	if err := pr.r.usable(); err != nil {
		return err
	}
	if err := pr.quiesce(); err != nil && !errors.Is(err, errs.OutOfDate) {
		return err
	}
	sc, info, err := pr.p.NewSwapchain(width, height, pr.vsync, pr.sc)
	if err != nil {
		return pr.r.observe(err)
	}
	pr.p.DestroySwapchain(pr.sc)
	pr.sc, pr.info, pr.frames = sc, info, newFrames(info.Frames)
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
		if errors.Is(err, errs.OutOfDate) {
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
