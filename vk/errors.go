package vk

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer above; the root package re-exports
// them so users match with errors.Is without importing vk.
var (
	// ErrOutOfDeviceMemory: the device or host ran out of memory for a
	// Vulkan object.
	ErrOutOfDeviceMemory = errors.New("vk: out of device memory")
	// ErrDeviceLost: the device was lost; every later call fails with it.
	ErrDeviceLost = errors.New("vk: device lost")
	// ErrClosed: the object (device, buffer, stream, graph) was closed.
	ErrClosed = errors.New("vk: use of closed object")
	// ErrNoLoader: libvulkan.so.1 could not be loaded.
	ErrNoLoader = errors.New("vk: Vulkan loader not found (install the libvulkan1 package)")
	// ErrNoDevice: the loader works but no Vulkan driver reports a device.
	ErrNoDevice = errors.New("vk: no Vulkan device (install a driver, e.g. the mesa-vulkan-drivers package for lavapipe)")
	// ErrBadSPIRV: bytes given as a shader are not a valid SPIR-V module:
	// not SPIR-V at all, cut short, or refused by the SPIR-V validator.
	ErrBadSPIRV = errors.New("vk: invalid SPIR-V module")
	// ErrUnsupported: the request needs a feature or version the device
	// lacks (a module's SPIR-V version newer than its Vulkan version
	// takes); the message names what is missing.
	ErrUnsupported = errors.New("vk: unsupported by the device")
)

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

// Is maps results onto the package sentinels.
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
