// Package vulkango shares a device between vkc and a program that draws
// with github.com/vulkan-go/vulkan: vkc adopts the program's instance,
// device and queue (Adopt), hands out its buffers as vulkan-go's types
// (BufferOf) and exchanges order with the program's semaphores and fences
// (SignalOutside, WaitOutside, WrittenOutside, ReadOutside). It is the
// only package of vkc that imports vulkan-go: it converts vulkan-go's
// handle types to the plain integers of vkc.Adopt and back, and vkc's own
// calls keep going through its own C (package vk), never through
// vulkan-go.
//
// vulkan-go's own calls are not safe while the garbage collector runs:
// see WithCollectorPaused.
package vulkango

import (
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/vkcompute/vkc"
	vk "github.com/vulkan-go/vulkan"
)

// Device is what a vulkan-go program created and hands to vkc.
type Device struct {
	Instance       vk.Instance
	PhysicalDevice vk.PhysicalDevice
	Device         vk.Device
	// Queue is the queue vkc submits to (nil: fetched with GetDeviceQueue
	// from QueueFamily and QueueIndex), of a family that computes.
	Queue                   vk.Queue
	QueueFamily, QueueIndex uint32
	// APIVersion is the ApiVersion of the program's ApplicationInfo, at
	// least vk.ApiVersion11.
	APIVersion uint32
	// QueueLock is the lock the program takes around its own QueueSubmit,
	// QueueWaitIdle and QueuePresent on Queue; vkc takes it around its
	// own. Nil when the queue is vkc's alone.
	QueueLock sync.Locker
}

// Adopt opens vkc on the program's device (see vkc.Adopt: what vkc
// refuses, what Close destroys, and why validation messages are the
// program's).
func Adopt(d Device, opts ...vkc.Option) (*vkc.Device, error) {
	return vkc.Adopt(vkc.External{
		Instance:       uintptr(unsafe.Pointer(d.Instance)),
		PhysicalDevice: uintptr(unsafe.Pointer(d.PhysicalDevice)),
		Device:         uintptr(unsafe.Pointer(d.Device)),
		Queue:          uintptr(unsafe.Pointer(d.Queue)),
		QueueFamily:    d.QueueFamily,
		QueueIndex:     d.QueueIndex,
		APIVersion:     d.APIVersion,
		QueueLock:      d.QueueLock,
	}, opts...)
}

// Buffer is a vkc buffer as vulkan-go names it: a range of a VkBuffer
// (see vkc.VulkanBuffer: other buffers of vkc share the VkBuffer outside
// the range).
type Buffer struct {
	Buffer vk.Buffer
	Offset vk.DeviceSize
	Range  vk.DeviceSize
}

// BufferOf returns where b lives, for the program's copies, vertex or
// index input and descriptors; valid until b or its device closes.
func BufferOf[T vkc.Element](b *vkc.Buffer[T]) (Buffer, error) {
	r, err := b.VulkanBuffer()
	if err != nil {
		return Buffer{}, err
	}
	return Buffer{Buffer: *(*vk.Buffer)(unsafe.Pointer(&r.Buffer)), Offset: vk.DeviceSize(r.Offset), Range: vk.DeviceSize(r.Range)}, nil
}

// handle is a non-dispatchable handle's 64-bit value (vulkan-go types
// them as C pointers on 64-bit platforms and as uint64 elsewhere).
func handle[H vk.Semaphore | vk.Fence](h H) uint64 {
	var v uint64
	*(*H)(unsafe.Pointer(&v)) = h
	return v
}

// SignalOutside signals the program's semaphore and fence (either may be
// nil, not both) once the stream's work is done (vkc.Stream.SignalOutside).
func SignalOutside(s *vkc.Stream, semaphore vk.Semaphore, fence vk.Fence) error {
	return s.SignalOutside(handle(semaphore), handle(fence))
}

// WaitOutside makes the stream's next work wait for the program's
// semaphore, whose signal is already submitted (vkc.Stream.WaitOutside).
func WaitOutside(s *vkc.Stream, semaphore vk.Semaphore) error {
	return s.WaitOutside(handle(semaphore))
}

// WrittenOutside declares the program's write of b, done when semaphore
// signals (nil: already done); see vkc.Buffer.WrittenOutside for the rule.
func WrittenOutside[T vkc.Element](b *vkc.Buffer[T], s *vkc.Stream, semaphore vk.Semaphore) error {
	return b.WrittenOutside(s, handle(semaphore))
}

// ReadOutside declares the program's read of b, done when semaphore
// signals (nil: already done); see vkc.Buffer.ReadOutside for the rule.
func ReadOutside[T vkc.Element](b *vkc.Buffer[T], s *vkc.Stream, semaphore vk.Semaphore) error {
	return b.ReadOutside(s, handle(semaphore))
}

// pauseMu serialises WithCollectorPaused: one caller's restore must not
// turn the collector back on under another's call.
var pauseMu sync.Mutex

// WithCollectorPaused runs f with the garbage collector off and returns
// what f returned, then restores the collector's settings. Callers are
// served one at a time; f must not call it again.
//
// Why: vulkan-go marshals a call's structs into C memory whose only owner
// is a finalizer on a Go value that is unreachable while the C call runs
// (its generated unpack functions attach runtime.SetFinalizer to the
// copies and return a pointer into them), and it stores pointers to Go
// slices in those C structs without keeping the slices alive. A
// collection in the middle of the call frees what the driver is reading:
// vkCreateComputePipelines crashed under GC pressure in 7 of 7 runs and
// passed 8 of 8 with the collector paused. With the collector off no
// finalizer of this call can run before it returns. Debug.SetGCPercent(-1)
// waits for a collection in progress to finish; the memory limit is
// lifted too, since it would otherwise start one. An explicit
// runtime.GC() from another goroutine still collects: do not call it
// meanwhile.
//
// Calls that marshal a struct, a slice of structs or a nested pointer
// need it (CreateInstance, CreateDevice, Create*, Allocate*, QueueSubmit,
// CmdCopyBuffer, CmdPipelineBarrier, UpdateDescriptorSets,
// BeginCommandBuffer, and the like); calls that take only handles and
// scalars do not (Destroy*, Free* of one handle through a pointer to it,
// GetDeviceQueue, QueueWaitIdle, DeviceWaitIdle, WaitForFences with one
// fence, ResetFences, EndCommandBuffer, CmdDispatch, UnmapMemory).
func WithCollectorPaused(f func() error) error {
	pauseMu.Lock()
	defer pauseMu.Unlock()
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	}()
	return f()
}

// Result turns a vulkan-go result into an error naming the call.
func Result(call string, r vk.Result) error {
	if r == vk.Success {
		return nil
	}
	return fmt.Errorf("vulkango: %s: %w", call, vk.Error(r))
}
