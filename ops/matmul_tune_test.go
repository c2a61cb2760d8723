package ops

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// squareOperands are A, B (all ones) and C of an n x n x n product whose
// every element is n.
func squareOperands(t *testing.T, dev *vkc.Device, n int) (a, b, c Tensor[float32]) {
	t.Helper()
	mk := func() *vkc.Buffer[float32] {
		buf, err := vkc.NewBuffer[float32](dev, n*n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = buf.Close() })
		require.NoError(t, fill(buf, 1))
		return buf
	}
	return Of(mk(), n, n), Of(mk(), n, n), Of(mk(), n, n)
}

func requireAll(t *testing.T, c Tensor[float32], want float32) {
	t.Helper()
	got, err := c.Buffer().Read(context.Background())
	require.NoError(t, err)
	for i, x := range got {
		require.Equal(t, want, x, "element %d", i)
	}
}

// openWithCache opens a device whose pipeline cache (and tuning file) is in dir.
func openWithCache(t *testing.T, dir string) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithPipelineCache(dir))
	require.NoError(t, err)
	return dev
}

func closeChecked(t *testing.T, dev *vkc.Device) {
	t.Helper()
	require.NoError(t, dev.Close())
	errs, warns, recent := dev.ValidationMessages()
	assert.Zero(t, errs+warns, "validation messages: %q", recent)
}

func TestMatmulTunerKeepsItsChoiceBesideThePipelineCache(t *testing.T) {
	dir := t.TempDir()
	dev := openWithCache(t, dir)
	a, b, c := squareOperands(t, dev, 64)
	p, err := planMatmul(dev.Stream(), a, b, c, MatmulOptions[float32]{})
	require.NoError(t, err)
	require.Greater(t, len(p.candidates()), 1, "the shape must leave the tuner a choice")
	class := p.shapeClass()
	require.NoError(t, Matmul(dev.Stream(), a, b, c))
	requireAll(t, c, 64)
	md, err := matmulDeviceOf(dev)
	require.NoError(t, err)
	chosen, ok := md.tunings.choice(class)
	require.True(t, ok, "the class was measured")
	require.True(t, p.applies(chosen))
	path := filepath.Join(dir, tuningFileName(dev.Info()))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), class)
	closeChecked(t, dev)

	dev = openWithCache(t, dir)
	defer closeChecked(t, dev)
	md, err = matmulDeviceOf(dev)
	require.NoError(t, err)
	again, ok := md.tunings.choice(class)
	require.True(t, ok, "the choice is read back from the file")
	require.Equal(t, chosen, again)
}

func TestMatmulTunerIgnoresACorruptFileWithOneWarning(t *testing.T) {
	dir := t.TempDir()
	info := func() vkc.DeviceInfo {
		dev := openWithCache(t, "")
		defer closeChecked(t, dev)
		return dev.Info()
	}()
	path := filepath.Join(dir, tuningFileName(info))
	version := fmt.Sprintf(`"version": %d`, tuningFileVersion)
	for _, corrupt := range []string{"{not json", `{` + version + `, "device": "another", "choices": {}}`,
		`{` + version + `, "device": "` + deviceLabel(info) + `", "choices": {"x": "no-such-variant"}}`,
		// a variant since removed
		`{` + version + `, "device": "` + deviceLabel(info) + `", "choices": {"f32 m5 n5 k5 b1 dynfalse v13": "root"}}`} {
		require.NoError(t, os.WriteFile(path, []byte(corrupt), 0o644))
		var logged bytes.Buffer
		prev := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
		dev := openWithCache(t, dir)
		a, b, c := squareOperands(t, dev, 16)
		err := Matmul(dev.Stream(), a, b, c)
		slog.SetDefault(prev)
		require.NoError(t, err)
		requireAll(t, c, 16)
		assert.Equal(t, 1, strings.Count(logged.String(), "\n"), "one warning: %q", logged.String())
		assert.Contains(t, logged.String(), "ignoring the matmul tuning file")
		closeChecked(t, dev)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Contains(t, string(data), version, "the corrupt file was replaced by the new choice")
	}
}

func TestMatmulDoesNotTuneInsideACaptureOrAProfile(t *testing.T) {
	dev := openWithCache(t, t.TempDir())
	defer closeChecked(t, dev)
	s := dev.Stream()
	a, b, c := squareOperands(t, dev, 64)
	md, err := matmulDeviceOf(dev)
	require.NoError(t, err)
	g, err := s.Capture(func(s *vkc.Stream) error { return Matmul(s, a, b, c) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, fill(c.Buffer(), 0))
	require.NoError(t, g.Replay())
	requireAll(t, c, 64)
	assert.Empty(t, md.tunings.choices, "nothing measured inside the window")

	prof, err := s.Profile(func(s *vkc.Stream) error { return Matmul(s, a, b, c) })
	require.NoError(t, err)
	heuristic := func() *vkc.Profile {
		p, err := s.Profile(func(s *vkc.Stream) error { return Matmul(s, a, b, c, MatmulOptions[float32]{Heuristic: true}) })
		require.NoError(t, err)
		return p
	}()
	require.Len(t, prof.Launches, len(heuristic.Launches), "the caller's profile holds the product alone, no candidate")
	requireAll(t, c, 64)
	assert.Empty(t, md.tunings.choices, "nothing measured inside the caller's profile")

	require.NoError(t, Matmul(s, a, b, c, MatmulOptions[float32]{Heuristic: true}))
	requireAll(t, c, 64)
	assert.Empty(t, md.tunings.choices, "the heuristic measures nothing")
}

func TestMatmulHeuristicPicksByShape(t *testing.T) {
	base := problem{elem: elemF32, int64: true}
	row := func(m, n, k int) problem {
		p := base
		p.m, p.n, p.k = m, n, k
		p.a = matrix{row: k, col: 1}
		p.b = matrix{row: n, col: 1}
		p.c = matrix{row: n, col: 1}
		p.aLen, p.bLen = m*k, k*n
		p.whole = true
		p.maxTexels = 1 << 27
		return p
	}
	cpu := func(p problem) problem {
		p.texelA, p.texelB, p.cpu = true, true, true
		return p
	}
	for _, tc := range []struct {
		p    problem
		want variant
	}{
		{row(1, 4096, 4096), variantGEMV},
		{row(4096, 1, 4096), variantGEMV},
		{row(3, 16, 100000), variantSplitK},
		{row(1024, 1024, 1024), variantWide},
		{cpu(row(1024, 1024, 1024)), variantTexel},
		{row(37, 45, 23), variantGeneric},
		{cpu(row(37, 45, 23)), variantGeneric},
		{row(1000, 3000, 500), variantGeneric},
		{cpu(row(1000, 3000, 500)), variantTexel},
		{cpu(row(1000, 3000, 512)), variantTexel},
		{cpu(row(1000, 3000, 502)), variantTexelPacked},
	} {
		assert.Equal(t, tc.want, tc.p.heuristic(), "%dx%dx%d", tc.p.m, tc.p.n, tc.p.k)
	}
	for _, p := range []problem{row(1, 4096, 4096), row(4096, 1, 4096)} {
		p.texelA, p.texelB = true, true
		assert.Equal(t, variantGEMV, p.heuristic(), "not a CPU driver")
		p.cpu = true
		assert.Equal(t, variantGEMVTexel, p.heuristic(), "CPU driver")
		p.texelB = false
		assert.Equal(t, variantGEMV, p.heuristic(), "B not bindable as texels")
	}
	tall := row(8*65536, 1, 8)
	tall.texelA, tall.texelB, tall.cpu = true, true, true
	assert.NotEqual(t, variantGEMVTexel, tall.heuristic(), "more groups than one axis takes")
	long := row(3, 16, 100000)
	long.texelA, long.texelB = true, true
	assert.Equal(t, variantSplitK, long.heuristic(), "not a CPU driver")
	long.cpu = true
	assert.Equal(t, variantSplitKTexel, long.heuristic(), "CPU driver")
	batched := row(128, 128, 64)
	batched.whole = false
	batched.batch = []int{32}
	batched.a.batch, batched.b.batch, batched.c.batch = []int{128 * 64}, []int{64 * 128}, []int{128 * 128}
	batched.aLen, batched.bLen = 32*128*64, 32*64*128
	assert.Equal(t, variantWide, batched.heuristic())
	cpuBatched := cpu(batched)
	assert.Equal(t, variantTexel, cpuBatched.heuristic())
	f16 := row(37, 45, 23)
	f16.elem, f16.whole = elemF16, false
	assert.Equal(t, variantGeneric, f16.heuristic())
	dyn := row(40, 24, 16)
	dyn.dynamic = true
	assert.Equal(t, variantGeneric, dyn.heuristic(), "not a CPU driver")
	dyn = cpu(dyn)
	assert.Equal(t, variantTexel, dyn.heuristic(), "CPU driver")
	dyn.k = 18
	assert.Equal(t, variantGeneric, dyn.heuristic(), "K not a multiple of 4")
}
