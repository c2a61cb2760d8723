package vk

/*
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/vkcompute/vkc/internal/lockrank"
)

// Adopting: vk runs on an instance, device and queue that another program
// (one that draws with its own Vulkan binding) created. vk builds its
// function tables from the raw handles, creates its own objects on the
// device and destroys only those: Close of an adopted Device waits for the
// queue and lets go, Close of an adopted Instance only lets go. The
// program's validation messenger, if any, hears vk's calls; vk has none.

// MinAPIVersion is the least Vulkan version vk runs on (1.1, as
// VK_MAKE_API_VERSION packs it): what the catalogue's SPIR-V targets. The
// instances vk creates ask for more (instanceAPI); a device is used at the
// lower of the instance's version and its own, so an adopted device of an
// instance that asked for 1.1 takes modules of Vulkan 1.1.
const MinAPIVersion = 1<<22 | 1<<12

// AdoptInstance wraps an instance another program created. The handle is
// the VkInstance as an integer (vulkan-go's Instance, GLFW's, C's).
func AdoptInstance(handle uintptr) (*Instance, error) {
	if handle == 0 {
		return nil, fmt.Errorf("%w: null VkInstance", ErrBadAdoption)
	}
	gipa, err := load()
	if err != nil {
		return nil, err
	}
	in := &Instance{gipa: gipa, handle: *(*C.VkInstance)(unsafe.Pointer(&handle)), adopted: true}
	in.rankLocks()
	liveInstances.Add(1)
	return in, nil
}

// Adopted describes a device another program created on an adopted
// instance, and the queue vk is to submit to.
type Adopted struct {
	// PhysicalDevice, Device and Queue are the handles as integers; a
	// zero Queue is fetched with vkGetDeviceQueue(Family, Index).
	PhysicalDevice, Device, Queue uintptr
	// Family and Index are the queue's family and its index in it, as
	// the program passed them to vkCreateDevice. An index beyond the
	// family's queue count is refused; one below it that the program did
	// not create cannot be told apart (Vulkan cannot be asked) and is the
	// program's error, which the validation layer reports.
	Family, Index uint32
	// APIVersion is the apiVersion the program's VkApplicationInfo asked
	// for (0 means 1.0, as Vulkan reads it): the instance's version, which
	// Vulkan cannot be asked afterwards.
	APIVersion uint32
	// QueueLock, when not nil, is the lock the program takes around its
	// own vkQueueSubmit, vkQueueWaitIdle and vkQueuePresentKHR on Queue;
	// vk takes it around its own. Nil: the queue is vk's alone.
	QueueLock sync.Locker
	// Features are the optional features the program enabled on the
	// device, which Vulkan cannot be asked for: the device counts on
	// exactly these (zero: none). Each must be one the physical device
	// offers.
	Features Features
}

// AdoptDevice wraps a device another program created from this instance.
// It refuses a null physical device or device, a physical device this instance does not
// list, a queue family out of range or without compute, and a Vulkan
// version below MinAPIVersion (the device's or the instance's) and
// declared features the physical device does not offer, naming which; the
// handles are otherwise trusted (Vulkan cannot check that the
// device came from that physical device or that the queue was created).
func (in *Instance) AdoptDevice(a Adopted) (*Device, error) {
	switch {
	case a.PhysicalDevice == 0:
		return nil, fmt.Errorf("%w: null VkPhysicalDevice", ErrBadAdoption)
	case a.Device == 0:
		return nil, fmt.Errorf("%w: null VkDevice", ErrBadAdoption)
	}
	apiOf := func(v uint32) uint32 { return v &^ 0xfff }
	if a.APIVersion == 0 || apiOf(a.APIVersion) < MinAPIVersion {
		return nil, fmt.Errorf("%w: the instance's apiVersion %s is below Vulkan %s, which vkc needs", ErrBadAdoption,
			versionString(a.APIVersion), versionString(MinAPIVersion))
	}
	if err := in.enter(); err != nil {
		return nil, err
	}
	defer in.leave()
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	want := *(*C.VkPhysicalDevice)(unsafe.Pointer(&a.PhysicalDevice))
	index := slices.Index(pds, want)
	if index < 0 {
		return nil, fmt.Errorf("%w: the VkPhysicalDevice is not one this VkInstance lists (%d devices)", ErrBadAdoption, len(pds))
	}
	pd := in.describe(index, pds[index])
	if dev := apiOf(uint32(pd.api)); dev < MinAPIVersion {
		return nil, fmt.Errorf("%w: device %q supports Vulkan %s, below the %s vkc needs", ErrBadAdoption,
			pd.info.Name, pd.info.APIVersion, versionString(MinAPIVersion))
	}
	if int(a.Family) >= len(pd.families) {
		return nil, fmt.Errorf("%w: queue family %d of device %q, which has %d", ErrBadAdoption, a.Family, pd.info.Name, len(pd.families))
	}
	if pd.families[a.Family]&queueCompute == 0 {
		return nil, fmt.Errorf("%w: queue family %d of device %q has no compute", ErrBadAdoption, a.Family, pd.info.Name)
	}
	if int(a.Family) < len(pd.queues) && a.Index >= pd.queues[a.Family] {
		return nil, fmt.Errorf("%w: queue index %d of family %d of device %q, which has %d queues", ErrBadAdoption,
			a.Index, a.Family, pd.info.Name, pd.queues[a.Family])
	}
	if err := checkDeclared(a.Features, pd.info.Features, pd.info.Name); err != nil {
		return nil, err
	}
	fns := (*C.vkc_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkc_fns{}))))
	dev := *(*C.VkDevice)(unsafe.Pointer(&a.Device))
	queue := *(*C.VkQueue)(unsafe.Pointer(&a.Queue))
	if C.vkc_adopt_device(in.gipa, in.handle, dev, queue, C.uint32_t(a.Family), C.uint32_t(a.Index), fns) == 0 {
		C.free(unsafe.Pointer(fns))
		return nil, fmt.Errorf("%w: device %q lacks a Vulkan 1.0 function vkc calls", ErrBadAdoption, pd.info.Name)
	}
	lock := a.QueueLock
	if lock == nil {
		lock = newQueueLock()
	}
	// The program enabled its own features, which Vulkan cannot be asked
	// for: vk counts on those it declared, no more.
	info := pd.info
	info.Features = a.Features
	if info.Features&FeatureCooperativeMatrix == 0 {
		info.CooperativeMatrices = nil
	}
	d := &Device{inst: in, info: info, api: min(pd.api, apiOf(a.APIVersion)), maxBuffer: pd.maxBuffer, family: a.Family,
		memTypes: pd.memTypes, fns: fns, queueMu: lock, adopted: true}
	d.gate.SetRank(lockrank.VkDevice, 0)
	return d, nil
}

// checkDeclared refuses declared features the physical device named
// name does not offer (offered): the program cannot have enabled them, so
// a declaration of them is a mistake vk must not run on.
func checkDeclared(declared, offered Features, name string) error {
	if missing := declared &^ offered; missing != 0 {
		return fmt.Errorf("%w: the program declares features device %q does not offer: %s", ErrBadAdoption, name, missing)
	}
	return nil
}

// Adopted reports whether the device belongs to another program.
func (d *Device) Adopted() bool { return d.adopted }

// releaseAdopted is Close of an adopted device: it waits for the queue,
// under the shared lock, so nothing vk submitted runs after Close, and
// forgets the device. The caller holds the gate exclusively.
func (d *Device) releaseAdopted() {
	d.queueMu.Lock()
	C.vkc_release_adopted(d.fns)
	d.queueMu.Unlock()
	C.free(unsafe.Pointer(d.fns))
	d.fns = nil
}

// BufferHandle is the block's VkBuffer as an integer, for another
// program's commands (copies, vertex or index input, descriptors); the
// buffer spans the whole block from offset 0.
func (b *Block) BufferHandle() uint64 { return *(*uint64)(unsafe.Pointer(&b.buf)) }

// SubmitSync makes an empty submission that waits on the semaphore wait
// at every stage (0: none) and signals the semaphore signal and the fence
// (each 0: none): another program's semaphores and fences, as integers.
// Every submission made after it on the queue runs after wait signaled;
// signal and fence signal once every submission made before it completed.
// With vkFence set, vk's own fence signals when the submission completes
// (for host waits on a wait); a non-zero fence and vkFence are exclusive.
func (d *Device) SubmitSync(wait, signal, fence uint64, vkFence *Fence) error {
	if vkFence != nil {
		if fence != 0 {
			return fmt.Errorf("a submission signals one fence")
		}
		if vkFence.destroyed.Load() {
			return ErrClosed
		}
		fence = *(*uint64)(unsafe.Pointer(&vkFence.fence))
	}
	if wait == 0 && signal == 0 && fence == 0 {
		return nil
	}
	if err := d.enterUsable(); err != nil {
		return err
	}
	defer d.leave()
	d.queueMu.Lock()
	r := C.vkc_submit_sync(d.fns, *(*C.VkSemaphore)(unsafe.Pointer(&wait)), *(*C.VkSemaphore)(unsafe.Pointer(&signal)),
		*(*C.VkFence)(unsafe.Pointer(&fence)))
	d.queueMu.Unlock()
	return d.check("vkQueueSubmit", Result(r))
}
