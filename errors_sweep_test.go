package vkc

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// internalPrefix is a package of the module naming itself in a message, as
// "recorder: ": what a user must never read, anywhere in an error.
var internalPrefix = regexp.MustCompile(`\b(recorder|alloc|capture|shaders|vk|vkdev|hostdev|devinfo|pipecache|lockrank|errs): `)

// requireVkcMessage checks an error as a user reads it: "vkc: " first, no
// package of the module naming itself anywhere in it.
func requireVkcMessage(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "vkc: "), "does not start with vkc: %q", msg)
	assert.Empty(t, internalPrefix.FindAllString(msg, -1), "an internal package names itself in %q", msg)
}

// sweepRig is what an error case provokes its failure on: a device of the
// backend under test, and the means to open another one of the same
// backend, with options (the backend's own are added).
type sweepRig struct {
	dev    *Device
	vulkan bool
	open   func(t *testing.T, opts ...Option) *Device
	host   func() *hostdev.Device // the host backend's device of the last open
}

// errorCase is a public call provoking one failure; want is the sentinel
// the error must match (nil: any error, for the failures no sentinel
// names). A case with vulkanOnly or hostOnly runs on that backend alone.
type errorCase struct {
	name       string
	want       error
	vulkanOnly bool
	hostOnly   bool
	call       func(t *testing.T, r *sweepRig) error
}

func sweepBuffer(t *testing.T, dev *Device, n int) *Buffer[float32] {
	t.Helper()
	b, err := FromSlice(dev, make([]float32, n))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func sweepAffine(t *testing.T, dev *Device) *Kernel {
	t.Helper()
	code, err := os.ReadFile("testdata/affine.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(KernelSpec{Name: "affine", SPIRV: code})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })
	return k
}

var errorCases = []errorCase{
	{name: "read of a buffer never written", want: ErrNeverWritten, call: func(t *testing.T, r *sweepRig) error {
		b, err := NewBuffer[float32](r.dev, 16)
		require.NoError(t, err)
		defer b.Close()
		_, err = b.Read(context.Background())
		assert.ErrorIs(t, err, ErrUnwritten)
		return err
	}},
	{name: "read of a buffer an aborted capture was to write", want: ErrUnwritten, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		s := r.dev.NewStream()
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, s.BeginCapture())
		require.NoError(t, Fill(s, x, 1))
		require.NoError(t, s.AbortCapture())
		_, err := x.Read(context.Background())
		assert.ErrorIs(t, err, ErrCaptureState, "the cause: the capture was aborted")
		return err
	}},
	{name: "read after a failed submit", want: ErrUnwritten, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		fd := &faultyDevice{}
		dev := r.open(t, withDeviceWrapper(func(d recorder.Device) recorder.Device { fd.Device = d; return fd }))
		x := sweepBuffer(t, dev, 16)
		cause := submitFailure()
		fd.failNext(callSubmit, 1, cause)
		_ = Fill(dev.Stream(), x, 2)
		requireVkcMessage(t, dev.Stream().Sync(context.Background()))
		_, err := x.Read(context.Background())
		assert.ErrorIs(t, err, cause)
		return err
	}},
	{name: "read inside a capture window", want: ErrSyncInCapture, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		_, err := r.dev.NewStream().Capture(func(s *Stream) error {
			_, err := x.ReadOn(context.Background(), s)
			return err
		})
		return err
	}},
	{name: "launch on a stream whose slot another stream captures", want: ErrStreamCapturing, call: func(t *testing.T, r *sweepRig) error {
		dev := r.open(t, WithStreams(1))
		x := sweepBuffer(t, dev, 16)
		a, b := dev.Stream(), dev.NewStream()
		require.NoError(t, a.PrepareCapture())
		require.NoError(t, a.BeginCapture())
		defer a.AbortCapture()
		return Fill(b, x, 1)
	}},
	{name: "EndCapture with no window", want: ErrCaptureState, call: func(t *testing.T, r *sweepRig) error {
		_, err := r.dev.NewStream().EndCapture()
		return err
	}},
	{name: "work on a buffer made inside a capture window", want: ErrAllocInCapture, call: func(t *testing.T, r *sweepRig) error {
		dev := r.open(t)
		s := dev.Stream()
		x := sweepBuffer(t, dev, 16)
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, s.BeginCapture())
		defer s.AbortCapture()
		born, err := NewBuffer[float32](dev, 16)
		require.NoError(t, err, "a buffer is made inside a window; its use there is refused")
		defer born.Close()
		return Copy(s, x, born)
	}},
	{name: "a page larger than every heap", want: ErrOutOfMemory, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		var largest uint64
		for _, h := range r.dev.Info().Heaps {
			largest = max(largest, h.Size)
		}
		_, err := NewBuffer[float32](r.open(t, WithPageSize(largest+64<<20)), 16)
		return err
	}},
	{name: "an allocation the device refuses", want: ErrOutOfMemory, hostOnly: true, call: func(t *testing.T, r *sweepRig) error {
		dev := r.open(t)
		r.host().FailFrom(hostdev.AllocateMemory, 0, errs.OutOfMemory) // every try: the retry after reclaiming fails too
		_, err := NewBuffer[float32](dev, 1<<20)
		return err
	}},
	{name: "sync after the device was lost", want: ErrDeviceLost, call: func(t *testing.T, r *sweepRig) error {
		if r.vulkan {
			fd := &faultyDevice{}
			dev := r.open(t, withDeviceWrapper(func(d recorder.Device) recorder.Device { fd.Device = d; return fd }))
			x := sweepBuffer(t, dev, 16)
			fd.failAfter(callWaitFence, 0, deviceLoss())
			require.NoError(t, Fill(dev.Stream(), x, 1))
			requireVkcMessage(t, dev.Stream().Sync(context.Background()))
			_, err := x.Read(context.Background())
			return err
		}
		dev := r.open(t)
		x := sweepBuffer(t, dev, 16)
		r.host().Lose()
		require.Error(t, Fill(dev.Stream(), x, 1))
		return dev.Stream().Sync(context.Background())
	}},
	{name: "read of a closed buffer", want: ErrClosed, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		require.NoError(t, x.Close())
		_, err := x.Read(context.Background())
		return err
	}},
	{name: "a buffer of a closed device", want: ErrClosed, call: func(t *testing.T, r *sweepRig) error {
		dev := r.open(t)
		require.NoError(t, dev.Close())
		_, err := NewBuffer[float32](dev, 4)
		return err
	}},
	{name: "replay of a closed graph", want: ErrClosed, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		g, err := r.dev.NewStream().Capture(func(s *Stream) error { return Fill(s, x, 1) })
		require.NoError(t, err)
		require.NoError(t, g.Close())
		return g.Replay()
	}},
	{name: "launch of a closed kernel", want: ErrClosed, call: func(t *testing.T, r *sweepRig) error {
		k := sweepAffine(t, r.dev)
		x, y := sweepBuffer(t, r.dev, 64), sweepBuffer(t, r.dev, 64)
		require.NoError(t, k.Close())
		return k.Launch(r.dev.Stream(), [3]uint32{1, 1, 1}, make([]byte, 12), x, y)
	}},
	{name: "set of a closed param", want: ErrClosed, call: func(t *testing.T, r *sweepRig) error {
		p, err := NewParam[uint32](r.dev, 1)
		require.NoError(t, err)
		require.NoError(t, p.Close())
		return p.Set(2)
	}},
	{name: "GLSL text given as a kernel", want: ErrBadSPIRV, call: func(t *testing.T, r *sweepRig) error {
		_, err := r.dev.LoadKernel(KernelSpec{Name: "mine", SPIRV: []byte("#version 450\nvoid main() {}\n")})
		assert.ErrorContains(t, err, `LoadKernel "mine"`, "the kernel is named")
		assert.ErrorContains(t, err, "glslc", "the fix is said")
		return err
	}},
	{name: "16 bytes given as a kernel", want: ErrBadSPIRV, call: func(t *testing.T, r *sweepRig) error {
		_, err := r.dev.LoadKernel(KernelSpec{Name: "short", SPIRV: make([]byte, 16)})
		assert.ErrorContains(t, err, `"short"`)
		return err
	}},
	{name: "a module the SPIR-V validator refuses", want: ErrBadSPIRV, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		code, err := os.ReadFile("vk/testdata/badindex.spv")
		require.NoError(t, err)
		_, err = r.dev.LoadKernel(KernelSpec{Name: "badindex", SPIRV: code})
		return err
	}},
	{name: "a kernel needing a feature left out", want: ErrUnsupported, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		code, err := os.ReadFile("testdata/double.spv")
		require.NoError(t, err)
		_, err = r.open(t, WithoutFeatures(FeatureFloat64)).LoadKernel(KernelSpec{Name: "double", SPIRV: code})
		return err
	}},
	{name: "a swapchain of a device opened without presentation", want: ErrNoPresentation, call: func(t *testing.T, r *sweepRig) error {
		_, err := r.dev.NewSwapchain(SwapchainConfig{Width: 8, Height: 8})
		return err
	}},
	{name: "adoption of null handles", want: ErrBadAdoption, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		dev, err := Adopt(External{})
		if err == nil {
			dev.Close()
		}
		return err
	}},
	{name: "the Vulkan buffer of a host device's buffer", want: errs.NotShared, hostOnly: true, call: func(t *testing.T, r *sweepRig) error {
		_, err := sweepBuffer(t, r.dev, 16).VulkanBuffer()
		return err
	}},
	{name: "a signal of neither semaphore nor fence", want: ErrNullHandle, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		return r.dev.NewStream().SignalOutside(0, 0)
	}},
	{name: "a wait for a nil event", want: ErrEventUnrecorded, call: func(t *testing.T, r *sweepRig) error {
		return r.dev.Stream().Wait(nil)
	}},
	{name: "a wait for another device's event", want: ErrEventForeign, call: func(t *testing.T, r *sweepRig) error {
		ev, err := r.open(t).Stream().Record()
		require.NoError(t, err)
		defer ev.Close()
		return r.dev.Stream().Wait(ev)
	}},
	{name: "a host wait for an event recorded in a window", want: ErrEventInCapture, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		var ev *Event
		g, err := r.dev.NewStream().Capture(func(s *Stream) error {
			if err := Fill(s, x, 1); err != nil {
				return err
			}
			var err error
			ev, err = s.Record()
			return err
		})
		require.NoError(t, err)
		defer g.Close()
		defer ev.Close()
		return ev.Sync(context.Background())
	}},
	{name: "Since of untimed events", want: ErrEventUntimed, call: func(t *testing.T, r *sweepRig) error {
		s := r.dev.Stream()
		a, err := s.Record()
		require.NoError(t, err)
		defer a.Close()
		b, err := s.Record()
		require.NoError(t, err)
		defer b.Close()
		_, err = b.Since(a)
		return err
	}},
	{name: "a profile inside a profile", want: ErrProfileState, call: func(t *testing.T, r *sweepRig) error {
		_, err := r.dev.NewStream().Profile(func(s *Stream) error {
			_, err := s.Profile(func(*Stream) error { return nil })
			return err
		})
		return err
	}},
	{name: "the profile of a graph captured without one", want: ErrGraphUnprofiled, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		g, err := r.dev.NewStream().Capture(func(s *Stream) error { return Fill(s, x, 1) })
		require.NoError(t, err)
		defer g.Close()
		_, err = g.LastProfile(context.Background())
		return err
	}},
	{name: "a pending read waited for twice", want: ErrReadTaken, call: func(t *testing.T, r *sweepRig) error {
		p, err := sweepBuffer(t, r.dev, 16).ReadAsync(r.dev.Stream())
		require.NoError(t, err)
		_, err = p.Wait(context.Background())
		require.NoError(t, err)
		_, err = p.Wait(context.Background())
		return err
	}},
	{name: "a view past the buffer", want: ErrOutOfRange, call: func(t *testing.T, r *sweepRig) error {
		_, err := sweepBuffer(t, r.dev, 16).View(8, 9)
		return err
	}},
	{name: "a matmul whose output is its input", want: ErrOverlap, call: func(t *testing.T, r *sweepRig) error {
		x := sweepBuffer(t, r.dev, 16)
		return Matmul(r.dev.Stream(), x, x, x, 4, 4, 4)
	}},
	{name: "a param bound where a kernel writes", want: ErrParamWritten, call: func(t *testing.T, r *sweepRig) error {
		k := sweepAffine(t, r.dev)
		p, err := NewParam[float32](r.dev, 1)
		require.NoError(t, err)
		defer p.Close()
		return k.Launch(r.dev.Stream(), [3]uint32{1, 1, 1}, make([]byte, 12), sweepBuffer(t, r.dev, 64), p)
	}},
	{name: "an unknown wait policy", want: ErrWaitPolicy, vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		dev, err := Open(WithWaitPolicy(WaitPolicy(99)))
		if err == nil {
			dev.Close()
		}
		return err
	}},
	{name: "more streams than the library tracks", vulkanOnly: true, call: func(t *testing.T, r *sweepRig) error {
		dev, err := Open(WithStreams(65))
		if err == nil {
			dev.Close()
		}
		return err
	}},
	{name: "a launch with too few buffers", call: func(t *testing.T, r *sweepRig) error {
		return sweepAffine(t, r.dev).Launch(r.dev.Stream(), [3]uint32{1, 1, 1}, make([]byte, 12), sweepBuffer(t, r.dev, 64))
	}},
	{name: "a launch with a short push block", call: func(t *testing.T, r *sweepRig) error {
		x, y := sweepBuffer(t, r.dev, 64), sweepBuffer(t, r.dev, 64)
		return sweepAffine(t, r.dev).Launch(r.dev.Stream(), [3]uint32{1, 1, 1}, make([]byte, 4), x, y)
	}},
	{name: "a kernel whose push size is not whole words", call: func(t *testing.T, r *sweepRig) error {
		code, err := os.ReadFile("testdata/affine.spv")
		require.NoError(t, err)
		_, err = r.dev.LoadKernel(KernelSpec{Name: "affine", SPIRV: code, Bindings: []Access{ReadOnly, WriteOnly}, PushSize: 10})
		return err
	}},
	{name: "an op of buffers of different lengths", call: func(t *testing.T, r *sweepRig) error {
		return Add(r.dev.Stream(), sweepBuffer(t, r.dev, 16), sweepBuffer(t, r.dev, 16), sweepBuffer(t, r.dev, 8))
	}},
}

// Every failure reachable through the public API reads as vkc's: its
// message starts with "vkc: " and no package of the module names itself
// anywhere in it, however deep the chain, on lavapipe and on the host
// device; and each matches its sentinel. Every sentinel but those only an
// absent loader or driver gives (TestNoDriver) is provoked here.
func TestEveryErrorReadsAsVkcs(t *testing.T) {
	provoked := map[error]bool{ErrNoLoader: true, ErrNoDevice: true, ErrOutOfDate: true}
	backends := []struct {
		name   string
		vulkan bool
	}{{"vulkan", true}, {"host", false}}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			var last *hostdev.Device
			open := func(t *testing.T, opts ...Option) *Device {
				if be.vulkan {
					return openTest(t, opts...)
				}
				ks := hostdev.Builtins()
				ks["affine"] = affineHost()
				dev, err := Open(append([]Option{withRecorderDevice(func() (recorder.Device, error) {
					last = hostdev.New(hostdev.Options{Kernels: ks})
					return last, nil
				})}, opts...)...)
				require.NoError(t, err)
				t.Cleanup(func() { _ = dev.Close() })
				return dev
			}
			shared := open(t)
			for _, c := range errorCases {
				if c.vulkanOnly && !be.vulkan || c.hostOnly && be.vulkan {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					r := &sweepRig{dev: shared, vulkan: be.vulkan, open: open, host: func() *hostdev.Device { return last }}
					err := c.call(t, r)
					requireVkcMessage(t, err)
					if c.want != nil {
						assert.ErrorIs(t, err, c.want)
						provoked[c.want] = true
					}
					t.Log(err)
				})
			}
		})
	}
	for _, s := range errs.All {
		assert.True(t, provoked[s], "no case provokes %v", s)
	}
	assert.False(t, errors.Is(ErrClosed, ErrDeviceLost))
}
