// Package errs declares every failure vkc reports, once. Each package of
// the module returns errors wrapping these values, and the root package
// re-exports them by value (vkc.ErrClosed is errs.Closed), so errors.Is
// matches the same value whichever layer wrapped it and no package keeps a
// table mapping one layer's failures onto another's. Package vk, the cgo
// layer, keeps its own vk.Failure values; the Vulkan adapter
// (recorder/vkdev) lowers each onto one of these in one table.
//
// A message here is what a user reads: it starts with "vkc:", says what
// went wrong and, where there is something to do about it, what. Messages
// of the packages below the root carry no package prefix of their own: an
// error that reaches the user reads as vkc's, whichever package made it.
// errs imports nothing of the module, so every package may import it.
package errs

import "errors"

// The failures a caller can tell apart with errors.Is. Their doc comments
// are the root's (vkc.ErrUnwritten and so on); these say where they arise.
var (
	// Unwritten is what a read of memory that no executed work wrote
	// fails with (the taint ledger's alloc.UnwrittenError matches it).
	Unwritten = errors.New("vkc: read of memory that no executed work wrote")
	// NeverWritten is the cause an Unwritten error unwraps to for a
	// buffer allocated and never written.
	NeverWritten = errors.New("vkc: buffer allocated and never written (write it, or launch work that writes it, before reading)")
	// SyncInCapture: the stream owning a recording capture window waited
	// for the device (a read, a sync, a present); nothing recorded has run.
	SyncInCapture = errors.New("vkc: sync or read inside a capture window (read after EndCapture, or replay the graph first)")
	// StreamCapturing: another stream on the same slot owns a capture
	// window.
	StreamCapturing = errors.New("vkc: another stream on this slot is capturing (use a stream of another slot, or wait for EndCapture)")
	// CaptureState: a capture call made in a state that does not take it
	// (the capture package's state machine).
	CaptureState = errors.New("vkc: capture call in the wrong state (a window is PrepareCapture, BeginCapture, EndCapture, in that order, on one stream)")
	// AllocInCapture: a recording capture window was given memory its
	// warmup did not prepare: work on a buffer made during the window, or
	// an op's temporary that needed a new page.
	AllocInCapture = errors.New("vkc: memory inside a capture window that its warmup did not prepare (allocate buffers before Capture, or allocate and close the same in its function)")
	// OutOfMemory: the device or host ran out of memory, or a request
	// would pass the memory limit, after reclaiming and one retry.
	OutOfMemory = errors.New("vkc: out of memory (close buffers, Device.Trim, or raise WithMemoryLimit)")
	// DeviceLost: the device was lost; every later call fails with it.
	DeviceLost = errors.New("vkc: device lost (close the device and open it again)")
	// Closed: use of a closed device, buffer, param, stream, kernel,
	// graph, swapchain or event.
	Closed = errors.New("vkc: use of closed object (it, or the device it belongs to, was closed; make a new one)")
	// NoLoader: the Vulkan loader could not be loaded.
	NoLoader = errors.New("vkc: Vulkan loader not found (install the libvulkan1 package)")
	// NoDevice: the loader works but no Vulkan driver reports a device.
	NoDevice = errors.New("vkc: no Vulkan device (install a driver, e.g. the mesa-vulkan-drivers package for lavapipe)")
	// BadSPIRV: bytes given as a kernel are not a valid SPIR-V module,
	// whoever refused them (the SPIR-V reader or the device's validator).
	BadSPIRV = errors.New("vkc: invalid SPIR-V module")
	// Unsupported: a request the device cannot serve (a feature, an
	// element type, a SPIR-V version, timestamps); the message names it.
	Unsupported = errors.New("vkc: unsupported by the device")
	// OutOfDate: the swapchain no longer matches its window.
	OutOfDate = errors.New("vkc: swapchain out of date (resize it)")
	// NoPresentation: the device was not opened to present.
	NoPresentation = errors.New("vkc: device opened without WithPresentation")
	// BadAdoption: handles or a description of them vkc cannot run on.
	BadAdoption = errors.New("vkc: cannot adopt the device")
	// NotShared: the device has no Vulkan handles to share.
	NotShared = errors.New("vkc: the device shares nothing with outside Vulkan code (open it on Vulkan)")
	// NullHandle: a null semaphore, or neither a semaphore nor a fence.
	NullHandle = errors.New("vkc: null Vulkan handle")
	// EventUnrecorded: a nil event, or one no Record made.
	EventUnrecorded = errors.New("vkc: event never recorded (use Stream.Record)")
	// EventForeign: an event recorded on another device.
	EventForeign = errors.New("vkc: event of another device (wait for it on a stream of the device that recorded it)")
	// EventInCapture: an event recorded inside a capture window used
	// outside it, or a timed event asked for inside one.
	EventInCapture = errors.New("vkc: event recorded inside a capture window used outside it")
	// EventUntimed: Since of an event recorded without a timestamp.
	EventUntimed = errors.New("vkc: event recorded without a timestamp (use Stream.RecordTimed)")
	// ProfileState: a profile call in the wrong state.
	ProfileState = errors.New("vkc: profile in the wrong state (one profile per slot at a time, outside capture windows; a graph's profile after a replay that ran)")
	// GraphUnprofiled: the times of a graph captured without profiling.
	GraphUnprofiled = errors.New("vkc: graph captured without profiling (capture it with CaptureOptions.Profile)")
	// ReadTaken: a pending read already waited for or closed.
	ReadTaken = errors.New("vkc: pending read already waited for or closed")
	// OutOfRange: a view that does not lie inside its buffer.
	OutOfRange = errors.New("vkc: view outside its buffer")
	// Overlap: buffers of one op share memory in a way it cannot honour.
	Overlap = errors.New("vkc: buffers of one op overlap")
	// ParamWritten: a Param bound where a kernel writes.
	ParamWritten = errors.New("vkc: a Param is bound where the kernel writes (params are set by the host only; write a Buffer instead)")
	// WaitPolicy: an unknown wait policy.
	WaitPolicy = errors.New("vkc: unknown wait policy (auto, spin, yield or block)")
)

// All lists every sentinel, for tests that check each is reachable and
// worded as a user should read it.
var All = []error{
	Unwritten, NeverWritten, SyncInCapture, StreamCapturing, CaptureState,
	AllocInCapture, OutOfMemory, DeviceLost, Closed, NoLoader, NoDevice,
	BadSPIRV, Unsupported, OutOfDate, NoPresentation, BadAdoption, NotShared,
	NullHandle, EventUnrecorded, EventForeign, EventInCapture, EventUntimed,
	ProfileState, GraphUnprofiled, ReadTaken, OutOfRange, Overlap,
	ParamWritten, WaitPolicy,
}
