package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// openTest opens a device with the validation layer on and, at cleanup,
// closes it and fails the test on any validation message or any Vulkan
// object left alive.
func openTest(t *testing.T) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		assert.Empty(t, dev.LiveObjects(), "Vulkan objects alive after Close")
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "validation messages: %q", recent)
	})
	return dev
}

// float32Eps is the gap between 1 and the next float32.
const float32Eps = 1.0 / (1 << 23)

// reference is saxpy in Go.
func reference(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// The program's own run prints the description derived from saxpy.comp
// and the result on its input. Its input is chosen so that every product
// and sum is exact in float32, so the device must match Go bit for bit.
func TestRunPrintsTheDerivedKernelAndItsResult(t *testing.T) {
	dev := openTest(t)
	var out bytes.Buffer
	require.NoError(t, run(dev, &out))
	want := vkc.KernelSpec{Name: "saxpy", Bindings: []vkc.Access{vkc.ReadOnly, vkc.ReadWrite}, PushSize: 8, LocalSize: [3]uint32{64, 1, 1}}
	assert.Equal(t, fmt.Sprintln(want)+fmt.Sprintln(reference(a, xs, ys)), out.String())
}

// saxpy over more elements than one workgroup, against Go.
func TestSaxpyAgainstGo(t *testing.T) {
	dev := openTest(t)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = r.Float32()*20-10, r.Float32()*20-10
	}
	const alpha = float32(-1.75)
	got, _, err := saxpy(dev, alpha, x, y)
	require.NoError(t, err)
	want := reference(alpha, x, y)
	require.Len(t, got, n)
	for i := range want {
		// The device may fuse the multiply and add: allow two roundings.
		tol := 2 * float32Eps * (math.Abs(float64(alpha*x[i])) + math.Abs(float64(y[i])))
		require.InDelta(t, want[i], got[i], tol, "element %d", i)
	}
}

// The committed saxpy.spv must be what the go:generate line in main.go
// builds from saxpy.comp now; otherwise run go generate.
func TestCommittedSPIRVMatchesGLSL(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH; cannot check that saxpy.spv matches saxpy.comp")
	}
	args := generateCommand(t)
	require.Equal(t, "glslc", args[0], "the go:generate line runs glslc")
	fresh := filepath.Join(t.TempDir(), "saxpy.spv")
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
	committed, err := os.ReadFile("saxpy.spv")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(built, committed), "saxpy.spv is stale: run go generate")
}

// generateCommand returns the words of the go:generate line in main.go.
func generateCommand(t *testing.T) []string {
	t.Helper()
	src, err := os.Open("main.go")
	require.NoError(t, err)
	defer src.Close()
	lines := bufio.NewScanner(src)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "//go:generate "); ok {
			return strings.Fields(rest)
		}
	}
	require.NoError(t, lines.Err())
	t.Fatal("main.go has no go:generate line")
	return nil
}
