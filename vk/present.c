// present.c - see present.h.
#include "present.h"
#include <string.h>

VkResult vkc_surface_support(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, uint32_t family,
		VkSurfaceKHR surface, VkBool32 *out) {
	*out = VK_FALSE;
	PFN_vkGetPhysicalDeviceSurfaceSupportKHR fn =
		(PFN_vkGetPhysicalDeviceSurfaceSupportKHR)gipa(inst, "vkGetPhysicalDeviceSurfaceSupportKHR");
	if (!fn) return VK_ERROR_EXTENSION_NOT_PRESENT;
	return fn(pd, family, surface, out);
}

void vkc_destroy_surface(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkSurfaceKHR surface) {
	PFN_vkDestroySurfaceKHR fn = (PFN_vkDestroySurfaceKHR)gipa(inst, "vkDestroySurfaceKHR");
	if (fn) fn(inst, surface, NULL);
}

VkResult vkc_surface_info_of(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, VkSurfaceKHR surface,
		vkc_surface_info *out) {
	memset(out, 0, sizeof *out);
	PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR caps =
		(PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR)gipa(inst, "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
	PFN_vkGetPhysicalDeviceSurfaceFormatsKHR formats =
		(PFN_vkGetPhysicalDeviceSurfaceFormatsKHR)gipa(inst, "vkGetPhysicalDeviceSurfaceFormatsKHR");
	PFN_vkGetPhysicalDeviceSurfacePresentModesKHR modes =
		(PFN_vkGetPhysicalDeviceSurfacePresentModesKHR)gipa(inst, "vkGetPhysicalDeviceSurfacePresentModesKHR");
	PFN_vkGetPhysicalDeviceFormatProperties props =
		(PFN_vkGetPhysicalDeviceFormatProperties)gipa(inst, "vkGetPhysicalDeviceFormatProperties");
	if (!caps || !formats || !modes || !props) return VK_ERROR_EXTENSION_NOT_PRESENT;
	VkResult r = caps(pd, surface, &out->caps);
	if (r != VK_SUCCESS) return r;
	out->format_count = VKC_MAX_SURFACE_FORMATS;
	r = formats(pd, surface, &out->format_count, out->formats);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) return r;
	for (uint32_t i = 0; i < out->format_count; i++) {
		VkFormatProperties fp;
		props(pd, out->formats[i].format, &fp);
		out->features[i] = fp.optimalTilingFeatures;
	}
	out->mode_count = VKC_MAX_PRESENT_MODES;
	r = modes(pd, surface, &out->mode_count, out->modes);
	if (r == VK_INCOMPLETE) r = VK_SUCCESS;
	return r;
}

VkResult vkc_image_max_extent(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, VkPhysicalDevice pd, VkFormat format,
		VkImageUsageFlags usage, VkExtent2D *out) {
	out->width = out->height = 0;
	PFN_vkGetPhysicalDeviceImageFormatProperties fn =
		(PFN_vkGetPhysicalDeviceImageFormatProperties)gipa(inst, "vkGetPhysicalDeviceImageFormatProperties");
	if (!fn) return VK_ERROR_INITIALIZATION_FAILED;
	VkImageFormatProperties props;
	VkResult r = fn(pd, format, VK_IMAGE_TYPE_2D, VK_IMAGE_TILING_OPTIMAL, usage, 0, &props);
	if (r != VK_SUCCESS) return r;
	out->width = props.maxExtent.width;
	out->height = props.maxExtent.height;
	return VK_SUCCESS;
}

#define LOADP(field, name) do { p->field = (void *)gdpa(f->dev, name); if (!p->field) return 0; } while (0)
int vkc_load_present(PFN_vkGetInstanceProcAddr gipa, VkInstance inst, const vkc_fns *f, vkc_present_fns *p) {
	memset(p, 0, sizeof *p);
	if (!f || !f->dev) return 0;
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
	if (!gdpa) return 0;
	LOADP(createSwapchain, "vkCreateSwapchainKHR");
	LOADP(destroySwapchain, "vkDestroySwapchainKHR");
	LOADP(swapchainImages, "vkGetSwapchainImagesKHR");
	LOADP(acquire, "vkAcquireNextImageKHR");
	LOADP(present, "vkQueuePresentKHR");
	LOADP(createSemaphore, "vkCreateSemaphore");
	LOADP(destroySemaphore, "vkDestroySemaphore");
	LOADP(createImage, "vkCreateImage");
	LOADP(destroyImage, "vkDestroyImage");
	LOADP(imageRequirements, "vkGetImageMemoryRequirements");
	LOADP(bindImageMemory, "vkBindImageMemory");
	LOADP(copyBufferToImage, "vkCmdCopyBufferToImage");
	LOADP(copyImageToBuffer, "vkCmdCopyImageToBuffer");
	LOADP(blitImage, "vkCmdBlitImage");
	LOADP(clearColorImage, "vkCmdClearColorImage");
	return 1;
}
#undef LOADP

VkResult vkc_create_swapchain(const vkc_fns *f, const vkc_present_fns *p, VkSurfaceKHR surface, uint32_t min_images,
		VkFormat format, VkColorSpaceKHR space, uint32_t width, uint32_t height, VkImageUsageFlags usage,
		VkSurfaceTransformFlagBitsKHR transform, VkCompositeAlphaFlagBitsKHR alpha, VkPresentModeKHR mode,
		VkSwapchainKHR old, VkSwapchainKHR *out) {
	REFUSE_R;
	VkSwapchainCreateInfoKHR ci = { .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR, .surface = surface,
		.minImageCount = min_images, .imageFormat = format, .imageColorSpace = space,
		.imageExtent = { width, height }, .imageArrayLayers = 1, .imageUsage = usage,
		.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE, .preTransform = transform, .compositeAlpha = alpha,
		.presentMode = mode, .clipped = VK_TRUE, .oldSwapchain = old };
	return p->createSwapchain(f->dev, &ci, NULL, out);
}
void vkc_destroy_swapchain(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc) {
	REFUSE;
	p->destroySwapchain(f->dev, sc, NULL);
}

VkResult vkc_swapchain_images(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint32_t *n, VkImage *out) {
	REFUSE_R;
	return p->swapchainImages(f->dev, sc, n, out);
}

VkResult vkc_create_semaphore(const vkc_fns *f, const vkc_present_fns *p, VkSemaphore *out) {
	REFUSE_R;
	VkSemaphoreCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO };
	return p->createSemaphore(f->dev, &ci, NULL, out);
}
void vkc_destroy_semaphore(const vkc_fns *f, const vkc_present_fns *p, VkSemaphore s) {
	REFUSE;
	p->destroySemaphore(f->dev, s, NULL);
}

VkResult vkc_create_image(const vkc_fns *f, const vkc_present_fns *p, uint32_t width, uint32_t height, VkImage *out) {
	REFUSE_R;
	VkImageCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
		.format = VKC_SOURCE_FORMAT, .extent = { width, height, 1 }, .mipLevels = 1, .arrayLayers = 1,
		.samples = VK_SAMPLE_COUNT_1_BIT, .tiling = VK_IMAGE_TILING_OPTIMAL, .usage = VKC_SOURCE_USAGE,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE, .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED };
	return p->createImage(f->dev, &ci, NULL, out);
}
void vkc_destroy_image(const vkc_fns *f, const vkc_present_fns *p, VkImage img) {
	REFUSE;
	p->destroyImage(f->dev, img, NULL);
}
void vkc_image_requirements(const vkc_fns *f, const vkc_present_fns *p, VkImage img, VkMemoryRequirements *out) {
	memset(out, 0, sizeof *out);
	REFUSE;
	p->imageRequirements(f->dev, img, out);
}
VkResult vkc_bind_image_memory(const vkc_fns *f, const vkc_present_fns *p, VkImage img, VkDeviceMemory mem) {
	REFUSE_R;
	return p->bindImageMemory(f->dev, img, mem, 0);
}

VkResult vkc_acquire(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint64_t timeout_ns, VkSemaphore sem,
		uint32_t *index) {
	REFUSE_R;
	return p->acquire(f->dev, sc, timeout_ns, sem, VK_NULL_HANDLE, index);
}

// image_barrier records one layout transition of a whole colour image.
static void image_barrier(const vkc_fns *f, VkCommandBuffer cb, VkImage img, VkImageLayout from, VkImageLayout to,
		VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
	VkImageMemoryBarrier b = { .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = src_access,
		.dstAccessMask = dst_access, .oldLayout = from, .newLayout = to,
		.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = img,
		.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 } };
	f->barrier(cb, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

void vkc_cmd_frame_copy(const vkc_fns *f, const vkc_present_fns *p, VkCommandBuffer cb, const vkc_frame_copy *x) {
	if (!f || !f->dev) return; // the device was closed
	const VkPipelineStageFlags T = VK_PIPELINE_STAGE_TRANSFER_BIT;
	const VkImageSubresourceLayers layer = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 };
	// The pixels were written by earlier kernels or copies.
	VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT };
	f->barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | T, T, 0, 1, &mb, 0, NULL, 0, NULL);
	// Pixels into the source image: its old contents (the last frame's,
	// which that frame's blit read before this) do not matter.
	image_barrier(f, cb, x->source, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, T, 0, T,
		VK_ACCESS_TRANSFER_WRITE_BIT);
	VkBufferImageCopy bic = { .bufferOffset = x->src_off, .bufferRowLength = x->src_w, .bufferImageHeight = x->src_h,
		.imageSubresource = layer, .imageExtent = { x->src_w, x->src_h, 1 } };
	p->copyBufferToImage(cb, x->src, x->source, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &bic);
	image_barrier(f, cb, x->source, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, T,
		VK_ACCESS_TRANSFER_WRITE_BIT, T, VK_ACCESS_TRANSFER_READ_BIT);
	// The swapchain image: its wait semaphore was waited on at the transfer
	// stage, so the transition is ordered after the acquire.
	image_barrier(f, cb, x->target, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, T, 0, T,
		VK_ACCESS_TRANSFER_WRITE_BIT);
	VkClearColorValue black = { .float32 = { 0, 0, 0, 1 } };
	VkImageSubresourceRange range = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 };
	p->clearColorImage(cb, x->target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &black, 1, &range);
	VkMemoryBarrier waw = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT };
	f->barrier(cb, T, T, 0, 1, &waw, 0, NULL, 0, NULL);
	// Scale to fit, keeping the aspect ratio, centred.
	uint64_t w = x->dst_w, h = (uint64_t)x->dst_w * x->src_h / x->src_w;
	if (h > x->dst_h) {
		h = x->dst_h;
		w = (uint64_t)x->dst_h * x->src_w / x->src_h;
	}
	if (w == 0) w = 1;
	if (h == 0) h = 1;
	int32_t x0 = (int32_t)((x->dst_w - w) / 2), y0 = (int32_t)((x->dst_h - h) / 2);
	VkImageBlit blit = { .srcSubresource = layer, .srcOffsets = { { 0, 0, 0 }, { (int32_t)x->src_w, (int32_t)x->src_h, 1 } },
		.dstSubresource = layer, .dstOffsets = { { x0, y0, 0 }, { x0 + (int32_t)w, y0 + (int32_t)h, 1 } } };
	p->blitImage(cb, x->source, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, x->target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
		&blit, VK_FILTER_NEAREST);
	if (x->shot) {
		image_barrier(f, cb, x->target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, T,
			VK_ACCESS_TRANSFER_WRITE_BIT, T, VK_ACCESS_TRANSFER_READ_BIT);
		VkBufferImageCopy back = { .bufferOffset = x->shot_off, .bufferRowLength = x->dst_w, .bufferImageHeight = x->dst_h,
			.imageSubresource = layer, .imageExtent = { x->dst_w, x->dst_h, 1 } };
		p->copyImageToBuffer(cb, x->target, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, x->shot, 1, &back);
		image_barrier(f, cb, x->target, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, T, 0,
			VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0);
	} else {
		image_barrier(f, cb, x->target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, T,
			VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0);
	}
}

VkResult vkc_submit_frame(const vkc_fns *f, VkCommandBuffer cb, VkSemaphore wait, VkSemaphore signal, VkFence fence) {
	REFUSE_R;
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1, .pWaitSemaphores = &wait,
		.pWaitDstStageMask = &stage, .commandBufferCount = 1, .pCommandBuffers = &cb, .signalSemaphoreCount = 1,
		.pSignalSemaphores = &signal };
	return f->submit(f->queue, 1, &si, fence);
}

VkResult vkc_queue_present(const vkc_fns *f, const vkc_present_fns *p, VkSwapchainKHR sc, uint32_t index, VkSemaphore wait) {
	REFUSE_R;
	VkPresentInfoKHR pi = { .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR, .waitSemaphoreCount = 1, .pWaitSemaphores = &wait,
		.swapchainCount = 1, .pSwapchains = &sc, .pImageIndices = &index };
	return p->present(f->queue, &pi);
}
