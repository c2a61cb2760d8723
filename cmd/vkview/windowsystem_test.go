package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runAsCommandEnv makes the test binary run vkview's main instead of the
// tests, so a test can watch the command exit.
const runAsCommandEnv = "VKVIEW_RUN_AS_COMMAND"

// Window mode where there is no window system to be had (DISPLAY unset, or
// naming a display no server answers) is an error message and exit status
// 1, never a Go panic: GLFW's failure to initialize is seen where it
// happens, with GLFW's own reason in the message.
func TestNoWindowSystemIsAnErrorNotAPanic(t *testing.T) {
	for _, tc := range []struct {
		name, display, reason string
	}{
		{"DISPLAY unset", "", "DISPLAY"},
		{"DISPLAY names no server", ":99999", ":99999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{runAsCommandEnv + "=1"}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") && !strings.HasPrefix(kv, runAsCommandEnv+"=") {
					env = append(env, kv)
				}
			}
			if tc.display != "" {
				env = append(env, "DISPLAY="+tc.display)
			}
			cmd := exec.Command(os.Args[0], "-frames", "1", "-size", "16")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "vkview succeeded with no window system:\n%s", out)
			assert.Equal(t, 1, exit.ExitCode(), "exit status 2 is a panic:\n%s", out)
			assert.Contains(t, string(out), "vkview: no window system (try -headless)")
			assert.Contains(t, string(out), tc.reason, "GLFW's reason is in the message")
			assert.NotContains(t, string(out), "panic")
			assert.NotContains(t, string(out), "goroutine ")
		})
	}
}
