package blackbox_test

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// matmulAgainstReference runs a small Matmul on a fresh device opened with
// opts and checks it against a float64 reference, as every kernel is
// checked: a cache never changes what a kernel computes.
func matmulAgainstReference(t *testing.T, opts ...vkc.Option) {
	t.Helper()
	dev := openDevice(t, opts...)
	const m, n, k = 17, 23, 31
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = rng.Float32()*2 - 1
	}
	for i := range b {
		b[i] = rng.Float32()*2 - 1
	}
	ab, bb := upload(t, dev, a), upload(t, dev, b)
	cb, err := vkc.NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	require.NoError(t, opMatmul(dev.Stream(), ab, bb, cb, m, n, k))
	got, err := cb.Read(testCtx(t))
	require.NoError(t, err)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var want float64
			for p := 0; p < k; p++ {
				want += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			require.InDelta(t, want, float64(got[i*n+j]), 1e-4*k, "C[%d,%d]", i, j)
		}
	}
	require.NoError(t, dev.Close())
}

// cacheFiles lists the pipeline-cache files (not temporaries) under dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vkpc"))
	require.NoError(t, err)
	return files
}

// A device opened with a cache directory leaves one file there at Close;
// the next device loads it and computes the same results.
func TestPipelineCacheFileSurvivesTheProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made-by-vkc")
	matmulAgainstReference(t, vkc.WithPipelineCache(dir))
	files := cacheFiles(t, dir)
	require.Len(t, files, 1, "one file per device and driver build")
	before, err := os.ReadFile(files[0])
	require.NoError(t, err)
	matmulAgainstReference(t, vkc.WithPipelineCache(dir))
	after, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, before, after, "a warm start that compiled nothing new leaves the file as it was")
}

// Garbage where the cache file should be costs one warning, and the device
// opens, computes right and replaces the file.
func TestCorruptPipelineCacheFileIsIgnored(t *testing.T) {
	dir := t.TempDir()
	matmulAgainstReference(t, vkc.WithPipelineCache(dir))
	files := cacheFiles(t, dir)
	require.Len(t, files, 1)
	require.NoError(t, os.WriteFile(files[0], bytes.Repeat([]byte{0xA5}, 1000), 0o644))
	var log bytes.Buffer
	matmulAgainstReference(t, vkc.WithPipelineCache(dir), vkc.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.Equal(t, 1, strings.Count(log.String(), "\n"), "one line: %s", log.String())
	require.Contains(t, log.String(), "pipeline cache")
	log.Reset()
	matmulAgainstReference(t, vkc.WithPipelineCache(dir), vkc.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.Empty(t, log.String(), "the file written over the garbage loads")
}

// Without an option, the cache lives in VKC_PIPELINE_CACHE when it is set
// (empty: nowhere), else in vkc under the user's cache directory; the
// option overrides both.
func TestPipelineCacheDirectoryDefaults(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("VKC_PIPELINE_CACHE", "")
	os.Unsetenv("VKC_PIPELINE_CACHE") // t.Setenv restores it after the test
	matmulAgainstReference(t)
	require.Len(t, cacheFiles(t, filepath.Join(home, "vkc")), 1, "the user's cache directory")

	env := t.TempDir()
	t.Setenv("VKC_PIPELINE_CACHE", env)
	matmulAgainstReference(t)
	require.Len(t, cacheFiles(t, env), 1, "VKC_PIPELINE_CACHE")

	option := t.TempDir()
	matmulAgainstReference(t, vkc.WithPipelineCache(option))
	require.Len(t, cacheFiles(t, option), 1, "the option beats the variable")

	off := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", off)
	t.Setenv("VKC_PIPELINE_CACHE", "")
	matmulAgainstReference(t)
	matmulAgainstReference(t, vkc.WithPipelineCache(""))
	// (The driver and the validation layer keep caches of their own there.)
	_, err := os.Stat(filepath.Join(off, "vkc"))
	require.ErrorIs(t, err, os.ErrNotExist, "empty turns the file off")
}

// A directory where the cache file should be costs one warning for the
// device, Open and Close together, and stays as it was; the device
// computes right without a cache.
func TestPipelineCachePathThatIsADirectoryIsOneWarning(t *testing.T) {
	dir := t.TempDir()
	matmulAgainstReference(t, vkc.WithPipelineCache(dir))
	files := cacheFiles(t, dir)
	require.Len(t, files, 1)
	require.NoError(t, os.Remove(files[0]))
	require.NoError(t, os.Mkdir(files[0], 0o755))
	var log bytes.Buffer
	matmulAgainstReference(t, vkc.WithPipelineCache(dir), vkc.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.Equal(t, 1, strings.Count(log.String(), "\n"), "one line: %s", log.String())
	require.Contains(t, log.String(), "not a regular file")
	st, err := os.Stat(files[0])
	require.NoError(t, err)
	require.True(t, st.IsDir(), "Close left the directory where it was")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var beside []string
	for _, e := range entries {
		// ops keeps its matmul timings in a file of its own there.
		if e.Name() != filepath.Base(files[0]) && !strings.HasPrefix(e.Name(), "vkc-ops-matmul-") {
			beside = append(beside, e.Name())
		}
	}
	require.Empty(t, beside, "no temporary file left beside it")
}
