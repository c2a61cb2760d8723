// cvk.c - see cvk.h.
#include "cvk.h"
#if defined(_WIN32)
#include <windows.h>
#define yield_processor() SwitchToThread()
#else
#include <dlfcn.h>
#include <sched.h>
#define yield_processor() sched_yield()
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "_cgo_export.h"

// vkc_load opens the system's Vulkan loader by its versioned name (the
// unversioned libvulkan.so comes only with the -dev package on Linux).
PFN_vkGetInstanceProcAddr vkc_load(const char **err) {
	PFN_vkGetInstanceProcAddr f = NULL;
#if defined(_WIN32)
	HMODULE lib = LoadLibraryA("vulkan-1.dll");
	if (!lib) {
		*err = "cannot load vulkan-1.dll";
		return NULL;
	}
	f = (PFN_vkGetInstanceProcAddr)(void (*)(void))GetProcAddress(lib, "vkGetInstanceProcAddr");
	if (!f) *err = "vulkan-1.dll exports no vkGetInstanceProcAddr";
#else
	static const char *const names[] = {
#if defined(__APPLE__)
		"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib",
#else
		"libvulkan.so.1",
#endif
	};
	void *lib = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*err = dlerror();
		return NULL;
	}
	void *sym = dlsym(lib, "vkGetInstanceProcAddr");
	memcpy(&f, &sym, sizeof f); // ISO C has no object-to-function pointer cast
	if (!f) *err = "the Vulkan loader exports no vkGetInstanceProcAddr";
#endif
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
	*inst = VK_NULL_HANDLE;
	*messenger = VK_NULL_HANDLE;
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
	if (!create) return VK_ERROR_INITIALIZATION_FAILED;
	VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "vkc",
		.pEngineName = "vkc", .apiVersion = o->api_version };
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
	// Extensions the caller asks for (presentation) join the list above.
	const char *all[VKC_MAX_EXTENSIONS + 1];
	if (o->ext_count) {
		if (o->ext_count > VKC_MAX_EXTENSIONS) return VK_ERROR_EXTENSION_NOT_PRESENT;
		uint32_t n = 0;
		if (o->validation) all[n++] = exts[0];
		for (uint32_t i = 0; i < o->ext_count; i++) all[n++] = o->exts[i];
		ici.enabledExtensionCount = n;
		ici.ppEnabledExtensionNames = all;
	}
	// Handles are created into locals and handed out only once all of it
	// succeeded: a failed create leaves its output undefined, and the Go
	// side must never see (or destroy) such a handle.
	VkInstance in = VK_NULL_HANDLE;
	VkResult r = create(&ici, NULL, &in);
	if (r != VK_SUCCESS) return r;
	VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
	PFN_vkCreateDebugUtilsMessengerEXT cm =
		o->validation ? (PFN_vkCreateDebugUtilsMessengerEXT)gipa(in, "vkCreateDebugUtilsMessengerEXT") : NULL;
	if (cm) {
		mci.pNext = NULL;
		r = cm(in, &mci, NULL, &m);
		if (r != VK_SUCCESS) {
			// Validation was asked for and its messages would go nowhere:
			// fail, leaving nothing alive, rather than validate silently.
			vkc_destroy_instance(gipa, in, VK_NULL_HANDLE);
			return r;
		}
	}
	*inst = in;
	*messenger = m;
	return VK_SUCCESS;
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

VkResult vkc_enumerate_devices(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, uint32_t *n, VkPhysicalDevice *out) {
	PFN_vkEnumeratePhysicalDevices e = (PFN_vkEnumeratePhysicalDevices)gipa(inst, "vkEnumeratePhysicalDevices");
	if (!e) return VK_ERROR_INITIALIZATION_FAILED;
	return e(inst, n, out);
}

// device_extension reports whether pd offers the device extension name.
static int device_extension(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, const char *name) {
	PFN_vkEnumerateDeviceExtensionProperties e =
		(PFN_vkEnumerateDeviceExtensionProperties)gipa(inst, "vkEnumerateDeviceExtensionProperties");
	if (!e) return 0;
	uint32_t n = 0;
	if (e(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkExtensionProperties *props = calloc(n, sizeof *props);
	if (!props) return 0;
	int found = 0;
	if (e(pd, NULL, &n, props) >= 0) {
		for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].extensionName, name) == 0;
	}
	free(props);
	return found;
}

// VK_KHR_cooperative_matrix's names, where the system's Vulkan headers
// predate it (Debian 12's 1.3.239): the values of the registry.
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	uint32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
	VkBool32 saturatingAccumulation;
	uint32_t scope; // VkScopeKHR
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrix;
	VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice,
	uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#endif

// feature_chain is the chain of feature structs vk queries and enables;
// only the structs whose extension the device offers are linked.
typedef struct feature_chain {
	VkPhysicalDeviceFeatures2 f2;
	VkPhysicalDevice16BitStorageFeatures s16;
	VkPhysicalDevice8BitStorageFeaturesKHR s8;
	VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16i8;
	VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idp;
	VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop;
	VkPhysicalDeviceVulkanMemoryModelFeaturesKHR vmm;
	int has8, hasf16i8, hasidp, hascoop, hasvmm;
} feature_chain;

// link_onto appends s (any Vulkan struct) to the chain whose last pNext
// is *next.
static void **link_onto(void **next, void *s) {
	*next = s;
	return (void **)&((VkBaseOutStructure *)s)->pNext;
}

static void link_features(feature_chain *c, int has8, int hasf16i8, int hasidp, int hascoop, int hasvmm) {
	memset(c, 0, sizeof *c);
	c->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
	c->s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
	c->s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR;
	c->f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR;
	c->idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
	c->coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
	c->vmm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR;
	c->has8 = has8;
	c->hasf16i8 = hasf16i8;
	c->hasidp = hasidp;
	c->hascoop = hascoop;
	c->hasvmm = hasvmm;
	void **next = link_onto(&c->f2.pNext, &c->s16);
	if (has8) next = link_onto(next, &c->s8);
	if (hasf16i8) next = link_onto(next, &c->f16i8);
	if (hasidp) next = link_onto(next, &c->idp);
	if (hascoop) next = link_onto(next, &c->coop);
	if (hasvmm) link_onto(next, &c->vmm);
}

static uint32_t features_of(const feature_chain *c) {
	uint32_t f = 0;
	if (c->f2.features.shaderFloat64) f |= VKC_FEATURE_FLOAT64;
	if (c->f2.features.shaderInt16) f |= VKC_FEATURE_INT16;
	if (c->f2.features.shaderInt64) f |= VKC_FEATURE_INT64;
	if (c->s16.storageBuffer16BitAccess) f |= VKC_FEATURE_STORAGE16;
	if (c->s16.uniformAndStorageBuffer16BitAccess) f |= VKC_FEATURE_UNIFORM_STORAGE16;
	if (c->has8 && c->s8.storageBuffer8BitAccess) f |= VKC_FEATURE_STORAGE8;
	if (c->has8 && c->s8.uniformAndStorageBuffer8BitAccess) f |= VKC_FEATURE_UNIFORM_STORAGE8;
	if (c->hasf16i8 && c->f16i8.shaderFloat16) f |= VKC_FEATURE_FLOAT16;
	if (c->hasf16i8 && c->f16i8.shaderInt8) f |= VKC_FEATURE_INT8;
	if (c->hasidp && c->idp.shaderIntegerDotProduct) f |= VKC_FEATURE_INTEGER_DOT_PRODUCT;
	if (c->hascoop && c->coop.cooperativeMatrix) f |= VKC_FEATURE_COOPERATIVE_MATRIX;
	// Both or neither: with vulkanMemoryModel alone, every module's
	// Device-scope atomics (GLSL's atomicAdd on a buffer) are invalid
	// (VUID-RuntimeSpirv-vulkanMemoryModel-06265).
	if (c->hasvmm && c->vmm.vulkanMemoryModel && c->vmm.vulkanMemoryModelDeviceScope) f |= VKC_FEATURE_VULKAN_MEMORY_MODEL;
	return f;
}

// describe_features is the VKC_FEATURE_* bits pd offers.
static uint32_t describe_features(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd) {
	PFN_vkGetPhysicalDeviceFeatures2 gf2 =
		(PFN_vkGetPhysicalDeviceFeatures2)gipa(inst, "vkGetPhysicalDeviceFeatures2");
	if (!gf2) return 0;
	feature_chain c;
	link_features(&c, device_extension(gipa, inst, pd, VK_KHR_8BIT_STORAGE_EXTENSION_NAME),
		device_extension(gipa, inst, pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME),
		device_extension(gipa, inst, pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME),
		device_extension(gipa, inst, pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME),
		device_extension(gipa, inst, pd, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME));
	gf2(pd, &c.f2);
	return features_of(&c);
}

// describe_coopmat fills out's cooperative-matrix configurations: the
// first VKC_MAX_COOPMAT the device lists (VK_INCOMPLETE past them).
static void describe_coopmat(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, vkc_physical *out) {
	if (!device_extension(gipa, inst, pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) return;
	PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR g = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)gipa(
		inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
	if (!g) return;
	VkCooperativeMatrixPropertiesKHR props[VKC_MAX_COOPMAT];
	memset(props, 0, sizeof props);
	for (uint32_t i = 0; i < VKC_MAX_COOPMAT; i++) props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
	uint32_t n = VKC_MAX_COOPMAT;
	if (g(pd, &n, props) < 0) return;
	for (uint32_t i = 0; i < n && i < VKC_MAX_COOPMAT; i++) {
		const VkCooperativeMatrixPropertiesKHR *p = &props[i];
		out->coopmat[i] = (vkc_coopmat){ p->MSize, p->NSize, p->KSize, p->AType, p->BType, p->CType, p->ResultType,
			p->saturatingAccumulation, p->scope };
	}
	out->coopmat_count = n < VKC_MAX_COOPMAT ? n : VKC_MAX_COOPMAT;
}

void vkc_describe(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, vkc_physical *out) {
	memset(out, 0, sizeof *out);
	PFN_vkGetPhysicalDeviceProperties gp = (PFN_vkGetPhysicalDeviceProperties)gipa(inst, "vkGetPhysicalDeviceProperties");
	PFN_vkGetPhysicalDeviceMemoryProperties gm =
		(PFN_vkGetPhysicalDeviceMemoryProperties)gipa(inst, "vkGetPhysicalDeviceMemoryProperties");
	PFN_vkGetPhysicalDeviceQueueFamilyProperties gq =
		(PFN_vkGetPhysicalDeviceQueueFamilyProperties)gipa(inst, "vkGetPhysicalDeviceQueueFamilyProperties");
	if (gp) gp(pd, &out->props);
	if (gm) gm(pd, &out->mem);
	if (gq) {
		VkQueueFamilyProperties fams[VKC_MAX_FAMILIES];
		uint32_t n = VKC_MAX_FAMILIES;
		gq(pd, &n, fams);
		out->family_count = n;
		for (uint32_t i = 0; i < n; i++) {
			out->family_flags[i] = fams[i].queueFlags;
			out->family_queues[i] = fams[i].queueCount;
		}
	}
	PFN_vkGetPhysicalDeviceProperties2 gp2 =
		(PFN_vkGetPhysicalDeviceProperties2)gipa(inst, "vkGetPhysicalDeviceProperties2");
	if (!gp2) return;
	VkPhysicalDeviceSubgroupProperties sg = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES };
	VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg };
	VkPhysicalDeviceMaintenance4Properties m4 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES };
	if (out->props.apiVersion >= VK_API_VERSION_1_3) sg.pNext = &m4;
	gp2(pd, &p2);
	out->max_buffer_size = m4.maxBufferSize;
	out->subgroup_size = sg.subgroupSize;
	out->subgroup_stages = sg.supportedStages;
	out->subgroup_ops = sg.supportedOperations;
	out->features = describe_features(gipa, inst, pd);
	describe_coopmat(gipa, inst, pd, out);
}

#define LOAD(field, name) do { f->field = (void *)gdpa(dev, name); if (!f->field) return 0; } while (0)
static int load_device(PFN_vkGetDeviceProcAddr gdpa, VkDevice dev, vkc_fns *f) {
	LOAD(destroyDevice, "vkDestroyDevice");
	LOAD(createShaderModule, "vkCreateShaderModule");
	LOAD(destroyShaderModule, "vkDestroyShaderModule");
	LOAD(createSetLayout, "vkCreateDescriptorSetLayout");
	LOAD(destroySetLayout, "vkDestroyDescriptorSetLayout");
	LOAD(createPipelineLayout, "vkCreatePipelineLayout");
	LOAD(destroyPipelineLayout, "vkDestroyPipelineLayout");
	LOAD(createComputePipelines, "vkCreateComputePipelines");
	LOAD(destroyPipeline, "vkDestroyPipeline");
	LOAD(createDescriptorPool, "vkCreateDescriptorPool");
	LOAD(destroyDescriptorPool, "vkDestroyDescriptorPool");
	LOAD(allocateSets, "vkAllocateDescriptorSets");
	LOAD(freeSets, "vkFreeDescriptorSets");
	LOAD(createCommandPool, "vkCreateCommandPool");
	LOAD(destroyCommandPool, "vkDestroyCommandPool");
	LOAD(allocateCommandBuffers, "vkAllocateCommandBuffers");
	LOAD(freeCommandBuffers, "vkFreeCommandBuffers");
	LOAD(createFence, "vkCreateFence");
	LOAD(destroyFence, "vkDestroyFence");
	LOAD(createQueryPool, "vkCreateQueryPool");
	LOAD(destroyQueryPool, "vkDestroyQueryPool");
	LOAD(createBuffer, "vkCreateBuffer");
	LOAD(destroyBuffer, "vkDestroyBuffer");
	LOAD(createBufferView, "vkCreateBufferView");
	LOAD(destroyBufferView, "vkDestroyBufferView");
	LOAD(bufferRequirements, "vkGetBufferMemoryRequirements");
	LOAD(allocateMemory, "vkAllocateMemory");
	LOAD(freeMemory, "vkFreeMemory");
	LOAD(bindBufferMemory, "vkBindBufferMemory");
	LOAD(mapMemory, "vkMapMemory");
	LOAD(unmapMemory, "vkUnmapMemory");
	LOAD(bindPipeline, "vkCmdBindPipeline");
	LOAD(bindSets, "vkCmdBindDescriptorSets");
	LOAD(pushConstants, "vkCmdPushConstants");
	LOAD(dispatch, "vkCmdDispatch");
	LOAD(dispatchIndirect, "vkCmdDispatchIndirect");
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
	LOAD(createPipelineCache, "vkCreatePipelineCache");
	LOAD(destroyPipelineCache, "vkDestroyPipelineCache");
	LOAD(getPipelineCacheData, "vkGetPipelineCacheData");
	return 1;
}
#undef LOAD

VkResult vkc_open_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, uint32_t family, uint32_t features,
		uint32_t ext_count, const char *const *exts, uint32_t api, vkc_fns *f) {
	memset(f, 0, sizeof *f);
	PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(inst, "vkCreateDevice");
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
	if (!create || !gdpa) return VK_ERROR_INITIALIZATION_FAILED;
	float priority = 1;
	VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = family,
		.queueCount = 1, .pQueuePriorities = &priority };
	// The features asked for, in the structs that carry them, with the
	// extensions those structs come from.
	feature_chain c;
	int need8 = (features & (VKC_FEATURE_STORAGE8 | VKC_FEATURE_UNIFORM_STORAGE8)) != 0;
	int needf16i8 = (features & (VKC_FEATURE_FLOAT16 | VKC_FEATURE_INT8)) != 0;
	int needidp = (features & VKC_FEATURE_INTEGER_DOT_PRODUCT) != 0;
	int needcoop = (features & VKC_FEATURE_COOPERATIVE_MATRIX) != 0;
	int needvmm = (features & VKC_FEATURE_VULKAN_MEMORY_MODEL) != 0;
	link_features(&c, need8, needf16i8, needidp, needcoop, needvmm);
	c.f2.features.shaderFloat64 = (features & VKC_FEATURE_FLOAT64) != 0;
	c.f2.features.shaderInt16 = (features & VKC_FEATURE_INT16) != 0;
	c.f2.features.shaderInt64 = (features & VKC_FEATURE_INT64) != 0;
	c.s16.storageBuffer16BitAccess = (features & VKC_FEATURE_STORAGE16) != 0;
	c.s16.uniformAndStorageBuffer16BitAccess = (features & VKC_FEATURE_UNIFORM_STORAGE16) != 0;
	c.s8.storageBuffer8BitAccess = (features & VKC_FEATURE_STORAGE8) != 0;
	c.s8.uniformAndStorageBuffer8BitAccess = (features & VKC_FEATURE_UNIFORM_STORAGE8) != 0;
	c.f16i8.shaderFloat16 = (features & VKC_FEATURE_FLOAT16) != 0;
	c.f16i8.shaderInt8 = (features & VKC_FEATURE_INT8) != 0;
	c.idp.shaderIntegerDotProduct = (features & VKC_FEATURE_INTEGER_DOT_PRODUCT) != 0;
	c.coop.cooperativeMatrix = needcoop;
	c.vmm.vulkanMemoryModel = needvmm;
	c.vmm.vulkanMemoryModelDeviceScope = needvmm;
	if (ext_count > VKC_MAX_EXTENSIONS) return VK_ERROR_INITIALIZATION_FAILED;
	const char *all[VKC_MAX_EXTENSIONS + 5];
	uint32_t n = 0;
	for (uint32_t i = 0; i < ext_count; i++) all[n++] = exts[i];
	if (need8) all[n++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
	if (needf16i8) all[n++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
	if (needidp) all[n++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
	if (needcoop) all[n++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
	if (needvmm) all[n++] = VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME;
	VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &c.f2,
		.queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
		.enabledExtensionCount = n, .ppEnabledExtensionNames = n ? all : NULL };
	// On a device used at Vulkan 1.3 or later, maintenance4 too (a module
	// sizing its workgroup with LocalSizeId needs it), at the chain's end.
	VkPhysicalDeviceMaintenance4Features m4 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
		.maintenance4 = VK_TRUE };
	if (api >= VK_API_VERSION_1_3) {
		VkBaseOutStructure *last = (VkBaseOutStructure *)&c.f2;
		while (last->pNext) last = last->pNext;
		last->pNext = (VkBaseOutStructure *)&m4;
	}
	VkDevice dev;
	VkResult r = create(pd, &dci, NULL, &dev);
	if (r != VK_SUCCESS) return r;
	PFN_vkGetDeviceQueue gq = (PFN_vkGetDeviceQueue)gdpa(dev, "vkGetDeviceQueue");
	if (!load_device(gdpa, dev, f) || !gq) {
		PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)gdpa(dev, "vkDestroyDevice");
		if (destroy) destroy(dev, NULL);
		memset(f, 0, sizeof *f);
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	f->dev = dev;
	gq(dev, family, 0, &f->queue);
	return VK_SUCCESS;
}

VkResult vkc_create_pipeline_cache(vkc_fns *f, const void *data, size_t size) {
	REFUSE_R;
	VkPipelineCacheCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
		.initialDataSize = data ? size : 0, .pInitialData = data };
	VkPipelineCache c = VK_NULL_HANDLE;
	VkResult r = f->createPipelineCache(f->dev, &ci, NULL, &c);
	if (r == VK_SUCCESS) f->cache = c;
	return r;
}

VkResult vkc_pipeline_cache_data(const vkc_fns *f, size_t *size, void *out) {
	REFUSE_R;
	if (!f->cache) { *size = 0; return VK_SUCCESS; }
	return f->getPipelineCacheData(f->dev, f->cache, size, out);
}

void vkc_close_device(vkc_fns *f) {
	if (!f || !f->dev) return;
	f->queueWaitIdle(f->queue);
	if (f->cache) {
		f->destroyPipelineCache(f->dev, f->cache, NULL);
		f->cache = VK_NULL_HANDLE;
	}
	f->destroyDevice(f->dev, NULL);
	f->dev = VK_NULL_HANDLE;
}

int vkc_adopt_device(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkDevice dev, VkQueue queue, uint32_t family,
		uint32_t index, vkc_fns *f) {
	memset(f, 0, sizeof *f);
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
	PFN_vkGetDeviceQueue gq = gdpa ? (PFN_vkGetDeviceQueue)gdpa(dev, "vkGetDeviceQueue") : NULL;
	if (!gq || !load_device(gdpa, dev, f)) {
		memset(f, 0, sizeof *f);
		return 0;
	}
	if (!queue) gq(dev, family, index, &queue);
	f->dev = dev;
	f->queue = queue;
	return 1;
}

void vkc_release_adopted(vkc_fns *f) {
	if (!f || !f->dev) return;
	f->queueWaitIdle(f->queue);
	f->dev = VK_NULL_HANDLE;
}

VkResult vkc_create_shader_module(const vkc_fns *f, const uint32_t *code, size_t size, VkShaderModule *out) {
	REFUSE_R;
	VkShaderModuleCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = size, .pCode = code };
	return f->createShaderModule(f->dev, &ci, NULL, out);
}
void vkc_destroy_shader_module(const vkc_fns *f, VkShaderModule m) { REFUSE; f->destroyShaderModule(f->dev, m, NULL); }

VkResult vkc_create_set_layout(const vkc_fns *f, uint32_t bindings, const uint32_t *types, VkDescriptorSetLayout *out) {
	REFUSE_R;
	VkDescriptorSetLayoutBinding b[VKC_MAX_BINDINGS];
	if (bindings > VKC_MAX_BINDINGS) return VK_ERROR_INITIALIZATION_FAILED;
	for (uint32_t i = 0; i < bindings; i++)
		b[i] = (VkDescriptorSetLayoutBinding){ .binding = i,
			.descriptorType = (VkDescriptorType)types[i],
			.descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
	VkDescriptorSetLayoutCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = bindings, .pBindings = bindings ? b : NULL };
	return f->createSetLayout(f->dev, &ci, NULL, out);
}
void vkc_destroy_set_layout(const vkc_fns *f, VkDescriptorSetLayout l) { REFUSE; f->destroySetLayout(f->dev, l, NULL); }

VkResult vkc_create_pipeline_layout(const vkc_fns *f, VkDescriptorSetLayout set, uint32_t push_size, VkPipelineLayout *out) {
	REFUSE_R;
	VkPushConstantRange push = { .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = push_size };
	VkPipelineLayoutCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
		.pSetLayouts = &set, .pushConstantRangeCount = push_size ? 1 : 0, .pPushConstantRanges = push_size ? &push : NULL };
	return f->createPipelineLayout(f->dev, &ci, NULL, out);
}
void vkc_destroy_pipeline_layout(const vkc_fns *f, VkPipelineLayout l) { REFUSE; f->destroyPipelineLayout(f->dev, l, NULL); }

VkResult vkc_create_compute_pipeline(const vkc_fns *f, VkShaderModule m, VkPipelineLayout layout, const char *entry,
		uint32_t spec_count, const VkSpecializationMapEntry *entries, const void *data, size_t data_size, VkPipeline *out) {
	REFUSE_R;
	if (spec_count > VKC_MAX_SPEC) return VK_ERROR_INITIALIZATION_FAILED;
	VkSpecializationInfo si = { .mapEntryCount = spec_count, .pMapEntries = entries, .dataSize = data_size, .pData = data };
	VkComputePipelineCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .layout = layout,
		.stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.module = m, .pName = entry, .pSpecializationInfo = spec_count ? &si : NULL } };
	return f->createComputePipelines(f->dev, f->cache, 1, &ci, NULL, out);
}
void vkc_destroy_pipeline(const vkc_fns *f, VkPipeline p) { REFUSE; f->destroyPipeline(f->dev, p, NULL); }

VkResult vkc_create_descriptor_pool(const vkc_fns *f, uint32_t max_sets, uint32_t descriptors, VkDescriptorPool *out) {
	REFUSE_R;
	VkDescriptorPoolSize sizes[4] = { { .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = descriptors },
		{ .type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = descriptors },
		{ .type = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, .descriptorCount = descriptors },
		{ .type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, .descriptorCount = descriptors } };
	VkDescriptorPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, .maxSets = max_sets, .poolSizeCount = 4, .pPoolSizes = sizes };
	return f->createDescriptorPool(f->dev, &ci, NULL, out);
}

VkResult vkc_create_texel_view(const vkc_fns *f, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize range, uint32_t format, VkBufferView *out) {
	REFUSE_R;
	VkBufferViewCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO, .buffer = buffer,
		.format = (VkFormat)format, .offset = offset, .range = range };
	return f->createBufferView(f->dev, &ci, NULL, out);
}
void vkc_destroy_buffer_view(const vkc_fns *f, VkBufferView v) { REFUSE; f->destroyBufferView(f->dev, v, NULL); }
void vkc_destroy_descriptor_pool(const vkc_fns *f, VkDescriptorPool p) { REFUSE; f->destroyDescriptorPool(f->dev, p, NULL); }

VkResult vkc_allocate_set(const vkc_fns *f, VkDescriptorPool p, VkDescriptorSetLayout layout, VkDescriptorSet *out) {
	REFUSE_R;
	VkDescriptorSetAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = p,
		.descriptorSetCount = 1, .pSetLayouts = &layout };
	return f->allocateSets(f->dev, &ai, out);
}
void vkc_free_set(const vkc_fns *f, VkDescriptorPool p, VkDescriptorSet s) { REFUSE; f->freeSets(f->dev, p, 1, &s); }

VkResult vkc_create_command_pool(const vkc_fns *f, uint32_t family, VkCommandPool *out) {
	REFUSE_R;
	VkCommandPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = family };
	return f->createCommandPool(f->dev, &ci, NULL, out);
}
void vkc_destroy_command_pool(const vkc_fns *f, VkCommandPool p) { REFUSE; f->destroyCommandPool(f->dev, p, NULL); }

VkResult vkc_allocate_command_buffer(const vkc_fns *f, VkCommandPool p, VkCommandBuffer *out) {
	REFUSE_R;
	VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = p,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1 };
	return f->allocateCommandBuffers(f->dev, &ai, out);
}
void vkc_free_command_buffer(const vkc_fns *f, VkCommandPool p, VkCommandBuffer cb) { REFUSE; f->freeCommandBuffers(f->dev, p, 1, &cb); }

VkResult vkc_create_fence(const vkc_fns *f, VkFence *out) {
	REFUSE_R;
	VkFenceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	return f->createFence(f->dev, &ci, NULL, out);
}
void vkc_destroy_fence(const vkc_fns *f, VkFence fence) { REFUSE; f->destroyFence(f->dev, fence, NULL); }

VkResult vkc_create_timestamp_pool(const vkc_fns *f, uint32_t count, VkQueryPool *out) {
	REFUSE_R;
	VkQueryPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = count };
	return f->createQueryPool(f->dev, &ci, NULL, out);
}
void vkc_destroy_query_pool(const vkc_fns *f, VkQueryPool p) { REFUSE; f->destroyQueryPool(f->dev, p, NULL); }

VkResult vkc_create_buffer(const vkc_fns *f, VkDeviceSize size, VkBuffer *out) {
	REFUSE_R;
	VkBufferCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_INDEX_BUFFER_BIT |
			VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE };
	return f->createBuffer(f->dev, &ci, NULL, out);
}
void vkc_destroy_buffer(const vkc_fns *f, VkBuffer b) { REFUSE; f->destroyBuffer(f->dev, b, NULL); }
void vkc_buffer_requirements(const vkc_fns *f, VkBuffer b, VkMemoryRequirements *out) {
	memset(out, 0, sizeof *out);
	REFUSE;
	f->bufferRequirements(f->dev, b, out);
}

VkResult vkc_allocate_memory(const vkc_fns *f, VkDeviceSize size, uint32_t type, VkDeviceMemory *out) {
	REFUSE_R;
	VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = size, .memoryTypeIndex = type };
	return f->allocateMemory(f->dev, &ai, NULL, out);
}
void vkc_free_memory(const vkc_fns *f, VkDeviceMemory m) { REFUSE; f->freeMemory(f->dev, m, NULL); }
VkResult vkc_bind_buffer_memory(const vkc_fns *f, VkBuffer b, VkDeviceMemory m) { REFUSE_R; return f->bindBufferMemory(f->dev, b, m, 0); }
VkResult vkc_map_memory(const vkc_fns *f, VkDeviceMemory m, void **out) { REFUSE_R; return f->mapMemory(f->dev, m, 0, VK_WHOLE_SIZE, 0, out); }
void vkc_unmap_memory(const vkc_fns *f, VkDeviceMemory m) { REFUSE; f->unmapMemory(f->dev, m); }

VkResult vkc_cmd_begin(const vkc_fns *f, vkc_cmd *c, VkCommandBufferUsageFlags flags) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	c->bound_pipeline = VK_NULL_HANDLE;
	c->bound_layout = VK_NULL_HANDLE;
	c->bound_push_size = 0;
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
	c->bound_layout = VK_NULL_HANDLE;
	c->bound_push_size = 0;
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
	// Push constants persist in the command buffer: the same bytes pushed
	// with the same layout need not be pushed again.
	if (c->push_size && (c->bound_layout != c->layout || c->bound_push_size != c->push_size ||
			memcmp(c->bound_push, c->push, c->push_size) != 0)) {
		f->pushConstants(c->cb, c->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, c->push_size, c->push);
		c->bound_layout = c->layout;
		c->bound_push_size = c->push_size;
		memcpy(c->bound_push, c->push, c->push_size);
	}
	if (c->indirect) f->dispatchIndirect(c->cb, c->indirect, c->indirect_offset);
	else f->dispatch(c->cb, c->groups[0], c->groups[1], c->groups[2]);
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

// now_ns is a monotonic clock for the spin below.
static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

VkResult vkc_wait_fence(const vkc_fns *f, VkFence fence, uint64_t spin_ns, uint64_t yield_ns, uint64_t timeout_ns) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	// Poll first: small submissions finish within microseconds, and a
	// blocking wait would put this thread to sleep and have the driver's
	// queue thread wake it (two futex calls and a context switch, most of
	// the cost of a one-launch submit on lavapipe, and at the mercy of the
	// scheduler's wake-up latency on a loaded machine). Busy polling
	// first, then polling that gives the processor away between polls
	// (the driver's own threads may need it), then sleeping.
	if (spin_ns || yield_ns) {
		uint64_t start = now_ns(), spin_until = start + spin_ns, until = spin_until + yield_ns;
		for (;;) {
			VkResult r = f->fenceStatus(f->dev, fence);
			if (r != VK_NOT_READY) return r;
			uint64_t now = now_ns();
			if (now >= until) break;
			if (now >= spin_until) yield_processor();
		}
	}
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

VkResult vkc_submit_sync(const vkc_fns *f, VkSemaphore wait, VkSemaphore signal, VkFence fence) {
	if (!f) return VK_ERROR_INITIALIZATION_FAILED; // the device was closed
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.waitSemaphoreCount = wait ? 1 : 0, .pWaitSemaphores = &wait, .pWaitDstStageMask = &stage,
		.signalSemaphoreCount = signal ? 1 : 0, .pSignalSemaphores = &signal };
	return f->submit(f->queue, 1, &si, fence);
}

void vkc_update_set(const vkc_fns *f, VkDescriptorSet set, vkc_ranges r) {
	if (!f) return; // the device was closed
	VkDescriptorBufferInfo bi[VKC_MAX_BINDINGS];
	VkWriteDescriptorSet w[VKC_MAX_BINDINGS];
	uint32_t n = r.count > VKC_MAX_BINDINGS ? VKC_MAX_BINDINGS : r.count;
	for (uint32_t i = 0; i < n; i++) {
		bi[i] = (VkDescriptorBufferInfo){ .buffer = r.buffer[i], .offset = r.offset[i], .range = r.size[i] };
		w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = i,
			.descriptorCount = 1, .descriptorType = (VkDescriptorType)r.type[i], .pBufferInfo = &bi[i] };
		if (r.type[i] == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER || r.type[i] == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER) {
			w[i].pBufferInfo = NULL;
			w[i].pTexelBufferView = &r.view[i];
		}
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
