package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kernels suite measures its five figures, checks the WGSL matmul and
// every sum against Go (a failed check is a failure in the result), and
// its ratios come out against their targets.
func TestKernelsSuite(t *testing.T) {
	res, err := runKernels(quickSettings())
	require.NoError(t, err)
	require.Empty(t, res.Failures)
	units := map[string]string{"compile-cold": "ms", "compile-cached": "us", "reduce-wgsl": "ms", "reduce-glsl": "ms", "reduce-wgsl-zeroed": "ms"}
	require.Len(t, res.Figures, len(units))
	for _, f := range res.Figures {
		assert.Equal(t, "kernels", f.Suite)
		assert.Equal(t, units[f.Name], f.Unit, f.Name)
		assert.Positive(t, f.Value, f.Name)
	}
	ratios, notes := computeRatios(res.Figures)
	var names []string
	for _, r := range ratios {
		names = append(names, r.Name)
	}
	assert.ElementsMatch(t, []string{"compile-cold/5ms", "compile-cached/50us", "reduce-wgsl/reduce-glsl", "reduce-wgsl-zeroed/reduce-wgsl"}, names)
	assert.Len(t, notes, 2)
}

// The committed kernels/reduce.spv must be what the go:generate line of
// suite_kernels.go builds from kernels/reduce.comp now; otherwise run go
// generate.
func TestCommittedReduceSPIRVMatchesGLSL(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH; cannot check that kernels/reduce.spv matches kernels/reduce.comp")
	}
	args := generateLine(t, "suite_kernels.go")
	require.Equal(t, "glslc", args[0], "the go:generate line runs glslc")
	fresh := filepath.Join(t.TempDir(), "reduce.spv")
	output := -1
	for i, arg := range args {
		if arg == "-o" && i+1 < len(args) {
			output = i + 1
		}
	}
	require.Positive(t, output, "the go:generate line names its output with -o")
	args[output] = fresh
	msg, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "glslc: %s", msg)
	built, err := os.ReadFile(fresh)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(built, reduceGLSLSPIRV), "kernels/reduce.spv is stale: run go generate")
}

// generateLine returns the words of the go:generate line in file.
func generateLine(t *testing.T, file string) []string {
	t.Helper()
	src, err := os.Open(file)
	require.NoError(t, err)
	defer src.Close()
	lines := bufio.NewScanner(src)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "//go:generate "); ok {
			return strings.Fields(rest)
		}
	}
	require.NoError(t, lines.Err())
	t.Fatal(file + " has no go:generate line")
	return nil
}
