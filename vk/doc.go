// Package vk is vkc's thin, unsafe layer over Vulkan and the only package
// that uses cgo or vulkan-go (wgpu-hal to the recorder's wgpu-core).
//
// Setup — the loader (libvulkan.so.1, loaded here because vulkan-go looks
// for the unversioned name only the -dev package ships), the instance with
// its validation messenger, devices, memory blocks, pipelines, descriptor
// pools, command pools, fences and timestamp queries — goes through
// vulkan-go, except where its 1.1.88 headers fall short (debug utils,
// validation features, subgroup properties), which is our own C in cvk.c.
//
// The hot path — recording a launch (bind, push, dispatch, barrier), copies,
// submit and fence waits — goes through function pointers fetched with
// vkGetDeviceProcAddr and one cgo call each, with arguments written into
// C-side scratch, so recording a launch allocates nothing in Go.
//
// Every object created is counted by kind (Device.Live) so tests can check
// that Close brought everything back to zero; every failing call returns a
// *Error naming the call and the VkResult, which matches ErrOutOfDeviceMemory
// or ErrDeviceLost with errors.Is.
package vk
