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

// variants reads variants.txt: name, source and defines of each line.
func variants(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("variants.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("variants.txt: line %q has no source", line)
		}
		out = append(out, fields)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every committed module is what glslc builds from its source now, and
// every variant has one, and no module is left over: a source edited
// without go generate fails here.
func TestModulesMatchTheirSources(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH (scripts/setup.sh installs it): the modules' freshness is not checked")
	}
	dir := t.TempDir()
	listed := map[string]bool{}
	for _, v := range variants(t) {
		name, src := v[0], v[1]
		listed[name+".spv"] = true
		out := filepath.Join(dir, name+".spv")
		args := append([]string{"-O", "--target-env=vulkan1.1"}, v[2:]...)
		args = append(args, filepath.Join("glsl", src), "-o", out)
		if msg, err := exec.Command("glslc", args...).CombinedOutput(); err != nil {
			t.Fatalf("glslc %v: %v: %s", args, err, msg)
		}
		built, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := SPIRV(name)
		if err != nil {
			t.Fatalf("variant %s has no module: run go generate ./ops/internal/kernels", name)
		}
		if !bytes.Equal(built, committed) {
			t.Errorf("spv/%s.spv is stale: run go generate ./ops/internal/kernels", name)
		}
	}
	entries, err := modules.ReadDir("spv")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("spv/%s is no variant of variants.txt: run go generate ./ops/internal/kernels", e.Name())
		}
	}
}

// An unknown name is an error naming it, not a panic.
func TestUnknownKernelIsAnError(t *testing.T) {
	if _, err := SPIRV("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Fatalf("SPIRV of an unknown name: %v", err)
	}
}
