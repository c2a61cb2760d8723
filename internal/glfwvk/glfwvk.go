// Package glfwvk joins a GLFW window to Vulkan for vkc: the instance
// extensions GLFW needs for surfaces, and a function that creates the
// window's surface on the instance vkc makes, which is what
// vkc.WithPresentation (and vk.Instance.OpenPresentingDevice) take.
package glfwvk

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"
)

// Extensions are the instance extensions GLFW needs to make a surface for
// a window on this machine's window system (VK_KHR_surface and a
// platform's), or nil when it has none. glfw.Init must have succeeded.
func Extensions(win *glfw.Window) []string { return win.GetRequiredInstanceExtensions() }

// SurfaceFunc returns a function that creates win's Vulkan surface on the
// VkInstance it is given (as a uintptr) and returns the VkSurfaceKHR.
func SurfaceFunc(win *glfw.Window) func(instance uintptr) (uint64, error) {
	return func(instance uintptr) (uint64, error) {
		if instance == 0 {
			return 0, fmt.Errorf("glfwvk: no instance")
		}
		// CreateWindowSurface wants a typed pointer (it reads it back with
		// reflect); the VkInstance is C memory, not Go's.
		inst := (*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&instance)))
		// It returns the address of a Go variable holding the handle, as a
		// uintptr, which keeps nothing alive: with the collector off until
		// the handle is read, the variable cannot be freed and reused first.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		at, err := win.CreateWindowSurface(inst, nil)
		if err != nil {
			return 0, fmt.Errorf("glfwvk: %w", err)
		}
		return **(**uint64)(unsafe.Pointer(&at)), nil
	}
}
