// cvk.c - see cvk.h.
#include "cvk.h"
#include <dlfcn.h>
#include <string.h>
#include "_cgo_export.h"

PFN_vkGetInstanceProcAddr vkc_load(const char **err) {
	void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*err = dlerror();
		return NULL;
	}
	PFN_vkGetInstanceProcAddr f = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	if (!f) *err = dlerror();
	return f;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL vkc_debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
		VkDebugUtilsMessageTypeFlagsEXT type, const VkDebugUtilsMessengerCallbackDataEXT *d, void *user) {
	(void)type;
	vkcDebugMessage((uintptr_t)user, (int)sev, (char *)(d && d->pMessage ? d->pMessage : ""));
	return VK_FALSE;
}

int vkc_layer_available(PFN_vkGetInstanceProcAddr gipa, const char *name) {
	PFN_vkEnumerateInstanceLayerProperties enumerate =
		(PFN_vkEnumerateInstanceLayerProperties)gipa(NULL, "vkEnumerateInstanceLayerProperties");
	if (!enumerate) return 0;
	uint32_t n = 0;
	if (enumerate(&n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkLayerProperties props[64];
	if (n > 64) n = 64;
	VkResult r = enumerate(&n, props);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) return 0;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(props[i].layerName, name) == 0) return 1;
	return 0;
}

VkResult vkc_create_instance(PFN_vkGetInstanceProcAddr gipa, const vkc_instance_opts *o,
		VkInstance *inst, VkDebugUtilsMessengerEXT *messenger) {
	*messenger = VK_NULL_HANDLE;
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
	if (!create) return VK_ERROR_INITIALIZATION_FAILED;
	VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "vkc",
		.pEngineName = "vkc", .apiVersion = VK_API_VERSION_1_1 };
	const char *layers[] = { "VK_LAYER_KHRONOS_validation" };
	const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
	VkDebugUtilsMessengerCreateInfoEXT mci = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = vkc_debug_cb, .pUserData = (void *)o->user };
	VkValidationFeatureEnableEXT enables[] = { VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT };
	VkValidationFeaturesEXT feats = { .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
		.enabledValidationFeatureCount = 1, .pEnabledValidationFeatures = enables };
	if (o->sync_validation) mci.pNext = &feats;
	VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
	if (o->validation) {
		ici.pNext = &mci;
		ici.enabledLayerCount = 1;
		ici.ppEnabledLayerNames = layers;
		ici.enabledExtensionCount = 1;
		ici.ppEnabledExtensionNames = exts;
	}
	VkResult r = create(&ici, NULL, inst);
	if (r != VK_SUCCESS || !o->validation) return r;
	PFN_vkCreateDebugUtilsMessengerEXT cm =
		(PFN_vkCreateDebugUtilsMessengerEXT)gipa(*inst, "vkCreateDebugUtilsMessengerEXT");
	if (!cm) return VK_SUCCESS;
	mci.pNext = NULL;
	return cm(*inst, &mci, NULL, messenger);
}

void vkc_destroy_instance(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDebugUtilsMessengerEXT messenger) {
	if (messenger != VK_NULL_HANDLE) {
		PFN_vkDestroyDebugUtilsMessengerEXT dm =
			(PFN_vkDestroyDebugUtilsMessengerEXT)gipa(inst, "vkDestroyDebugUtilsMessengerEXT");
		if (dm) dm(inst, messenger, NULL);
	}
	PFN_vkDestroyInstance di = (PFN_vkDestroyInstance)gipa(inst, "vkDestroyInstance");
	if (di) di(inst, NULL);
}

void vkc_query_subgroup(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, vkc_subgroup *out) {
	memset(out, 0, sizeof *out);
	PFN_vkGetPhysicalDeviceProperties2 gp =
		(PFN_vkGetPhysicalDeviceProperties2)gipa(inst, "vkGetPhysicalDeviceProperties2");
	if (!gp) return;
	VkPhysicalDeviceSubgroupProperties sg = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES };
	VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg };
	gp(pd, &p2);
	out->size = sg.subgroupSize;
	out->stages = sg.supportedStages;
	out->ops = sg.supportedOperations;
}

#define LOAD(field, name) do { f->field = (void *)gdpa(dev, name); if (!f->field) return 0; } while (0)
int vkc_load_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDevice dev, VkQueue queue, vkc_fns *f) {
	memset(f, 0, sizeof *f);
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
	if (!gdpa) return 0;
	f->dev = dev;
	f->queue = queue;
	LOAD(bindPipeline, "vkCmdBindPipeline");
	LOAD(bindSets, "vkCmdBindDescriptorSets");
	LOAD(pushConstants, "vkCmdPushConstants");
	LOAD(dispatch, "vkCmdDispatch");
	LOAD(barrier, "vkCmdPipelineBarrier");
	LOAD(copyBuffer, "vkCmdCopyBuffer");
	LOAD(fillBuffer, "vkCmdFillBuffer");
	LOAD(writeTimestamp, "vkCmdWriteTimestamp");
	LOAD(resetQueryPool, "vkCmdResetQueryPool");
	LOAD(begin, "vkBeginCommandBuffer");
	LOAD(end, "vkEndCommandBuffer");
	LOAD(reset, "vkResetCommandBuffer");
	LOAD(submit, "vkQueueSubmit");
	LOAD(waitFences, "vkWaitForFences");
	LOAD(resetFences, "vkResetFences");
	LOAD(fenceStatus, "vkGetFenceStatus");
	LOAD(updateSets, "vkUpdateDescriptorSets");
	LOAD(queryResults, "vkGetQueryPoolResults");
	LOAD(flush, "vkFlushMappedMemoryRanges");
	LOAD(invalidate, "vkInvalidateMappedMemoryRanges");
	LOAD(queueWaitIdle, "vkQueueWaitIdle");
	return 1;
}

VkResult vkc_cmd_begin(const vkc_fns *f, vkc_cmd *c, VkCommandBufferUsageFlags flags) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	c->bound_pipeline = VK_NULL_HANDLE;
	c->bound_set = VK_NULL_HANDLE;
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = flags };
	return f->begin(c->cb, &bi);
}

VkResult vkc_cmd_end(const vkc_fns *f, vkc_cmd *c) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->end(c->cb);
}

VkResult vkc_cmd_reset(const vkc_fns *f, vkc_cmd *c) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	c->bound_pipeline = VK_NULL_HANDLE;
	c->bound_set = VK_NULL_HANDLE;
	return f->reset(c->cb, 0);
}

void vkc_cmd_barrier(const vkc_fns *f, vkc_cmd *c, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage,
		VkAccessFlags src_access, VkAccessFlags dst_access) {
	if (!f) return; // the device was closed
	VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access, .dstAccessMask = dst_access };
	f->barrier(c->cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vkc_cmd_dispatch(const vkc_fns *f, vkc_cmd *c) {
	if (!f) return; // the device was closed
	if (c->barrier) vkc_cmd_barrier(f, c, c->src_stage, c->dst_stage, c->src_access, c->dst_access);
	if (c->bound_pipeline != c->pipeline) {
		f->bindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipeline);
		c->bound_pipeline = c->pipeline;
		c->bound_set = VK_NULL_HANDLE;
	}
	if (c->bound_set != c->set) {
		f->bindSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->layout, 0, 1, &c->set, 0, NULL);
		c->bound_set = c->set;
	}
	if (c->push_size) f->pushConstants(c->cb, c->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, c->push_size, c->push);
	f->dispatch(c->cb, c->groups[0], c->groups[1], c->groups[2]);
}

void vkc_cmd_copy(const vkc_fns *f, vkc_cmd *c, VkBuffer src, VkBuffer dst, VkDeviceSize src_off, VkDeviceSize dst_off, VkDeviceSize size) {
	if (!f) return; // the device was closed
	VkBufferCopy r = { .srcOffset = src_off, .dstOffset = dst_off, .size = size };
	f->copyBuffer(c->cb, src, dst, 1, &r);
}

void vkc_cmd_fill(const vkc_fns *f, vkc_cmd *c, VkBuffer dst, VkDeviceSize off, VkDeviceSize size, uint32_t word) {
	if (!f) return; // the device was closed
	f->fillBuffer(c->cb, dst, off, size, word);
}

void vkc_cmd_timestamp(const vkc_fns *f, vkc_cmd *c, VkQueryPool pool, uint32_t query) {
	if (!f) return; // the device was closed
	f->writeTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
}

void vkc_cmd_reset_queries(const vkc_fns *f, vkc_cmd *c, VkQueryPool pool, uint32_t first, uint32_t count) {
	if (!f) return; // the device was closed
	f->resetQueryPool(c->cb, pool, first, count);
}

VkResult vkc_submit(const vkc_fns *f, VkCommandBuffer cb, VkFence fence) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = cb ? 1 : 0, .pCommandBuffers = &cb };
	return f->submit(f->queue, 1, &si, fence);
}

VkResult vkc_wait_fence(const vkc_fns *f, VkFence fence, uint64_t timeout_ns) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->waitFences(f->dev, 1, &fence, VK_TRUE, timeout_ns);
}

VkResult vkc_reset_fence(const vkc_fns *f, VkFence fence) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->resetFences(f->dev, 1, &fence);
}
VkResult vkc_fence_status(const vkc_fns *f, VkFence fence) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->fenceStatus(f->dev, fence);
}
VkResult vkc_queue_wait_idle(const vkc_fns *f) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->queueWaitIdle(f->queue);
}

void vkc_update_set(const vkc_fns *f, VkDescriptorSet set, const vkc_ranges *r) {
	if (!f) return; // the device was closed
	VkDescriptorBufferInfo bi[VKC_MAX_BINDINGS];
	VkWriteDescriptorSet w[VKC_MAX_BINDINGS];
	uint32_t n = r->count > VKC_MAX_BINDINGS ? VKC_MAX_BINDINGS : r->count;
	for (uint32_t i = 0; i < n; i++) {
		bi[i] = (VkDescriptorBufferInfo){ .buffer = r->buffer[i], .offset = r->offset[i], .range = r->size[i] };
		w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = i,
			.descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i] };
	}
	f->updateSets(f->dev, n, w, 0, NULL);
}

VkResult vkc_query_results(const vkc_fns *f, VkQueryPool pool, uint32_t first, uint32_t count, uint64_t *out) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	return f->queryResults(f->dev, pool, first, count, sizeof(uint64_t) * count, out, sizeof(uint64_t),
		VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

VkResult vkc_flush(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	VkMappedMemoryRange r = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = mem, .offset = off, .size = size };
	return f->flush(f->dev, 1, &r);
}

VkResult vkc_invalidate(const vkc_fns *f, VkDeviceMemory mem, VkDeviceSize off, VkDeviceSize size) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	VkMappedMemoryRange r = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = mem, .offset = off, .size = size };
	return f->invalidate(f->dev, 1, &r);
}
