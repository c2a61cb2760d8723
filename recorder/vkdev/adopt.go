package vkdev

import (
	"sync"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/vk"
)

// The Vulkan adapter's part of sharing a device (recorder/outside.go):
// opening on another program's handles, and the recorder's Outsider on
// package vk.

// Adopted names a Vulkan device another program created, as
// integers, and how the recorder shares its queue.
type Adopted struct {
	Instance, PhysicalDevice, Device, Queue uintptr
	QueueFamily, QueueIndex                 uint32
	// APIVersion is the apiVersion the program's instance asked for.
	APIVersion uint32
	// QueueLock is taken around every submit and queue wait on a queue the
	// program uses too; nil when the queue is the recorder's alone.
	QueueLock sync.Locker
	// Features are the optional features the program enabled on the
	// device, which the recorder counts on (zero: none); vk refuses one
	// the physical device does not offer.
	Features recorder.Features
}

// Adopt opens a recorder.Device on a Vulkan device another program created.
// Its Close waits for the queue and destroys only what the recorder
// created; validation messages go to the program's messenger, so its
// Diagnostics count none.
func Adopt(a Adopted) (recorder.Device, error) {
	in, err := vk.AdoptInstance(a.Instance)
	if err != nil {
		return nil, fromVK(err)
	}
	d, err := in.AdoptDevice(vk.Adopted{PhysicalDevice: a.PhysicalDevice, Device: a.Device, Queue: a.Queue,
		Family: a.QueueFamily, Index: a.QueueIndex, APIVersion: a.APIVersion, QueueLock: a.QueueLock, Features: a.Features})
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	return &vulkanDevice{in: in, d: d, info: d.Info()}, nil
}

func (v *vulkanDevice) BufferHandle(m recorder.Memory) uint64 {
	return v.mems.get(uint64(m)).BufferHandle()
}

func (v *vulkanDevice) SubmitSync(wait, signal, fence uint64, f recorder.Fence) error {
	var own *vk.Fence
	if f != 0 {
		own = v.fences.get(uint64(f))
	}
	return fromVK(v.d.SubmitSync(wait, signal, fence, own))
}
