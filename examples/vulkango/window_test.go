package main

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"testing"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/xvfb"
)

// With a display (DISPLAY's, or an Xvfb of the test's own), the program
// opens a window, presents vkc's colour strip for a few frames with its
// own copies waiting on vkc's semaphore, and the first frame's swapchain
// image, read back, holds exactly Go's ramp; the layer says nothing.
func TestTheWindowPresentsVkcsStrip(t *testing.T) {
	xvfb.Start(t)
	runtime.LockOSThread() // GLFW's calls stay on one thread
	defer runtime.UnlockOSThread()
	before, _ := validationMessages()
	var out bytes.Buffer
	require.NoError(t, runWindow(&out, true, 3))
	t.Log("\n" + out.String())
	assert.Contains(t, out.String(), "presented 3 frames\n")
	// lavapipe's swapchain images are transfer sources, so the image is
	// checked; a driver whose are not would print no such line.
	assert.Contains(t, out.String(), "the first frame's image holds vkc's strip: ok\n")
	n, msgs := validationMessages()
	assert.Equal(t, before, n, "%q", msgs)
}

// A window resized between frames gets a swapchain of its new size and
// vkc's strip computed for it, whether the program sees the new size
// before the frame (its framebuffer no longer matches) or only from the
// swapchain's results (lavapipe's present reports the old swapchain
// suboptimal or out of date, and the next frame makes a new one): the
// first frame from the new swapchain, read back, holds Go's ramp of the
// new width; the layer says nothing. (Xvfb has no window manager, so the
// resize the program asks for is the size the window gets.)
func TestTheWindowFollowsAResize(t *testing.T) {
	xvfb.Start(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	width, height := 2*windowWidth, 3*windowHeight
	resize := func(frame int, win *glfw.Window) {
		if frame == 1 {
			win.SetSize(width, height)
		}
	}
	for _, c := range []struct {
		name      string
		watchSize bool
		remadeAt  string // the frames that may be the first from the new swapchain
	}{
		{"seen before the frame", true, "1"},
		// When X tells lavapipe of the new size decides which result
		// reports it (present's of frame 1 or a later acquire's).
		{"reported by the swapchain", false, "[123]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := validationMessages()
			var out bytes.Buffer
			require.NoError(t, runWindowWith(&out, true, 4, c.watchSize, resize))
			t.Log("\n" + out.String())
			remade := regexp.MustCompile(fmt.Sprintf("frame (%s): swapchain made again for %dx%d\n", c.remadeAt, width, height)).FindStringSubmatch(out.String())
			require.NotNil(t, remade, "no new swapchain at frame %s", c.remadeAt)
			assert.Contains(t, out.String(), fmt.Sprintf("frame %s's image holds vkc's %dx%d strip: ok\n", remade[1], width, height))
			assert.Contains(t, out.String(), "presented 4 frames\n")
			n, msgs := validationMessages()
			assert.Equal(t, before, n, "%q", msgs)
		})
	}
}
