// Package lockrank is vkc's lock order as code. Every lock of the module's
// library packages (the root's, the recorder's, the allocator's, the
// recorder's devices') has a rank; a goroutine takes locks in strictly
// increasing rank, except that several locks of an ordered rank (the
// slots) may be held at once when taken in increasing index. Built with
// the tag vkc_lockrank each acquisition checks that against the locks the
// goroutine holds and panics naming both locks; without the tag Mutex,
// RWMutex and LeafMutex are sync.Mutex and sync.RWMutex and the ranks cost
// nothing. The model is wgpu-core's lock/rank.rs: the order is declared
// once, here, and a test run with the tag finds an inversion the first
// time a path takes it, instead of the first time two goroutines deadlock
// on it. It lives in the module's internal tree, not the recorder's, so
// the root and every package below it can rank their locks in one order.
package lockrank

import "strconv"

// Rank is a lock's place in the order: a goroutine holding a lock of rank
// h may take one of rank r only if h < r (or h == r for an ordered rank,
// in increasing index).
type Rank uint8

// The module's locks, in the order a goroutine may take them: the root's
// first (a public call takes them, then reaches the recorder), then the
// recorder's, then what the recorder calls into (the allocator, the
// device), then the leaves.
const (
	unranked Rank = iota
	// Collector is vulkango's pauseMu, held around a program's own
	// vulkan-go calls (which may call vkc) with the collector paused.
	Collector
	// Param is a Param's mutex (paramCore.mu): its value and the device
	// values derived from it, held while Set writes them through the
	// recorder and while a first use allocates a derived value.
	Param
	// Constants is a slot's cache of device constants (constantCache.mu),
	// held while a missing constant is allocated and written: the op
	// library the root's tests launch as their work keeps it.
	Constants
	// Buffer is a buffer's mutex (bufferCore.mu): its persistent host
	// staging, held while a write goes through the recorder.
	Buffer
	// Handles is the public Device's mutex (Device.mu): its kernels,
	// buffers, graphs and user kernels, held while a catalogue kernel is
	// built on first use.
	Handles
	// PendingRead is a PendingRead's mutex, which serialises its Wait and
	// Close; both go on to take the device's lock or a slot's under it.
	PendingRead
	// Device is Recorder.devMu: held shared by calls that reach the device
	// outside a slot, exclusively by Close. Taken before any other of the
	// recorder's but a pending read's.
	Device
	// Presentation is a Presentation's mutex, which serialises its calls
	// and waits for frames on slots under it.
	Presentation
	// Slot is a slot's mutex. A call holds one, except SetHost, SetLength
	// and LengthLimit, which take every slot's in index order.
	Slot
	// Staging is Recorder.stagingMu: the persistent host staging by claim.
	Staging
	// Kernels is Recorder.kernelsMu: live kernels and their references.
	Kernels
	// Graphs is Recorder.graphsMu: the live graphs LengthLimit scans.
	Graphs
	// Guards is Recorder.guardMu: the claims the recorder guards.
	Guards
	// Presentations is Recorder.presMu: the swapchains still open.
	Presentations
	// Events is Recorder.eventsMu: the timed events still open, taken
	// under a slot's lock by Record and alone by Event.Close and Close.
	Events
	// Event is an Event's mutex: its closed flag and timestamp query,
	// held only while reading them.
	Event
	// Born is Recorder.bornMu: the buffers allocated while windows record
	// and the slots recording then (a leaf).
	Born
	// Allocator is alloc.Allocator's mutex, held while a new page's
	// memory is allocated from the device.
	Allocator
	// Adapter is the lock of the recorder.Device implementation
	// (hostdev.Device's state), taken under any of the above.
	Adapter
	// VkDevice is vk.Device's gate: held shared by every call into the
	// driver on the device, exclusively by its Close.
	VkDevice
	// VkCommandPool is a vk.CommandPool's mutex (Vulkan's external
	// synchronisation of the pool).
	VkCommandPool
	// VkDescriptorPool is a vk.DescriptorPool's mutex.
	VkDescriptorPool
	// VkTexelViews is the mutex of a descriptor set's texel views, taken
	// under its pool's by Free and Destroy.
	VkTexelViews
	// VkMemory is a vk.Block's mutex: its mapping.
	VkMemory
	// VkSwapchain is a vk.Swapchain's mutex: its source image.
	VkSwapchain
	// VkQueue is vk's own queue lock (an adopting program's lock is the
	// program's, and unranked), taken around submits and presents.
	VkQueue
	// VkInstance is vk.Instance's gate: held shared by every call on the
	// instance (a device's presentation asks it about the surface).
	VkInstance
	// VkMessages is vk.Instance's lock of the validation messages, taken
	// by the layer's callback from inside any driver call.
	VkMessages
	// Ledger is alloc.Ledger's mutex: the taint ranges (takes nothing).
	Ledger
	// Leaf is every LeafMutex: a lifetime's condition, a handle table's
	// free list. It takes nothing under it, and no two are held at once.
	Leaf
	numRanks
)

var names = [numRanks]string{
	unranked:         "an unranked lock",
	Collector:        "vulkango.pauseMu",
	Param:            "vkc.paramCore.mu",
	Constants:        "vkc.constantCache.mu",
	Buffer:           "vkc.bufferCore.mu",
	Handles:          "vkc.Device.mu",
	PendingRead:      "PendingRead.mu",
	Device:           "Recorder.devMu",
	Presentation:     "Presentation.mu",
	Slot:             "slot.mu",
	Staging:          "Recorder.stagingMu",
	Kernels:          "Recorder.kernelsMu",
	Graphs:           "Recorder.graphsMu",
	Guards:           "Recorder.guardMu",
	Presentations:    "Recorder.presMu",
	Events:           "Recorder.eventsMu",
	Born:             "Recorder.bornMu",
	Event:            "Event.mu",
	Allocator:        "alloc.Allocator.mu",
	Adapter:          "hostdev.Device.mu",
	VkDevice:         "vk.Device.gate",
	VkCommandPool:    "vk.CommandPool.mu",
	VkDescriptorPool: "vk.DescriptorPool.mu",
	VkTexelViews:     "vk.texelViews.mu",
	VkMemory:         "vk.Block.mu",
	VkSwapchain:      "vk.Swapchain.mu",
	VkQueue:          "vk.Device.queueMu",
	VkInstance:       "vk.Instance.gate",
	VkMessages:       "vk.Instance.msgMu",
	Ledger:           "alloc.Ledger.mu",
	Leaf:             "a leaf lock",
}

// String names the lock a rank stands for.
func (r Rank) String() string {
	if r < numRanks {
		return names[r]
	}
	return "rank " + strconv.Itoa(int(r))
}

// ordered reports whether several locks of rank r may be held at once,
// taken in increasing index.
func (r Rank) ordered() bool { return r == Slot }

// Ranks lists the order, lowest first, for documentation and tests.
func Ranks() []Rank {
	out := make([]Rank, 0, numRanks-1)
	for r := unranked + 1; r < numRanks; r++ {
		out = append(out, r)
	}
	return out
}
