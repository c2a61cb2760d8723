package vk

/*
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// ObjectKind names a kind of Vulkan object whose live count is tracked.
type ObjectKind int

// The tracked kinds. Every create increments, every destroy decrements, so a
// test can assert that a Close brought everything back to zero.
const (
	ObjMemory ObjectKind = iota
	ObjBuffer
	ObjShaderModule
	ObjPipeline
	ObjPipelineLayout
	ObjSetLayout
	ObjDescriptorPool
	ObjDescriptorSet
	ObjCommandPool
	ObjCommandBuffer
	ObjFence
	ObjQueryPool
	numObjectKinds
)

var objectNames = [numObjectKinds]string{"memory", "buffer", "shader-module", "pipeline", "pipeline-layout",
	"set-layout", "descriptor-pool", "descriptor-set", "command-pool", "command-buffer", "fence", "query-pool"}

// String names the kind.
func (k ObjectKind) String() string {
	if k >= 0 && k < numObjectKinds {
		return objectNames[k]
	}
	return fmt.Sprintf("ObjectKind(%d)", int(k))
}

// Device is a logical device with one compute queue. Setup calls go through
// vulkan-go; the hot path (hot.go) goes through the C function table.
type Device struct {
	inst     *Instance
	info     DeviceInfo
	phys     vulkan.PhysicalDevice
	handle   vulkan.Device
	queue    vulkan.Queue
	family   uint32
	memProps vulkan.PhysicalDeviceMemoryProperties
	fns      *C.vkc_fns // C memory

	queueMu sync.Mutex // vkQueueSubmit and vkQueueWaitIdle need external sync
	live    [numObjectKinds]atomic.Int64
	lost    atomic.Bool
	closed  atomic.Bool
}

// OpenDevice creates a logical device on physical device index with one
// queue of the first family that supports compute (a compute-only family is
// preferred: it is the one dedicated to compute on discrete GPUs).
func (in *Instance) OpenDevice(index int) (*Device, error) {
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(pds) {
		return nil, fmt.Errorf("vkc: device index %d out of range (have %d devices)", index, len(pds))
	}
	pd := pds[index]
	var nq uint32
	vulkan.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, nil)
	fams := make([]vulkan.QueueFamilyProperties, nq)
	vulkan.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, fams)
	family := -1
	for i := range fams {
		fams[i].Deref()
		flags := fams[i].QueueFlags
		if flags&vulkan.QueueFlags(vulkan.QueueComputeBit) == 0 {
			continue
		}
		if family < 0 || flags&vulkan.QueueFlags(vulkan.QueueGraphicsBit) == 0 {
			if family < 0 || fams[family].QueueFlags&vulkan.QueueFlags(vulkan.QueueGraphicsBit) != 0 {
				family = i
			}
		}
	}
	if family < 0 {
		return nil, fmt.Errorf("vkc: device %d has no compute queue", index)
	}
	prio := []float32{1}
	qci := []vulkan.DeviceQueueCreateInfo{{
		SType:            vulkan.StructureTypeDeviceQueueCreateInfo,
		QueueFamilyIndex: uint32(family),
		QueueCount:       1,
		PQueuePriorities: prio,
	}}
	dci := vulkan.DeviceCreateInfo{
		SType:                vulkan.StructureTypeDeviceCreateInfo,
		QueueCreateInfoCount: 1,
		PQueueCreateInfos:    qci,
	}
	var dev vulkan.Device
	if err := checkV("vkCreateDevice", vulkan.CreateDevice(pd, &dci, nil, &dev)); err != nil {
		return nil, err
	}
	var q vulkan.Queue
	vulkan.GetDeviceQueue(dev, uint32(family), 0, &q)
	d := &Device{inst: in, info: in.describe(index, pd), phys: pd, handle: dev, queue: q, family: uint32(family), memProps: memoryProperties(pd)}
	d.fns = (*C.vkc_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_fns{}))))
	if C.vkc_load_device(in.gipa, in.handle, d.cDevice(), *(*C.VkQueue)(unsafe.Pointer(&q)), d.fns) == 0 {
		C.free(unsafe.Pointer(d.fns))
		vulkan.DestroyDevice(dev, nil)
		return nil, fmt.Errorf("vkc: loading device functions failed")
	}
	return d, nil
}

func (d *Device) cDevice() C.VkDevice { return *(*C.VkDevice)(unsafe.Pointer(&d.handle)) }

// Info describes the physical device.
func (d *Device) Info() DeviceInfo { return d.info }

// Instance returns the instance the device was opened from.
func (d *Device) Instance() *Instance { return d.inst }

// QueueFamily is the index of the compute queue's family.
func (d *Device) QueueFamily() uint32 { return d.family }

// Live returns the live count of every tracked object kind with a non-zero count.
func (d *Device) Live() map[string]int64 {
	m := map[string]int64{}
	for k := ObjectKind(0); k < numObjectKinds; k++ {
		if n := d.live[k].Load(); n != 0 {
			m[k.String()] = n
		}
	}
	return m
}

// LiveCount is the live count of one kind.
func (d *Device) LiveCount(k ObjectKind) int64 { return d.live[k].Load() }

// Lost reports whether a call has returned VK_ERROR_DEVICE_LOST.
func (d *Device) Lost() bool { return d.lost.Load() }

// check converts a result and latches device loss.
func (d *Device) check(call string, r Result) error {
	if r == Success {
		return nil
	}
	if r == ErrorDeviceLostCode {
		d.lost.Store(true)
	}
	if r == ErrorInitFailed && d.closed.Load() {
		return fmt.Errorf("%s: %w", call, ErrClosed) // cvk.c refuses calls once the device is closed
	}
	return &Error{Call: call, Result: r}
}

// usable fails once the device is closed or lost.
func (d *Device) usable() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if d.lost.Load() {
		return ErrDeviceLost
	}
	return nil
}

// WaitIdle waits for the queue to drain.
func (d *Device) WaitIdle() error {
	if d.closed.Load() {
		return ErrClosed
	}
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	return d.check("vkQueueWaitIdle", Result(C.vkc_queue_wait_idle(d.fns)))
}

// Close waits for the queue and destroys the device; idempotent. Objects
// created from it must be destroyed first (Live tells which are not).
func (d *Device) Close() {
	if d == nil || d.closed.Swap(true) {
		return
	}
	d.queueMu.Lock()
	C.vkc_queue_wait_idle(d.fns)
	d.queueMu.Unlock()
	vulkan.DestroyDevice(d.handle, nil)
	C.free(unsafe.Pointer(d.fns))
	d.fns = nil
}
