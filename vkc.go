// Package vkc is GPU compute on any Vulkan device, from Go, without CUDA.
//
// Open a device, put data in typed buffers, launch kernels on streams and
// read results back:
//
//	dev, err := vkc.Open()          // the best GPU, or lavapipe on a CPU
//	defer dev.Close()
//	x, _ := vkc.FromSlice(dev, xs)  // []float32
//	y, _ := vkc.FromSlice(dev, ys)
//	err = vkc.Axpy(dev.Stream(), 2, x, y)
//	out, err := y.Read(ctx)
//
// Launches are batched into command buffers with barriers only where one
// launch depends on another. The capture window records a stream's work once
// (Stream.Capture) into a Graph that replays it for the cost of one submit.
//
// Two guarantees hold everywhere: a replay runs every recorded launch or
// none, and a read of memory that no executed work wrote fails with
// ErrUnwritten (unwrapping to the original cause) instead of returning stale
// bytes. A new buffer counts as unwritten until something writes it.
//
// Streams are ordered within themselves. Work on two streams is not ordered
// against each other: Sync the first before the second uses its results.
package vkc

import (
	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/vk"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrUnwritten: a read of memory that no executed work wrote. The error
	// unwraps to the failure that left it so (a failed submit, a refused
	// capture, device loss, a buffer never written).
	ErrUnwritten = alloc.ErrUnwritten
	// ErrSyncInCapture: the capturing stream read or synced inside its window.
	ErrSyncInCapture = recorder.ErrSyncInCapture
	// ErrStreamCapturing: another stream on the same slot owns a capture window.
	ErrStreamCapturing = recorder.ErrStreamCapturing
	// ErrCaptureState: a capture call in the wrong state (nothing changed).
	ErrCaptureState = capture.ErrCaptureState
	// ErrAllocInCapture: an allocation inside a capture window needed a new
	// page; warm up first so the pools already hold the working set.
	ErrAllocInCapture = alloc.ErrAllocInCapture
	// ErrOutOfDeviceMemory: the device (or host) ran out of memory.
	ErrOutOfDeviceMemory = vk.ErrOutOfDeviceMemory
	// ErrDeviceLost: the device was lost; every later call fails with it.
	ErrDeviceLost = vk.ErrDeviceLost
	// ErrClosed: use of a closed device, buffer, stream, kernel or graph.
	ErrClosed = vk.ErrClosed
	// ErrNoLoader: the Vulkan loader (libvulkan1) is not installed.
	ErrNoLoader = vk.ErrNoLoader
	// ErrNoDevice: no Vulkan driver reports a device (install
	// mesa-vulkan-drivers for lavapipe on a CPU).
	ErrNoDevice = vk.ErrNoDevice
	// ErrBadSPIRV: kernel bytes that are not a SPIR-V module.
	ErrBadSPIRV = vk.ErrBadSPIRV
	// ErrNeverWritten is the cause an ErrUnwritten error unwraps to when the
	// buffer was allocated and never written.
	ErrNeverWritten = errNeverWritten
)

// DeviceInfo describes a physical device: name, type, vendor, driver and
// API versions, compute limits, memory heaps and subgroup support.
type DeviceInfo = vk.DeviceInfo

// MemoryStats reports the suballocator: bytes reserved and used, the peak,
// the largest free range, pages and live claims.
type MemoryStats = alloc.Stats
