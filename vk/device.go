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

	"github.com/vkcompute/vkc/internal/lockrank"
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
	ObjSurface   // a window's surface, owned by the device that presents to it
	ObjSwapchain // presentation (present.go)
	ObjSemaphore
	ObjImage
	ObjPipelineCache
	ObjBufferView // a uniform texel binding's view, owned by its descriptor set
	numObjectKinds
)

var objectNames = [numObjectKinds]string{"memory", "buffer", "shader-module", "pipeline", "pipeline-layout",
	"set-layout", "descriptor-pool", "descriptor-set", "command-pool", "command-buffer", "fence", "query-pool",
	"surface", "swapchain", "semaphore", "image", "pipeline-cache", "buffer-view"}

// String names the kind.
func (k ObjectKind) String() string {
	if k >= 0 && k < numObjectKinds {
		return objectNames[k]
	}
	return fmt.Sprintf("ObjectKind(%d)", int(k))
}

// Device is a logical device with one compute queue. Every call into
// Vulkan goes through its C function table (cvk.h), setup and hot path
// alike.
//
// A Device is safe from several goroutines: Close waits for calls in
// progress (each holds the gate shared for the length of its cgo call) and
// every later call returns ErrClosed or does nothing, instead of reaching
// a destroyed device. What Vulkan asks callers to synchronise stays the
// caller's: a command buffer is recorded by one goroutine at a time.
type Device struct {
	inst *Instance
	info DeviceInfo
	api  uint32 // the Vulkan API version in use, e.g. 1.1, as VK_MAKE_API_VERSION packs it
	// maxBuffer is the largest buffer the device creates, 0 where unknown.
	maxBuffer uint64
	family    uint32
	memTypes  []memoryType
	fns       *C.vkc_fns // C memory; freed by Close

	// gate is held shared by every call into C and exclusively by Close.
	gate   lockrank.RWMutex
	closed atomic.Bool // set under gate held exclusively
	// queueMu is taken around vkQueueSubmit, vkQueueWaitIdle and
	// vkQueuePresentKHR, which need external synchronisation: a mutex of
	// the device's own, or the lock an adopting program shares (adopt.go).
	queueMu sync.Locker
	// adopted: the device, its queue and its instance belong to another
	// program (AdoptDevice); Close waits for vkc's work and destroys nothing.
	adopted bool
	live    [numObjectKinds]atomic.Int64
	lost    atomic.Bool
	// moduleCalls counts vkCreateShaderModule calls, so that a test can
	// show a refused module never reached the driver.
	moduleCalls atomic.Int64
	// pres is set on a device opened to present (present.go), else nil.
	pres *presentation
	// wait is how fence waits poll before they sleep (nil: AutoWaitPolicy).
	wait atomic.Pointer[WaitPolicy]
}

// OpenDevice creates a logical device on physical device index with one
// queue of the first family that supports compute (a compute-only family is
// preferred: it is the one dedicated to compute on discrete GPUs).
func (in *Instance) OpenDevice(index int) (*Device, error) {
	if err := in.enter(); err != nil {
		return nil, err
	}
	defer in.leave()
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(pds) {
		return nil, fmt.Errorf("device index %d out of range (have %d devices)", index, len(pds))
	}
	pd := in.describe(index, pds[index])
	family := -1
	for i, flags := range pd.families {
		if flags&queueCompute == 0 {
			continue
		}
		if family < 0 || (flags&queueGraphics == 0 && pd.families[family]&queueGraphics != 0) {
			family = i
		}
	}
	if family < 0 {
		return nil, fmt.Errorf("device %d has no compute queue", index)
	}
	return in.createDevice(pd, family, nil)
}

// createDevice creates the logical device on pd with one queue of family,
// the device extensions exts and every optional feature pd offers that the
// instance does not leave out; the caller is inside the instance's gate.
func (in *Instance) createDevice(pd physical, family int, exts []string) (*Device, error) {
	names, free := cStringArray(exts)
	defer free()
	info := pd.info
	info.Features &^= in.without
	if info.Features&FeatureCooperativeMatrix == 0 {
		info.CooperativeMatrices = nil // what the device runs only with the feature enabled
	}
	fns := (*C.vkc_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_fns{}))))
	if err := check("vkCreateDevice", Result(C.vkc_open_device(in.gipa, in.handle, pd.handle, C.uint32_t(family),
		C.uint32_t(info.Features), C.uint32_t(len(exts)), names, C.uint32_t(pd.api), fns))); err != nil {
		C.free(unsafe.Pointer(fns))
		return nil, err
	}
	d := &Device{inst: in, info: info, api: pd.api, maxBuffer: pd.maxBuffer, family: uint32(family), memTypes: pd.memTypes, fns: fns,
		queueMu: newQueueLock()}
	d.gate.SetRank(lockrank.VkDevice, 0)
	return d, nil
}

// newQueueLock is vk's own lock of the queue, for a device whose queue no
// program shares.
func newQueueLock() sync.Locker {
	m := new(lockrank.Mutex)
	m.SetRank(lockrank.VkQueue, 0)
	return m
}

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
	return &Error{Call: call, Result: r}
}

// enter admits a call into C, or fails with ErrClosed once the device is
// closed; the caller calls leave when the cgo call has returned. It must
// not be taken twice by one goroutine (a Close waiting in between would
// deadlock it), so only exported methods enter, and the helpers they call
// assume it.
func (d *Device) enter() error {
	d.gate.RLock()
	if d.closed.Load() {
		d.gate.RUnlock()
		return ErrClosed
	}
	return nil
}

func (d *Device) leave() { d.gate.RUnlock() }

// enterUsable is enter that also fails once the device is lost, for the
// calls that would start new work.
func (d *Device) enterUsable() error {
	if err := d.enter(); err != nil {
		return err
	}
	if d.lost.Load() {
		d.leave()
		return ErrDeviceLost
	}
	return nil
}

// WaitIdle waits for the queue to drain.
func (d *Device) WaitIdle() error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	return d.check("vkQueueWaitIdle", Result(C.vkc_queue_wait_idle(d.fns)))
}

// Close waits for calls in progress and for the queue, then destroys the
// device (an adopted one it only lets go of: see AdoptDevice); idempotent. Objects created from it must be destroyed first
// (Live tells which are not); destroying one afterwards does nothing.
func (d *Device) Close() {
	if d == nil {
		return
	}
	d.gate.Lock()
	defer d.gate.Unlock()
	if d.closed.Load() {
		return
	}
	d.closed.Store(true)
	if d.fns.cache != nil {
		d.live[ObjPipelineCache].Add(-1)
	}
	if d.adopted {
		d.releaseAdopted()
		return
	}
	C.vkc_close_device(d.fns)
	d.closePresentation()
	C.free(unsafe.Pointer(d.fns))
	d.fns = nil
}
