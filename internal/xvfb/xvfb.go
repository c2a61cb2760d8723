// Package xvfb gives tests that open windows an X display: the one DISPLAY
// names, or else a virtual one (Xvfb) started for the test and stopped when
// it ends. A test is skipped only where no X server can be had at all:
// DISPLAY unset and Xvfb not installed (scripts/setup.sh installs it).
package xvfb

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Start makes DISPLAY name a running X server for the rest of t: the one
// already named, or an Xvfb of its own (screen 1024x768, 24-bit, no TCP),
// which t's cleanup stops. It uses t.Setenv, so t must not be parallel.
func Start(t testing.TB) {
	t.Helper()
	if os.Getenv("DISPLAY") != "" {
		return
	}
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("no X server: DISPLAY is unset and Xvfb is not installed (apt-get install xvfb, or bash scripts/setup.sh)")
	}
	// -displayfd: Xvfb picks a free display number and writes it on the
	// pipe once it accepts connections, so there is no race to poll.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("xvfb: pipe: %v", err)
	}
	defer r.Close()
	cmd := exec.Command(bin, "-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset")
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Its own process group, so a signal to the test's group (Ctrl-C) does
	// not kill the server under a test that is still cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatalf("xvfb: starting %s: %v", bin, err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			<-exited
			t.Fatalf("xvfb: %s exited before it took a display: %s", bin, stderr.String())
		}
		t.Setenv("DISPLAY", ":"+n)
	case <-time.After(30 * time.Second):
		t.Fatalf("xvfb: %s took no display in 30s: %s", bin, stderr.String())
	}
}
