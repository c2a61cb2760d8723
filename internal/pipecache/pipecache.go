// Package pipecache keeps a Vulkan device's pipeline cache in a file, so a
// process does not compile again the kernels an earlier one compiled: it
// seeds the device's VkPipelineCache when the device opens and writes the
// cache back when it closes.
//
// A cache file is a convenience, never a dependency. One that is missing
// is a cold start; one that is truncated, corrupt, too large, written for
// another device or driver build, or one that cannot be written, is
// ignored with one log line per device. A path that holds something other
// than a regular file (a directory where the file should be) is reported
// once, when the device opens, and never written over. Bytes reach the driver only after two checks:
// a SHA-256 over what this package wrote (so a truncated or overwritten
// file is refused whole), and the Vulkan header naming this device's
// vendor, device and pipeline-cache UUID (vk.CheckPipelineCacheHeader).
package pipecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vkcompute/vkc/vk"
)

// MaxBytes bounds a cache file's driver data: a larger cache is neither
// saved nor loaded, so a runaway cache cannot fill the disk or the
// memory of every later process.
const MaxBytes = 64 << 20

// magic opens every cache file: the format of the envelope below.
const magic = "VKCPIPE1"

// envelopeSize is magic, the data's length (uint64, little-endian) and
// its SHA-256.
const envelopeSize = len(magic) + 8 + sha256.Size

// Errors a load reports (wrapped, with the file's name); a caller logs them
// and goes on with an empty cache.
var (
	ErrCorrupt  = errors.New("pipecache: cache file corrupt or truncated")
	ErrTooLarge = errors.New("pipecache: cache file above the size bound")
	// ErrNotAFile: the path holds a directory, a device node or anything
	// else but a regular file; a Store neither loads nor saves there.
	ErrNotAFile = errors.New("pipecache: cache path is not a regular file")
)

// Key says which driver build wrote a cache: data is only ever loaded by
// the vendor, device, driver version and pipeline-cache UUID that saved it.
type Key struct {
	VendorID, DeviceID, DriverVersion uint32
	UUID                              [16]byte
}

// KeyOf is the key of a device's driver.
func KeyOf(info vk.DeviceInfo) Key {
	return Key{VendorID: info.VendorID, DeviceID: info.DeviceID, DriverVersion: info.DriverVersionCode, UUID: info.PipelineCacheUUID}
}

// FileName is the cache file's name in its directory: one file per key,
// so devices and driver builds do not overwrite each other's cache.
func (k Key) FileName() string {
	return fmt.Sprintf("%04x-%04x-%08x-%x.vkpc", k.VendorID, k.DeviceID, k.DriverVersion, k.UUID)
}

// Read returns the driver data of the cache file at path: nil and
// os.ErrNotExist (wrapped) when there is none, ErrTooLarge or ErrCorrupt
// when it cannot be trusted.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %v", ErrNotAFile, path, st.Mode().Type())
	}
	if st.Size() > int64(envelopeSize+MaxBytes) {
		return nil, fmt.Errorf("%w: %s holds %d bytes (bound %d)", ErrTooLarge, path, st.Size(), envelopeSize+MaxBytes)
	}
	// Read at most one byte past the bound, whatever Stat said: the file
	// may grow in between.
	raw, err := io.ReadAll(io.LimitReader(f, int64(envelopeSize+MaxBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > envelopeSize+MaxBytes {
		return nil, fmt.Errorf("%w: %s grew past the bound", ErrTooLarge, path)
	}
	if len(raw) < envelopeSize || string(raw[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: %s has no vkc pipeline-cache envelope", ErrCorrupt, path)
	}
	n := binary.LittleEndian.Uint64(raw[len(magic):])
	data := raw[envelopeSize:]
	if n != uint64(len(data)) {
		return nil, fmt.Errorf("%w: %s says %d bytes of data and holds %d", ErrCorrupt, path, n, len(data))
	}
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], raw[len(magic)+8:envelopeSize]) {
		return nil, fmt.Errorf("%w: %s fails its checksum", ErrCorrupt, path)
	}
	return data, nil
}

// Write saves data as the cache file at path, atomically: it writes a
// temporary file in the same directory (created if missing) and renames
// it over path, so a reader (another process opening the same device)
// sees the old file or the new one, never a mix. Data above MaxBytes is
// refused with ErrTooLarge.
func Write(path string, data []byte) (err error) {
	if len(data) > MaxBytes {
		return fmt.Errorf("%w: %d bytes of data (bound %d)", ErrTooLarge, len(data), MaxBytes)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	head := make([]byte, envelopeSize)
	copy(head, magic)
	binary.LittleEndian.PutUint64(head[len(magic):], uint64(len(data)))
	sum := sha256.Sum256(data)
	copy(head[len(magic)+8:], sum[:])
	if _, err := tmp.Write(head); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Store is one device's cache file: where it lives and what was loaded
// from it.
type Store struct {
	dev    *vk.Device
	path   string
	loaded []byte
	log    *slog.Logger
	// notAFile: the path holds something other than a regular file, which
	// Attach reported; Save leaves it alone rather than report it again.
	notAFile bool
}

// Attach gives dev a pipeline cache seeded from dir's file for this
// device, and returns the Store that saves it at Close. It never fails:
// with dir empty it does nothing and returns nil; a file it cannot use,
// or a cache the driver refuses to create from it, costs one log line
// (log; nil means slog.Default()) and the device starts with an empty
// cache. A path that is not a regular file (ErrNotAFile) is that one
// line for the whole device: Save does not try to replace it.
func Attach(dev *vk.Device, dir string, log *slog.Logger) *Store {
	if dir == "" {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	info := dev.Info()
	s := &Store{dev: dev, path: filepath.Join(dir, KeyOf(info).FileName()), log: log}
	data, err := Read(s.path)
	if err == nil {
		err = vk.CheckPipelineCacheHeader(data, info)
	}
	if err == nil {
		if err = dev.UsePipelineCache(data); err == nil {
			s.loaded = data
			return s
		}
	}
	s.notAFile = errors.Is(err, ErrNotAFile)
	if err != nil && !missing(err) {
		log.Warn("vkc: pipeline cache file ignored", "path", s.path, "err", err)
	}
	if err := dev.UsePipelineCache(nil); err != nil {
		log.Warn("vkc: no pipeline cache", "err", err)
		return nil
	}
	return s
}

// missing reports a read that found no file: a cold start, not a problem
// to log (a path through a regular file, ENOTDIR, holds no file either; a
// save there logs that it cannot write).
func missing(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Path is the cache file's path.
func (s *Store) Path() string { return s.path }

// Loaded is the driver data the device's cache was seeded with (nil: a
// cold start).
func (s *Store) Loaded() []byte { return s.loaded }

// Save writes the device's cache to the file, before the device closes;
// nil-safe, and a no-op when the cache holds what was loaded or when the
// path is not a regular file (Attach said so already). A cache it cannot
// read or write costs one log line, never an error: the device's work is
// done either way.
func (s *Store) Save() {
	if s == nil || s.notAFile {
		return
	}
	data, err := s.dev.PipelineCacheData(MaxBytes)
	if err == nil && (len(data) == 0 || bytes.Equal(data, s.loaded)) {
		return
	}
	if err == nil {
		err = Write(s.path, data)
	}
	if err != nil {
		s.log.Warn("vkc: pipeline cache not saved", "path", s.path, "err", err)
	}
}
