package vkc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// sentinel is a buffer written before any bad call: after each bad call it
// must read back exactly as written, so a refused call is shown to have
// lost or overwritten nothing.
type sentinel struct {
	buf  *Buffer[float32]
	want []float32
}

// newSentinel writes a recognisable pattern into a fresh buffer on dev.
func newSentinel(t testing.TB, dev *Device) *sentinel {
	t.Helper()
	want := make([]float32, 777)
	for i := range want {
		want[i] = float32(i)*0.5 - 100
	}
	return &sentinel{buf: upload(t, dev, want), want: want}
}

// check fails the test unless the sentinel still reads back intact.
func (s *sentinel) check(t testing.TB, after string) {
	t.Helper()
	got, err := s.buf.Read(context.Background())
	require.NoError(t, err, "sentinel unreadable after %s", after)
	require.Equal(t, s.want, got, "sentinel changed after %s", after)
}

// refuse runs a call that must fail (and must not panic), checks the error
// against sentinel errors where the call has one, then checks the sentinel.
func refuse(t *testing.T, s *sentinel, what string, call func() error, is ...error) {
	t.Helper()
	var err error
	require.NotPanics(t, func() { err = call() }, what)
	require.Error(t, err, what)
	for _, target := range is {
		require.ErrorIs(t, err, target, what)
	}
	s.check(t, what)
}

func TestBadLengths(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	live := dev.MemoryStats().LiveClaims
	tooLong := int(dev.Info().Limits.MaxStorageBufferRange/elemSize) + 1
	for _, n := range []int{0, -1, -1 << 40, tooLong} {
		refuse(t, s, "NewBuffer float32", func() error { _, err := NewBuffer[float32](dev, n); return err })
		refuse(t, s, "NewBuffer int32", func() error { _, err := NewBuffer[int32](dev, n); return err })
	}
	refuse(t, s, "FromSlice empty", func() error { _, err := FromSlice(dev, []uint32{}); return err })
	refuse(t, s, "FromSlice nil", func() error { _, err := FromSlice[float32](dev, nil); return err })
	refuse(t, s, "NewBuffer nil device", func() error { _, err := NewBuffer[float32](nil, 4); return err })
	assert.Equal(t, live, dev.MemoryStats().LiveClaims, "a refused allocation kept a claim")

	b := upload(t, dev, []float32{1, 2, 3})
	for _, xs := range [][]float32{nil, {1}, {1, 2}, {1, 2, 3, 4}} {
		refuse(t, s, "Write wrong length", func() error { return b.Write(xs) })
		refuse(t, s, "WriteOn wrong length", func() error { return b.WriteOn(dev.NewStream(), xs) })
	}
	refuse(t, s, "ReadInto wrong length", func() error {
		return b.ReadInto(context.Background(), dev.Stream(), make([]float32, 2))
	})
	require.Equal(t, []float32{1, 2, 3}, readAll(t, b), "a refused write changed the buffer")
}

// oomDevice stands for a device whose memory ends at limit bytes per
// allocation: lavapipe's heap (2 GiB) is larger than maxStorageBufferRange
// (128 MiB) and it does not enforce the heap size anyway, so no single
// buffer can exceed its memory; the wrapper answers as a driver out of
// memory would.
type oomDevice struct {
	recorder.Device
	limit uint64
}

func (d oomDevice) AllocateMemory(kind alloc.Kind, size uint64) (recorder.Memory, error) {
	if size > d.limit {
		return 0, injected("vkAllocateMemory", errs.OutOfMemory)
	}
	return d.Device.AllocateMemory(kind, size)
}

func TestLengthBeyondDeviceMemory(t *testing.T) {
	const limit = 96 << 20
	dev := openTest(t, withDeviceWrapper(func(d recorder.Device) recorder.Device { return oomDevice{d, limit} }))
	s := newSentinel(t, dev)
	n := int(dev.Info().Limits.MaxStorageBufferRange / elemSize)
	require.Greater(t, n*elemSize, limit, "the case needs a buffer within maxStorageBufferRange but beyond the memory")
	before := dev.MemoryStats()
	for range 3 {
		refuse(t, s, "NewBuffer beyond memory", func() error { _, err := NewBuffer[float32](dev, n); return err }, ErrOutOfMemory)
	}
	after := dev.MemoryStats()
	assert.Equal(t, before.LiveClaims, after.LiveClaims)
	assert.Equal(t, before.Pages, after.Pages)
	// The device still works at a size that fits.
	b := upload(t, dev, make([]float32, 1<<20))
	require.NoError(t, Fill(dev.Stream(), b, 7))
	require.Equal(t, float32(7), readAll(t, b)[1<<20-1])
}

func TestBuffersOfTwoDevices(t *testing.T) {
	one, two := openTest(t), openTest(t)
	s1, s2 := newSentinel(t, one), newSentinel(t, two)
	x1 := upload(t, one, []float32{1, 2})
	y1 := upload(t, one, []float32{3, 4})
	x2 := upload(t, two, []float32{5, 6})
	z2 := scratch[float32](t, two, 2)
	both := func(what string, call func() error) {
		t.Helper()
		refuse(t, s1, what, call)
		s2.check(t, what)
	}
	// Copy copies between devices (blackbox/copy_between_devices_test.go),
	// but not between buffers of different lengths.
	both("Copy across devices, lengths differ", func() error { return Copy(one.Stream(), x1, scratch[float32](t, two, 3)) })
	both("Write on another device's stream", func() error { return y1.WriteOn(two.Stream(), []float32{0, 0}) })
	both("Read on another device's stream", func() error { _, err := y1.ReadOn(context.Background(), two.Stream()); return err })
	k := loadAffine(t, one, [3]uint32{})
	both("user kernel on another device's stream", func() error {
		return k.Launch(two.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 2), x2, z2)
	})
	both("user kernel with another device's buffer", func() error {
		return k.Launch(one.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 2), x1, z2)
	})
	require.Equal(t, []float32{3, 4}, readAll(t, y1))
	_, err := z2.Read(context.Background())
	require.ErrorIs(t, err, ErrNeverWritten, "a refused launch wrote its output")
}

func TestClosedBuffer(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	x := upload(t, dev, []float32{1, 2, 3})
	b, err := FromSlice(dev, []float32{4, 5, 6})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close twice")
	st := dev.Stream()
	ctx := context.Background()
	calls := map[string]func() error{
		"Read":      func() error { _, err := b.Read(ctx); return err },
		"ReadOn":    func() error { _, err := b.ReadOn(ctx, dev.NewStream()); return err },
		"ReadInto":  func() error { return b.ReadInto(ctx, st, make([]float32, 3)) },
		"Write":     func() error { return b.Write([]float32{7, 8, 9}) },
		"WriteOn":   func() error { return b.WriteOn(dev.NewStream(), []float32{7, 8, 9}) },
		"Fill":      func() error { return Fill(st, b, 1) },
		"Copy from": func() error { return Copy(st, b, x) },
		"Copy into": func() error { return Copy(st, x, b) },
		"user kernel": func() error {
			return loadAffine(t, dev, [3]uint32{}).Launch(st, [3]uint32{1, 1, 1}, affinePush(1, 0, 3), x, b)
		},
	}
	for name, call := range calls {
		refuse(t, s, name+" of a closed buffer", call, ErrClosed)
	}
	require.Equal(t, []float32{1, 2, 3}, readAll(t, x))
}

func TestClosedDevice(t *testing.T) {
	witness := openTest(t)
	ws := newSentinel(t, witness)
	dev, err := Open(WithValidation(true))
	require.NoError(t, err)
	x, err := FromSlice(dev, []float32{1, 2})
	require.NoError(t, err)
	y, err := FromSlice(dev, []float32{3, 4})
	require.NoError(t, err)
	g, err := dev.Stream().Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
	require.NoError(t, err)
	k := loadAffine(t, dev, [3]uint32{})
	streams := []*Stream{dev.Stream(), dev.NewStream(), dev.StreamWithID(4)}
	closeAndCheck(t, dev)
	require.NoError(t, dev.Close(), "Close twice")

	ctx := context.Background()
	calls := map[string]func() error{
		"NewBuffer":  func() error { _, err := NewBuffer[float32](dev, 4); return err },
		"FromSlice":  func() error { _, err := FromSlice(dev, []int32{1}); return err },
		"LoadKernel": func() error { _, err := dev.LoadKernel(affineSpec(t)); return err },
		"Read":       func() error { _, err := y.Read(ctx); return err },
		"Write":      func() error { return x.Write([]float32{0, 0}) },
		"Axpy":       func() error { return Axpy(dev.Stream(), 1, x, y) },
		"Scale":      func() error { return Scale(dev.Stream(), 2, x, y) },
		"Replay":     g.Replay,
		"Launch":     func() error { return k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 2), x, y) },
	}
	for _, st := range streams {
		id := fmt.Sprintf(" (stream %d)", st.ID())
		calls["Sync"+id] = func() error { return st.Sync(ctx) }
		calls["Flush"+id] = st.Flush
		calls["PrepareCapture"+id] = st.PrepareCapture
		calls["BeginCapture"+id] = st.BeginCapture
		calls["EndCapture"+id] = func() error { _, err := st.EndCapture(); return err }
		calls["AbortCapture"+id] = st.AbortCapture
		calls["Capture"+id] = func() error {
			_, err := st.Capture(func(s *Stream) error { return Fill(s, x, 1) })
			return err
		}
	}
	for name, call := range calls {
		refuse(t, ws, name+" on a closed device", call, ErrClosed)
	}
	// Closing what the device already closed is harmless.
	assert.NoError(t, g.Close())
	assert.NoError(t, x.Close())
	assert.NoError(t, k.Close())
	assert.Empty(t, dev.LiveObjects())
}

func TestNoDriver(t *testing.T) {
	if os.Getenv("VKC_TEST_NO_DRIVER") == "1" {
		// The child: the loader sees only an empty driver manifest.
		dev, err := Open()
		if err == nil {
			dev.Close()
			t.Fatal("Open succeeded with no driver")
		}
		require.ErrorIs(t, err, ErrNoDevice)
		require.ErrorContains(t, err, "mesa-vulkan-drivers")
		_, err = Devices()
		require.ErrorIs(t, err, ErrNoDevice)
		return
	}
	// The loader reads VK_ICD_FILENAMES once per instance, but a test must not
	// change this process's environment under parallel tests: run the check
	// in a child test process.
	empty := filepath.Join(t.TempDir(), "none.json")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoDriver$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VKC_TEST_NO_DRIVER=1", "VK_ICD_FILENAMES="+empty, "VK_DRIVER_FILES="+empty)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child test failed:\n%s", out)
	require.Contains(t, string(out), "PASS")
}

func TestNoLoaderMessage(t *testing.T) {
	// A missing libvulkan.so.1 cannot be simulated once this process has
	// loaded it; what the user sees is ErrNoLoader, which must name the
	// package to install, and the no-driver error must name the driver.
	assert.Contains(t, ErrNoLoader.Error(), "libvulkan1")
	assert.Contains(t, ErrNoDevice.Error(), "mesa-vulkan-drivers")
	assert.False(t, errors.Is(ErrNoLoader, ErrNoDevice))
}

func TestNilBuffers(t *testing.T) {
	dev := openTest(t)
	s := newSentinel(t, dev)
	st := dev.Stream()
	x := upload(t, dev, []float32{1, 2, 3, 4})
	other := scratch[float32](t, dev, 4)
	var none *Buffer[float32]
	zero := &Buffer[float32]{}
	for _, bad := range []*Buffer[float32]{none, zero} {
		calls := map[string]func() error{
			"Fill":            func() error { return Fill(st, bad, 1) },
			"Copy src":        func() error { return Copy(st, bad, x) },
			"Copy dst":        func() error { return Copy(st, x, bad) },
			"Fill nil stream": func() error { return Fill(nil, x, 1) },
			"Copy nil stream": func() error { return Copy(nil, x, other) },
		}
		for name, call := range calls {
			refuse(t, s, name+" with a nil buffer", call)
		}
	}
	require.Equal(t, []float32{1, 2, 3, 4}, readAll(t, x))
}

func TestNilBufferMethodsReturnErrors(t *testing.T) {
	var nilBuf *Buffer[float32]
	zero := &Buffer[float32]{}
	for _, b := range []*Buffer[float32]{nilBuf, zero} {
		assert.Zero(t, b.Len())
		assert.Nil(t, b.Device())
		assert.Error(t, b.Write([]float32{1}))
		_, err := b.Read(context.Background())
		assert.Error(t, err)
		assert.NoError(t, b.Close(), "closing nothing is harmless")
	}
}

// Every public sentinel is the leaf package's value itself, so errors.Is
// matches it at whichever layer an error was wrapped, and every failure the
// leaf declares is public. An error from below reads as vkc's, with its
// chain kept.
func TestSentinelsAreTheLeafsValues(t *testing.T) {
	leafOf := map[error]error{
		ErrUnwritten: errs.Unwritten, ErrNeverWritten: errs.NeverWritten,
		ErrSyncInCapture: errs.SyncInCapture, ErrStreamCapturing: errs.StreamCapturing,
		ErrCaptureState: errs.CaptureState, ErrAllocInCapture: errs.AllocInCapture,
		ErrOutOfMemory: errs.OutOfMemory, ErrDeviceLost: errs.DeviceLost,
		ErrClosed: errs.Closed, ErrNoLoader: errs.NoLoader, ErrNoDevice: errs.NoDevice,
		ErrBadSPIRV: errs.BadSPIRV, ErrUnsupported: errs.Unsupported,
		ErrOutOfDate: errs.OutOfDate, ErrNoPresentation: errs.NoPresentation,
		ErrBadAdoption: errs.BadAdoption,
		ErrNullHandle:  errs.NullHandle, ErrEventUnrecorded: errs.EventUnrecorded,
		ErrEventForeign: errs.EventForeign, ErrEventInCapture: errs.EventInCapture,
		ErrEventUntimed: errs.EventUntimed, ErrProfileState: errs.ProfileState,
		ErrGraphUnprofiled: errs.GraphUnprofiled, ErrReadTaken: errs.ReadTaken,
		ErrOutOfRange: errs.OutOfRange, ErrOverlap: errs.Overlap,
		ErrParamWritten: errs.ParamWritten, ErrWaitPolicy: errs.WaitPolicy,
	}
	for pub, leaf := range leafOf {
		assert.True(t, pub == leaf, "%v is not the leaf's value", pub)
	}
	// NotShared is only the host device's, a device of tests: no public
	// call can return it, so it has no public name.
	internal := 1
	for _, leaf := range errs.All {
		if leaf == errs.NotShared {
			continue
		}
		_, ok := leafOf[leaf]
		assert.True(t, ok, "%v has no public name", leaf)
		assert.True(t, strings.HasPrefix(leaf.Error(), "vkc: "), "%q", leaf)
	}
	assert.Len(t, leafOf, len(errs.All)-internal)

	lower := fmt.Errorf("kernel %q: %w", "k", errs.Closed)
	err := publicOp("Kernel.Launch", lower)
	assert.ErrorIs(t, err, ErrClosed)
	assert.Equal(t, `vkc: Kernel.Launch: kernel "k": `+errs.Closed.Error(), err.Error())
	assert.Equal(t, "vkc: Stream.Sync: device lost (close the device and open it again)",
		publicOp("Stream.Sync", errs.DeviceLost).Error(), "the sentinel's own vkc: is not said twice")
	assert.Same(t, err, public(err), "an error already public passes as it is")
	assert.Nil(t, public(nil))
}

// Options outside what the device or the library can take: more slots than
// the library tracks is refused by Open instead of being quietly capped
// (streams would then share slots other than by id % n), and a page larger
// than every memory heap fails the allocation that needs it as out of
// memory, with no invalid request reaching the driver (openTest fails on
// any validation message).
func TestOptionsBeyondTheLimits(t *testing.T) {
	_, err := Open(WithStreams(65))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at most 64")
	dev := openTest(t, WithStreams(64))
	assert.Equal(t, 64, dev.Slots())

	var largest uint64
	for _, h := range dev.Info().Heaps {
		largest = max(largest, h.Size)
	}
	big := openTest(t, WithPageSize(largest+64<<20))
	_, err = NewBuffer[float32](big, 16)
	require.ErrorIs(t, err, ErrOutOfMemory)
}
