package kernels

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatmulModulesMatchTheirSources replays every go:generate line of
// matmul.go into a temporary directory and compares the module with the
// committed one: a source edited without go generate fails here.
func TestMatmulModulesMatchTheirSources(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH; cannot check the committed matmul modules")
	}
	f, err := os.Open("matmul.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	checked := 0
	for lines.Scan() {
		rest, ok := strings.CutPrefix(lines.Text(), "//go:generate ")
		if !ok {
			continue
		}
		args := strings.Fields(rest)
		out := -1
		for i, a := range args {
			if a == "-o" && i+1 < len(args) {
				out = i + 1
			}
		}
		if args[0] != "glslc" || out < 0 {
			t.Fatalf("go:generate line %q: want glslc ... -o FILE", rest)
		}
		committed := args[out]
		args[out] = filepath.Join(t.TempDir(), committed)
		if msg, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", rest, err, msg)
		}
		built, err := os.ReadFile(args[out])
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(committed)
		if err != nil {
			t.Fatalf("%s is not committed: run go generate ./ops/kernels", committed)
		}
		if !bytes.Equal(built, have) {
			t.Errorf("%s is stale: run go generate ./ops/kernels", committed)
		}
		name := strings.TrimSuffix(committed, ".spv")
		if _, err := Matmul(name); err != nil {
			t.Errorf("Matmul(%q): %v", name, err)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("matmul.go has no go:generate line")
	}
	if _, err := Matmul("no_such_kernel"); err == nil {
		t.Error("Matmul of an unknown name: no error")
	}
}
