package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// fakePresenter is the host device with a presentation engine that checks
// how the recorder drives it: a frame's acquire semaphore is never reused
// while the submission that waited on it may be pending, the source is
// never resized and no swapchain destroyed under a pending frame. Its frame
// copy copies the source into the shot (a 1:1 "blit"), so a shot shows
// what the presented image held.
type fakePresenter struct {
	*hostdev.Device

	mu         sync.Mutex
	next       recorder.Swapchain
	live       map[recorder.Swapchain]bool
	frameFence [8]recorder.Fence // the fence of the submission that waited on frame k
	pending    [8]bool           // that submission is not known complete
	acquires   int
	presents   int
	violations []string
	failSubmit bool   // the next SubmitFrame fails
	outOfDate  bool   // the next Present reports out of date
	maxFrame   uint32 // SwapchainInfo.MaxFrameWidth and Height
	sources    int    // SetFrameSource calls
}

func newFake() *fakePresenter {
	return &fakePresenter{Device: hostdev.New(hostdev.Options{}), live: map[recorder.Swapchain]bool{}}
}

func (f *fakePresenter) violate(format string, args ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

func (f *fakePresenter) anyPending() bool {
	for _, p := range f.pending {
		if p {
			return true
		}
	}
	return false
}

// WaitFence and WaitIdle are how the recorder learns a frame completed.
func (f *fakePresenter) WaitFence(h recorder.Fence, timeout time.Duration) (bool, error) {
	ok, err := f.Device.WaitFence(h, timeout)
	if ok && err == nil {
		f.mu.Lock()
		for k, fh := range f.frameFence {
			if fh == h {
				f.pending[k] = false
			}
		}
		f.mu.Unlock()
	}
	return ok, err
}

func (f *fakePresenter) WaitIdle() error {
	err := f.Device.WaitIdle()
	if err == nil {
		f.mu.Lock()
		f.pending = [8]bool{}
		f.mu.Unlock()
	}
	return err
}

func (f *fakePresenter) NewSwapchain(w, h uint32, _ bool, old recorder.Swapchain) (recorder.Swapchain, recorder.SwapchainInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old != 0 && !f.live[old] {
		f.violate("NewSwapchain: old swapchain %d is not alive", old)
	}
	f.next++
	f.live[f.next] = true
	return f.next, recorder.SwapchainInfo{Width: w, Height: h, Images: 3, Frames: 2, Copyable: true,
		MaxFrameWidth: f.maxFrame, MaxFrameHeight: f.maxFrame}, nil
}

func (f *fakePresenter) DestroySwapchain(sc recorder.Swapchain) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.anyPending() {
		f.violate("DestroySwapchain %d with a frame pending", sc)
	}
	delete(f.live, sc)
}

func (f *fakePresenter) SetFrameSource(sc recorder.Swapchain, w, h uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.anyPending() {
		f.violate("SetFrameSource %dx%d with a frame pending", w, h)
	}
	if f.maxFrame != 0 && (w > f.maxFrame || h > f.maxFrame) {
		f.violate("SetFrameSource %dx%d, larger than the swapchain's %dx%d", w, h, f.maxFrame, f.maxFrame)
	}
	f.sources++
	return nil
}

func (f *fakePresenter) Acquire(sc recorder.Swapchain, frame int, _ time.Duration) (uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[frame] {
		f.violate("Acquire with frame %d's semaphore while its submission may be pending", frame)
	}
	f.acquires++
	return uint32(f.acquires % 3), nil
}

func (f *fakePresenter) CmdFrameCopy(cb recorder.CommandBuffer, _ recorder.Swapchain, x *recorder.FrameCopy) {
	if x.Shot != 0 {
		f.Device.CmdCopy(cb, x.Src, x.SrcOffset, x.Shot, x.ShotOffset, uint64(x.Width)*uint64(x.Height)*4)
	}
}

func (f *fakePresenter) SubmitFrame(cb recorder.CommandBuffer, _ recorder.Swapchain, frame int, _ uint32, fence recorder.Fence) error {
	f.mu.Lock()
	fail := f.failSubmit
	f.failSubmit = false
	f.mu.Unlock()
	if fail {
		return hostdev.ErrInjected
	}
	if err := f.Device.Submit(cb, fence); err != nil {
		return err
	}
	f.mu.Lock()
	f.frameFence[frame], f.pending[frame] = fence, true
	f.mu.Unlock()
	return nil
}

func (f *fakePresenter) Present(recorder.Swapchain, uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.presents++
	if f.outOfDate {
		f.outOfDate = false
		return errs.OutOfDate
	}
	return nil
}

func (f *fakePresenter) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.violations)
}

// A presentation on a device that cannot present is refused.
func TestNoPresentationOnTheHostDevice(t *testing.T) {
	r, err := recorder.New(hostdev.New(hostdev.Options{}), recorder.Options{PageSize: 1 << 20})
	require.NoError(t, err)
	defer r.Close()
	_, err = r.NewPresentation(8, 8, false)
	assert.ErrorIs(t, err, errs.NoPresentation)
}

// Frames are presented after the stream's pending work (the shot holds
// what a copy still in the open batch wrote), every frame's semaphore is
// reused only after its submission completed, across a source resize and
// a Resize; unwritten pixels and a capture window are refused; a failed
// submission taints the shot and leaves the swapchain for Resize; Close
// of the recorder destroys a presentation left open.
func TestPresentationDrivesTheEngine(t *testing.T) {
	f := newFake()
	r, err := recorder.New(f, recorder.Options{PageSize: 1 << 20})
	require.NoError(t, err)
	const w, h = 4, 4
	pr, err := r.NewPresentation(w, h, false)
	require.NoError(t, err)
	src, err := r.Alloc(alloc.DeviceLocal, w*h*4)
	require.NoError(t, err)
	a, err := r.Alloc(alloc.DeviceLocal, w*h*4)
	require.NoError(t, err)
	shot, err := r.Alloc(alloc.DeviceLocal, 8*8*4) // the size after Resize(8, 8)
	require.NoError(t, err)
	var sa *recorder.Staging
	ctx := context.Background()
	const s = recorder.StreamID(1)

	r.Taint([]alloc.Claim{src}, errors.New("never written"))
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), errs.Unwritten)

	out := make([]byte, w*h*4)
	for frame := 0; frame < 10; frame++ {
		data := bytes.Repeat([]byte{byte(frame + 1)}, w*h*4)
		require.NoError(t, r.Write(s, a, &sa, data))
		require.NoError(t, r.Copy(s, a, src, w*h*4)) // pending in the open batch
		if frame == 5 {
			require.NoError(t, pr.Present(s, src, 2, 2, shot), "a new source size")
			continue
		}
		require.NoError(t, pr.Present(s, src, w, h, shot))
		require.NoError(t, r.Read(ctx, s, shot, out))
		require.Equal(t, data, out, "frame %d: the shot is not what the stream wrote first", frame)
	}
	require.NoError(t, pr.Resize(8, 8))
	assert.Equal(t, uint32(8), pr.Info().Width)
	for frame := 0; frame < 4; frame++ {
		require.NoError(t, pr.Present(recorder.StreamID(frame%2), src, w, h, alloc.Claim{}))
	}

	require.NoError(t, r.PrepareCapture(s))
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), errs.SyncInCapture)
	require.NoError(t, r.AbortCapture(s))

	f.mu.Lock()
	f.outOfDate = true
	f.mu.Unlock()
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), errs.OutOfDate)

	f.mu.Lock()
	f.failSubmit = true
	f.mu.Unlock()
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), hostdev.ErrInjected)
	assert.ErrorIs(t, r.Read(ctx, s, shot, out), errs.Unwritten, "a failed frame's shot")
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), errs.OutOfDate, "the swapchain needs Resize")
	require.NoError(t, pr.Resize(8, 8))
	require.NoError(t, pr.Present(s, src, w, h, shot))
	require.NoError(t, r.Read(ctx, s, shot, out))

	f.check(t)
	for _, c := range []alloc.Claim{src, a, shot} {
		require.NoError(t, r.Free(c))
	}
	r.ReleaseStaging(sa)
	require.NoError(t, r.Close()) // the presentation is still open
	assert.ErrorIs(t, pr.Present(s, src, w, h, shot), errs.Closed)
	require.NoError(t, pr.Close())
	f.check(t)
	f.mu.Lock()
	assert.Empty(t, f.live, "swapchains left alive")
	f.mu.Unlock()
	assert.Empty(t, f.Live())
	assert.Zero(t, f.Diagnostics().Errors, f.Diagnostics().Recent)
}

// A frame's copy reads its source until the frame's submission completes:
// a host write into the source (SetHost, from no stream in particular)
// waits for it, with a shot and without one, so the frame shows the bytes
// it was presented with and no host write lands under the pending copy.
func TestPresentedSourceWaitsForHostWrites(t *testing.T) {
	f := newFake()
	r, err := recorder.New(f, recorder.Options{PageSize: 1 << 20})
	require.NoError(t, err)
	const w, h = 2, 2
	pr, err := r.NewPresentation(w, h, false)
	require.NoError(t, err)
	src, err := r.Alloc(alloc.Upload, w*h*4) // mapped, so SetHost can write it
	require.NoError(t, err)
	shot, err := r.Alloc(alloc.DeviceLocal, w*h*4)
	require.NoError(t, err)
	old, next := bytes.Repeat([]byte{1}, w*h*4), bytes.Repeat([]byte{2}, w*h*4)
	setSrc := func(b []byte) error { return r.SetHost([]alloc.Claim{src}, [][]byte{b}) }
	require.NoError(t, setSrc(old))
	const s = recorder.StreamID(1)
	ctx := context.Background()
	require.NoError(t, pr.Present(s, src, w, h, alloc.Claim{}), "sizes the frame source")
	require.NoError(t, r.Sync(ctx, s))

	for _, withShot := range []bool{false, true} {
		var sh alloc.Claim
		if withShot {
			sh = shot
		}
		f.Pause()
		require.NoError(t, pr.Present(s, src, w, h, sh))
		done := make(chan error, 1)
		go func() { done <- setSrc(next) }()
		select {
		case err := <-done:
			f.Resume()
			t.Fatalf("shot %v: SetHost of the source returned (%v) while the frame's copy of it is pending", withShot, err)
		case <-time.After(20 * time.Millisecond):
		}
		f.Resume()
		require.NoError(t, <-done)
		if withShot {
			out := make([]byte, w*h*4)
			require.NoError(t, r.Read(ctx, s, shot, out))
			require.Equal(t, old, out, "the frame shows the source as it was presented")
		}
		require.NoError(t, setSrc(old))
	}

	f.check(t)
	require.NoError(t, pr.Close())
	require.NoError(t, r.Close())
	assert.Empty(t, f.Live())
	assert.Zero(t, f.Diagnostics().Errors, f.Diagnostics().Recent)
}

// A frame whose pixels do not fit its source is refused before anything
// reaches the engine, however large: 1<<31 x 1<<31 pixels of 4 bytes
// wrap a 64-bit byte count to 0. So is a frame of no pixels.
func TestPresentRefusesFramesItsSourceCannotHold(t *testing.T) {
	f := newFake()
	r, err := recorder.New(f, recorder.Options{PageSize: 1 << 20})
	require.NoError(t, err)
	pr, err := r.NewPresentation(4, 4, false)
	require.NoError(t, err)
	src, err := r.Alloc(alloc.DeviceLocal, 4*4*4)
	require.NoError(t, err)
	require.NoError(t, r.Write(0, src, new(*recorder.Staging), make([]byte, 4*4*4)))
	for _, size := range [][2]uint32{{1 << 31, 1 << 31}, {1 << 30, 1 << 30}, {5, 4}, {0, 4}, {4, 0}} {
		assert.Error(t, pr.Present(0, src, size[0], size[1], alloc.Claim{}), "%dx%d", size[0], size[1])
	}
	f.mu.Lock()
	assert.Zero(t, f.acquires, "a refused frame acquired an image")
	f.mu.Unlock()
	require.NoError(t, pr.Present(0, src, 4, 4, alloc.Claim{}), "a frame that fits")
	require.NoError(t, pr.Close())
	require.NoError(t, r.Close())
	assert.Empty(t, f.Live())
	assert.Zero(t, f.Diagnostics().Errors, f.Diagnostics().Recent)
}

// A frame wider or taller than the swapchain's largest frame source is
// refused with the limit named, before the Presenter is asked to size
// its source or to acquire an image.
func TestPresentRefusesFramesLargerThanTheDevicesImages(t *testing.T) {
	f := newFake()
	f.maxFrame = 16
	r, err := recorder.New(f, recorder.Options{PageSize: 1 << 20})
	require.NoError(t, err)
	pr, err := r.NewPresentation(4, 4, false)
	require.NoError(t, err)
	src, err := r.Alloc(alloc.DeviceLocal, 17*4)
	require.NoError(t, err)
	require.NoError(t, r.Write(0, src, new(*recorder.Staging), make([]byte, 17*4)))
	for _, size := range [][2]uint32{{17, 1}, {1, 17}} {
		assert.ErrorContains(t, pr.Present(0, src, size[0], size[1], alloc.Claim{}), "at most 16x16", "%dx%d", size[0], size[1])
	}
	f.mu.Lock()
	assert.Zero(t, f.sources, "a refused frame sized the source")
	assert.Zero(t, f.acquires, "a refused frame acquired an image")
	f.mu.Unlock()
	require.NoError(t, pr.Present(0, src, 16, 1, alloc.Claim{}), "a frame of the largest width")
	require.NoError(t, pr.Present(0, src, 1, 16, alloc.Claim{}), "a frame of the largest height")
	f.check(t)
	require.NoError(t, pr.Close())
	require.NoError(t, r.Close())
	assert.Empty(t, f.Live())
	assert.Zero(t, f.Diagnostics().Errors, f.Diagnostics().Recent)
}
