package vkdev_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/vkdev"
	"github.com/vkcompute/vkc/shaders"
	"github.com/vkcompute/vkc/vk"
)

// openVulkan opens the machine's Vulkan device (lavapipe in CI) with the
// validation layer when VKC_VALIDATION=1, or skips when there is none.
func openVulkan(t *testing.T) recorder.Device {
	t.Helper()
	dev, err := vkdev.Open(vkdev.Options{Validation: os.Getenv("VKC_VALIDATION") == "1"})
	if errors.Is(err, errs.NoLoader) || errors.Is(err, errs.NoDevice) {
		t.Skipf("no Vulkan device: %v", err)
	}
	require.NoError(t, err)
	return dev
}

// catalogue builds the recorder's description of a built-in kernel.
func catalogue(t *testing.T, name string) ([]byte, recorder.PipelineDesc) {
	t.Helper()
	k, err := shaders.Get(name)
	require.NoError(t, err)
	desc := recorder.PipelineDesc{Name: name, Bindings: len(k.Bindings), PushSize: k.PushSize, Spec: k.LocalSize[:]}
	for i, b := range k.Bindings {
		if b.Access.Writes() {
			desc.Writes |= 1 << uint(i)
		}
	}
	return k.SPIRV, desc
}

// The Vulkan adapter under the recorder: eager launches, a transfer, a
// capture and its replays, a bad module, on the real device with the
// validation layer watching; everything is destroyed at Close.
func TestVulkanDevice(t *testing.T) {
	infos, err := vkdev.Devices()
	if errors.Is(err, errs.NoLoader) || errors.Is(err, errs.NoDevice) {
		t.Skipf("no Vulkan device: %v", err)
	}
	require.NoError(t, err)
	require.NotEmpty(t, infos)

	dev := openVulkan(t)
	r, err := recorder.New(dev, recorder.Options{Slots: 2, BatchSize: 4, PageSize: 1 << 20})
	require.NoError(t, err)
	require.NotEmpty(t, r.Info().Name)
	require.NotEmpty(t, r.Info().Heaps)

	kernels := map[string]*recorder.Kernel{}
	for _, name := range []string{"fill", "axpy", "copy"} {
		spirv, desc := catalogue(t, name)
		k, err := r.NewKernel(spirv, desc)
		require.NoError(t, err)
		kernels[name] = k
	}
	_, err = r.NewKernel([]byte{1, 2, 3, 4}, recorder.PipelineDesc{Name: "junk", Bindings: 1})
	require.ErrorIs(t, err, errs.BadSPIRV)
	require.NotErrorIs(t, err, vk.ErrBadSPIRV, "the SPIR-V reader's refusal, before the device sees it")
	require.ErrorContains(t, err, "not a whole module")

	launch := func(s recorder.StreamID, name string, push []byte, args ...capture.Binding) {
		t.Helper()
		l := recorder.Launch{Args: args, Groups: [3]uint32{1, 1, 1}, Push: push}
		require.NoError(t, r.Launch(s, kernels[name], &l))
	}
	read := func(s recorder.StreamID, c alloc.Claim) []float32 {
		t.Helper()
		out := make([]byte, c.Size)
		require.NoError(t, r.Read(context.Background(), s, c, out))
		return floatsOf(out)
	}
	claims := make([]alloc.Claim, 4)
	for i := range claims {
		claims[i], err = r.Alloc(alloc.DeviceLocal, 4*n)
		require.NoError(t, err)
	}
	x, y, z, w := claims[0], claims[1], claims[2], claims[3]
	var sx *recorder.Staging
	require.NoError(t, r.Write(0, x, &sx, bytesOf(ramp(1))))
	launch(0, "fill", words(bits(2), n), wr(y))
	for range 5 {
		launch(0, "axpy", words(bits(1), n), rd(x), rw(y))
	}
	require.NoError(t, r.Copy(1, y, z, 4*n))
	require.Equal(t, addf(splat(2), axpyf(5, ramp(1), splat(0))), read(1, z))

	graph := func() *recorder.Graph {
		require.NoError(t, r.PrepareCapture(0))
		body := func() {
			require.NoError(t, r.Write(0, x, &sx, bytesOf(ramp(10))))
			launch(0, "copy", words(n), rd(x), wr(w))
		}
		body()
		require.NoError(t, r.Sync(context.Background(), 0))
		require.NoError(t, r.BeginCapture(0))
		body()
		g, err := r.EndCapture(0)
		require.NoError(t, err)
		return g
	}()
	require.NoError(t, r.Write(1, x, &sx, bytesOf(ramp(20))))
	require.NoError(t, graph.Replay())
	require.NoError(t, graph.Replay())
	require.Equal(t, ramp(20), read(0, w))
	require.NoError(t, kernels["copy"].Release())
	require.NoError(t, graph.Replay(), "the graph keeps its kernel")
	require.NoError(t, graph.Close())
	r.ReleaseStaging(sx)
	for _, c := range claims {
		require.NoError(t, r.Quiesce(3))
		require.NoError(t, r.Free(c))
	}
	d := r.Diagnostics()
	if os.Getenv("VKC_VALIDATION") == "1" {
		require.True(t, d.Checking, "the validation layer is on")
	}
	require.NoError(t, r.Close())
	require.Empty(t, r.Live(), "live Vulkan objects after Close")
	require.Zero(t, d.Errors, "validation messages: %v", d.Recent)
	require.NoError(t, dev.Close(), "closing twice is harmless")
}

// A surface function that panics leaves no instance behind: the panic goes
// on out of Open, and the instance made for the surface is closed.
func TestPanickingSurfaceFunctionClosesTheInstance(t *testing.T) {
	before := vk.LiveInstances()
	func() {
		defer func() {
			assert.Equal(t, "no window today", recover(), "the panic goes on")
		}()
		_, _ = vkdev.Open(vkdev.Options{Surface: func(uintptr) (uint64, error) { panic("no window today") }})
		t.Fatal("Open returned")
	}()
	assert.Equal(t, before, vk.LiveInstances(), "an instance leaked")
}
