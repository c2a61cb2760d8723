// present.h - the C layer of presentation: surfaces (created by the window
// system's library, destroyed here), swapchains, semaphores, the image a
// frame is copied into, the commands that copy a buffer's pixels into a
// swapchain image, and acquire, submit and present. Same rules as cvk.h:
// every Vulkan struct is built here from scalars and handles, and every
// call goes through a function pointer fetched from the loader or device.
#ifndef VKC_PRESENT_H
#define VKC_PRESENT_H
#include "cvk.h"

// Instance-level calls on a surface.
VkResult vkc_surface_support(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, uint32_t family,
	VkSurfaceKHR surface, VkBool32 *out);
void vkc_destroy_surface(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkSurfaceKHR surface);

// vkc_surface_info is what a swapchain is chosen from: the surface's
// capabilities, its formats (with the optimal-tiling features of each) and
// present modes.
#define VKC_MAX_SURFACE_FORMATS 64
#define VKC_MAX_PRESENT_MODES 16
typedef struct vkc_surface_info {
	VkSurfaceCapabilitiesKHR caps;
	uint32_t format_count;
	VkSurfaceFormatKHR formats[VKC_MAX_SURFACE_FORMATS];
	VkFormatFeatureFlags features[VKC_MAX_SURFACE_FORMATS];
	uint32_t mode_count;
	VkPresentModeKHR modes[VKC_MAX_PRESENT_MODES];
} vkc_surface_info;
VkResult vkc_surface_info_of(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, VkSurfaceKHR surface,
	vkc_surface_info *out);
// vkc_image_max_extent writes the largest extent a 2-D, optimal-tiling,
// single-sample image of format with usage (no create flags) can have on
// pd, as vkGetPhysicalDeviceImageFormatProperties reports it: what a
// swapchain's images and a frame's source image are bounded by.
VkResult vkc_image_max_extent(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, VkFormat format,
	VkImageUsageFlags usage, VkExtent2D *out);

// vkc_present_fns is the device-level table of VK_KHR_swapchain and the
// image calls presentation needs; loaded only on a device created with
// VK_KHR_swapchain.
typedef struct vkc_present_fns {
	PFN_vkCreateSwapchainKHR createSwapchain;
	PFN_vkDestroySwapchainKHR destroySwapchain;
	PFN_vkGetSwapchainImagesKHR swapchainImages;
	PFN_vkAcquireNextImageKHR acquire;
	PFN_vkQueuePresentKHR present;
	PFN_vkCreateSemaphore createSemaphore;
	PFN_vkDestroySemaphore destroySemaphore;
	PFN_vkCreateImage createImage;
	PFN_vkDestroyImage destroyImage;
	PFN_vkGetImageMemoryRequirements imageRequirements;
	PFN_vkBindImageMemory bindImageMemory;
	PFN_vkCmdCopyBufferToImage copyBufferToImage;
	PFN_vkCmdCopyImageToBuffer copyImageToBuffer;
	PFN_vkCmdBlitImage blitImage;
	PFN_vkCmdClearColorImage clearColorImage;
} vkc_present_fns;
// vkc_load_present fills p for f's device; 0 when a function is missing.
int vkc_load_present(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, const vkc_fns *f, vkc_present_fns *p);

// vkc_create_swapchain: exclusive sharing, one layer, clipped.
VkResult vkc_create_swapchain(const vkc_fns *f, const vkc_present_fns *p, VkSurfaceKHR surface, uint32_t min_images,
	VkFormat format, VkColorSpaceKHR space, uint32_t width, uint32_t height, VkImageUsageFlags usage,
	VkSurfaceTransformFlagBitsKHR transform, VkCompositeAlphaFlagBitsKHR alpha, VkPresentModeKHR mode,
	VkSwapchainKHR old, VkSwapchainKHR *out);
void vkc_destroy_swapchain(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc);
// vkc_swapchain_images writes up to *n images to out and sets *n.
VkResult vkc_swapchain_images(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint32_t *n, VkImage *out);
VkResult vkc_create_semaphore(const vkc_fns *f, const vkc_present_fns *p, VkSemaphore *out);
void vkc_destroy_semaphore(const vkc_fns *f, const vkc_present_fns *p, VkSemaphore s);
// vkc_create_image: a 2-D VKC_SOURCE_FORMAT image, optimal tiling, of
// VKC_SOURCE_USAGE: what a frame's pixels are copied into before they are
// scaled into the swapchain image.
#define VKC_SOURCE_FORMAT VK_FORMAT_R8G8B8A8_UNORM
#define VKC_SOURCE_USAGE (VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT)
VkResult vkc_create_image(const vkc_fns *f, const vkc_present_fns *p, uint32_t width, uint32_t height, VkImage *out);
void vkc_destroy_image(const vkc_fns *f, const vkc_present_fns *p, VkImage img);
void vkc_image_requirements(const vkc_fns *f, const vkc_present_fns *p, VkImage img, VkMemoryRequirements *out);
VkResult vkc_bind_image_memory(const vkc_fns *f, const vkc_present_fns *p, VkImage img, VkDeviceMemory mem);

// vkc_acquire signals sem when image *index is free to write.
VkResult vkc_acquire(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint64_t timeout_ns, VkSemaphore sem,
	uint32_t *index);

// vkc_frame_copy is one frame's commands: the pixels (src_w x src_h RGBA8
// texels at src_off, rows packed) are copied into source, which is blitted,
// scaled to fit and centred on black, into target (dst_w x dst_h); with a
// shot buffer the target is then copied into it (rows packed, in the
// swapchain's format) before it goes to the presentation engine.
typedef struct vkc_frame_copy {
	VkBuffer src;
	VkDeviceSize src_off;
	uint32_t src_w, src_h;
	VkImage source;
	VkImage target;
	uint32_t dst_w, dst_h;
	VkBuffer shot;
	VkDeviceSize shot_off;
} vkc_frame_copy;
void vkc_cmd_frame_copy(const vkc_fns *f, const vkc_present_fns *p, VkCommandBuffer cb, const vkc_frame_copy *x);

// vkc_submit_frame submits cb waiting on wait at the transfer stage and
// signalling signal and fence.
VkResult vkc_submit_frame(const vkc_fns *f, VkCommandBuffer cb, VkSemaphore wait, VkSemaphore signal, VkFence fence);
// vkc_queue_present presents image index of sc once wait is signalled.
VkResult vkc_queue_present(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint32_t index, VkSemaphore wait);

#endif
