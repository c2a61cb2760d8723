package vk

/*
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vkcompute/vkc/internal/lockrank"
)

var loader struct {
	once sync.Once
	gipa C.PFN_vkGetInstanceProcAddr
	err  error
}

// load opens libvulkan.so.1 (the runtime package's name; the unversioned
// libvulkan.so only comes with the -dev package) once per process.
func load() (C.PFN_vkGetInstanceProcAddr, error) {
	loader.once.Do(func() {
		var cerr *C.char
		gipa := C.vkc_load(&cerr)
		if gipa == nil {
			loader.err = fmt.Errorf("%w: %s", ErrNoLoader, C.GoString(cerr))
			return
		}
		loader.gipa = gipa
	})
	return loader.gipa, loader.err
}

// InstanceOptions choose what the instance enables.
type InstanceOptions struct {
	// Validation enables VK_LAYER_KHRONOS_validation when it is installed.
	Validation bool
	// SyncValidation also turns on synchronization validation (implies Validation).
	SyncValidation bool
	// Logger receives validation messages; nil means slog.Default().
	Logger *slog.Logger
	// Extensions are instance extensions to enable besides the validation
	// layer's: presentation asks for VK_KHR_surface and the window
	// system's surface extension (what GLFW's GetRequiredInstanceExtensions
	// lists). None by default.
	Extensions []string
	// WithoutFeatures are optional features no device of this instance
	// enables even where the device offers them: tests open a device as
	// one that lacks them would be.
	WithoutFeatures Features
}

// Instance is a Vulkan instance plus the validation messenger, whose
// messages are counted so that tests can fail on any of them. Its methods
// are safe from several goroutines; after Close they return ErrClosed.
type Instance struct {
	gipa       C.PFN_vkGetInstanceProcAddr
	handle     C.VkInstance
	messenger  C.VkDebugUtilsMessengerEXT
	self       cgo.Handle
	validating bool
	logger     *slog.Logger
	// adopted: another program created the instance (AdoptInstance);
	// Close lets go of it without destroying it.
	adopted bool
	without Features // never enabled (InstanceOptions.WithoutFeatures)

	errors, warnings atomic.Int64
	msgMu            lockrank.Mutex
	recent           []string

	// gate is held shared by every call that uses handle and exclusively
	// by Close, so the instance is never destroyed under a call.
	gate   lockrank.RWMutex
	closed bool // guarded by gate
}

// NewInstance loads the Vulkan loader and creates an instance. Validation
// requested where the layer is not installed is logged and skipped, so a
// user machine without the SDK still runs.
func NewInstance(o InstanceOptions) (*Instance, error) {
	gipa, err := load()
	if err != nil {
		return nil, err
	}
	in := &Instance{gipa: gipa, logger: o.Logger, without: o.WithoutFeatures}
	in.rankLocks()
	if in.logger == nil {
		in.logger = slog.Default()
	}
	want := o.Validation || o.SyncValidation
	if want {
		name := C.CString("VK_LAYER_KHRONOS_validation")
		ok := C.vkc_layer_available(gipa, name) != 0
		C.free(unsafe.Pointer(name))
		if !ok {
			in.logger.Warn("vkc: validation requested but VK_LAYER_KHRONOS_validation is not installed (package vulkan-validationlayers)")
			want = false
		}
	}
	in.self = cgo.NewHandle(in)
	opts := C.vkc_instance_opts{user: C.uintptr_t(in.self), api_version: instanceAPI}
	if want {
		opts.validation = 1
		if o.SyncValidation {
			opts.sync_validation = 1
		}
	}
	exts, freeExts := cStringArray(o.Extensions)
	defer freeExts()
	opts.ext_count, opts.exts = C.uint32_t(len(o.Extensions)), exts
	var inst C.VkInstance
	var msgr C.VkDebugUtilsMessengerEXT
	// On failure the C side leaves nothing alive and no handle to destroy.
	created := Result(C.vkc_create_instance(gipa, &opts, &inst, &msgr))
	if err := check("vkCreateInstance", created); err != nil {
		in.self.Delete()
		if created == Result(C.VK_ERROR_INCOMPATIBLE_DRIVER) {
			// The loader found no driver manifest (no ICD installed, or
			// VK_ICD_FILENAMES names none): say which package to install.
			return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
		}
		return nil, err
	}
	in.handle, in.messenger, in.validating = inst, msgr, want
	liveInstances.Add(1)
	return in, nil
}

// liveInstances counts instances created and not yet closed.
var liveInstances atomic.Int64

// LiveInstances is how many instances are open in the process: tests check
// that every path that creates one, failing ones included, closes it.
func LiveInstances() int64 { return liveInstances.Load() }

// enter admits a call that uses the instance handle, or fails once the
// instance is closed; leave ends it.
// rankLocks gives the instance's locks their ranks (internal/lockrank).
func (in *Instance) rankLocks() {
	in.gate.SetRank(lockrank.VkInstance, 0)
	in.msgMu.SetRank(lockrank.VkMessages, 0)
}

func (in *Instance) enter() error {
	in.gate.RLock()
	if in.closed {
		in.gate.RUnlock()
		return ErrClosed
	}
	return nil
}

func (in *Instance) leave() { in.gate.RUnlock() }

// Validating reports whether the validation layer is active.
func (in *Instance) Validating() bool { return in.validating }

// ValidationCounts returns how many validation errors and warnings were
// reported since the instance was created.
func (in *Instance) ValidationCounts() (errs, warnings int64) {
	return in.errors.Load(), in.warnings.Load()
}

// RecentMessages returns up to the last 32 validation messages, for test
// failure output.
func (in *Instance) RecentMessages() []string {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	return append([]string(nil), in.recent...)
}

// onMessage counts and keeps a layer message and hands it to the logger.
// It runs on a call from the driver, inside whatever Vulkan call made the
// layer speak, with the loader's and the layer's locks held: a panic must
// not unwind through those C frames (it would leave the locks held and
// hang every later Vulkan call in the process), so a panicking logger is
// recovered here and reported on standard error instead.
func (in *Instance) onMessage(severity int, msg string) {
	const errorBit = 0x1000 // VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
	isError := severity&errorBit != 0
	if isError {
		in.errors.Add(1)
	} else {
		in.warnings.Add(1)
	}
	in.msgMu.Lock()
	if len(in.recent) == 32 {
		in.recent = in.recent[1:]
	}
	in.recent = append(in.recent, msg)
	in.msgMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "vkc: the logger panicked on a validation message (recovered: a panic cannot unwind through the driver): %v\nmessage: %s\n", p, msg)
		}
	}()
	if isError {
		in.logger.Error("vulkan validation", "message", msg)
	} else {
		in.logger.Warn("vulkan validation", "message", msg)
	}
}

//export vkcDebugMessage
func vkcDebugMessage(user C.uintptr_t, severity C.int, msg *C.char) {
	if in, ok := cgo.Handle(user).Value().(*Instance); ok {
		in.onMessage(int(severity), C.GoString(msg))
	}
}

// Close destroys the messenger and the instance (an adopted one it only
// lets go of); it is idempotent and waits for calls in progress on the
// instance. Every device opened from it
// must be closed first.
func (in *Instance) Close() {
	if in == nil {
		return
	}
	in.gate.Lock()
	defer in.gate.Unlock()
	if in.closed {
		return
	}
	in.closed = true
	liveInstances.Add(-1)
	if in.adopted {
		return
	}
	C.vkc_destroy_instance(in.gipa, in.handle, in.messenger)
	in.self.Delete()
}
