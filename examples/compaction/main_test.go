package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// reference is the compaction in Go: the squares of the values above
// threshold, sorted. A float32 square is one correctly rounded product, on
// the device as in Go, so the two agree exactly.
func reference(xs []float32, threshold float32) []float32 {
	out := []float32{}
	for _, x := range xs {
		if x > threshold {
			out = append(out, x*x)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(xs []float32) []float32 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs
}

// The program's own run prints how many values passed and their squares.
func TestRunPrintsTheSurvivorsSquares(t *testing.T) {
	dev := openTest(t)
	var out bytes.Buffer
	require.NoError(t, run(dev, &out))
	want := reference(xs, threshold)
	assert.Equal(t, fmt.Sprintf("kept %d of %d values above %g\n", len(want), len(xs), threshold)+fmt.Sprintln("squares:", want), out.String())
}

// randomValues are n values in [-1, 1).
func randomValues(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// Over many workgroups and thresholds that keep none, some or all values,
// the device's survivors are Go's.
func TestCompactionAgainstGo(t *testing.T) {
	dev := openTest(t)
	const n = 10000
	c, err := newCompactor(dev, n)
	require.NoError(t, err)
	defer c.Close()
	r := rand.New(rand.NewPCG(7, 8))
	for _, th := range []float32{2, 0.9, 0, -0.5, -2} {
		v := randomValues(r, n)
		got, err := c.Run(dev.Stream(), v, th)
		require.NoError(t, err)
		require.Equal(t, reference(v, th), sorted(got), "threshold %g", th)
	}
}

// Captured once, the three passes replay on new values: the count each
// replay's select writes sizes that replay's square.
func TestCompactionReplays(t *testing.T) {
	dev := openTest(t)
	const n = 3000
	c, err := newCompactor(dev, n)
	require.NoError(t, err)
	defer c.Close()
	s := dev.Stream()
	r := rand.New(rand.NewPCG(9, 10))
	require.NoError(t, c.xs.WriteOn(s, randomValues(r, n)))
	const th = 0.25
	g, err := s.Capture(func(s *vkc.Stream) error { return c.Enqueue(s, th) })
	require.NoError(t, err)
	defer g.Close()
	for round := range 4 {
		v := randomValues(r, n)
		if round == 2 {
			for i := range v {
				v[i] = -v[i]*v[i] - 1 // none above the threshold: square runs no group
			}
		}
		require.NoError(t, c.xs.WriteOn(s, v))
		require.NoError(t, g.Replay())
		got, err := c.Result(s)
		require.NoError(t, err)
		require.Equal(t, reference(v, th), sorted(got), "replay %d", round)
	}
	require.NoError(t, s.Sync(context.Background()))
}

// The committed modules must be what the go:generate lines in main.go build
// from the GLSL now; otherwise run go generate.
func TestCommittedSPIRVMatchesGLSL(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not on PATH; cannot check the modules against their sources")
	}
	src, err := os.Open("main.go")
	require.NoError(t, err)
	defer src.Close()
	lines := bufio.NewScanner(src)
	seen := 0
	for lines.Scan() {
		rest, ok := strings.CutPrefix(lines.Text(), "//go:generate ")
		if !ok {
			continue
		}
		args := strings.Fields(rest)
		require.Equal(t, "glslc", args[0])
		out := slices.Index(args, "-o") + 1
		require.Positive(t, out, "%q names its output with -o", rest)
		committed, err := os.ReadFile(args[out])
		require.NoError(t, err)
		args[out] = filepath.Join(t.TempDir(), "fresh.spv")
		msg, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "glslc: %s", msg)
		built, err := os.ReadFile(args[out])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(built, committed), "%s is stale: run go generate", args[len(args)-1])
		seen++
	}
	require.NoError(t, lines.Err())
	require.Equal(t, 3, seen, "one go:generate line per kernel")
}
