package recorder

import (
	"errors"
	"sync"

	"github.com/vkcompute/vkc/vk"
)

// The Vulkan adapter's part of sharing a device (outside.go): opening on
// another program's handles, and Outsider on package vk. It stands apart
// from the recorder's part, which needs no Vulkan, as the adapter does.

// AdoptedVulkan names a Vulkan device another program created, as
// integers, and how the recorder shares its queue.
type AdoptedVulkan struct {
	Instance, PhysicalDevice, Device, Queue uintptr
	QueueFamily, QueueIndex                 uint32
	// APIVersion is the apiVersion the program's instance asked for.
	APIVersion uint32
	// QueueLock is taken around every submit and queue wait on a queue the
	// program uses too; nil when the queue is the recorder's alone.
	QueueLock sync.Locker
}

// AdoptVulkan opens a Device on a Vulkan device another program created.
// Its Close waits for the queue and destroys only what the recorder
// created; validation messages go to the program's messenger, so its
// Diagnostics count none.
func AdoptVulkan(a AdoptedVulkan) (Device, error) {
	in, err := vk.AdoptInstance(a.Instance)
	if err != nil {
		return nil, adoptErr(err)
	}
	d, err := in.AdoptDevice(vk.Adopted{PhysicalDevice: a.PhysicalDevice, Device: a.Device, Queue: a.Queue,
		Family: a.QueueFamily, Index: a.QueueIndex, APIVersion: a.APIVersion, QueueLock: a.QueueLock})
	if err != nil {
		in.Close()
		return nil, adoptErr(err)
	}
	return &vulkanDevice{in: in, d: d, info: infoFromVK(d.Info())}, nil
}

// adoptErr maps vk's refusal of the handles onto ErrBadAdoption.
func adoptErr(err error) error {
	if errors.Is(err, vk.ErrBadAdoption) {
		return &vkError{sentinel: ErrBadAdoption, err: err}
	}
	return fromVK(err)
}

func (v *vulkanDevice) BufferHandle(m Memory) uint64 { return v.mems.get(uint64(m)).BufferHandle() }

func (v *vulkanDevice) SubmitSync(wait, signal, fence uint64, f Fence) error {
	var own *vk.Fence
	if f != 0 {
		own = v.fences.get(uint64(f))
	}
	return fromVK(v.d.SubmitSync(wait, signal, fence, own))
}
