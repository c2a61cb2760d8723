// Package glfwvk joins a GLFW window to Vulkan for vkc: the instance
// extensions GLFW needs for surfaces, and a function that creates the
// window's surface on the instance vkc makes, which is what
// vkc.WithPresentation (and vk.Instance.OpenPresentingDevice) take.
package glfwvk

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"
)

// ErrNoWindowSystem: GLFW could not start or open a window (no DISPLAY, a
// display that does not answer, no window system GLFW knows).
var ErrNoWindowSystem = errors.New("no window system")

// Init initializes GLFW and returns an error where it cannot. go-gl's
// glfw.Init reports a platform error (no DISPLAY, a display that does not
// answer) only to the log and returns nil, and the next GLFW call then
// panics with NotInitialized; Init sees that failure and returns it, with
// the message GLFW gave. The caller calls glfw.Terminate after a nil error.
func Init() error {
	return guard(func() error {
		if err := glfw.Init(); err != nil {
			return err
		}
		glfw.GetTime() // panics with NotInitialized where Init failed
		return nil
	})
}

// CreateWindow opens a window with no client API (Vulkan draws to it),
// resizable or not, and returns an error wherever GLFW fails: an error
// go-gl returns, a platform error it only logs (the window is then
// missing), or a panic it raises.
func CreateWindow(width, height int, title string, resizable bool) (*glfw.Window, error) {
	var win *glfw.Window
	err := guard(func() error {
		glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
		r := glfw.False
		if resizable {
			r = glfw.True
		}
		glfw.WindowHint(glfw.Resizable, r)
		w, err := glfw.CreateWindow(width, height, title, nil, nil)
		if err != nil {
			return err
		}
		if w == nil || w.Handle() == nil {
			return errors.New("GLFW made no window")
		}
		win = w
		return nil
	})
	return win, err
}

// guard runs GLFW calls and turns each way GLFW reports a failure into
// one error matching ErrNoWindowSystem: the error returned, a platform
// error go-gl only logs (caught from the standard logger, which is
// restored after), and a *glfw.Error panic (go-gl panics on errors it
// deems programming errors, NotInitialized among them). Any other panic
// goes on. Logged lines that come with no failure are logged again.
func guard(calls func() error) (err error) {
	var logged bytes.Buffer
	out, flags, prefix := log.Writer(), log.Flags(), log.Prefix()
	log.SetOutput(&logged)
	log.SetFlags(0)
	log.SetPrefix("")
	defer func() {
		log.SetOutput(out)
		log.SetFlags(flags)
		log.SetPrefix(prefix)
		if p := recover(); p != nil {
			gerr, ok := p.(*glfw.Error)
			if !ok {
				panic(p)
			}
			err = gerr
		}
		said := strings.TrimSpace(logged.String())
		switch {
		case err != nil:
			err = &windowError{said: said, err: err}
		case said != "":
			log.Print(said)
		}
	}()
	return calls()
}

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

// windowError is a GLFW failure: what GLFW logged, if anything (the
// specific cause: "X11: Failed to open display :99"), else the error it
// returned or panicked with. It matches ErrNoWindowSystem and unwraps to
// GLFW's error.
type windowError struct {
	said string
	err  error
}

func (e *windowError) Error() string {
	if e.said != "" {
		return e.said
	}
	return e.err.Error()
}

func (e *windowError) Unwrap() []error { return []error{ErrNoWindowSystem, e.err} }
