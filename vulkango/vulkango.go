// Package vulkango shares a device between vkc and a program that draws
// with github.com/vulkan-go/vulkan: vkc adopts the program's instance,
// device and queue (Adopt), hands out its buffers as vulkan-go's types
// (BufferOf) and exchanges order with the program's semaphores and fences
// (SignalOutside, WaitOutside, WrittenOutside, ReadOutside), or as vkc's
// events (SignalEvent exports one, ImportEvent imports one). It is the
// only package of vkc that imports vulkan-go: it converts vulkan-go's
// handle types to the plain integers of vkc.Adopt and back, and vkc's own
// calls keep going through its own C (package vk), never through
// vulkan-go.
//
// vulkan-go's own calls are not safe while the garbage collector runs,
// nor by cgo's pointer rules: see WithCollectorPaused.
package vulkango

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/lockrank"
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
	// own. Nil when the queue is vkc's alone: the program then makes no
	// queue call on it until vkc's Close returns. Never call vkc while
	// holding it: vkc's call may submit.
	QueueLock sync.Locker
	// Features are the optional features the program enabled on Device
	// (vkc.External.Features): vkc counts on exactly these, and refuses
	// one the physical device does not offer. Zero: none.
	Features vkc.Features
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
		Features:       d.Features,
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

// SignalEvent exports ev: it signals the program's semaphore and fence
// (either may be null, not both) once the work before ev's point has run
// (vkc.Event.SignalOutside).
func SignalEvent(ev *vkc.Event, semaphore vk.Semaphore, fence vk.Fence) error {
	return ev.SignalOutside(handle(semaphore), handle(fence))
}

// ImportEvent imports the program's semaphore, whose signal is already
// submitted, as an event of s's device: the point after the program's
// work, which streams Wait on and the host Syncs on
// (vkc.Stream.ImportEvent). The semaphore lives until that point has run.
func ImportEvent(s *vkc.Stream, semaphore vk.Semaphore) (*vkc.Event, error) {
	return s.ImportEvent(handle(semaphore))
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
// turn the collector back on under another's call. It ranks before every
// lock of vkc's, since the program's calls under it may reach vkc.
var pauseMu lockrank.Mutex

func init() { pauseMu.SetRank(lockrank.Collector, 0) }

// WithCollectorPaused runs f, which makes vulkan-go calls, with the
// garbage collector off and the Go memory pin points to pinned, and
// returns what f returned; then it unpins and restores the collector's
// settings. Callers are served one at a time; f must not call it again.
//
// Why the collector: vulkan-go marshals a call's structs into C memory
// whose only owner is a finalizer on a Go value that is unreachable while
// the C call runs (its generated unpack functions attach
// runtime.SetFinalizer to the copies and return a pointer into them). A
// collection in the middle of the call frees what the driver is reading:
// vkCreateComputePipelines crashed under GC pressure in 7 of 7 runs and
// passed 8 of 8 with the collector paused. With the collector off no
// finalizer of this call can run before it returns. debug.SetGCPercent(-1)
// waits for a collection in progress to finish; the memory limit is
// lifted too, since it would otherwise start one. An explicit runtime.GC
// from another goroutine still collects: do not call it meanwhile.
//
// Why the pins: vulkan-go also stores pointers to the caller's Go memory
// in those C structs (a slice field's first element, a string field's
// bytes) without keeping it alive, and cgo's rules ask that Go memory
// stored in C memory be pinned (GOEXPERIMENT=cgocheck2 aborts otherwise).
// Pass a pointer to the first element of every slice of handles or
// scalars a struct of the call holds (SubmitInfo.PCommandBuffers,
// PWaitSemaphores, PWaitDstStageMask, PSignalSemaphores,
// DeviceQueueCreateInfo.PQueuePriorities, …) and unsafe.StringData of
// every string built at run time; string literals and slices of structs
// (which vulkan-go copies into C memory) need none.
//
// Calls that marshal a struct, a slice of structs or a nested pointer
// need all this (CreateInstance, CreateDevice, Create*, Allocate*,
// QueueSubmit, BeginCommandBuffer, CmdCopyBuffer, CmdPipelineBarrier,
// UpdateDescriptorSets, Get* filling a struct, and the like); calls that
// take only handles and scalars do not (Destroy*, FreeMemory,
// GetDeviceQueue, QueueWaitIdle, DeviceWaitIdle, EndCommandBuffer,
// CmdDispatch, CmdFillBuffer, MapMemory, UnmapMemory, BindBufferMemory).
func WithCollectorPaused(f func() error, pin ...any) error {
	pauseMu.Lock()
	defer pauseMu.Unlock()
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	}()
	for i, p := range pin {
		if v := reflect.ValueOf(p); !v.IsValid() || (v.Kind() != reflect.Pointer && v.Kind() != reflect.UnsafePointer) || v.IsNil() {
			return fmt.Errorf("vulkango: pin %d is %T, not a non-nil pointer", i, p)
		}
	}
	var pinner runtime.Pinner
	defer pinner.Unpin()
	for _, p := range pin {
		pinner.Pin(p)
	}
	return f()
}

// Result turns a vulkan-go result into an error naming the call.
func Result(call string, r vk.Result) error {
	if r == vk.Success {
		return nil
	}
	return fmt.Errorf("vulkango: %s: %w", call, vk.Error(r))
}
