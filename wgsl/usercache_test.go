package wgsl

import (
	"os"
	"testing"
)

// TestMain points the user's cache directory at a temporary one, so that
// the devices these tests open (and the processes they start) keep their
// pipeline caches there instead of in the real one.
func TestMain(m *testing.M) {
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
