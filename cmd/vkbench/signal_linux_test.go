package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alive reports whether pid is a process that has not exited (a zombie,
// exited but not yet reaped, counts as gone).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, the state follows its ")".
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

// killOnCleanup makes sure a process the test may have left behind ends.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// SIGINT or SIGTERM to vkbench stops the suite child it is waiting for,
// waits for it, prints no report and exits 130.
func TestSignalStopsTheSuiteChild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	exe := buildVkbench(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// -time 1h: the child's first timed run outlasts any test.
			cmd := exec.Command(exe, "-quick", "-count", "1", "-time", "1h", "-suite", "alloc")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			killOnCleanup(t, cmd.Process.Pid)
			var child int
			for child == 0 {
				if !alive(cmd.Process.Pid) {
					err := cmd.Wait() // and only then read what it printed
					t.Fatalf("vkbench ended before starting a suite: %v: %s", err, stderr.String())
				}
				if kids := childrenOf(cmd.Process.Pid); len(kids) > 0 {
					child = kids[0]
				}
				time.Sleep(10 * time.Millisecond)
			}
			killOnCleanup(t, child)

			require.NoError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "vkbench exited: %v", err)
			assert.Equal(t, 130, exit.ExitCode(), "stderr: %s", stderr.String())
			assert.Empty(t, stdout.String(), "no report")
			assert.Contains(t, stderr.String(), "nothing reported")
			assert.False(t, alive(child), "the suite child %d outlived vkbench", child)
		})
	}
}

// Cancelling RunFloor kills everything its build.sh started, not only the
// shell.
func TestCancelledFloorKillsWhatBuildShStarted(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"glslc", "cc"} { // floorTools looks for them; this build.sh runs neither
		require.NoError(t, os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CC", "")

	floor := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `sleep 1000 >/dev/null 2>&1 &
echo $! >"$PID_FILE.tmp" && mv "$PID_FILE.tmp" "$PID_FILE"
wait
`
	require.NoError(t, os.WriteFile(filepath.Join(floor, "build.sh"), []byte(script), 0o755))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := RunFloor(ctx, floor, []string{"PID_FILE=" + pidFile})
		done <- err
	}()
	var pid int
	for pid == 0 {
		select {
		case err := <-done:
			t.Fatalf("the floor ended before it was cancelled: %v", err)
		default:
		}
		if raw, err := os.ReadFile(pidFile); err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
			require.NoError(t, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	killOnCleanup(t, pid)

	cancel()
	err := <-done
	require.ErrorIs(t, err, ErrFloorFailed)
	require.ErrorIs(t, err, context.Canceled)
	// The group's SIGKILL reaches the shell's background process, which
	// RunFloor does not wait for (init reaps it): it dies as the kernel
	// gets to it, so this waits a bounded while for it to go, a liveness
	// check, not a measure of time.
	assert.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, 10*time.Millisecond,
		"the floor's process %d outlived RunFloor", pid)
}
