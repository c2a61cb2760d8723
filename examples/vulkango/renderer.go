package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/vulkango"
	vk "github.com/vulkan-go/vulkan"
)

// renderer is the vulkan-go side of the example: what a program that
// draws with vulkan-go already has (an instance, a device, a queue and the
// lock it takes around the queue) and the few commands it runs itself.
// Every vulkan-go call that marshals a struct or a slice runs inside
// vulkango.WithCollectorPaused (see paused); calls that take only handles
// and scalars run as they are.
type renderer struct {
	instance vk.Instance
	report   vk.DebugReportCallback
	gpu      vk.PhysicalDevice
	device   vk.Device
	family   uint32
	queue    vk.Queue
	// queueMu is taken around every QueueSubmit and QueueWaitIdle on
	// queue, the program's and (through vulkango.Device.QueueLock) vkc's.
	queueMu sync.Mutex
	pool    vk.CommandPool
	memory  vk.PhysicalDeviceMemoryProperties
	name    string
	// validating: the validation layer is on, with the program's callback.
	validating bool
	// features are the optional features of vkc's the device was created
	// with, which the program declares when it hands the device to vkc.
	features vkc.Features
	// surface is the window's, when the renderer presents (window.go).
	surface vk.Surface
}

// apiVersion is the Vulkan version the renderer's instance asks for: the
// least vkc adopts.
var apiVersion = vk.MakeVersion(1, 1, 0)

// validationLayer is the Khronos layer, enabled on request where installed.
const validationLayer = "VK_LAYER_KHRONOS_validation"

// The strings the program hands vulkan-go, NUL-terminated as it passes
// them to C. Literals: their bytes are not Go heap memory, so nothing
// needs pinning.
const (
	appNameC         = "vulkango-example\x00"
	engineNameC      = "none\x00"
	validationLayerC = validationLayer + "\x00"
	debugReportC     = vk.ExtDebugReportExtensionName + "\x00"
	// shaderFloat16Int8C is the extension shaderFloat16 needs on Vulkan 1.1.
	shaderFloat16Int8C = "VK_KHR_shader_float16_int8\x00"
	swapchainC         = vk.KhrSwapchainExtensionName + "\x00"
)

// shaderFloat16Int8Features is VkPhysicalDeviceShaderFloat16Int8Features
// as C lays it out, which vulkan-go does not declare.
type shaderFloat16Int8Features struct {
	sType         vk.StructureType
	pNext         unsafe.Pointer
	shaderFloat16 vk.Bool32
	shaderInt8    vk.Bool32
}

// structureTypeShaderFloat16Int8Features is
// VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES.
const structureTypeShaderFloat16Int8Features vk.StructureType = 1000082000

// Validation messages the layer sent the program's callback. vulkan-go
// keeps one debug-report callback per process, so these are too.
var (
	validationCount atomic.Int64
	recentMu        sync.Mutex
	recent          []string
)

// onValidation counts warnings and errors from the layer, vkc's calls
// included: vkc adopted the instance, so its messages come here.
func onValidation(flags vk.DebugReportFlags, _ vk.DebugReportObjectType, _ uint64, _ uint, _ int32,
	prefix, msg string, _ unsafe.Pointer) vk.Bool32 {
	const counted = vk.DebugReportFlags(vk.DebugReportErrorBit | vk.DebugReportWarningBit | vk.DebugReportPerformanceWarningBit)
	if flags&counted != 0 {
		validationCount.Add(1)
		recentMu.Lock()
		recent = append(recent, prefix+": "+msg)
		recentMu.Unlock()
	}
	return vk.False
}

// validationMessages is how many messages the layer sent so far, and them.
func validationMessages() (int64, []string) {
	recentMu.Lock()
	defer recentMu.Unlock()
	return validationCount.Load(), append([]string(nil), recent...)
}

// paused runs a vulkan-go call that marshals structs with the collector
// paused and the Go memory its structs point to (pin) pinned, and turns
// its result into an error.
func paused(call string, f func() vk.Result, pin ...any) error {
	return vulkango.WithCollectorPaused(func() error { return vulkango.Result(call, f()) }, pin...)
}

var loadOnce = sync.OnceValue(func() error {
	if err := vk.SetDefaultGetInstanceProcAddr(); err != nil {
		return err
	}
	return vk.Init()
})

// layerInstalled reports whether the loader offers the layer.
func layerInstalled(name string) bool {
	var n uint32
	if vk.EnumerateInstanceLayerProperties(&n, nil) != vk.Success || n == 0 {
		return false
	}
	props := make([]vk.LayerProperties, n)
	if err := paused("vkEnumerateInstanceLayerProperties", func() vk.Result {
		return vk.EnumerateInstanceLayerProperties(&n, props)
	}); err != nil {
		return false
	}
	for _, p := range props[:n] {
		p.Deref()
		if vk.ToString(p.LayerName[:]) == name {
			return true
		}
	}
	return false
}

// newRenderer creates the program's instance (with the validation layer
// and a debug-report callback when validate is set and the layer is
// installed), picks the first device with a queue family that computes
// and draws, creates a device with one queue of it and a command pool.
func newRenderer(validate bool) (*renderer, error) { return newRendererWith(validate, 0) }

// newRendererWith is newRenderer with optional features enabled on the
// device, as a renderer that keeps half-precision vertex data would; the
// renderer records them in features. It knows two: FeatureStorage16
// (VkPhysicalDevice16BitStorageFeatures in the create-info's chain, core
// in Vulkan 1.1) and FeatureFloat16 (VkPhysicalDeviceShaderFloat16Int8Features
// and its extension, VK_KHR_shader_float16_int8).
func newRendererWith(validate bool, enable vkc.Features) (*renderer, error) {
	return newRendererFor(rendererOptions{validate: validate, enable: enable})
}

// rendererOptions are what a renderer is made with.
type rendererOptions struct {
	validate bool
	enable   vkc.Features
	// instanceExtensions are extensions the instance enables besides the
	// layer's (a window system's, for a surface).
	instanceExtensions []string
	// surface, when set, creates the window's surface on the instance; the
	// renderer then picks a family that presents to it, enables
	// VK_KHR_swapchain and destroys the surface with itself.
	surface func(instance uintptr) (uint64, error)
}

// newRendererFor is newRenderer as o says.
func newRendererFor(o rendererOptions) (*renderer, error) {
	validate, enable := o.validate, o.enable
	if other := enable &^ (vkc.FeatureStorage16 | vkc.FeatureFloat16); other != 0 {
		return nil, fmt.Errorf("the example's renderer does not enable %s", other)
	}
	if err := loadOnce(); err != nil {
		return nil, fmt.Errorf("loading Vulkan: %w", err)
	}
	r := &renderer{}
	ici := vk.InstanceCreateInfo{SType: vk.StructureTypeInstanceCreateInfo,
		PApplicationInfo: &vk.ApplicationInfo{SType: vk.StructureTypeApplicationInfo, PApplicationName: appNameC,
			PEngineName: engineNameC, ApiVersion: apiVersion}}
	r.validating = validate && layerInstalled(validationLayer)
	if r.validating {
		ici.PpEnabledLayerNames = []string{validationLayerC}
		ici.EnabledLayerCount = 1
		ici.PpEnabledExtensionNames = []string{debugReportC}
	}
	// Names that are not literals are Go memory vulkan-go hands C as it
	// is: NUL-terminated here and pinned for the call.
	var namePins []any
	for _, name := range o.instanceExtensions {
		name += "\x00"
		ici.PpEnabledExtensionNames = append(ici.PpEnabledExtensionNames, name)
		namePins = append(namePins, unsafe.StringData(name))
	}
	ici.EnabledExtensionCount = uint32(len(ici.PpEnabledExtensionNames))
	// Out-handles are locals: cgo refuses a pointer into a struct that
	// holds Go pointers, as the renderer does.
	var instance vk.Instance
	if err := paused("vkCreateInstance", func() vk.Result { return vk.CreateInstance(&ici, nil, &instance) }, namePins...); err != nil {
		return nil, err
	}
	r.instance = instance
	if err := vk.InitInstance(r.instance); err != nil {
		r.destroy()
		return nil, err
	}
	if r.validating {
		ci := vk.DebugReportCallbackCreateInfo{SType: vk.StructureTypeDebugReportCallbackCreateInfo,
			Flags:       vk.DebugReportFlags(vk.DebugReportErrorBit | vk.DebugReportWarningBit | vk.DebugReportPerformanceWarningBit),
			PfnCallback: onValidation}
		var report vk.DebugReportCallback
		if err := paused("vkCreateDebugReportCallbackEXT", func() vk.Result {
			return vk.CreateDebugReportCallback(r.instance, &ci, nil, &report)
		}); err != nil {
			r.destroy()
			return nil, err
		}
		r.report = report
	}
	if o.surface != nil {
		h, err := o.surface(uintptr(unsafe.Pointer(r.instance)))
		if err != nil {
			r.destroy()
			return nil, err
		}
		r.surface = *(*vk.Surface)(unsafe.Pointer(&h))
	}
	if err := r.pickDevice(); err != nil {
		r.destroy()
		return nil, err
	}
	priorities := []float32{1}
	qci := []vk.DeviceQueueCreateInfo{{SType: vk.StructureTypeDeviceQueueCreateInfo, QueueFamilyIndex: r.family,
		QueueCount: 1, PQueuePriorities: priorities}}
	dci := vk.DeviceCreateInfo{SType: vk.StructureTypeDeviceCreateInfo, QueueCreateInfoCount: 1, PQueueCreateInfos: qci}
	pins := []any{&priorities[0]}
	if enable.Has(vkc.FeatureStorage16) {
		// vulkan-go copies the struct into C memory (PassRef), which the
		// chain may point to; Free releases it once the device exists.
		storage := &vk.PhysicalDevice16BitStorageFeatures{SType: vk.StructureTypePhysicalDevice16bitStorageFeatures,
			PNext: dci.PNext, StorageBuffer16BitAccess: vk.True}
		ref, _ := storage.PassRef()
		dci.PNext = unsafe.Pointer(ref)
		defer storage.Free()
	}
	if enable.Has(vkc.FeatureFloat16) {
		// vulkan-go has no type for this struct: it is laid out by hand,
		// pinned for the call (a pinned Go pointer may sit in the C copy
		// of the create-info).
		f16 := &shaderFloat16Int8Features{sType: structureTypeShaderFloat16Int8Features, pNext: dci.PNext, shaderFloat16: vk.True}
		dci.PNext = unsafe.Pointer(f16)
		dci.PpEnabledExtensionNames = append(dci.PpEnabledExtensionNames, shaderFloat16Int8C)
		pins = append(pins, f16)
	}
	if r.surface != vk.NullSurface {
		dci.PpEnabledExtensionNames = append(dci.PpEnabledExtensionNames, swapchainC)
	}
	dci.EnabledExtensionCount = uint32(len(dci.PpEnabledExtensionNames))
	r.features = enable
	var device vk.Device
	if err := paused("vkCreateDevice", func() vk.Result { return vk.CreateDevice(r.gpu, &dci, nil, &device) }, pins...); err != nil {
		r.destroy()
		return nil, err
	}
	r.device = device
	var queue vk.Queue
	vk.GetDeviceQueue(r.device, r.family, 0, &queue)
	r.queue = queue
	pci := vk.CommandPoolCreateInfo{SType: vk.StructureTypeCommandPoolCreateInfo, QueueFamilyIndex: r.family,
		Flags: vk.CommandPoolCreateFlags(vk.CommandPoolCreateResetCommandBufferBit)}
	var pool vk.CommandPool
	if err := paused("vkCreateCommandPool", func() vk.Result { return vk.CreateCommandPool(r.device, &pci, nil, &pool) }); err != nil {
		r.destroy()
		return nil, err
	}
	r.pool = pool
	return r, nil
}

// pickDevice takes the first physical device with a family that both
// computes and draws, as a renderer sharing its queue with vkc would.
func (r *renderer) pickDevice() error {
	var n uint32
	if err := vulkango.Result("vkEnumeratePhysicalDevices", vk.EnumeratePhysicalDevices(r.instance, &n, nil)); err != nil {
		return err
	}
	gpus := make([]vk.PhysicalDevice, n)
	if err := paused("vkEnumeratePhysicalDevices", func() vk.Result { return vk.EnumeratePhysicalDevices(r.instance, &n, gpus) }); err != nil {
		return err
	}
	const want = vk.QueueFlags(vk.QueueComputeBit | vk.QueueGraphicsBit)
	for _, gpu := range gpus[:n] {
		var count uint32
		vk.GetPhysicalDeviceQueueFamilyProperties(gpu, &count, nil)
		families := make([]vk.QueueFamilyProperties, count)
		_ = vulkango.WithCollectorPaused(func() error {
			vk.GetPhysicalDeviceQueueFamilyProperties(gpu, &count, families)
			return nil
		})
		for i := range families[:count] {
			families[i].Deref()
			if families[i].QueueFlags&want == want && r.presents(gpu, uint32(i)) {
				r.gpu, r.family = gpu, uint32(i)
				var props vk.PhysicalDeviceProperties
				var memory vk.PhysicalDeviceMemoryProperties
				_ = vulkango.WithCollectorPaused(func() error {
					vk.GetPhysicalDeviceProperties(gpu, &props)
					vk.GetPhysicalDeviceMemoryProperties(gpu, &memory)
					return nil
				})
				props.Deref()
				memory.Deref()
				r.memory = memory
				for j := range r.memory.MemoryTypes[:r.memory.MemoryTypeCount] {
					r.memory.MemoryTypes[j].Deref()
				}
				r.name = vk.ToString(props.DeviceName[:])
				return nil
			}
		}
	}
	return errors.New("no Vulkan device with a queue family that computes and draws (and presents to the window, if any)")
}

// presents reports whether the family presents to the renderer's surface
// (any family does when there is none).
func (r *renderer) presents(gpu vk.PhysicalDevice, family uint32) bool {
	if r.surface == vk.NullSurface {
		return true
	}
	var ok vk.Bool32
	return vk.GetPhysicalDeviceSurfaceSupport(gpu, family, r.surface, &ok) == vk.Success && ok == vk.True
}

// hostBuffer is a buffer of the program's in host-visible, coherent memory.
type hostBuffer struct {
	buf    vk.Buffer
	mem    vk.DeviceMemory
	size   vk.DeviceSize
	mapped unsafe.Pointer
}

// newHostBuffer creates a mapped buffer the program copies into.
func (r *renderer) newHostBuffer(size vk.DeviceSize) (*hostBuffer, error) {
	h := &hostBuffer{size: size}
	bci := vk.BufferCreateInfo{SType: vk.StructureTypeBufferCreateInfo, Size: size,
		Usage: vk.BufferUsageFlags(vk.BufferUsageTransferDstBit | vk.BufferUsageTransferSrcBit), SharingMode: vk.SharingModeExclusive}
	var buf vk.Buffer
	if err := paused("vkCreateBuffer", func() vk.Result { return vk.CreateBuffer(r.device, &bci, nil, &buf) }); err != nil {
		return nil, err
	}
	h.buf = buf
	var req vk.MemoryRequirements
	vk.GetBufferMemoryRequirements(r.device, h.buf, &req)
	req.Deref()
	const want = vk.MemoryPropertyFlags(vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit)
	index := -1
	for i, t := range r.memory.MemoryTypes[:r.memory.MemoryTypeCount] {
		if req.MemoryTypeBits&(1<<uint(i)) != 0 && t.PropertyFlags&want == want {
			index = i
			break
		}
	}
	if index < 0 {
		r.destroyHostBuffer(h)
		return nil, errors.New("no host-visible coherent memory")
	}
	mai := vk.MemoryAllocateInfo{SType: vk.StructureTypeMemoryAllocateInfo, AllocationSize: req.Size, MemoryTypeIndex: uint32(index)}
	var mem vk.DeviceMemory
	if err := paused("vkAllocateMemory", func() vk.Result { return vk.AllocateMemory(r.device, &mai, nil, &mem) }); err != nil {
		r.destroyHostBuffer(h)
		return nil, err
	}
	h.mem = mem
	if err := vulkango.Result("vkBindBufferMemory", vk.BindBufferMemory(r.device, h.buf, h.mem, 0)); err != nil {
		r.destroyHostBuffer(h)
		return nil, err
	}
	var mapped unsafe.Pointer
	if err := vulkango.Result("vkMapMemory", vk.MapMemory(r.device, h.mem, 0, vk.DeviceSize(vk.WholeSize), 0, &mapped)); err != nil {
		r.destroyHostBuffer(h)
		return nil, err
	}
	h.mapped = mapped
	return h, nil
}

// floats is the mapped buffer as float32s.
func (h *hostBuffer) floats() []float32 {
	return append([]float32(nil), unsafe.Slice((*float32)(h.mapped), h.size/4)...)
}

func (r *renderer) destroyHostBuffer(h *hostBuffer) {
	if h.mapped != nil {
		vk.UnmapMemory(r.device, h.mem)
	}
	if h.buf != vk.NullBuffer {
		vk.DestroyBuffer(r.device, h.buf, nil)
	}
	if h.mem != vk.NullDeviceMemory {
		vk.FreeMemory(r.device, h.mem, nil)
	}
}

// newSemaphore and newFence make the program's sync objects; vkc signals
// and waits on them but never destroys them.
func (r *renderer) newSemaphore() (vk.Semaphore, error) {
	var s vk.Semaphore
	ci := vk.SemaphoreCreateInfo{SType: vk.StructureTypeSemaphoreCreateInfo}
	err := paused("vkCreateSemaphore", func() vk.Result { return vk.CreateSemaphore(r.device, &ci, nil, &s) })
	return s, err
}

func (r *renderer) newFence() (vk.Fence, error) {
	var f vk.Fence
	ci := vk.FenceCreateInfo{SType: vk.StructureTypeFenceCreateInfo}
	err := paused("vkCreateFence", func() vk.Result { return vk.CreateFence(r.device, &ci, nil, &f) })
	return f, err
}

// record allocates a one-time command buffer and records fill into it.
func (r *renderer) record(fill func(cb vk.CommandBuffer)) (vk.CommandBuffer, error) {
	cbs := make([]vk.CommandBuffer, 1)
	ai := vk.CommandBufferAllocateInfo{SType: vk.StructureTypeCommandBufferAllocateInfo, CommandPool: r.pool,
		Level: vk.CommandBufferLevelPrimary, CommandBufferCount: 1}
	if err := paused("vkAllocateCommandBuffers", func() vk.Result { return vk.AllocateCommandBuffers(r.device, &ai, cbs) }); err != nil {
		return nil, err
	}
	bi := vk.CommandBufferBeginInfo{SType: vk.StructureTypeCommandBufferBeginInfo,
		Flags: vk.CommandBufferUsageFlags(vk.CommandBufferUsageOneTimeSubmitBit)}
	if err := paused("vkBeginCommandBuffer", func() vk.Result { return vk.BeginCommandBuffer(cbs[0], &bi) }); err != nil {
		r.free(cbs[0])
		return nil, err
	}
	_ = vulkango.WithCollectorPaused(func() error { fill(cbs[0]); return nil })
	if err := vulkango.Result("vkEndCommandBuffer", vk.EndCommandBuffer(cbs[0])); err != nil {
		r.free(cbs[0])
		return nil, err
	}
	return cbs[0], nil
}

func (r *renderer) free(cb vk.CommandBuffer) {
	_ = vulkango.WithCollectorPaused(func() error {
		vk.FreeCommandBuffers(r.device, r.pool, 1, []vk.CommandBuffer{cb})
		return nil
	})
}

// toHost is the barrier that makes the transfer's writes visible to the
// host once the submission's fence signaled.
func toHost(cb vk.CommandBuffer) {
	vk.CmdPipelineBarrier(cb, vk.PipelineStageFlags(vk.PipelineStageTransferBit), vk.PipelineStageFlags(vk.PipelineStageHostBit), 0,
		1, []vk.MemoryBarrier{{SType: vk.StructureTypeMemoryBarrier, SrcAccessMask: vk.AccessFlags(vk.AccessTransferWriteBit),
			DstAccessMask: vk.AccessFlags(vk.AccessHostReadBit)}}, 0, nil, 0, nil)
}

// submit queues cb under the queue lock, after wait (at the transfer
// stage; nil: none), signalling signal (nil: none) and fence.
func (r *renderer) submit(cb vk.CommandBuffer, wait, signal vk.Semaphore, fence vk.Fence) error {
	// vulkan-go stores these slices' Go memory in its C copy of the
	// SubmitInfo: each is pinned for the call.
	si := vk.SubmitInfo{SType: vk.StructureTypeSubmitInfo, CommandBufferCount: 1, PCommandBuffers: []vk.CommandBuffer{cb}}
	pins := []any{&si.PCommandBuffers[0]}
	if wait != vk.NullSemaphore {
		si.WaitSemaphoreCount = 1
		si.PWaitSemaphores = []vk.Semaphore{wait}
		si.PWaitDstStageMask = []vk.PipelineStageFlags{vk.PipelineStageFlags(vk.PipelineStageTransferBit)}
		pins = append(pins, &si.PWaitSemaphores[0], &si.PWaitDstStageMask[0])
	}
	if signal != vk.NullSemaphore {
		si.SignalSemaphoreCount = 1
		si.PSignalSemaphores = []vk.Semaphore{signal}
		pins = append(pins, &si.PSignalSemaphores[0])
	}
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	return paused("vkQueueSubmit", func() vk.Result { return vk.QueueSubmit(r.queue, 1, []vk.SubmitInfo{si}, fence) }, pins...)
}

// wait waits for the program's fence on the host.
func (r *renderer) wait(f vk.Fence) error {
	return paused("vkWaitForFences", func() vk.Result {
		return vk.WaitForFences(r.device, 1, []vk.Fence{f}, vk.True, vk.MaxUint64)
	})
}

// copyAfter copies src (a vkc buffer) into dst once wait signaled, then
// signals signal and fence; the command buffer goes back once fence did.
func (r *renderer) copyAfter(wait vk.Semaphore, src vulkango.Buffer, dst *hostBuffer, signal vk.Semaphore, fence vk.Fence) (vk.CommandBuffer, error) {
	cb, err := r.record(func(cb vk.CommandBuffer) {
		vk.CmdCopyBuffer(cb, src.Buffer, dst.buf, 1, []vk.BufferCopy{{SrcOffset: src.Offset, DstOffset: 0, Size: src.Range}})
		toHost(cb)
	})
	if err != nil {
		return nil, err
	}
	if err := r.submit(cb, wait, signal, fence); err != nil {
		r.free(cb)
		return nil, err
	}
	return cb, nil
}

// fill writes word into every 4 bytes of dst with the program's own
// command buffer and waits for it: the program's device at work after vkc
// let go of it.
func (r *renderer) fill(dst *hostBuffer, word uint32) error {
	fence, err := r.newFence()
	if err != nil {
		return err
	}
	defer vk.DestroyFence(r.device, fence, nil)
	cb, err := r.record(func(cb vk.CommandBuffer) {
		vk.CmdFillBuffer(cb, dst.buf, 0, dst.size, word)
		toHost(cb)
	})
	if err != nil {
		return err
	}
	defer r.free(cb)
	if err := r.submit(cb, vk.NullSemaphore, vk.NullSemaphore, fence); err != nil {
		return err
	}
	return r.wait(fence)
}

// destroy destroys what the program created, in reverse; vkc must have
// been closed first.
func (r *renderer) destroy() {
	if r.device != nil {
		r.queueMu.Lock()
		vk.QueueWaitIdle(r.queue)
		r.queueMu.Unlock()
		if r.pool != vk.NullCommandPool {
			vk.DestroyCommandPool(r.device, r.pool, nil)
		}
		vk.DestroyDevice(r.device, nil)
		r.device = nil
	}
	if r.surface != vk.NullSurface {
		vk.DestroySurface(r.instance, r.surface, nil)
		r.surface = vk.NullSurface
	}
	if r.report != vk.NullDebugReportCallback {
		vk.DestroyDebugReportCallback(r.instance, r.report, nil)
	}
	if r.instance != nil {
		vk.DestroyInstance(r.instance, nil)
		r.instance = nil
	}
}
