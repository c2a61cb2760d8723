// cvk.h - the C layer under package vk, the only code that calls Vulkan:
// loader, instance with the debug-utils messenger, physical-device queries,
// device creation, every create and destroy, and the hot-path calls (record
// a launch, copy, barrier, submit, fence wait), all through function
// pointers fetched with vkGetInstanceProcAddr and vkGetDeviceProcAddr.
//
// Every Vulkan struct is built here, on the C stack, from scalars and
// handles the Go side passes; a Go pointer reaches this file only as a
// direct argument of the cgo call (pinned by cgo for exactly that call), to
// memory holding no Go pointer that nothing here keeps past the return. So
// no garbage collection during a call can free what the driver is reading.
#ifndef VKC_CVK_H
#define VKC_CVK_H
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#include <stdint.h>

// VKC_MAX_BINDINGS is the most storage buffers one set may hold; VKC_MAX_SPEC
// the most specialization constants one pipeline may set;
// VKC_MAX_EXTENSIONS the most extensions a caller adds to an instance or device.
#define VKC_MAX_BINDINGS 16
#define VKC_MAX_SPEC 64
#define VKC_MAX_EXTENSIONS 16

// vkc_load opens libvulkan.so.1 and returns vkGetInstanceProcAddr, or NULL
// with *err set to dlerror()'s text.
PFN_vkGetInstanceProcAddr vkc_load(const char **err);

// vkc_instance_opts carries what vkc_create_instance needs.
typedef struct vkc_instance_opts {
	int validation;      // enable VK_LAYER_KHRONOS_validation
	int sync_validation; // also enable synchronization validation
	uintptr_t user;      // Go handle passed to the message callback
	uint32_t ext_count;  // more instance extensions to enable (presentation: VK_KHR_surface and a platform's)
	const char *const *exts;
	uint32_t api_version; // the highest Vulkan version vk uses (VkApplicationInfo::apiVersion)
} vkc_instance_opts;

// vkc_create_instance creates the instance and, with validation, the
// messenger (VK_NULL_HANDLE where the layer offers none). On failure both
// outputs are VK_NULL_HANDLE and nothing is left alive.
VkResult vkc_create_instance(PFN_vkGetInstanceProcAddr gipa, const vkc_instance_opts *o,
	VkInstance *inst, VkDebugUtilsMessengerEXT *messenger);
void vkc_destroy_instance(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDebugUtilsMessengerEXT messenger);
int vkc_layer_available(PFN_vkGetInstanceProcAddr gipa, const char *name);

// vkc_enumerate_devices writes up to *n physical devices to out and sets
// *n to how many it wrote (out NULL: how many there are).
VkResult vkc_enumerate_devices(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, uint32_t *n, VkPhysicalDevice *out);

// vkc_physical is everything vk reads about a physical device, in flat
// structs: properties and limits, memory types and heaps, the queue
// families' flags and queue counts, the subgroup properties and, on a Vulkan 1.3 device, the
// largest buffer it creates (maintenance4's maxBufferSize; 0 before 1.3).
#define VKC_MAX_FAMILIES 16
// vkc_coopmat is one VkCooperativeMatrixPropertiesKHR: the sizes, the
// VkComponentTypeKHR of A, B, C and the result, whether the sum saturates
// and the VkScopeKHR, as plain words (the system's headers may predate
// the extension).
typedef struct vkc_coopmat {
	uint32_t m, n, k, a, b, c, result, saturating, scope;
} vkc_coopmat;
#define VKC_MAX_COOPMAT 64

typedef struct vkc_physical {
	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceMemoryProperties mem;
	uint32_t family_count;
	VkQueueFlags family_flags[VKC_MAX_FAMILIES];
	uint32_t family_queues[VKC_MAX_FAMILIES];
	uint32_t subgroup_size, subgroup_stages, subgroup_ops;
	VkDeviceSize max_buffer_size;
	// features: the VKC_FEATURE_* bits the device offers (what
	// vkc_open_device may enable).
	uint32_t features;
	// coopmat: the cooperative-matrix configurations the device runs
	// (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR), the first
	// VKC_MAX_COOPMAT of them; none without VK_KHR_cooperative_matrix.
	uint32_t coopmat_count;
	vkc_coopmat coopmat[VKC_MAX_COOPMAT];
} vkc_physical;

// The optional features vk enables for element types other than 32 bits,
// as bits: shader arithmetic (VkPhysicalDeviceFeatures, and
// VkPhysicalDeviceShaderFloat16Int8Features) and storage-buffer access
// (VkPhysicalDevice16BitStorageFeatures, VkPhysicalDevice8BitStorageFeatures).
// The instance speaks Vulkan 1.1, so the 8-bit storage and float16/int8
// structs come from VK_KHR_8bit_storage and VK_KHR_shader_float16_int8,
// which are enabled with them (they are core from 1.2 and still offered).
#define VKC_FEATURE_FLOAT16 (1u << 0)
#define VKC_FEATURE_FLOAT64 (1u << 1)
#define VKC_FEATURE_INT8 (1u << 2)
#define VKC_FEATURE_INT16 (1u << 3)
#define VKC_FEATURE_INT64 (1u << 4)
#define VKC_FEATURE_STORAGE8 (1u << 5)
#define VKC_FEATURE_STORAGE16 (1u << 6)
#define VKC_FEATURE_UNIFORM_STORAGE8 (1u << 7)
#define VKC_FEATURE_UNIFORM_STORAGE16 (1u << 8)
#define VKC_FEATURE_INTEGER_DOT_PRODUCT (1u << 9)
// Cooperative matrices (VkPhysicalDeviceCooperativeMatrixFeaturesKHR's
// cooperativeMatrix, with VK_KHR_cooperative_matrix) and the Vulkan memory
// model (VkPhysicalDeviceVulkanMemoryModelFeatures' vulkanMemoryModel and
// vulkanMemoryModelDeviceScope, with VK_KHR_vulkan_memory_model), which
// every module using cooperative matrices declares.
#define VKC_FEATURE_COOPERATIVE_MATRIX (1u << 10)
#define VKC_FEATURE_VULKAN_MEMORY_MODEL (1u << 11)
void vkc_describe(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, vkc_physical *out);

// vkc_fns is the device-level function table: setup calls, then the hot path.
typedef struct vkc_fns {
	VkDevice dev;
	VkQueue queue;
	// cache is the device's pipeline cache (VK_NULL_HANDLE: none), passed
	// to every vkCreateComputePipelines; vkc_close_device destroys it.
	VkPipelineCache cache;
	PFN_vkCreatePipelineCache createPipelineCache;
	PFN_vkDestroyPipelineCache destroyPipelineCache;
	PFN_vkGetPipelineCacheData getPipelineCacheData;
	PFN_vkDestroyDevice destroyDevice;
	PFN_vkCreateShaderModule createShaderModule;
	PFN_vkDestroyShaderModule destroyShaderModule;
	PFN_vkCreateDescriptorSetLayout createSetLayout;
	PFN_vkDestroyDescriptorSetLayout destroySetLayout;
	PFN_vkCreatePipelineLayout createPipelineLayout;
	PFN_vkDestroyPipelineLayout destroyPipelineLayout;
	PFN_vkCreateComputePipelines createComputePipelines;
	PFN_vkDestroyPipeline destroyPipeline;
	PFN_vkCreateDescriptorPool createDescriptorPool;
	PFN_vkDestroyDescriptorPool destroyDescriptorPool;
	PFN_vkAllocateDescriptorSets allocateSets;
	PFN_vkFreeDescriptorSets freeSets;
	PFN_vkCreateCommandPool createCommandPool;
	PFN_vkDestroyCommandPool destroyCommandPool;
	PFN_vkAllocateCommandBuffers allocateCommandBuffers;
	PFN_vkFreeCommandBuffers freeCommandBuffers;
	PFN_vkCreateFence createFence;
	PFN_vkDestroyFence destroyFence;
	PFN_vkCreateQueryPool createQueryPool;
	PFN_vkDestroyQueryPool destroyQueryPool;
	PFN_vkCreateBuffer createBuffer;
	PFN_vkDestroyBuffer destroyBuffer;
	PFN_vkCreateBufferView createBufferView;
	PFN_vkDestroyBufferView destroyBufferView;
	PFN_vkGetBufferMemoryRequirements bufferRequirements;
	PFN_vkAllocateMemory allocateMemory;
	PFN_vkFreeMemory freeMemory;
	PFN_vkBindBufferMemory bindBufferMemory;
	PFN_vkMapMemory mapMemory;
	PFN_vkUnmapMemory unmapMemory;
	PFN_vkCmdBindPipeline bindPipeline;
	PFN_vkCmdBindDescriptorSets bindSets;
	PFN_vkCmdPushConstants pushConstants;
	PFN_vkCmdDispatch dispatch;
	PFN_vkCmdDispatchIndirect dispatchIndirect;
	PFN_vkCmdPipelineBarrier barrier;
	PFN_vkCmdCopyBuffer copyBuffer;
	PFN_vkCmdFillBuffer fillBuffer;
	PFN_vkCmdWriteTimestamp writeTimestamp;
	PFN_vkCmdResetQueryPool resetQueryPool;
	PFN_vkBeginCommandBuffer begin;
	PFN_vkEndCommandBuffer end;
	PFN_vkResetCommandBuffer reset;
	PFN_vkQueueSubmit submit;
	PFN_vkWaitForFences waitFences;
	PFN_vkResetFences resetFences;
	PFN_vkGetFenceStatus fenceStatus;
	PFN_vkUpdateDescriptorSets updateSets;
	PFN_vkGetQueryPoolResults queryResults;
	PFN_vkFlushMappedMemoryRanges flush;
	PFN_vkInvalidateMappedMemoryRanges invalidate;
	PFN_vkQueueWaitIdle queueWaitIdle;
} vkc_fns;

// vkc_open_device creates a device with one queue of family, the
// ext_count device extensions exts (none by default; VK_KHR_swapchain for
// presentation) and the VKC_FEATURE_* bits of features (a subset of what
// vkc_describe reported, with the extensions they come from), and fills f
// with its function table and queue. On a
// device used at Vulkan 1.3 (api) or later it enables maintenance4, which
// every such device supports and which a module needs to size its
// workgroup with LocalSizeId (glslc's choice for SPIR-V 1.6). On failure
// nothing is left alive.
VkResult vkc_open_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, uint32_t family, uint32_t features,
	uint32_t ext_count, const char *const *exts, uint32_t api, vkc_fns *f);
// vkc_create_pipeline_cache makes the device's pipeline cache, seeded with
// size bytes of data (0: empty), and installs it in f for every later
// pipeline creation. The caller has checked data's header.
VkResult vkc_create_pipeline_cache(vkc_fns *f, const void *data, size_t size);
// vkc_pipeline_cache_data is vkGetPipelineCacheData on the device's cache:
// with out NULL it sets *size to the bytes the cache holds; else it writes
// up to *size bytes (VK_INCOMPLETE when that is not all of it).
VkResult vkc_pipeline_cache_data(const vkc_fns *f, size_t *size, void *out);
// vkc_close_device waits for the queue and destroys the pipeline cache and the device.
void vkc_close_device(vkc_fns *f);
// vkc_adopt_device fills f with the function table of dev, a device
// another program created on inst, and its queue (VK_NULL_HANDLE: queue
// index of family, fetched with vkGetDeviceQueue), creating nothing;
// vkc_close_device must never be called on it. 0 when a function is
// missing (f is then zeroed).
int vkc_adopt_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDevice dev, VkQueue queue, uint32_t family,
	uint32_t index, vkc_fns *f);
// vkc_release_adopted waits for the queue (the caller holds the queue
// lock) and forgets the device without destroying it.
void vkc_release_adopted(vkc_fns *f);

// REFUSE and REFUSE_R return from a call made with no function table or
// device: the device was closed. The Go side never makes one (Device's
// gate), so they are a guard, shared by cvk.c and present.c so that the
// two cannot drift apart.
#define REFUSE_R if (!f || !f->dev) return VK_ERROR_INITIALIZATION_FAILED
#define REFUSE if (!f || !f->dev) return

// Creates and destroys. Each create fills its Vulkan create info from the
// arguments; the destroys pass a NULL allocator.
VkResult vkc_create_shader_module(const vkc_fns *f, const uint32_t *code, size_t size, VkShaderModule *out);
void vkc_destroy_shader_module(const vkc_fns *f, VkShaderModule m);
// vkc_create_set_layout: bindings 0..bindings-1 for the compute stage, binding
// i of descriptor type types[i] (a VkDescriptorType).
VkResult vkc_create_set_layout(const vkc_fns *f, uint32_t bindings, const uint32_t *types, VkDescriptorSetLayout *out);
void vkc_destroy_set_layout(const vkc_fns *f, VkDescriptorSetLayout l);
// vkc_create_pipeline_layout: one set layout, push_size bytes of compute push constants (0: none).
VkResult vkc_create_pipeline_layout(const vkc_fns *f, VkDescriptorSetLayout set, uint32_t push_size, VkPipelineLayout *out);
void vkc_destroy_pipeline_layout(const vkc_fns *f, VkPipelineLayout l);
// vkc_create_compute_pipeline: the entry point named entry, spec_count
// specialization constants as entries describe them within data_size bytes
// of data.
VkResult vkc_create_compute_pipeline(const vkc_fns *f, VkShaderModule m, VkPipelineLayout layout, const char *entry,
	uint32_t spec_count, const VkSpecializationMapEntry *entries, const void *data, size_t data_size, VkPipeline *out);
void vkc_destroy_pipeline(const vkc_fns *f, VkPipeline p);
// vkc_create_descriptor_pool: max_sets sets, descriptors descriptors of each
// kind (storage buffer, uniform texel buffer) in all, sets freeable one by one.
VkResult vkc_create_descriptor_pool(const vkc_fns *f, uint32_t max_sets, uint32_t descriptors, VkDescriptorPool *out);
// vkc_create_texel_view: a view of range bytes of buffer from offset as
// texels of format (a VkFormat), what a texel binding reads or writes.
VkResult vkc_create_texel_view(const vkc_fns *f, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize range, uint32_t format, VkBufferView *out);
void vkc_destroy_buffer_view(const vkc_fns *f, VkBufferView v);
void vkc_destroy_descriptor_pool(const vkc_fns *f, VkDescriptorPool p);
VkResult vkc_allocate_set(const vkc_fns *f, VkDescriptorPool p, VkDescriptorSetLayout layout, VkDescriptorSet *out);
void vkc_free_set(const vkc_fns *f, VkDescriptorPool p, VkDescriptorSet s);
// vkc_create_command_pool: on family, buffers resettable one by one.
VkResult vkc_create_command_pool(const vkc_fns *f, uint32_t family, VkCommandPool *out);
void vkc_destroy_command_pool(const vkc_fns *f, VkCommandPool p);
VkResult vkc_allocate_command_buffer(const vkc_fns *f, VkCommandPool p, VkCommandBuffer *out);
void vkc_free_command_buffer(const vkc_fns *f, VkCommandPool p, VkCommandBuffer cb);
VkResult vkc_create_fence(const vkc_fns *f, VkFence *out);
void vkc_destroy_fence(const vkc_fns *f, VkFence fence);
VkResult vkc_create_timestamp_pool(const vkc_fns *f, uint32_t count, VkQueryPool *out);
void vkc_destroy_query_pool(const vkc_fns *f, VkQueryPool p);
// vkc_create_buffer: exclusive; storage, transfer source and destination,
// indirect, and the vertex, index and uniform usages another program's
// renderer needs to draw from a page vk hands out (adopt.go).
VkResult vkc_create_buffer(const vkc_fns *f, VkDeviceSize size, VkBuffer *out);
void vkc_destroy_buffer(const vkc_fns *f, VkBuffer b);
void vkc_buffer_requirements(const vkc_fns *f, VkBuffer b, VkMemoryRequirements *out);
VkResult vkc_allocate_memory(const vkc_fns *f, VkDeviceSize size, uint32_t type, VkDeviceMemory *out);
void vkc_free_memory(const vkc_fns *f, VkDeviceMemory m);
VkResult vkc_bind_buffer_memory(const vkc_fns *f, VkBuffer b, VkDeviceMemory m);
// vkc_map_memory maps the whole of m persistently.
VkResult vkc_map_memory(const vkc_fns *f, VkDeviceMemory m, void **out);
void vkc_unmap_memory(const vkc_fns *f, VkDeviceMemory m);

// vkc_cmd is one command buffer being recorded plus the scratch the Go side
// fills before each hot-path call (C memory: no Go pointer crosses).
typedef struct vkc_cmd {
	VkCommandBuffer cb;
	VkPipeline bound_pipeline;     // skip redundant binds within one recording
	VkDescriptorSet bound_set;
	VkPipelineLayout bound_layout; // the layout bound_push was pushed with
	uint32_t bound_push_size;      // push constants in effect (0: none known)
	uint8_t bound_push[256];
	// scratch for vkc_cmd_dispatch
	VkPipeline pipeline;
	VkPipelineLayout layout;
	VkDescriptorSet set;
	uint32_t groups[3];
	uint32_t push_size;
	uint32_t barrier; // non-zero: record the barrier below before the dispatch
	VkBuffer indirect;              // non-null: take the group counts from here
	VkDeviceSize indirect_offset;
	VkPipelineStageFlags src_stage, dst_stage;
	VkAccessFlags src_access, dst_access;
	uint8_t push[256];
} vkc_cmd;

VkResult vkc_cmd_begin(const vkc_fns *f, vkc_cmd *c, VkCommandBufferUsageFlags flags);
VkResult vkc_cmd_end(const vkc_fns *f, vkc_cmd *c);
VkResult vkc_cmd_reset(const vkc_fns *f, vkc_cmd *c);
void vkc_cmd_dispatch(const vkc_fns *f, vkc_cmd *c);
void vkc_cmd_barrier(const vkc_fns *f, vkc_cmd *c, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage,
	VkAccessFlags src_access, VkAccessFlags dst_access);
void vkc_cmd_copy(const vkc_fns *f, vkc_cmd *c, VkBuffer src, VkBuffer dst, VkDeviceSize src_off, VkDeviceSize dst_off, VkDeviceSize size);
void vkc_cmd_fill(const vkc_fns *f, vkc_cmd *c, VkBuffer dst, VkDeviceSize off, VkDeviceSize size, uint32_t word);
void vkc_cmd_timestamp(const vkc_fns *f, vkc_cmd *c, VkQueryPool pool, uint32_t query);
void vkc_cmd_reset_queries(const vkc_fns *f, vkc_cmd *c, VkQueryPool pool, uint32_t first, uint32_t count);

VkResult vkc_submit(const vkc_fns *f, VkCommandBuffer cb, VkFence fence);
// vkc_wait_fence polls the fence busily for up to spin_ns, then polls it
// yielding the processor between polls for up to yield_ns, then waits up to
// timeout_ns in vkWaitForFences.
VkResult vkc_wait_fence(const vkc_fns *f, VkFence fence, uint64_t spin_ns, uint64_t yield_ns, uint64_t timeout_ns);
VkResult vkc_reset_fence(const vkc_fns *f, VkFence fence);
VkResult vkc_fence_status(const vkc_fns *f, VkFence fence);
VkResult vkc_queue_wait_idle(const vkc_fns *f);
// vkc_submit_sync is an empty submission that waits on wait (at every
// stage; VK_NULL_HANDLE: none) and signals signal and fence (each may be
// VK_NULL_HANDLE). With vkQueueSubmit a wait orders every later
// submission on the queue and a signal covers every earlier one, so it
// hands the queue's order to and from another program's semaphores.
VkResult vkc_submit_sync(const vkc_fns *f, VkSemaphore wait, VkSemaphore signal, VkFence fence);

// vkc_ranges names up to VKC_MAX_BINDINGS buffer ranges for one set, each
// written as descriptor type type[i]; a texel binding is written with its
// view instead of its range.
// vkc_update_set takes it by value: no Go pointer is passed, so the Go
// side's copy stays on its stack (see UpdateSet).
typedef struct vkc_ranges {
	uint32_t count;
	VkBuffer buffer[VKC_MAX_BINDINGS];
	VkDeviceSize offset[VKC_MAX_BINDINGS];
	VkDeviceSize size[VKC_MAX_BINDINGS];
	VkBufferView view[VKC_MAX_BINDINGS];
	uint32_t type[VKC_MAX_BINDINGS]; // each binding's VkDescriptorType
} vkc_ranges;
void vkc_update_set(const vkc_fns *f, VkDescriptorSet set, vkc_ranges r);

VkResult vkc_query_results(const vkc_fns *f, VkQueryPool pool, uint32_t first, uint32_t count, uint64_t *out);
VkResult vkc_flush(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size);
VkResult vkc_invalidate(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size);

#endif
