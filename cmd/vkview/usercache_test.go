package main

import (
	"os"
	"testing"
)

// TestMain runs vkview's main when a test started the binary as the
// command (runAsCommandEnv), and otherwise points the user's cache
// directory at a temporary one, so that the devices these tests open (and
// the processes they start) keep their pipeline caches there instead of in
// the real one.
func TestMain(m *testing.M) {
	if os.Getenv(runAsCommandEnv) == "1" {
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "vkc-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Unsetenv("VKC_PIPELINE_CACHE")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
