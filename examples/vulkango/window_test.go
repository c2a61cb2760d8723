package main

import (
	"bytes"
	"runtime"
	"testing"

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
