// Package vkc is GPU compute on any Vulkan device, from Go, without CUDA.
//
// Open a device, put data in typed buffers, launch kernels on streams and
// read results back:
//
//	dev, err := vkc.Open()          // the best GPU, or lavapipe on a CPU
//	defer dev.Close()
//	x, _ := vkc.FromSlice(dev, xs)  // []float32
//	y, _ := vkc.FromSlice(dev, ys)
//	err = k.Launch(dev.Stream(), groups, push, x, y) // k from dev.LoadKernel
//	out, err := y.Read(ctx)
//
// This package is the runtime: devices, buffers and views, streams,
// capture windows and graphs, params, kernels and events, with Fill and
// Copy of whole buffers. The op library (element-wise ops, reductions,
// matrix products over tensors) is package ops, built on this API alone.
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
// Streams are ordered within themselves. Between streams, vkc orders every
// hazard on memory: a call waits for, or submits first, another stream's
// work already issued that writes what it touches, or that reads what it
// writes, so it never sees bytes no work wrote and never overwrites bytes
// queued work still has to read. Anything else is ordered with events
// (Stream.Record, Stream.Wait), on the device, or with Sync on the host. Calls on two streams that run at the
// same moment are not ordered at all: a host read of a buffer while
// another goroutine writes it on another stream (from the host, or with
// work submitted meanwhile) may return part of each write.
package vkc

import (
	"fmt"
	"strings"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// Sentinel errors; match them with errors.Is. Each is the one value the
// layers below wrap too, so an error from any layer (the recorder, the
// allocator, the device) matches it; its message starts with "vkc:".
var (
	// ErrUnwritten: a read of memory that no executed work wrote. The error
	// unwraps to the failure that left it so (a failed submit, a refused
	// capture, device loss, a buffer never written).
	ErrUnwritten = errs.Unwritten
	// ErrSyncInCapture: the capturing stream read or synced inside its window.
	ErrSyncInCapture = errs.SyncInCapture
	// ErrStreamCapturing: another stream on the same slot owns a capture window.
	ErrStreamCapturing = errs.StreamCapturing
	// ErrCaptureState: a capture call in the wrong state. Nothing changed,
	// except for two EndCapture calls: the owner's EndCapture of a window
	// prepared but not begun aborts it, and one from a stream of the same
	// slot that does not own a recording window ends that window without a
	// graph (its outputs read as ErrUnwritten), as CUDA's end of a capture
	// from the wrong stream invalidates it. Another stream's EndCapture of
	// a prepared window is refused and changes nothing.
	ErrCaptureState = errs.CaptureState
	// ErrAllocInCapture: work recorded in a capture window on a buffer
	// made while it records that its warmup did not prepare (allocate and
	// close), or a launch's temporary needing a new page inside the window;
	// allocate before the window, or let the warmup allocate and free the
	// same.
	ErrAllocInCapture = errs.AllocInCapture
	// ErrOutOfMemory: the device or host ran out of memory, or a
	// request would take reserved memory past WithMemoryLimit, after
	// memory nothing uses was reclaimed and the request retried once.
	// The error keeps the driver's result (or the limit's numbers) in its
	// chain; nothing live was touched.
	ErrOutOfMemory = errs.OutOfMemory
	// ErrDeviceLost: the device was lost; every later call fails with it.
	ErrDeviceLost = errs.DeviceLost
	// ErrClosed: use of a closed device, buffer, param, stream, kernel or graph.
	ErrClosed = errs.Closed
	// ErrNoLoader: the Vulkan loader (libvulkan1) is not installed.
	ErrNoLoader = errs.NoLoader
	// ErrNoDevice: no Vulkan driver reports a device (install
	// mesa-vulkan-drivers for lavapipe on a CPU).
	ErrNoDevice = errs.NoDevice
	// ErrBadSPIRV: kernel bytes that are not a valid SPIR-V module.
	ErrBadSPIRV = errs.BadSPIRV
	// ErrUnsupported reports a request the device cannot serve: a feature, element type or SPIR-V version it lacks. The error names what is missing.
	ErrUnsupported = errs.Unsupported
	// ErrEventUnrecorded: a nil Event, or one no Stream.Record made.
	ErrEventUnrecorded = errs.EventUnrecorded
	// ErrEventForeign: an event recorded on another device.
	ErrEventForeign = errs.EventForeign
	// ErrEventInCapture: an event recorded inside a capture window used
	// outside that window (a wait on another stream's slot, a host wait,
	// a device time), or a timed event asked for inside one: its point is
	// part of the graph, which runs only when replayed.
	ErrEventInCapture = errs.EventInCapture
	// ErrEventUntimed: Since of an event recorded without a timestamp
	// (Record rather than RecordTimed).
	ErrEventUntimed = errs.EventUntimed
	// ErrProfileState: Profile on a stream whose slot already profiles (a
	// nested Profile, or another stream's on the same slot), or around a
	// capture window in progress; Graph.LastProfile of a profiled graph
	// never replayed, or whose last replay failed.
	ErrProfileState = errs.ProfileState
	// ErrGraphUnprofiled: Graph.LastProfile of a graph captured without
	// CaptureOptions.Profile, whose replays write no timestamps.
	ErrGraphUnprofiled = errs.GraphUnprofiled
	// ErrReadTaken: Wait of a PendingRead already waited for (its bytes
	// were handed out) or closed.
	ErrReadTaken = errs.ReadTaken
	// ErrOutOfRange: a view that does not lie inside its buffer (a
	// negative offset, an empty or negative length, a range past the last
	// element), or a ViewAs byte offset that is not a multiple of the new
	// element type's size. Nothing was created.
	ErrOutOfRange = errs.OutOfRange
	// ErrOverlap: buffers of one call share memory in a way it cannot
	// honour: Copy's destination overlapping its source, two buffers of
	// one launch, one written, that overlap without being the same range,
	// or (package ops) an output overlapping an input of an op that cannot
	// run in place. Nothing ran.
	ErrOverlap = errs.Overlap
	// ErrNeverWritten is the cause an ErrUnwritten error unwraps to when the
	// buffer was allocated and never written.
	ErrNeverWritten = errs.NeverWritten
)

// publicError is an error from a layer below as the public API returns
// it: its message reads as vkc's (one "vkc: " first, then the operation
// where one is named), and its chain is the lower error's, so errors.Is and
// errors.As reach every sentinel and error type in it.
type publicError struct {
	op  string
	err error
}

func (e *publicError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "vkc: ")
	if e.op == "" {
		return "vkc: " + msg
	}
	return "vkc: " + e.op + ": " + msg
}

func (e *publicError) Unwrap() error { return e.err }

// public is how an error of the recorder (or below) leaves the public API.
func public(err error) error { return publicOp("", err) }

// publicOp is public naming the operation that failed (as "Buffer.Read"),
// unless the error already went through public.
func publicOp(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*publicError); ok {
		return err
	}
	return &publicError{op: op, err: err}
}

// closedError is ErrClosed for a call on a closed object, naming which
// kind of object it was ("buffer", `kernel "axpy"`).
func closedError(what string) error { return publicOp(what, ErrClosed) }

// DeviceType orders devices for default selection: a discrete GPU beats
// an integrated one, which beats a virtual one, which beats a CPU driver.
type DeviceType uint8

// Device types as Vulkan reports them.
const (
	TypeOther DeviceType = iota
	TypeIntegrated
	TypeDiscrete
	TypeVirtual
	TypeCPU
)

// String names the type as vulkaninfo does, without the prefix.
func (t DeviceType) String() string {
	switch t {
	case TypeIntegrated:
		return "integrated"
	case TypeDiscrete:
		return "discrete"
	case TypeVirtual:
		return "virtual"
	case TypeCPU:
		return "cpu"
	}
	return "other"
}

// Limits are the device limits compute work runs into.
type Limits struct {
	MaxComputeWorkGroupCount        [3]uint32
	MaxComputeWorkGroupSize         [3]uint32
	MaxComputeWorkGroupInvocations  uint32
	MaxComputeSharedMemorySize      uint32
	MaxStorageBufferRange           uint32
	MaxPushConstantsSize            uint32
	MaxMemoryAllocationCount        uint32
	MinStorageBufferOffsetAlignment uint64
	// MinTexelBufferOffsetAlignment and MaxTexelBufferElements bound the
	// texel views vkc's CPU-driver matmul reads its inputs through.
	MinTexelBufferOffsetAlignment uint64
	MaxTexelBufferElements        uint32
	// MaxUniformBufferRange and MinUniformBufferOffsetAlignment bound the
	// buffers a kernel's uniform-buffer binding takes.
	MaxUniformBufferRange           uint32
	MinUniformBufferOffsetAlignment uint64
	NonCoherentAtomSize             uint64
	TimestampPeriod                 float32 // nanoseconds per timestamp tick
}

// MemoryHeap is one heap of the device.
type MemoryHeap struct {
	Size        uint64
	DeviceLocal bool
}

// SubgroupInfo says what subgroup operations compute shaders may use.
type SubgroupInfo struct {
	Size       uint32
	Arithmetic bool // GL_KHR_shader_subgroup_arithmetic in compute
}

// DeviceInfo describes a physical device: name, type, vendor, driver and
// API versions, compute limits, memory heaps and subgroup support.
type DeviceInfo struct {
	Index         int
	Name          string
	Type          DeviceType
	VendorID      uint32
	DeviceID      uint32
	Vendor        string
	DriverVersion string
	APIVersion    string
	Limits        Limits
	Heaps         []MemoryHeap
	Subgroup      SubgroupInfo
	// UnifiedMemory: device-local memory is also host-visible, so reads and
	// writes go through the mapping with no staging copy.
	UnifiedMemory bool
	// Features are the optional features: those the device offers (from
	// Devices), or those enabled on it (Device.Info), which is every one
	// it offers less what WithoutFeatures left out.
	Features Features
	// CooperativeMatrices are the cooperative-matrix configurations the
	// device runs, as it lists them: the sizes and types a kernel's
	// coopmat types may take (GL_KHR_cooperative_matrix). None without
	// FeatureCooperativeMatrix.
	CooperativeMatrices []CooperativeMatrix
}

// DeviceLocalBytes sums the device-local heaps.
func (d DeviceInfo) DeviceLocalBytes() uint64 {
	var n uint64
	for _, h := range d.Heaps {
		if h.DeviceLocal {
			n += h.Size
		}
	}
	return n
}

// String is the device's name and type, for logs.
func (d DeviceInfo) String() string { return fmt.Sprintf("%s (%s)", d.Name, d.Type) }

// deviceInfoOf is the public form of the recorder's description.
func deviceInfoOf(i recorder.DeviceInfo) DeviceInfo {
	out := DeviceInfo{Index: i.Index, Name: i.Name, Type: DeviceType(i.Type), VendorID: i.VendorID, DeviceID: i.DeviceID,
		Vendor: i.Vendor, DriverVersion: i.DriverVersion, APIVersion: i.APIVersion,
		Limits:        Limits(i.Limits),
		Subgroup:      SubgroupInfo(i.Subgroup),
		UnifiedMemory: i.UnifiedMemory,
		Features:      featuresOf(i.Features)}
	for _, h := range i.Heaps {
		out.Heaps = append(out.Heaps, MemoryHeap(h))
	}
	for _, m := range i.CooperativeMatrices {
		out.CooperativeMatrices = append(out.CooperativeMatrices, CooperativeMatrix{M: m.M, N: m.N, K: m.K,
			A: ComponentType(m.A), B: ComponentType(m.B), C: ComponentType(m.C), Result: ComponentType(m.Result),
			SaturatingAddition: m.SaturatingAddition, Scope: Scope(m.Scope)})
	}
	return out
}

// MemoryStats reports the suballocator: bytes reserved and used, the peak,
// the largest free range, pages and live claims. Every reserved byte is
// exactly one of used, guarded or free.
type MemoryStats struct {
	Reserved    uint64 // bytes of all live pages
	Used        uint64 // bytes reserved by live claims (sizes rounded to the alignment)
	Peak        uint64 // the highest Used seen
	LargestFree uint64 // the largest free range of any page
	Guarded     uint64 // bytes of buffers closed while a graph still uses them
	Pages       int    // live pages
	LiveClaims  int    // claims allocated and not yet freed
	Limit       uint64 // the cap on Reserved (WithMemoryLimit); 0: none
}
