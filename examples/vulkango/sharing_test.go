package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// newTestRenderer makes the program's side with the validation layer on
// where it is installed and, at cleanup, destroys it and fails the test on
// any validation message that arrived meanwhile: vkc's calls on the
// adopted device report to the program's callback.
func newTestRenderer(t *testing.T) *renderer { t.Helper(); return newTestRendererWith(t, 0) }

// newTestRendererWith is newTestRenderer with the optional features enable
// enabled on the program's device.
func newTestRendererWith(t *testing.T, enable vkc.Features) *renderer {
	t.Helper()
	before, _ := validationMessages()
	r, err := newRendererWith(true, enable)
	require.NoError(t, err)
	t.Cleanup(func() {
		r.destroy()
		n, msgs := validationMessages()
		assert.Equal(t, before, n, "validation messages: %q", msgs[min(int(before), len(msgs)):])
	})
	return r
}

// adopt hands the renderer's device to vkc, sharing its queue and
// declaring the features the renderer enabled, and closes
// vkc at cleanup (before the renderer is destroyed), checking that no vkc
// object is left.
func adopt(t *testing.T, r *renderer) *vkc.Device {
	t.Helper()
	dev, err := vulkango.Adopt(vulkango.Device{Instance: r.instance, PhysicalDevice: r.gpu, Device: r.device,
		Queue: r.queue, QueueFamily: r.family, APIVersion: apiVersion, QueueLock: &r.queueMu, Features: r.features})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		assert.Empty(t, dev.LiveObjects(), "vkc objects alive after Close")
	})
	return dev
}

// The program prints the device, what its copy of vkc's result read (Go's
// a*x + y), that vkc closed with nothing alive, that its own device still
// works after, and with the layer on that it said nothing.
func TestRunSharesTheDeviceBothWays(t *testing.T) {
	before, _ := validationMessages()
	var out bytes.Buffer
	require.NoError(t, run(&out, true))
	t.Log("\n" + out.String())
	assert.Contains(t, out.String(), fmt.Sprintf("the program's copy of y reads %v\n", reference(a, xs, ys)))
	assert.Contains(t, out.String(), "vkc closed: 0 live vkc objects\n")
	assert.Contains(t, out.String(), "after vkc closed, the program's own fill on its device: ok\n")
	if layerInstalled(validationLayer) {
		assert.Contains(t, out.String(), "validation layer on: true")
		assert.Contains(t, out.String(), "validation messages: 0\n")
	}
	n, msgs := validationMessages()
	assert.Equal(t, before, n, "%q", msgs)
}

// The counting above means something: the program's callback hears the
// layer, here on a buffer of size zero (VUID-VkBufferCreateInfo-size-00912).
func TestTheProgramsCallbackHearsTheLayer(t *testing.T) {
	if !layerInstalled(validationLayer) {
		t.Skip("the Khronos validation layer is not installed")
	}
	r, err := newRenderer(true)
	require.NoError(t, err)
	defer r.destroy()
	before, _ := validationMessages()
	bci := vk.BufferCreateInfo{SType: vk.StructureTypeBufferCreateInfo, Size: 0,
		Usage: vk.BufferUsageFlags(vk.BufferUsageTransferDstBit), SharingMode: vk.SharingModeExclusive}
	var buf vk.Buffer
	res := vk.Result(vk.Success)
	require.NoError(t, vulkango.WithCollectorPaused(func() error {
		res = vk.CreateBuffer(r.device, &bci, nil, &buf)
		return nil
	}))
	if res == vk.Success {
		vk.DestroyBuffer(r.device, buf, nil)
	}
	after, _ := validationMessages()
	assert.Greater(t, after, before)
	// The messages this test provoked are not counted against later tests:
	// each compares against its own start.
}

// Under GOGC=1 with a goroutine allocating all the while, the program's
// vulkan-go calls (made with the collector paused) and vkc's (its own C)
// survive and the result stays right; the collector's setting is back
// after each paused call.
func TestRunUnderCollectorPressure(t *testing.T) {
	churn := gcpressure.Start(t)
	for i := 0; i < 3; i++ {
		var out bytes.Buffer
		require.NoError(t, run(&out, true), "run %d", i)
		assert.Contains(t, out.String(), fmt.Sprintf("the program's copy of y reads %v\n", reference(a, xs, ys)))
		assert.Equal(t, gcpressure.Percent(), debug.SetGCPercent(gcpressure.Percent()), "run %d", i)
	}
	assert.Positive(t, churn.Stop(), "the churn goroutine allocated")
}

// fillOutside fills b's range of its VkBuffer with word using the
// program's own command buffer, signalling written when done.
func fillOutside(t *testing.T, r *renderer, b vulkango.Buffer, word uint32, written vk.Semaphore) {
	t.Helper()
	fence, err := r.newFence()
	require.NoError(t, err)
	cb, err := r.record(func(cb vk.CommandBuffer) { vk.CmdFillBuffer(cb, b.Buffer, b.Offset, b.Range, word) })
	require.NoError(t, err)
	require.NoError(t, r.submit(cb, vk.NullSemaphore, written, fence))
	t.Cleanup(func() {
		assert.NoError(t, r.wait(fence))
		r.free(cb)
		vk.DestroyFence(r.device, fence, nil)
	})
}

// A buffer the program wrote reads as written once declared (the stream
// waits on the program's semaphore); one it wrote without declaring still
// reads as unwritten: vkc cannot see outside writes.
func TestAnOutsideWriteDeclaredReadsAsWritten(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	s := dev.Stream()
	declared, err := vkc.NewBuffer[uint32](dev, 16)
	require.NoError(t, err)
	silent, err := vkc.NewBuffer[uint32](dev, 16)
	require.NoError(t, err)
	written, err := r.newSemaphore()
	require.NoError(t, err)
	t.Cleanup(func() { vk.DestroySemaphore(r.device, written, nil) })

	for _, b := range []*vkc.Buffer[uint32]{declared, silent} {
		vb, err := vulkango.BufferOf(b)
		require.NoError(t, err)
		assert.Equal(t, vk.DeviceSize(16*4), vb.Range)
		sem := vk.NullSemaphore
		if b == declared {
			sem = written
		}
		fillOutside(t, r, vb, 0xdeadbeef, sem)
	}
	require.NoError(t, vulkango.WrittenOutside(declared, s, written))

	got, err := declared.Read(context.Background())
	require.NoError(t, err)
	for i, v := range got {
		assert.Equal(t, uint32(0xdeadbeef), v, "element %d", i)
	}
	_, err = silent.Read(context.Background())
	assert.ErrorIs(t, err, vkc.ErrUnwritten)
}

// Declaring an outside read of a buffer no executed work wrote says so
// (what the program read was not data), after declaring the read.
func TestAnOutsideReadOfAnUnwrittenBufferIsErrUnwritten(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	b, err := vkc.NewBuffer[float32](dev, 8)
	require.NoError(t, err)
	err = b.ReadOutside(dev.Stream(), 0)
	assert.ErrorIs(t, err, vkc.ErrUnwritten)
	assert.ErrorIs(t, err, vkc.ErrNeverWritten)
}

// The program's semaphore handed to WaitOutside orders the stream's next
// work after the program's: vkc scales a buffer only the program filled.
func TestWaitOutsideOrdersTheStreamAfterTheProgram(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	s := dev.NewStream()
	x, err := vkc.NewBuffer[float32](dev, 32)
	require.NoError(t, err)
	y, err := vkc.NewBuffer[float32](dev, 32)
	require.NoError(t, err)
	filled, err := r.newSemaphore()
	require.NoError(t, err)
	t.Cleanup(func() { vk.DestroySemaphore(r.device, filled, nil) })
	vb, err := vulkango.BufferOf(x)
	require.NoError(t, err)
	fillOutside(t, r, vb, 0x40000000, filled) // 2.0f
	require.NoError(t, vulkango.WaitOutside(s, filled))
	require.NoError(t, x.WrittenOutside(s, 0)) // ordered by the wait above
	require.NoError(t, ops.Scale(s, ops.Const(3), ops.Of(x), ops.Of(y)))
	got, err := y.ReadOn(context.Background(), s)
	require.NoError(t, err)
	for i, v := range got {
		assert.Equal(t, float32(6), v, "element %d", i)
	}
}

// A fence handed to SignalOutside lets the program wait on the host for
// the stream's work, then read it through the mapping it has no part in:
// here, through vkc's own Read, which must agree.
func TestSignalOutsideSignalsTheProgramsFence(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	s := dev.Stream()
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, ys)
	require.NoError(t, err)
	require.NoError(t, ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)))
	fence, err := r.newFence()
	require.NoError(t, err)
	t.Cleanup(func() { vk.DestroyFence(r.device, fence, nil) })
	require.NoError(t, vulkango.SignalOutside(s, vk.NullSemaphore, fence))
	require.NoError(t, r.wait(fence))
	got, err := y.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, reference(a, xs, ys), got)
}

// The program enabled its own device features, which Vulkan cannot be
// asked for: on an adopted device whose program declared none, vkc counts
// on none of its optional features, so a Float16 buffer is refused with ErrUnsupported instead of
// reaching a driver that may not have 16-bit storage enabled, and the
// layer says nothing.
func TestAnAdoptedDeviceCountsOnNoOptionalFeature(t *testing.T) {
	r := newTestRenderer(t)
	dev := adopt(t, r)
	assert.Zero(t, dev.Info().Features, "features on an adopted device")
	_, err := vkc.NewBuffer[vkc.Float16](dev, 8)
	assert.ErrorIs(t, err, vkc.ErrUnsupported)
	b, err := vkc.FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err, "32-bit elements need no optional feature")
	require.NoError(t, b.Close())
}

// A program that enabled storageBuffer16BitAccess and shaderFloat16 and
// declares them gets exactly those features on the adopted device: a
// Float16 buffer works (written, read back, added by a kernel that loads
// and stores 16 bits, converted to float32) with the layer silent, while a
// float64
// buffer, which needs shaderFloat64 the program did not declare, is still
// refused.
func TestADeclaredFeatureIsCountedOn(t *testing.T) {
	r := newTestRendererWith(t, vkc.FeatureStorage16|vkc.FeatureFloat16)
	dev := adopt(t, r)
	assert.Equal(t, vkc.FeatureStorage16|vkc.FeatureFloat16, dev.Info().Features)
	want := []float32{0, 1, -2, 0.5, 1000, -0.25, 3.140625, 1024}
	halves := make([]vkc.Float16, len(want))
	for i, v := range want {
		halves[i] = vkc.Float16From(v)
	}
	h, err := vkc.FromSlice(dev, halves)
	require.NoError(t, err)
	got, err := h.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, halves, got)
	sum, err := vkc.NewBuffer[vkc.Float16](dev, len(want))
	require.NoError(t, err)
	require.NoError(t, ops.Add(dev.Stream(), ops.Of(h), ops.Of(h), ops.Of(sum)))
	f, err := vkc.NewBuffer[float32](dev, len(want))
	require.NoError(t, err)
	require.NoError(t, ops.Convert(dev.Stream(), ops.Of(sum), ops.Of(f)))
	wide, err := f.Read(context.Background())
	require.NoError(t, err)
	for i, v := range want {
		assert.Equal(t, 2*v, wide[i], "element %d: every value and its double are exact in 16 bits", i)
	}
	_, err = vkc.NewBuffer[float64](dev, 4)
	assert.ErrorIs(t, err, vkc.ErrUnsupported, "shaderFloat64 was not declared")
}

// Declaring only storageBuffer16BitAccess is not enough for Float16,
// which computes in 16 bits too: vkc counts on what it was told, no more.
func TestAFeatureNotDeclaredIsNotCountedOn(t *testing.T) {
	r := newTestRendererWith(t, vkc.FeatureStorage16)
	dev := adopt(t, r)
	assert.Equal(t, vkc.FeatureStorage16, dev.Info().Features)
	_, err := vkc.NewBuffer[vkc.Float16](dev, 8)
	assert.ErrorIs(t, err, vkc.ErrUnsupported)
	assert.ErrorContains(t, err, "shaderFloat16")
}
