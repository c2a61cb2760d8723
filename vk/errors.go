package vk

import (
	"fmt"
)

// Failure is a kind of failure of a vk call, as an error value (the way
// syscall.Errno is): callers match it with errors.Is. vk declares no
// sentinels for the layers above; the recorder's Vulkan adapter
// (recorder/vkdev) maps each Failure onto the recorder's own sentinel at
// the seam, the one place a vk failure is named again.
type Failure uint8

// The failures callers above vk tell apart.
const (
	// ErrOutOfDeviceMemory: the device or host ran out of memory for a
	// Vulkan object.
	ErrOutOfDeviceMemory Failure = iota + 1
	// ErrDeviceLost: the device was lost; every later call fails with it.
	ErrDeviceLost
	// ErrClosed: the object (instance, device, pool, swapchain) was closed.
	ErrClosed
	// ErrNoLoader: libvulkan.so.1 could not be loaded.
	ErrNoLoader
	// ErrNoDevice: the loader works but no Vulkan driver reports a device.
	ErrNoDevice
	// ErrBadSPIRV: bytes given as a shader are not a valid SPIR-V module:
	// not SPIR-V at all, cut short, or refused by the SPIR-V validator.
	ErrBadSPIRV
	// ErrOutOfDate: the surface changed (the window was resized) and the
	// swapchain no longer matches it, or it has no extent a swapchain can
	// have (minimized, or too large for the device's images); recreate the
	// swapchain once it has.
	ErrOutOfDate
	// ErrNoPresentation: the device was not opened to present.
	ErrNoPresentation
	// ErrBadAdoption: handles or a description of them that vk cannot run
	// on (a null handle, a physical device not of the instance, a queue
	// family without compute, an API version below MinAPIVersion). The
	// message names which.
	ErrBadAdoption
	// ErrUnsupported: the request needs a feature or version the device
	// lacks (a module's SPIR-V version newer than its Vulkan version
	// takes); the message names what is missing.
	ErrUnsupported
)

// Failures lists every Failure, for an adapter to check that it maps each.
var Failures = []Failure{ErrOutOfDeviceMemory, ErrDeviceLost, ErrClosed, ErrNoLoader, ErrNoDevice, ErrBadSPIRV, ErrOutOfDate, ErrNoPresentation, ErrBadAdoption, ErrUnsupported}

var failureMessages = [...]string{
	ErrOutOfDeviceMemory: "out of device memory",
	ErrDeviceLost:        "device lost",
	ErrClosed:            "use of closed object",
	ErrNoLoader:          "Vulkan loader not found (install the libvulkan1 package)",
	ErrNoDevice:          "no Vulkan device (install a driver, e.g. the mesa-vulkan-drivers package for lavapipe)",
	ErrBadSPIRV:          "invalid SPIR-V module",
	ErrOutOfDate:         "swapchain out of date with its surface",
	ErrNoPresentation:    "device not opened for presentation",
	ErrBadAdoption:       "cannot adopt the device",
	ErrUnsupported:       "unsupported by the device",
}

// Error says what failed, with no package prefix: the adapter above
// lowers it onto vkc's sentinel, whose message is what a user reads.
func (f Failure) Error() string {
	if int(f) < len(failureMessages) && failureMessages[f] != "" {
		return failureMessages[f]
	}
	return fmt.Sprintf("vk failure %d", uint8(f))
}

// Result is a VkResult code.
type Result int32

// Well-known results that callers above vk match on.
const (
	Success              Result = 0
	NotReady             Result = 1
	Timeout              Result = 2
	Incomplete           Result = 5
	ErrorOutOfHostMemory Result = -1
	ErrorOutOfDevMemory  Result = -2
	ErrorInitFailed      Result = -3
	ErrorDeviceLostCode  Result = -4
)

// resultNames names the results as the Vulkan headers do.
var resultNames = map[Result]string{
	Success:              "VK_SUCCESS",
	NotReady:             "VK_NOT_READY",
	Timeout:              "VK_TIMEOUT",
	Incomplete:           "VK_INCOMPLETE",
	ErrorOutOfHostMemory: "VK_ERROR_OUT_OF_HOST_MEMORY",
	ErrorOutOfDevMemory:  "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	ErrorInitFailed:      "VK_ERROR_INITIALIZATION_FAILED",
	ErrorDeviceLostCode:  "VK_ERROR_DEVICE_LOST",
	-5:                   "VK_ERROR_MEMORY_MAP_FAILED",
	-6:                   "VK_ERROR_LAYER_NOT_PRESENT",
	-7:                   "VK_ERROR_EXTENSION_NOT_PRESENT",
	-8:                   "VK_ERROR_FEATURE_NOT_PRESENT",
	-9:                   "VK_ERROR_INCOMPATIBLE_DRIVER",
	-10:                  "VK_ERROR_TOO_MANY_OBJECTS",
	-12:                  "VK_ERROR_FRAGMENTED_POOL",
	-1000069000:          "VK_ERROR_OUT_OF_POOL_MEMORY",
	Suboptimal:           "VK_SUBOPTIMAL_KHR",
	ErrorOutOfDate:       "VK_ERROR_OUT_OF_DATE_KHR",
	ErrorSurfaceLost:     "VK_ERROR_SURFACE_LOST_KHR",
}

// String names the result like the Vulkan headers do.
func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Error is a failed Vulkan call: which call and what it returned. It
// matches ErrOutOfDeviceMemory or ErrDeviceLost with errors.Is where the
// result means that, so callers need not know VkResult codes.
type Error struct {
	Call   string
	Result Result
}

// Error formats as "vkQueueSubmit: VK_ERROR_DEVICE_LOST".
func (e *Error) Error() string { return e.Call + ": " + e.Result.String() }

// Is matches the Failure the result means (out of memory, device lost).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOutOfDeviceMemory:
		return e.Result == ErrorOutOfDevMemory || e.Result == ErrorOutOfHostMemory
	case ErrDeviceLost:
		return e.Result == ErrorDeviceLostCode
	}
	return false
}

// check turns a result into nil or *Error.
func check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Call: call, Result: r}
}

// wholeWords refuses code that cannot be a SPIR-V module at all: not whole
// 32-bit words, or shorter than the five-word header.
func wholeWords(code []byte) error {
	if len(code) < 20 || len(code)%4 != 0 {
		return fmt.Errorf("%w: %d bytes (need a multiple of 4, at least 20)", ErrBadSPIRV, len(code))
	}
	return nil
}
