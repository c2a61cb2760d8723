package vkc

import (
	"fmt"
	"sync"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/vkdev"
)

// Sharing a device with outside Vulkan code (a renderer written with
// vulkan-go, C through cgo, or any binding): Adopt opens vkc on the
// program's device, VulkanBuffer hands out where a buffer lives, and these
// calls exchange order with the program's semaphores and fences:
//
//   - Event.SignalOutside: an event exported: the program's semaphore (or
//     fence) signals once the work before the event's point has run.
//   - Stream.ImportEvent: the program's semaphore imported as an event:
//     the point after the program's work, which any stream can Wait on
//     and the host can Sync on.
//
//   - Stream.SignalOutside: the program's semaphore (or fence) signals
//     once the stream's work is done; the program's submit waits on it
//     before it reads what vkc wrote.
//   - Stream.WaitOutside: the stream's next work waits for the program's
//     semaphore.
//   - Buffer.WrittenOutside: the program wrote the buffer; vkc reads it as
//     written (no ErrUnwritten) once the program's semaphore signals.
//   - Buffer.ReadOutside: the program reads the buffer; vkc's next write
//     to it, and its Close, wait until the program's semaphore signals.
//
// Handles are integers: a dispatchable handle (VkInstance, VkDevice, …) as
// the pointer's uintptr, a non-dispatchable one (VkBuffer, VkSemaphore,
// VkFence) as its 64-bit value. Package vkc/vulkango converts vulkan-go's
// types. Every semaphore and fence is the program's: vkc signals and waits
// on them and never creates or destroys one, so nothing it hands out
// outlives Close.

var (
	// ErrBadAdoption: Adopt was given handles vkc cannot run on: a null
	// one, a physical device the instance does not list, a queue family
	// without compute (or out of range), a queue index beyond the
	// family's queue count, a Vulkan version below 1.1, or a
	// declared feature the physical device does not offer. The message
	// names which.
	ErrBadAdoption = errs.BadAdoption
	// ErrNullHandle: a null semaphore handed to vkc to wait on or import,
	// or neither a semaphore nor a fence handed to it to signal.
	ErrNullHandle = errs.NullHandle
)

// External is a Vulkan device another program created, as integers, and
// what vkc needs to know of it that Vulkan cannot be asked.
type External struct {
	// Instance, PhysicalDevice and Device are the program's handles. The
	// device must have been created from that physical device.
	Instance, PhysicalDevice, Device uintptr
	// Queue is the queue vkc submits to, of family QueueFamily, index
	// QueueIndex, as the program created it; zero fetches it with
	// vkGetDeviceQueue. The family must support compute, and any other
	// queue that reads or writes vkc's buffers must be of the same family
	// (vkc's buffers are exclusive to one family). An index beyond the
	// family's queue count is refused (ErrBadAdoption, naming it); vkc
	// cannot tell an index below it that the program did not create
	// (Vulkan cannot be asked how many it did), which the validation
	// layer then reports.
	Queue                   uintptr
	QueueFamily, QueueIndex uint32
	// Features are the optional features the program enabled on its
	// device (in VkPhysicalDeviceVulkan11Features and friends, or the
	// 16-bit, 8-bit, float16/int8, integer-dot-product, cooperative-matrix
	// and memory-model feature structs in the create-info's pNext, with the
	// extensions they need on Vulkan 1.1: VK_KHR_16bit_storage,
	// VK_KHR_8bit_storage, VK_KHR_shader_float16_int8,
	// VK_KHR_shader_integer_dot_product, VK_KHR_cooperative_matrix and
	// VK_KHR_vulkan_memory_model). Vulkan cannot be asked which ones a
	// device has enabled, so vkc counts on exactly these: element types
	// and kernels that need a feature not declared are refused with
	// ErrUnsupported. The zero value declares none. Declaring a feature
	// the physical device does not offer is refused with ErrBadAdoption,
	// naming it; declaring one the program did not enable is the
	// program's error, which the validation layer reports.
	Features Features
	// APIVersion is the apiVersion of the program's VkApplicationInfo: at
	// least Vulkan 1.1 (VK_API_VERSION_1_1 = 1<<22 | 1<<12).
	APIVersion uint32
	// QueueLock is the lock the program takes around its own
	// vkQueueSubmit, vkQueueWaitIdle and vkQueuePresentKHR on Queue; vkc
	// takes it around each of its own, as Vulkan requires of two users of
	// one queue. Nil means the queue is vkc's alone: the program created a
	// second queue of the family for it, or hands over its only one, and
	// never submits to, waits on or presents with it until vkc's Close
	// returns (vkc then serialises its own calls with a lock of its own;
	// host waits on fences and semaphores vkc signals need no queue). The
	// program must not call vkc while it holds the lock: vkc's call may
	// submit, and would wait for the lock forever.
	QueueLock sync.Locker
}

// Adopt opens vkc on a device another program created. vkc enables
// nothing of its own: it runs on Vulkan 1.1 core plus the optional
// features External.Features declares, whatever else the program
// enabled. Close waits for vkc's work on the
// queue, destroys every object vkc created and leaves the instance,
// device and queue to the program, which destroys them after.
//
// Validation is the program's: the layer and its messenger, if any, are
// on the program's instance and report vkc's calls there;
// ValidationMessages counts none. WithDevice, WithValidation,
// WithSyncValidation, WithLogger and WithPresentation, which choose or
// set up a device vkc creates, have no effect; the others apply.
func Adopt(e External, opts ...Option) (*Device, error) {
	open := func() (recorder.Device, error) {
		return vkdev.Adopt(vkdev.Adopted{Instance: e.Instance, PhysicalDevice: e.PhysicalDevice,
			Device: e.Device, Queue: e.Queue, QueueFamily: e.QueueFamily, QueueIndex: e.QueueIndex,
			APIVersion: e.APIVersion, QueueLock: e.QueueLock, Features: recorder.Features(e.Features)})
	}
	return Open(append(opts[:len(opts):len(opts)], withRecorderDevice(open))...)
}

// VulkanBuffer is where a buffer's elements live on a Vulkan device: a
// range of a VkBuffer that vkc suballocates, so other buffers of vkc lie
// in the same VkBuffer outside [Offset, Offset+Range). The VkBuffer's
// usages include storage, uniform, uniform texel, vertex, index, indirect
// and transfer source and destination. A buffer's Offset is aligned for storage
// descriptors (uniform descriptors may need more: the device's
// minUniformBufferOffsetAlignment); a view's is its first byte, aligned
// only as far as its offset is (see View).
type VulkanBuffer struct {
	Buffer uint64 // the VkBuffer's 64-bit value
	Offset uint64 // bytes from the VkBuffer's start to element 0
	Range  uint64 // Len() times the element size: exactly the elements' bytes
}

// VulkanBuffer returns where the buffer lives, valid until the buffer or
// its device closes. Outside commands that use it are declared with
// ReadOutside and WrittenOutside.
func (b *Buffer[T]) VulkanBuffer() (VulkanBuffer, error) {
	if err := b.valid(); err != nil {
		return VulkanBuffer{}, err
	}
	c := b.core
	if err := c.dev.enter(); err != nil {
		return VulkanBuffer{}, err
	}
	defer c.dev.leave()
	if !c.life.enter() {
		return VulkanBuffer{}, closedError("buffer")
	}
	defer c.done()
	h, off, err := c.dev.rec.BufferHandle(c.claim)
	if err != nil {
		return VulkanBuffer{}, publicOp("Buffer.VulkanBuffer", err)
	}
	return VulkanBuffer{Buffer: h, Offset: off, Range: uint64(c.n) * c.elem.size()}, nil
}

// SignalOutside submits the stream's pending work and signals the
// program's semaphore and fence (either may be 0, not both:
// ErrNullHandle) once it is
// done, together with everything submitted to the queue before. The
// program's submit then waits on the semaphore before it reads what the
// stream wrote, or its host waits on the fence. A semaphore must be
// unsignaled with no signal pending (binary semaphores); on an error
// neither is signaled and the program must not wait on them. Inside the
// stream's capture window it is refused with ErrSyncInCapture (and dooms
// the window): a signal is not recorded.
func (s *Stream) SignalOutside(semaphore, fence uint64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.SignalOutside", s.dev.rec.SignalOutside(s.id, semaphore, fence))
}

// WaitOutside makes the stream's next work, and everything submitted to
// the queue after it, wait for the program's semaphore, whose signal the
// program has already submitted. It declares no buffer: for those, use
// WrittenOutside and ReadOutside.
func (s *Stream) WaitOutside(semaphore uint64) error {
	if semaphore == 0 {
		return fmt.Errorf("%w: WaitOutside on a null semaphore", ErrNullHandle)
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return publicOp("Stream.WaitOutside", s.dev.rec.WaitOutside(s.id, semaphore, nil, nil))
}

// SignalOutside exports the event: it signals the program's semaphore and
// fence (either may be 0, not both: ErrNullHandle) once the work before
// ev's point has run, together with everything submitted to the queue
// before the call. If ev's work is still queued on the host it is
// submitted now. The program's submit waits on the semaphore before it
// reads what that work wrote, or its host waits on the fence. A semaphore
// must be unsignaled with no signal pending (binary semaphores); on an
// error neither is signaled and the program must not wait on them. An
// event recorded inside a capture window is refused with
// ErrEventInCapture (its point lies in the graph, which runs only when
// replayed: export an event recorded after the Replay instead); a closed
// one with ErrClosed; one whose work failed to submit with that failure.
// The semaphore and fence stay the program's: it destroys them once its
// wait on them has returned (or after vkc's Close, which waits for the
// signal).
func (ev *Event) SignalOutside(semaphore, fence uint64) error {
	if err := ev.enter(); err != nil {
		return err
	}
	defer ev.dev.leave()
	return publicOp("Event.SignalOutside", ev.dev.rec.SignalEvent(ev.ev, semaphore, fence))
}

// ImportEvent imports the program's semaphore, whose signal the program
// has already submitted (binary semaphores), as an event: the point after
// the program's work. The stream's next work waits for it, as with
// WaitOutside (on vkc's one queue so does everything submitted after),
// any stream of the device may Wait on the event, and the host may Sync
// on it or ask Done, which reports the program's signal once vkc's wait
// on it has run. The event is untimed (Since: ErrEventUntimed). A null
// semaphore is ErrNullHandle; inside the stream's capture window the
// import is refused with ErrSyncInCapture (and dooms the window): a wait
// on an outside semaphore cannot be replayed. The semaphore stays the
// program's and must live until the event's point has run (Sync returns,
// Done reports true, or vkc's Close returns); vkc creates and destroys no
// semaphore. It declares no buffer: for those, use WrittenOutside and
// ReadOutside (with a semaphore of 0 after the import).
func (s *Stream) ImportEvent(semaphore uint64) (*Event, error) {
	if semaphore == 0 {
		return nil, fmt.Errorf("%w: ImportEvent of a null semaphore", ErrNullHandle)
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	ev, err := s.dev.rec.ImportEvent(s.id, semaphore)
	if err != nil {
		return nil, publicOp("Stream.ImportEvent", err)
	}
	return &Event{dev: s.dev, ev: ev}, nil
}

// WrittenOutside declares that the program's own commands wrote the whole
// buffer: from now on reads see it as written (no ErrUnwritten). The rule:
// the program's write must come after vkc's last use of the buffer (wait
// on SignalOutside's semaphore first), and it is done when semaphore
// signals, whose signal the program has already submitted; the stream's
// next work waits for it, and so does a host read of the buffer from any
// stream. A semaphore of 0 says the write has already completed (the
// program waited for it). Inside the stream's capture window it is refused
// with ErrSyncInCapture.
func (b *Buffer[T]) WrittenOutside(s *Stream, semaphore uint64) error {
	return b.outside(s, semaphore, false)
}

// ReadOutside declares that the program's own commands read the buffer.
// The rule: the program's read must come after the vkc work that wrote it
// (wait on SignalOutside's semaphore first), and it is done when semaphore
// signals, whose signal the program has already submitted; vkc's next
// write to the buffer waits for it (a stream's work, submitted after, and
// a host write from any stream), and so does the buffer's Close. A
// semaphore of 0 says the read has already completed. It fails with
// ErrUnwritten, after declaring, when no executed work wrote the buffer:
// what the program read was not data.
func (b *Buffer[T]) ReadOutside(s *Stream, semaphore uint64) error {
	return b.outside(s, semaphore, true)
}

// outside is WrittenOutside and ReadOutside.
func (b *Buffer[T]) outside(s *Stream, semaphore uint64, read bool) error {
	if err := b.valid(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	c := b.core
	if err := c.use(s); err != nil {
		return err
	}
	defer c.done()
	set := []alloc.Claim{c.claim}
	if read {
		return publicOp("Buffer.ReadOutside", c.dev.rec.WaitOutside(s.id, semaphore, set, nil))
	}
	return publicOp("Buffer.WrittenOutside", c.dev.rec.WaitOutside(s.id, semaphore, nil, set))
}
