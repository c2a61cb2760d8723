package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// handed is the renderer's device as the program hands it to vkc; each
// refusal below spoils one part of it.
func handed(r *renderer) vulkango.Device {
	return vulkango.Device{Instance: r.instance, PhysicalDevice: r.gpu, Device: r.device, Queue: r.queue,
		QueueFamily: r.family, APIVersion: apiVersion, QueueLock: &r.queueMu, Features: r.features}
}

// Adopt refuses what it cannot run on with ErrBadAdoption, naming the
// handle or the version, and leaves the program's device as it was: it
// still adopts after.
func TestAdoptRefusesWhatItCannotRunOn(t *testing.T) {
	r := newTestRenderer(t)
	other := newTestRenderer(t)
	var count uint32
	vk.GetPhysicalDeviceQueueFamilyProperties(r.gpu, &count, nil)
	for _, c := range []struct {
		name  string
		spoil func(*vulkango.Device)
		says  string
	}{
		{"null instance", func(d *vulkango.Device) { d.Instance = nil }, "null VkInstance"},
		{"null physical device", func(d *vulkango.Device) { d.PhysicalDevice = nil }, "null VkPhysicalDevice"},
		{"null device", func(d *vulkango.Device) { d.Device = nil }, "null VkDevice"},
		// lavapipe has one family, which computes: a family out of range
		// stands in for one without compute.
		{"a queue family out of range", func(d *vulkango.Device) { d.QueueFamily = count }, "queue family"},
		// The family's queue count, not what the program created (Vulkan
		// cannot be asked that): lavapipe's one family has one queue.
		{"a queue index beyond the family's queues", func(d *vulkango.Device) { d.QueueIndex = queuesOf(r, r.family) },
			fmt.Sprintf("queue index %d of family %d", queuesOf(r, r.family), r.family)},
		{"Vulkan 1.0", func(d *vulkango.Device) { d.APIVersion = vk.MakeVersion(1, 0, 0) }, "apiVersion 1.0.0"},
		{"no version", func(d *vulkango.Device) { d.APIVersion = 0 }, "apiVersion 0.0.0"},
		{"a physical device of another instance", func(d *vulkango.Device) { d.PhysicalDevice = other.gpu }, "not one this VkInstance lists"},
		// lavapipe offers every feature vkc knows: a bit that stands for
		// none is a feature it does not offer (vk's own test refuses real
		// ones on a described device).
		{"a feature the device does not offer", func(d *vulkango.Device) { d.Features = vkc.FeatureStorage16 | 1<<20 }, "does not offer: Features(1<<20)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := handed(r)
			c.spoil(&d)
			dev, err := vulkango.Adopt(d)
			assert.Nil(t, dev)
			assert.ErrorIs(t, err, vkc.ErrBadAdoption)
			assert.ErrorContains(t, err, c.says)
		})
	}
	dev, err := vulkango.Adopt(handed(r))
	require.NoError(t, err)
	assert.NoError(t, dev.Close())
}

// queuesOf is the queue count of the renderer's physical device's family.
func queuesOf(r *renderer, family uint32) uint32 {
	var count uint32
	vk.GetPhysicalDeviceQueueFamilyProperties(r.gpu, &count, nil)
	props := make([]vk.QueueFamilyProperties, count)
	_ = vulkango.WithCollectorPaused(func() error {
		vk.GetPhysicalDeviceQueueFamilyProperties(r.gpu, &count, props)
		return nil
	})
	props[family].Deref()
	return props[family].QueueCount
}

// A buffer of one adopted device is refused on a stream of another, by
// every call that declares outside access.
func TestOutsideAccessRefusesABufferOfAnotherDevice(t *testing.T) {
	dev := adopt(t, newTestRenderer(t))
	other := adopt(t, newTestRenderer(t))
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	assert.ErrorContains(t, b.WrittenOutside(other.Stream(), 0), "another device")
	assert.ErrorContains(t, b.ReadOutside(other.Stream(), 0), "another device")
	got, err := b.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, xs, got, "the refused calls changed nothing")
}

// Declaring an outside write or read of a closed buffer, or asking where
// it lives, is ErrClosed.
func TestOutsideAccessToAClosedBufferIsErrClosed(t *testing.T) {
	dev := adopt(t, newTestRenderer(t))
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.WrittenOutside(dev.Stream(), 0), vkc.ErrClosed)
	assert.ErrorIs(t, b.ReadOutside(dev.Stream(), 0), vkc.ErrClosed)
	_, err = vulkango.BufferOf(b)
	assert.ErrorIs(t, err, vkc.ErrClosed)
}

// A signal needs a semaphore or a fence, and a wait a semaphore.
func TestSignalAndWaitNeedAHandle(t *testing.T) {
	dev := adopt(t, newTestRenderer(t))
	assert.Error(t, vulkango.SignalOutside(dev.Stream(), vk.NullSemaphore, vk.NullFence))
	assert.Error(t, vulkango.WaitOutside(dev.Stream(), vk.NullSemaphore))
}

// Closing vkc while the program's submission still waits on the
// semaphore vkc signals is safe: Close waits for vkc's work (and, on the
// shared queue, for the program's submission behind it), destroys only
// vkc's objects, and the program's copy completes with vkc's result.
func TestCloseWhileTheProgramWaitsOnVkcsSemaphore(t *testing.T) {
	r := newTestRenderer(t)
	dev, err := vulkango.Adopt(handed(r))
	require.NoError(t, err)
	s := dev.Stream()
	x, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, ys)
	require.NoError(t, err)
	require.NoError(t, ops.Axpy(s, ops.Const(float64(a)), ops.Of(x), ops.Of(y)))
	computed, err := r.newSemaphore()
	require.NoError(t, err)
	defer vk.DestroySemaphore(r.device, computed, nil)
	fence, err := r.newFence()
	require.NoError(t, err)
	defer vk.DestroyFence(r.device, fence, nil)
	src, err := vulkango.BufferOf(y)
	require.NoError(t, err)
	// The program's buffer takes a copy of y's range; vkc's memory goes at
	// Close, so the program must not read y itself afterwards.
	dst, err := r.newHostBuffer(src.Range)
	require.NoError(t, err)
	defer r.destroyHostBuffer(dst)

	require.NoError(t, vulkango.SignalOutside(s, computed, vk.NullFence))
	cb, err := r.copyAfter(computed, src, dst, vk.NullSemaphore, fence)
	require.NoError(t, err)
	defer r.free(cb)
	require.NoError(t, dev.Close())
	assert.Empty(t, dev.LiveObjects())

	require.NoError(t, r.wait(fence))
	assert.Equal(t, reference(a, xs, ys), dst.floats())
	assert.ErrorIs(t, vulkango.SignalOutside(s, computed, vk.NullFence), vkc.ErrClosed)
}
