// cvk.h - the thin C layer under package vk: loader, instance with the
// debug-utils messenger, and the hot-path calls (record a launch, copy,
// barrier, submit, fence wait) through function pointers fetched with
// vkGetDeviceProcAddr, so that no Go value crosses cgo per launch.
#ifndef VKC_CVK_H
#define VKC_CVK_H
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#include <stdint.h>

// vkc_load opens libvulkan.so.1 and returns vkGetInstanceProcAddr, or NULL
// with *err set to dlerror()'s text.
PFN_vkGetInstanceProcAddr vkc_load(const char **err);

// vkc_instance_opts carries what vkc_create_instance needs.
typedef struct vkc_instance_opts {
	int validation;      // enable VK_LAYER_KHRONOS_validation
	int sync_validation; // also enable synchronization validation
	uintptr_t user;      // Go handle passed to the message callback
} vkc_instance_opts;

VkResult vkc_create_instance(PFN_vkGetInstanceProcAddr gipa, const vkc_instance_opts *o,
	VkInstance *inst, VkDebugUtilsMessengerEXT *messenger);
void vkc_destroy_instance(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDebugUtilsMessengerEXT messenger);
int vkc_layer_available(PFN_vkGetInstanceProcAddr gipa, const char *name);

// vkc_subgroup reports the subgroup size and supported operations for compute.
typedef struct vkc_subgroup { uint32_t size, stages, ops; } vkc_subgroup;
void vkc_query_subgroup(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, vkc_subgroup *out);

// vkc_fns is the device-level function table of the hot path.
typedef struct vkc_fns {
	VkDevice dev;
	VkQueue queue;
	PFN_vkCmdBindPipeline bindPipeline;
	PFN_vkCmdBindDescriptorSets bindSets;
	PFN_vkCmdPushConstants pushConstants;
	PFN_vkCmdDispatch dispatch;
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

int vkc_load_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDevice dev, VkQueue queue, vkc_fns *f);

// vkc_cmd is one command buffer being recorded plus the scratch the Go side
// fills before each hot-path call (C memory: no Go pointer crosses).
typedef struct vkc_cmd {
	VkCommandBuffer cb;
	VkPipeline bound_pipeline;     // skip redundant binds within one recording
	VkDescriptorSet bound_set;
	// scratch for vkc_cmd_dispatch
	VkPipeline pipeline;
	VkPipelineLayout layout;
	VkDescriptorSet set;
	uint32_t groups[3];
	uint32_t push_size;
	uint32_t barrier; // non-zero: record the barrier below before the dispatch
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
VkResult vkc_wait_fence(const vkc_fns *f, VkFence fence, uint64_t timeout_ns);
VkResult vkc_reset_fence(const vkc_fns *f, VkFence fence);
VkResult vkc_fence_status(const vkc_fns *f, VkFence fence);
VkResult vkc_queue_wait_idle(const vkc_fns *f);

// vkc_ranges names up to VKC_MAX_BINDINGS storage-buffer ranges for one set.
#define VKC_MAX_BINDINGS 16
typedef struct vkc_ranges {
	uint32_t count;
	VkBuffer buffer[VKC_MAX_BINDINGS];
	VkDeviceSize offset[VKC_MAX_BINDINGS];
	VkDeviceSize size[VKC_MAX_BINDINGS];
} vkc_ranges;
void vkc_update_set(const vkc_fns *f, VkDescriptorSet set, const vkc_ranges *r);

VkResult vkc_query_results(const vkc_fns *f, VkQueryPool pool, uint32_t first, uint32_t count, uint64_t *out);
VkResult vkc_flush(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size);
VkResult vkc_invalidate(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size);

#endif
