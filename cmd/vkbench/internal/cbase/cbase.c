// cbase.c - see cbase.h.
#include "cbase.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

// The entry points used, loaded through the loader rather than linked, so
// that a build needs no import library and no libvulkan.so symlink.
#define CB_INSTANCE_FNS(X) \
	X(DestroyInstance) X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties) \
	X(GetPhysicalDeviceMemoryProperties) X(GetPhysicalDeviceQueueFamilyProperties) X(CreateDevice) \
	X(GetDeviceProcAddr) X(GetPhysicalDeviceFeatures)
#define CB_DEVICE_FNS(X) \
	X(DestroyDevice) X(GetDeviceQueue) X(DeviceWaitIdle) X(CreateCommandPool) X(DestroyCommandPool) \
	X(AllocateCommandBuffers) X(FreeCommandBuffers) X(ResetCommandBuffer) X(BeginCommandBuffer) \
	X(EndCommandBuffer) X(CreateFence) X(DestroyFence) X(WaitForFences) X(ResetFences) X(QueueSubmit) \
	X(CreateBuffer) X(DestroyBuffer) X(GetBufferMemoryRequirements) X(AllocateMemory) X(FreeMemory) \
	X(BindBufferMemory) X(MapMemory) X(CreateShaderModule) X(DestroyShaderModule) \
	X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) \
	X(DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline) X(CreateDescriptorPool) \
	X(DestroyDescriptorPool) X(AllocateDescriptorSets) X(UpdateDescriptorSets) X(CmdBindPipeline) \
	X(CmdBindDescriptorSets) X(CmdPushConstants) X(CmdDispatch) X(CmdPipelineBarrier) X(CmdCopyBuffer) \
	X(CreateBufferView) X(DestroyBufferView)

typedef struct cb_fns {
#define CB_FIELD(name) PFN_vk##name name;
	CB_INSTANCE_FNS(CB_FIELD)
	CB_DEVICE_FNS(CB_FIELD)
#undef CB_FIELD
} cb_fns;

struct cbase_device {
	VkInstance inst;
	VkDebugUtilsMessengerEXT messenger;
	PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
	VkPhysicalDevice phys;
	VkPhysicalDeviceMemoryProperties memory;
	VkDevice dev;
	VkQueue queue;
	VkCommandPool pool;
	VkCommandBuffer util; // staging copies and clears
	VkFence fence;
	cb_fns fn;
	int int64; // shaderInt64 enabled (the wide axpy chain's 64-bit words)
	int live;
	int staged; // every buffer goes through staging copies, mapped or not
	int val_errors, val_warnings;
	char val_last[512];
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	char err[640]; // room for two device names
};

static PFN_vkGetInstanceProcAddr cb_gipa;

const char *cbase_load(void) {
	if (cb_gipa) return NULL;
#if defined(_WIN32)
	HMODULE lib = LoadLibraryA("vulkan-1.dll");
	if (!lib) return "cannot load vulkan-1.dll";
	cb_gipa = (PFN_vkGetInstanceProcAddr)(void (*)(void))GetProcAddress(lib, "vkGetInstanceProcAddr");
#else
	static const char *const names[] = {
#if defined(__APPLE__)
		"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib",
#else
		"libvulkan.so.1", "libvulkan.so",
#endif
	};
	void *lib = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) return dlerror();
	void *sym = dlsym(lib, "vkGetInstanceProcAddr");
	memcpy(&cb_gipa, &sym, sizeof cb_gipa); // ISO C has no object-to-function pointer cast
#endif
	if (!cb_gipa) return "the Vulkan loader exports no vkGetInstanceProcAddr";
	return NULL;
}

static int cb_fail(cbase_device *d, const char *what, VkResult r) {
	snprintf(d->err, sizeof d->err, "%s: VkResult %d", what, (int)r);
	return -1;
}

static int cb_failf(cbase_device *d, const char *msg) {
	snprintf(d->err, sizeof d->err, "%s", msg);
	return -1;
}

#define TRY(d, what, call) \
	do { \
		VkResult r_ = (call); \
		if (r_ != VK_SUCCESS) return cb_fail((d), (what), r_); \
	} while (0)

cbase_device *cbase_new(void) { return calloc(1, sizeof(cbase_device)); }
const char *cbase_error(const cbase_device *d) { return d->err; }
const char *cbase_device_name(const cbase_device *d) { return d->name; }
int cbase_has_int64(const cbase_device *d) { return d->int64; }

int cbase_live(const cbase_device *d) { return d->live; }
void cbase_set_staged(cbase_device *d, int staged) { d->staged = staged; }

void cbase_validation(const cbase_device *d, int *errors, int *warnings, char *last, size_t last_len) {
	*errors = d->val_errors;
	*warnings = d->val_warnings;
	snprintf(last, last_len, "%s", d->val_last);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL cb_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
		VkDebugUtilsMessageTypeFlagsEXT types, const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
	(void)types;
	cbase_device *d = user;
	if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) d->val_errors++;
	else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) d->val_warnings++;
	else return VK_FALSE;
	snprintf(d->val_last, sizeof d->val_last, "%s", data && data->pMessage ? data->pMessage : "");
	return VK_FALSE;
}

static int layer_present(const char *layer) {
	PFN_vkEnumerateInstanceLayerProperties enumerate =
		(PFN_vkEnumerateInstanceLayerProperties)cb_gipa(NULL, "vkEnumerateInstanceLayerProperties");
	uint32_t n = 0;
	if (!enumerate || enumerate(&n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkLayerProperties *props = calloc(n, sizeof *props);
	if (!props) return 0;
	int found = 0;
	VkResult r = enumerate(&n, props);
	if (r == VK_SUCCESS || r == VK_INCOMPLETE)
		for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].layerName, layer) == 0;
	free(props);
	return found;
}

static int pick_physical(cbase_device *d, uint32_t index, const char *name) {
	uint32_t n = 0;
	TRY(d, "vkEnumeratePhysicalDevices", d->fn.EnumeratePhysicalDevices(d->inst, &n, NULL));
	if (index >= n) {
		snprintf(d->err, sizeof d->err, "device index %u: the loader lists %u devices", index, n);
		return -1;
	}
	VkPhysicalDevice *all = calloc(n, sizeof *all);
	if (!all) return cb_failf(d, "out of host memory");
	VkResult r = d->fn.EnumeratePhysicalDevices(d->inst, &n, all);
	if ((r == VK_SUCCESS || r == VK_INCOMPLETE) && index < n) d->phys = all[index];
	free(all);
	if (!d->phys) return cb_fail(d, "vkEnumeratePhysicalDevices", r);
	VkPhysicalDeviceProperties props;
	d->fn.GetPhysicalDeviceProperties(d->phys, &props);
	snprintf(d->name, sizeof d->name, "%s", props.deviceName);
	if (name && *name && strcmp(name, d->name) != 0) {
		snprintf(d->err, sizeof d->err, "device %u is %s, not %s", index, d->name, name);
		return -1;
	}
	d->fn.GetPhysicalDeviceMemoryProperties(d->phys, &d->memory);
	return 0;
}

static int compute_family(cbase_device *d, uint32_t *family) {
	uint32_t n = 0;
	d->fn.GetPhysicalDeviceQueueFamilyProperties(d->phys, &n, NULL);
	VkQueueFamilyProperties *fams = calloc(n ? n : 1, sizeof *fams);
	if (!fams) return cb_failf(d, "out of host memory");
	d->fn.GetPhysicalDeviceQueueFamilyProperties(d->phys, &n, fams);
	int found = 0;
	for (uint32_t i = 0; i < n && !found; i++)
		if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			*family = i;
			found = 1;
		}
	free(fams);
	return found ? 0 : cb_failf(d, "the device has no compute queue");
}

int cbase_open(cbase_device *d, int validate, uint32_t index, const char *name) {
	if (!cb_gipa) return cb_failf(d, "cbase_load was not called");
	PFN_vkCreateInstance create_instance = (PFN_vkCreateInstance)cb_gipa(NULL, "vkCreateInstance");
	if (!create_instance) return cb_failf(d, "the loader has no vkCreateInstance");
	const char *layers[] = { "VK_LAYER_KHRONOS_validation" };
	const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
	if (validate && !layer_present(layers[0])) return cb_failf(d, "validation asked for, but VK_LAYER_KHRONOS_validation is not installed");
	VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "vkbench C baseline",
		.apiVersion = VK_API_VERSION_1_1 };
	VkDebugUtilsMessengerCreateInfoEXT mci = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = cb_on_message, .pUserData = d };
	VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
	if (validate) {
		ici.pNext = &mci; // also reports what instance creation itself says
		ici.enabledLayerCount = 1;
		ici.ppEnabledLayerNames = layers;
		ici.enabledExtensionCount = 1;
		ici.ppEnabledExtensionNames = exts;
	}
	TRY(d, "vkCreateInstance", create_instance(&ici, NULL, &d->inst));
#define CB_LOAD_INSTANCE(fname) \
	if (!(d->fn.fname = (PFN_vk##fname)cb_gipa(d->inst, "vk" #fname))) return cb_failf(d, "the loader has no vk" #fname);
	CB_INSTANCE_FNS(CB_LOAD_INSTANCE)
#undef CB_LOAD_INSTANCE
	if (validate) {
		PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
			(PFN_vkCreateDebugUtilsMessengerEXT)cb_gipa(d->inst, "vkCreateDebugUtilsMessengerEXT");
		d->destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)cb_gipa(d->inst, "vkDestroyDebugUtilsMessengerEXT");
		if (!create_messenger || !d->destroy_messenger) return cb_failf(d, "the loader has no debug-utils messenger");
		TRY(d, "vkCreateDebugUtilsMessengerEXT", create_messenger(d->inst, &mci, NULL, &d->messenger));
	}
	if (pick_physical(d, index, name)) return -1;
	uint32_t family = 0;
	if (compute_family(d, &family)) return -1;
	float priority = 1.0f;
	VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = family,
		.queueCount = 1, .pQueuePriorities = &priority };
	// shaderInt64 where offered, the one feature a chain's kernel may need
	// (the wide axpy: 64-bit words); vkc enables it too.
	VkPhysicalDeviceFeatures offered = { 0 }, enabled = { 0 };
	d->fn.GetPhysicalDeviceFeatures(d->phys, &offered);
	enabled.shaderInt64 = offered.shaderInt64;
	d->int64 = offered.shaderInt64 == VK_TRUE;
	VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
		.pEnabledFeatures = &enabled };
	TRY(d, "vkCreateDevice", d->fn.CreateDevice(d->phys, &dci, NULL, &d->dev));
#define CB_LOAD_DEVICE(fname) \
	if (!(d->fn.fname = (PFN_vk##fname)d->fn.GetDeviceProcAddr(d->dev, "vk" #fname))) return cb_failf(d, "the device has no vk" #fname);
	CB_DEVICE_FNS(CB_LOAD_DEVICE)
#undef CB_LOAD_DEVICE
	d->fn.GetDeviceQueue(d->dev, family, 0, &d->queue);
	VkCommandPoolCreateInfo cpi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = family };
	TRY(d, "vkCreateCommandPool", d->fn.CreateCommandPool(d->dev, &cpi, NULL, &d->pool));
	VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = d->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1 };
	TRY(d, "vkAllocateCommandBuffers", d->fn.AllocateCommandBuffers(d->dev, &cai, &d->util));
	VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	TRY(d, "vkCreateFence", d->fn.CreateFence(d->dev, &fci, NULL, &d->fence));
	return 0;
}

int cbase_close(cbase_device *d) {
	if (!d) return 0;
	if (d->live > 0) return d->live;
	if (d->dev) {
		d->fn.DeviceWaitIdle(d->dev);
		if (d->fence) d->fn.DestroyFence(d->dev, d->fence, NULL);
		if (d->pool) d->fn.DestroyCommandPool(d->dev, d->pool, NULL); // frees util
		d->fn.DestroyDevice(d->dev, NULL);
	}
	if (d->messenger) d->destroy_messenger(d->inst, d->messenger, NULL);
	if (d->inst && d->fn.DestroyInstance) d->fn.DestroyInstance(d->inst, NULL);
	d->fence = VK_NULL_HANDLE;
	d->pool = VK_NULL_HANDLE;
	d->util = VK_NULL_HANDLE;
	d->dev = VK_NULL_HANDLE;
	d->messenger = VK_NULL_HANDLE;
	d->inst = VK_NULL_HANDLE;
	return 0;
}

void cbase_free(cbase_device *d) { free(d); }

// ---- command buffers

static int submit_wait(cbase_device *d, VkCommandBuffer cb) {
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb };
	TRY(d, "vkQueueSubmit", d->fn.QueueSubmit(d->queue, 1, &si, d->fence));
	TRY(d, "vkWaitForFences", d->fn.WaitForFences(d->dev, 1, &d->fence, VK_TRUE, UINT64_MAX));
	TRY(d, "vkResetFences", d->fn.ResetFences(d->dev, 1, &d->fence));
	return 0;
}

static int begin(cbase_device *d, VkCommandBuffer cb, VkCommandBufferUsageFlags flags) {
	TRY(d, "vkResetCommandBuffer", d->fn.ResetCommandBuffer(cb, 0));
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = flags };
	TRY(d, "vkBeginCommandBuffer", d->fn.BeginCommandBuffer(cb, &bi));
	return 0;
}

static void memory_barrier(cbase_device *d, VkCommandBuffer cb, VkPipelineStageFlags src_stages, VkAccessFlags src,
		VkPipelineStageFlags dst_stages, VkAccessFlags dst) {
	VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst };
	d->fn.CmdPipelineBarrier(cb, src_stages, dst_stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

static int alloc_command_buffers(cbase_device *d, uint32_t n, VkCommandBuffer *out) {
	VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = d->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = n };
	TRY(d, "vkAllocateCommandBuffers", d->fn.AllocateCommandBuffers(d->dev, &cai, out));
	d->live += (int)n;
	return 0;
}

static void free_command_buffers(cbase_device *d, uint32_t n, VkCommandBuffer *cbs) {
	for (uint32_t i = 0; i < n; i++)
		if (cbs[i]) {
			d->fn.FreeCommandBuffers(d->dev, d->pool, 1, &cbs[i]);
			cbs[i] = VK_NULL_HANDLE;
			d->live--;
		}
}

// Every stage and access a later command of this program may use a buffer
// with: the second half of the barrier that ends each recorded piece of work,
// so the next submission (or the host, after the fence) sees its writes.
#define CB_LATER_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT)
#define CB_LATER_ACCESS \
	(VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | \
		VK_ACCESS_HOST_READ_BIT)

// ---- buffers

// A buffer lives in device-local memory. Where that memory is also
// host-visible (CPU drivers, unified memory) the host reads and writes it
// through the mapping, as a C program would; elsewhere through a staging
// copy outside the timed work.
typedef struct cb_buf {
	VkBuffer buf;
	VkDeviceMemory mem;
	void *map;
	VkDeviceSize size;
} cb_buf;

static int memory_type(const cbase_device *d, uint32_t allowed, VkMemoryPropertyFlags want) {
	for (uint32_t i = 0; i < d->memory.memoryTypeCount; i++)
		if ((allowed & (1u << i)) && (d->memory.memoryTypes[i].propertyFlags & want) == want) return (int)i;
	return -1;
}

static int buf_new(cbase_device *d, VkDeviceSize size, int host_only, cb_buf *b) {
	b->size = size;
	VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE };
	TRY(d, "vkCreateBuffer", d->fn.CreateBuffer(d->dev, &bi, NULL, &b->buf));
	d->live++;
	VkMemoryRequirements req;
	d->fn.GetBufferMemoryRequirements(d->dev, b->buf, &req);
	const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	const struct {
		VkMemoryPropertyFlags want;
		int map;
	} choices[] = { { local | mapped, 1 }, { local, 0 }, { mapped, 1 } };
	VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	int map = 0, tried = 0;
	for (int c = host_only ? 2 : 0; c < 3; c++) {
		int type = memory_type(d, req.memoryTypeBits, choices[c].want);
		if (type < 0) continue;
		tried = 1;
		VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
			.memoryTypeIndex = (uint32_t)type };
		r = d->fn.AllocateMemory(d->dev, &ai, NULL, &b->mem);
		if (r == VK_SUCCESS) {
			map = choices[c].map;
			break;
		}
		if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) break;
	}
	if (!tried) return cb_failf(d, "no memory type can hold a storage buffer");
	if (r != VK_SUCCESS) return cb_fail(d, "vkAllocateMemory", r);
	d->live++;
	TRY(d, "vkBindBufferMemory", d->fn.BindBufferMemory(d->dev, b->buf, b->mem, 0));
	if (map && (host_only || !d->staged)) TRY(d, "vkMapMemory", d->fn.MapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map));
	return 0;
}

static void buf_free(cbase_device *d, cb_buf *b) {
	if (b->buf) {
		d->fn.DestroyBuffer(d->dev, b->buf, NULL);
		d->live--;
	}
	if (b->mem) {
		d->fn.FreeMemory(d->dev, b->mem, NULL); // unmaps
		d->live--;
	}
	memset(b, 0, sizeof *b);
}

// staged_copy copies all of from into to on the device and waits.
static int staged_copy(cbase_device *d, cb_buf *from, cb_buf *to) {
	VkCommandBuffer cb = d->util;
	if (begin(d, cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)) return -1;
	memory_barrier(d, cb, CB_LATER_STAGES, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
		VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
	VkBufferCopy region = { .size = from->size };
	d->fn.CmdCopyBuffer(cb, from->buf, to->buf, 1, &region);
	memory_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, CB_LATER_STAGES, CB_LATER_ACCESS);
	TRY(d, "vkEndCommandBuffer", d->fn.EndCommandBuffer(cb));
	return submit_wait(d, cb);
}

// buf_write fills b from data (b->size bytes), or with zeros when data is NULL.
static int buf_write(cbase_device *d, cb_buf *b, const void *data) {
	if (b->map) {
		if (data) memcpy(b->map, data, b->size);
		else memset(b->map, 0, b->size);
		return 0;
	}
	cb_buf staging = { 0 };
	int rc = buf_new(d, b->size, 1, &staging);
	if (rc == 0) {
		if (data) memcpy(staging.map, data, b->size);
		else memset(staging.map, 0, b->size);
		rc = staged_copy(d, &staging, b);
	}
	buf_free(d, &staging);
	return rc;
}

static int buf_read(cbase_device *d, cb_buf *b, void *out) {
	if (b->map) {
		memcpy(out, b->map, b->size);
		return 0;
	}
	cb_buf staging = { 0 };
	int rc = buf_new(d, b->size, 1, &staging);
	if (rc == 0) rc = staged_copy(d, b, &staging);
	if (rc == 0) memcpy(out, staging.map, b->size);
	buf_free(d, &staging);
	return rc;
}

// ---- kernels

typedef struct cb_kernel {
	VkShaderModule module;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkPipeline pipeline;
	VkDescriptorPool pool;
	VkDescriptorSet set;
	VkBufferView views[4]; // of the bindings read as texels
} cb_kernel;

#define CB_MAX_BINDINGS 4

// kernel_new builds a compute pipeline for a module whose buffers are
// bindings 0..nbufs-1 of set 0 (storage buffers, or uniform texel buffers of
// R32G32B32A32_UINT texels viewing the whole buffer where their bit is set
// in texels) and whose push constants are push_bytes long, and one
// descriptor set pointing at bufs.
static int kernel_new(cbase_device *d, const void *spirv, size_t bytes, uint32_t nbufs, cb_buf *const *bufs,
		uint32_t texels, uint32_t push_bytes, cb_kernel *k) {
	if (bytes == 0 || bytes % 4 != 0) return cb_failf(d, "SPIR-V length is not a positive multiple of 4");
	if (nbufs > CB_MAX_BINDINGS) return cb_failf(d, "too many bindings");
	uint32_t *code = malloc(bytes); // pCode must be 4-byte aligned
	if (!code) return cb_failf(d, "out of host memory");
	memcpy(code, spirv, bytes);
	VkShaderModuleCreateInfo mi = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = code };
	VkResult r = d->fn.CreateShaderModule(d->dev, &mi, NULL, &k->module);
	free(code);
	if (r != VK_SUCCESS) return cb_fail(d, "vkCreateShaderModule", r);
	d->live++;
	VkDescriptorSetLayoutBinding bindings[CB_MAX_BINDINGS];
	for (uint32_t i = 0; i < nbufs; i++)
		bindings[i] = (VkDescriptorSetLayoutBinding){ .binding = i,
			.descriptorType = texels >> i & 1 ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
	VkDescriptorSetLayoutCreateInfo sli = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = nbufs, .pBindings = bindings };
	TRY(d, "vkCreateDescriptorSetLayout", d->fn.CreateDescriptorSetLayout(d->dev, &sli, NULL, &k->set_layout));
	d->live++;
	VkPushConstantRange push = { .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = push_bytes };
	VkPipelineLayoutCreateInfo pli = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
		.pSetLayouts = &k->set_layout, .pushConstantRangeCount = push_bytes ? 1u : 0u, .pPushConstantRanges = &push };
	TRY(d, "vkCreatePipelineLayout", d->fn.CreatePipelineLayout(d->dev, &pli, NULL, &k->layout));
	d->live++;
	VkComputePipelineCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.module = k->module, .pName = "main" },
		.layout = k->layout };
	TRY(d, "vkCreateComputePipelines", d->fn.CreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &k->pipeline));
	d->live++;
	VkDescriptorPoolSize sizes[2] = { { .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = nbufs },
		{ .type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = nbufs } };
	VkDescriptorPoolCreateInfo dpi = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
		.poolSizeCount = 2, .pPoolSizes = sizes };
	TRY(d, "vkCreateDescriptorPool", d->fn.CreateDescriptorPool(d->dev, &dpi, NULL, &k->pool));
	d->live++;
	VkDescriptorSetAllocateInfo dai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = k->pool,
		.descriptorSetCount = 1, .pSetLayouts = &k->set_layout };
	TRY(d, "vkAllocateDescriptorSets", d->fn.AllocateDescriptorSets(d->dev, &dai, &k->set));
	VkDescriptorBufferInfo infos[CB_MAX_BINDINGS];
	VkWriteDescriptorSet writes[CB_MAX_BINDINGS];
	for (uint32_t i = 0; i < nbufs; i++) {
		infos[i] = (VkDescriptorBufferInfo){ .buffer = bufs[i]->buf, .range = VK_WHOLE_SIZE };
		writes[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = k->set,
			.dstBinding = i, .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i] };
		if (texels >> i & 1) {
			VkBufferViewCreateInfo vi = { .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO, .buffer = bufs[i]->buf,
				.format = VK_FORMAT_R32G32B32A32_UINT, .range = VK_WHOLE_SIZE };
			TRY(d, "vkCreateBufferView", d->fn.CreateBufferView(d->dev, &vi, NULL, &k->views[i]));
			d->live++;
			writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
			writes[i].pBufferInfo = NULL;
			writes[i].pTexelBufferView = &k->views[i];
		}
	}
	d->fn.UpdateDescriptorSets(d->dev, nbufs, writes, 0, NULL);
	return 0;
}

static void kernel_free(cbase_device *d, cb_kernel *k) {
	for (int i = 0; i < CB_MAX_BINDINGS; i++)
		if (k->views[i]) {
			d->fn.DestroyBufferView(d->dev, k->views[i], NULL);
			d->live--;
		}
	if (k->pool) {
		d->fn.DestroyDescriptorPool(d->dev, k->pool, NULL); // frees the set
		d->live--;
	}
	if (k->pipeline) {
		d->fn.DestroyPipeline(d->dev, k->pipeline, NULL);
		d->live--;
	}
	if (k->layout) {
		d->fn.DestroyPipelineLayout(d->dev, k->layout, NULL);
		d->live--;
	}
	if (k->set_layout) {
		d->fn.DestroyDescriptorSetLayout(d->dev, k->set_layout, NULL);
		d->live--;
	}
	if (k->module) {
		d->fn.DestroyShaderModule(d->dev, k->module, NULL);
		d->live--;
	}
	memset(k, 0, sizeof *k);
}

static void bind_kernel(cbase_device *d, VkCommandBuffer cb, const cb_kernel *k, const void *push, uint32_t push_bytes) {
	d->fn.CmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
	d->fn.CmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
	d->fn.CmdPushConstants(cb, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
}

// ---- the axpy chain

struct cbase_chain {
	cbase_device *d;
	cb_buf x, y;
	cb_kernel kernel;
	VkCommandBuffer cbs[4]; // eager, batch (and record, either way), replay, bound replay
	uint32_t n, groups, k;
	float a;
};

enum { CB_EAGER, CB_BATCH, CB_REPLAY, CB_REPLAY_BOUND, CB_COUNT };

static void bind_chain(cbase_chain *c, VkCommandBuffer cb) {
	struct {
		float a;
		uint32_t n;
	} push = { c->a, c->n };
	bind_kernel(c->d, cb, &c->kernel, &push, sizeof push);
}

// record_launch records one launch: the dispatch, then a barrier on y so
// the next launch (or the host) reads what this one wrote. With bind set it
// first binds the pipeline and the set and pushes (a, n), as the plain
// program most people write does for every launch.
static void record_launch(cbase_chain *c, VkCommandBuffer cb, int bind) {
	cbase_device *d = c->d;
	if (bind) bind_chain(c, cb);
	d->fn.CmdDispatch(cb, c->groups, 1, 1);
	VkBufferMemoryBarrier bb = { .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT, .dstAccessMask = CB_LATER_ACCESS,
		.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
		.buffer = c->y.buf, .size = VK_WHOLE_SIZE };
	d->fn.CmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, CB_LATER_STAGES, 0, 0, NULL, 1, &bb, 0, NULL);
}

// record_chain records the k launches into cb. bound: bind the pipeline and
// the set and push (a, n) once at the start of the command buffer (they are
// the same for every launch, and stay bound across barriers), so each launch
// is a dispatch and its barrier; else bind and push before every launch.
static int record_chain(cbase_chain *c, VkCommandBuffer cb, VkCommandBufferUsageFlags flags, int bound) {
	if (begin(c->d, cb, flags)) return -1;
	if (bound) bind_chain(c, cb);
	for (uint32_t i = 0; i < c->k; i++) record_launch(c, cb, !bound);
	TRY(c->d, "vkEndCommandBuffer", c->d->fn.EndCommandBuffer(cb));
	return 0;
}

int cbase_chain_new(cbase_device *d, const void *spirv, size_t spirv_bytes, const float *x, uint32_t n,
		uint32_t groups, uint32_t k, cbase_chain **out) {
	*out = NULL;
	if (n == 0 || groups == 0 || k == 0) return cb_failf(d, "a chain needs n, groups and k above 0");
	cbase_chain *c = calloc(1, sizeof *c);
	if (!c) return cb_failf(d, "out of host memory");
	c->d = d;
	c->n = n;
	c->groups = groups;
	c->k = k;
	c->a = 1.0f;
	cb_buf *bufs[2] = { &c->x, &c->y };
	if (buf_new(d, (VkDeviceSize)n * 4, 0, &c->x) || buf_new(d, (VkDeviceSize)n * 4, 0, &c->y) ||
		buf_write(d, &c->x, x) || buf_write(d, &c->y, NULL) ||
		kernel_new(d, spirv, spirv_bytes, 2, bufs, 0, 8, &c->kernel) || alloc_command_buffers(d, CB_COUNT, c->cbs) ||
		record_chain(c, c->cbs[CB_REPLAY], 0, 0) || record_chain(c, c->cbs[CB_REPLAY_BOUND], 0, 1)) {
		cbase_chain_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

int cbase_chain_eager(cbase_chain *c) {
	cbase_device *d = c->d;
	VkCommandBuffer cb = c->cbs[CB_EAGER];
	for (uint32_t i = 0; i < c->k; i++) {
		if (begin(d, cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)) return -1;
		record_launch(c, cb, 1);
		TRY(d, "vkEndCommandBuffer", d->fn.EndCommandBuffer(cb));
		if (submit_wait(d, cb)) return -1;
	}
	return 0;
}

int cbase_chain_batched(cbase_chain *c, int bound) {
	if (record_chain(c, c->cbs[CB_BATCH], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, bound)) return -1;
	return submit_wait(c->d, c->cbs[CB_BATCH]);
}

int cbase_chain_record(cbase_chain *c, int bound) {
	return record_chain(c, c->cbs[CB_BATCH], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, bound);
}

int cbase_chain_replay(cbase_chain *c, int bound) {
	return submit_wait(c->d, c->cbs[bound ? CB_REPLAY_BOUND : CB_REPLAY]);
}
int cbase_chain_reset_y(cbase_chain *c) { return buf_write(c->d, &c->y, NULL); }
int cbase_chain_read_y(cbase_chain *c, float *out) { return buf_read(c->d, &c->y, out); }

void cbase_chain_free(cbase_chain *c) {
	if (!c) return;
	cbase_device *d = c->d;
	d->fn.DeviceWaitIdle(d->dev);
	free_command_buffers(d, CB_COUNT, c->cbs);
	kernel_free(d, &c->kernel);
	buf_free(d, &c->x);
	buf_free(d, &c->y);
	free(c);
}

// ---- device copy

struct cbase_copy {
	cbase_device *d;
	cb_buf src, dst;
	VkCommandBuffer cb;
};

int cbase_copy_new(cbase_device *d, const void *src, uint64_t bytes, cbase_copy **out) {
	*out = NULL;
	if (bytes == 0) return cb_failf(d, "a copy needs bytes above 0");
	cbase_copy *c = calloc(1, sizeof *c);
	if (!c) return cb_failf(d, "out of host memory");
	c->d = d;
	if (buf_new(d, bytes, 0, &c->src) || buf_new(d, bytes, 0, &c->dst) || buf_write(d, &c->src, src) ||
		buf_write(d, &c->dst, NULL) || alloc_command_buffers(d, 1, &c->cb) || begin(d, c->cb, 0)) {
		cbase_copy_free(c);
		return -1;
	}
	VkBufferCopy region = { .size = bytes };
	d->fn.CmdCopyBuffer(c->cb, c->src.buf, c->dst.buf, 1, &region);
	memory_barrier(d, c->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, CB_LATER_STAGES, CB_LATER_ACCESS);
	VkResult r = d->fn.EndCommandBuffer(c->cb);
	if (r != VK_SUCCESS) {
		cbase_copy_free(c);
		return cb_fail(d, "vkEndCommandBuffer", r);
	}
	*out = c;
	return 0;
}

int cbase_copy_run(cbase_copy *c) { return submit_wait(c->d, c->cb); }
int cbase_copy_clear_dst(cbase_copy *c) { return buf_write(c->d, &c->dst, NULL); }
int cbase_copy_read_dst(cbase_copy *c, void *out) { return buf_read(c->d, &c->dst, out); }

void cbase_copy_free(cbase_copy *c) {
	if (!c) return;
	cbase_device *d = c->d;
	d->fn.DeviceWaitIdle(d->dev);
	free_command_buffers(d, 1, &c->cb);
	buf_free(d, &c->src);
	buf_free(d, &c->dst);
	free(c);
}

// ---- host memcpy

struct cbase_memcpy {
	unsigned char *src, *dst;
	size_t n;
};

cbase_memcpy *cbase_memcpy_new(const void *src, size_t bytes) {
	cbase_memcpy *m = calloc(1, sizeof *m);
	if (!m) return NULL;
	m->n = bytes;
	m->src = malloc(bytes ? bytes : 1);
	m->dst = malloc(bytes ? bytes : 1);
	if (!m->src || !m->dst) {
		cbase_memcpy_free(m);
		return NULL;
	}
	memcpy(m->src, src, bytes);
	memset(m->dst, 0, bytes); // fault every page in before the clock runs
	return m;
}

void cbase_memcpy_run(cbase_memcpy *m) { memcpy(m->dst, m->src, m->n); }
void cbase_memcpy_read_dst(const cbase_memcpy *m, void *out) { memcpy(out, m->dst, m->n); }
void cbase_memcpy_clear_dst(cbase_memcpy *m) { memset(m->dst, 0, m->n); }

void cbase_memcpy_free(cbase_memcpy *m) {
	if (!m) return;
	free(m->src);
	free(m->dst);
	free(m);
}

// ---- sgemm (naive or blocked kernel)

struct cbase_sgemm {
	cbase_device *d;
	cb_buf a, b, c;
	cb_kernel kernel;
	VkCommandBuffer cb;
	uint32_t n;
};

int cbase_sgemm_new(cbase_device *d, const void *spirv, size_t spirv_bytes, uint32_t n, uint32_t tile_x,
		uint32_t tile_y, uint32_t texels, uint32_t push_words, const float *a, const float *b, cbase_sgemm **out) {
	*out = NULL;
	if (n == 0 || tile_x == 0 || tile_y == 0) return cb_failf(d, "an sgemm needs n and tiles above 0");
	if (push_words != 1 && push_words != 3) return cb_failf(d, "an sgemm pushes n once or three times");
	uint32_t push[3] = { n, n, n };
	cbase_sgemm *s = calloc(1, sizeof *s);
	if (!s) return cb_failf(d, "out of host memory");
	s->d = d;
	s->n = n;
	VkDeviceSize bytes = (VkDeviceSize)n * n * 4;
	cb_buf *bufs[3] = { &s->a, &s->b, &s->c };
	if (buf_new(d, bytes, 0, &s->a) || buf_new(d, bytes, 0, &s->b) || buf_new(d, bytes, 0, &s->c) ||
		buf_write(d, &s->a, a) || buf_write(d, &s->b, b) || buf_write(d, &s->c, NULL) ||
		kernel_new(d, spirv, spirv_bytes, 3, bufs, texels, 4 * push_words, &s->kernel) || alloc_command_buffers(d, 1, &s->cb) ||
		begin(d, s->cb, 0)) {
		cbase_sgemm_free(s);
		return -1;
	}
	bind_kernel(d, s->cb, &s->kernel, push, 4 * push_words);
	d->fn.CmdDispatch(s->cb, (uint32_t)(((uint64_t)n + tile_x - 1) / tile_x), (uint32_t)(((uint64_t)n + tile_y - 1) / tile_y), 1);
	memory_barrier(d, s->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, CB_LATER_STAGES, CB_LATER_ACCESS);
	VkResult r = d->fn.EndCommandBuffer(s->cb);
	if (r != VK_SUCCESS) {
		cbase_sgemm_free(s);
		return cb_fail(d, "vkEndCommandBuffer", r);
	}
	*out = s;
	return 0;
}

int cbase_sgemm_run(cbase_sgemm *s) { return submit_wait(s->d, s->cb); }
int cbase_sgemm_read_c(cbase_sgemm *s, float *out) { return buf_read(s->d, &s->c, out); }

void cbase_sgemm_free(cbase_sgemm *s) {
	if (!s) return;
	cbase_device *d = s->d;
	d->fn.DeviceWaitIdle(d->dev);
	free_command_buffers(d, 1, &s->cb);
	kernel_free(d, &s->kernel);
	buf_free(d, &s->a);
	buf_free(d, &s->b);
	buf_free(d, &s->c);
	free(s);
}
