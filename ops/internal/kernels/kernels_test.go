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
	coopmat := coopmatCompiler(t, dir)
	listed := map[string]bool{}
	for _, v := range variants(t) {
		name, src, defines := v[0], v[1], v[2:]
		listed[name+".spv"] = true
		compiler := "glslc"
		if len(defines) > 0 && defines[0] == "+coopmat" {
			defines = defines[1:]
			if coopmat == "" {
				if _, err := SPIRV(name); err != nil {
					t.Errorf("variant %s has no module: build it with a glslc that knows GL_KHR_cooperative_matrix (VKC_GLSLC_COOPMAT)", name)
				}
				continue
			}
			compiler = coopmat
		}
		out := filepath.Join(dir, name+".spv")
		args := append([]string{"-O", "--target-env=vulkan1.1"}, defines...)
		args = append(args, filepath.Join("glsl", src), "-o", out)
		if msg, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v: %s", compiler, args, err, msg)
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

// coopmatCompiler is the program that builds the +coopmat variants
// ($VKC_GLSLC_COOPMAT, a program's path; default glslc), or "", logged,
// where it does not know GL_KHR_cooperative_matrix: their modules are
// then checked for presence only.
func coopmatCompiler(t *testing.T, dir string) string {
	t.Helper()
	cmd := "glslc"
	if c := os.Getenv("VKC_GLSLC_COOPMAT"); c != "" {
		cmd = c
	}
	probe := filepath.Join(dir, "probe.comp")
	src := "#version 450\n#extension GL_KHR_cooperative_matrix : require\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
	if err := os.WriteFile(probe, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(cmd, "--target-env=vulkan1.1", probe, "-o", probe+".spv").CombinedOutput(); err != nil {
		t.Logf("%s does not build GL_KHR_cooperative_matrix (%v: %s): the +coopmat modules' freshness is not checked (set VKC_GLSLC_COOPMAT; scripts/coopmat-device.sh)", cmd, err, bytes.TrimSpace(msg))
		return ""
	}
	return cmd
}

// An unknown name is an error naming it, not a panic.
func TestUnknownKernelIsAnError(t *testing.T) {
	if _, err := SPIRV("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Fatalf("SPIRV of an unknown name: %v", err)
	}
}
