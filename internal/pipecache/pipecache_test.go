package pipecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
	"github.com/vkcompute/vkc/vk"
)

// openDevice opens the test device (VKC_DEVICE, else the best) on an
// instance of its own; both close at the end of the test.
func openDevice(t *testing.T) *vk.Device {
	t.Helper()
	in, err := vk.NewInstance(vk.InstanceOptions{Validation: os.Getenv("VKC_VALIDATION") == "1"})
	require.NoError(t, err)
	t.Cleanup(in.Close)
	infos, err := in.Devices()
	require.NoError(t, err)
	idx, err := vk.Select(infos, os.Getenv("VKC_DEVICE"))
	require.NoError(t, err)
	d, err := in.OpenDevice(idx)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

// logLines is a logger that keeps what it is told, one line per record.
func logLines() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func lines(buf *bytes.Buffer) int { return strings.Count(buf.String(), "\n") }

// buildKernels builds a few catalogue pipelines on d, so its cache holds
// something, and destroys them.
func buildKernels(t *testing.T, d *vk.Device) {
	t.Helper()
	for _, name := range []string{"axpy", "scale", "matmul"} {
		k, err := shaders.Get(name)
		require.NoError(t, err)
		p, err := d.NewPipeline(k.SPIRV, vk.PipelineDesc{Bindings: len(k.Bindings), PushSize: k.PushSize, Spec: k.LocalSize[:]})
		require.NoError(t, err)
		p.Destroy()
	}
}

// session is one process's use of the cache: open, attach, build, save, close.
// It returns what the attach loaded and the log it wrote.
func session(t *testing.T, dir string) (loaded []byte, log string) {
	t.Helper()
	d := openDevice(t)
	l, buf := logLines()
	s := Attach(d, dir, l)
	require.NotNil(t, s, "a directory was given: the device has a cache")
	require.Equal(t, int64(1), d.LiveCount(vk.ObjPipelineCache))
	buildKernels(t, d) // the device still works, whatever the file held
	s.Save()
	d.Close()
	require.Zero(t, d.LiveCount(vk.ObjPipelineCache), "Close destroys the cache")
	return s.Loaded(), buf.String()
}

func cachePath(t *testing.T, dir string) string {
	t.Helper()
	return filepath.Join(dir, KeyOf(openDevice(t).Info()).FileName())
}

// A second process loads, byte for byte, what the first one saved.
func TestSecondOpenLoadsWhatFirstSaved(t *testing.T) {
	dir := t.TempDir()
	loaded, log := session(t, dir)
	require.Nil(t, loaded, "the first process starts cold")
	require.Empty(t, log, "a missing file is a cold start, not a problem")
	saved, err := Read(cachePath(t, dir))
	require.NoError(t, err)
	// At least the header: lavapipe (Mesa 22.3) keeps no compute pipelines
	// in its cache, a GPU driver does.
	require.GreaterOrEqual(t, len(saved), vk.PipelineCacheHeaderSize)
	require.NoError(t, vk.CheckPipelineCacheHeader(saved, openDevice(t).Info()))
	loaded, log = session(t, dir)
	require.Empty(t, log)
	require.Equal(t, saved, loaded)
	t.Logf("cache file: %d bytes of driver data", len(saved))
}

// Each unusable file costs one log line at Open, and the device opens with
// an empty cache and builds its kernels.
func TestUnusableCacheFileIsIgnoredWithOneLogLine(t *testing.T) {
	warm := t.TempDir()
	session(t, warm)
	good, err := os.ReadFile(cachePath(t, warm))
	require.NoError(t, err)
	data, err := Read(cachePath(t, warm))
	require.NoError(t, err)
	foreign := func(patch func([]byte)) []byte {
		d := append([]byte(nil), data...)
		patch(d)
		return d
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 1
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	cases := []struct {
		name    string
		file    []byte
		envelop bool // wrap in a valid envelope, so only the Vulkan header is wrong
	}{
		{"truncated", good[:len(good)/2], false},
		{"truncated inside the envelope", good[:envelopeSize-3], false},
		{"empty", nil, false},
		{"random bytes", random, false},
		{"one flipped byte", flipped, false},
		{"other device", foreign(func(d []byte) { binary.LittleEndian.PutUint32(d[12:], binary.LittleEndian.Uint32(d[12:])+1) }), true},
		{"other vendor", foreign(func(d []byte) { binary.LittleEndian.PutUint32(d[8:], 0x10de) }), true},
		{"other driver UUID", foreign(func(d []byte) { d[16] ^= 0xff }), true},
		{"header version 2", foreign(func(d []byte) { binary.LittleEndian.PutUint32(d[4:], 2) }), true},
		{"header length past the data", foreign(func(d []byte) { binary.LittleEndian.PutUint32(d[0:], uint32(len(d)+1)) }), true},
		{"shorter than a header", data[:vk.PipelineCacheHeaderSize-1], true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.Base(cachePath(t, warm)))
			if c.envelop {
				require.NoError(t, Write(path, c.file))
			} else {
				require.NoError(t, os.WriteFile(path, c.file, 0o644))
			}
			loaded, log := session(t, dir)
			require.Nil(t, loaded, "nothing of the file reaches the driver")
			require.Equal(t, 1, strings.Count(log, "\n"), "one line: %s", log)
			require.Contains(t, log, "pipeline cache file ignored")
			// The device's cache, saved over the bad file, loads next time.
			loaded, log = session(t, dir)
			require.Empty(t, log)
			require.NotEmpty(t, loaded)
		})
	}
}

// A cache that cannot be written costs one log line at Close, and Close
// goes on.
func TestUnwritableCacheDirIsIgnoredWithOneLogLine(t *testing.T) {
	base := t.TempDir()
	blocker := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(blocker, []byte("not a directory"), 0o644))
	_, log := session(t, filepath.Join(blocker, "vkc")) // a directory inside a file: no process can create it
	require.Equal(t, 1, strings.Count(log, "\n"), "one line: %s", log)
	require.Contains(t, log, "pipeline cache not saved")
}

// An empty directory name means no cache at all.
func TestNoDirectoryNoCache(t *testing.T) {
	d := openDevice(t)
	require.Nil(t, Attach(d, "", nil))
	require.Zero(t, d.LiveCount(vk.ObjPipelineCache))
	var s *Store
	s.Save() // nil-safe: the device's Close calls it unconditionally
}

// The size bound holds both ways: a larger file is not read (a sparse file,
// so the test writes nothing), larger data is not written.
func TestSizeBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.vkpc")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(envelopeSize+MaxBytes+1)))
	require.NoError(t, f.Close())
	_, err = Read(path)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorIs(t, Write(path, make([]byte, MaxBytes+1)), ErrTooLarge)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, int64(envelopeSize+MaxBytes+1), st.Size(), "a refused write leaves the old file")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "and no temporary file")
}

// Write then Read returns the data; a rewrite replaces it whole and leaves
// no temporary file behind.
func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.vkpc")
	for _, data := range [][]byte{[]byte("first contents, longer than the second"), []byte("second")} {
		require.NoError(t, Write(path, data))
		got, err := Read(path)
		require.NoError(t, err)
		require.Equal(t, data, got)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	_, err = Read(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The key names every part of the driver's identity: two keys that differ
// in any part name different files.
func TestKeyFileNamesDiffer(t *testing.T) {
	base := Key{VendorID: 0x10005, DeviceID: 0, DriverVersion: 1, UUID: [16]byte{1}}
	seen := map[string]bool{base.FileName(): true}
	for _, k := range []Key{
		{VendorID: 0x10de, DeviceID: 0, DriverVersion: 1, UUID: [16]byte{1}},
		{VendorID: 0x10005, DeviceID: 1, DriverVersion: 1, UUID: [16]byte{1}},
		{VendorID: 0x10005, DeviceID: 0, DriverVersion: 2, UUID: [16]byte{1}},
		{VendorID: 0x10005, DeviceID: 0, DriverVersion: 1, UUID: [16]byte{2}},
	} {
		require.False(t, seen[k.FileName()], k.FileName())
		seen[k.FileName()] = true
	}
}

// A directory (or anything but a regular file) where the cache file
// should be costs one log line for the device, at Open: the device works,
// Save leaves the path as it was and says nothing more.
func TestDirectoryWhereTheFileShouldBeIsOneLogLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(cachePath(t, dir)))
	require.NoError(t, os.Mkdir(path, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "inside"), []byte("kept"), 0o644))
	loaded, log := session(t, dir)
	require.Nil(t, loaded)
	require.Equal(t, 1, strings.Count(log, "\n"), "one line for load and save together: %s", log)
	require.Contains(t, log, "pipeline cache file ignored")
	require.Contains(t, log, "not a regular file")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.True(t, st.IsDir(), "the directory is left where it was")
	inside, err := os.ReadFile(filepath.Join(path, "inside"))
	require.NoError(t, err)
	require.Equal(t, "kept", string(inside))
	_, err = Read(path)
	require.ErrorIs(t, err, ErrNotAFile)
	tmp, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "no temporary file was left behind")
}

// The file is what docs/ARCHITECTURE.md says, built here by hand from
// that description: its name carries vendor, device, driver version and
// pipeline-cache UUID; its bytes are VKCPIPE1, the data's length
// (uint64, little-endian), the data's SHA-256, the data.
func TestFileIsLaidOutAsDocumented(t *testing.T) {
	dir := t.TempDir()
	session(t, dir)
	info := openDevice(t).Info()
	name := fmt.Sprintf("%04x-%04x-%08x-%s.vkpc", info.VendorID, info.DeviceID, info.DriverVersionCode, hex.EncodeToString(info.PipelineCacheUUID[:]))
	require.Equal(t, name, filepath.Base(cachePath(t, dir)))
	raw, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	data := raw[48:]
	require.NoError(t, vk.CheckPipelineCacheHeader(data, info), "the driver's data, header first")

	var byHand bytes.Buffer
	byHand.WriteString("VKCPIPE1")
	require.NoError(t, binary.Write(&byHand, binary.LittleEndian, uint64(len(data))))
	sum := sha256.Sum256(data)
	byHand.Write(sum[:])
	byHand.Write(data)
	require.Equal(t, byHand.Bytes(), raw, "the saved file is the documented envelope")

	other := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(other, byHand.Bytes(), 0o644))
	got, err := Read(other)
	require.NoError(t, err)
	require.Equal(t, data, got, "an envelope built by the description loads")
}
