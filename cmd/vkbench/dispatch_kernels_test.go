package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed axpy_len modules must be what the go:generate lines of
// dispatch_kernels.go build from kernels/axpy_len.comp now; otherwise run
// go generate.
func TestCommittedAxpyLenSPIRVMatchesGLSL(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH; cannot check that the axpy_len modules match kernels/axpy_len.comp")
	}
	embedded := map[string][]byte{"kernels/axpy_len.spv": axpyLenSPIRV, "kernels/axpy_len_wide.spv": axpyLenWideSPIRV}
	src, err := os.Open("dispatch_kernels.go")
	require.NoError(t, err)
	defer src.Close()
	lines := bufio.NewScanner(src)
	built := map[string]bool{}
	for lines.Scan() {
		rest, ok := strings.CutPrefix(lines.Text(), "//go:generate ")
		if !ok {
			continue
		}
		args := strings.Fields(rest)
		require.Equal(t, "glslc", args[0], "a go:generate line runs glslc")
		output := slices.Index(args, "-o") + 1
		require.Positive(t, output, "%q names its output with -o", rest)
		require.Less(t, output, len(args), "%q names its output with -o", rest)
		want, ok := embedded[args[output]]
		require.True(t, ok, "%s is not a module dispatch_kernels.go embeds", args[output])
		fresh := filepath.Join(t.TempDir(), "out.spv")
		built[args[output]] = true
		args[output] = fresh
		msg, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "glslc: %s", msg)
		got, err := os.ReadFile(fresh)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(got, want), "%s is stale: run go generate", rest)
	}
	require.NoError(t, lines.Err())
	assert.Len(t, built, len(embedded), "every embedded module has its go:generate line")
}
