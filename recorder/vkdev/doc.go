// Package vkdev is the recorder's Vulkan adapter: it implements
// recorder.Device (and, for a device opened on a window's surface,
// recorder.Presenter) on package vk, handing out vk's objects as the
// recorder's opaque handles and lowering vk's failures onto the recorder's
// sentinels.
//
// It is the twin of recorder/hostdev and the only package between the
// recorder and cgo: recorder, hostdev, capture and alloc build and test
// with CGO_ENABLED=0 because the Vulkan half lives here.
package vkdev
