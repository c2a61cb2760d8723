package vkc

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/vkdev"
)

var (
	errNilDevice = errors.New("vkc: nil device (use Open)")
)

// Option configures Open.
type Option func(*config)

type config struct {
	device         string
	deviceSet      bool
	validation     bool
	validationSet  bool
	syncValidation bool
	logger         *slog.Logger
	without        Features // WithoutFeatures
	rec            recorder.Options
	wrap           func(recorder.Device) recorder.Device
	open           func() (recorder.Device, error) // nil: the Vulkan device chosen above
	// surface and instanceExtensions open the device to present (present.go).
	surface            func(instance uintptr) (uint64, error)
	instanceExtensions []string
	// pipelineCache is the pipeline-cache directory ("" none) once
	// pipelineCacheSet; else VKC_PIPELINE_CACHE or the user's cache dir.
	pipelineCache    string
	pipelineCacheSet bool
	// wait is how fence waits poll before they sleep, once waitSet; else
	// VKC_WAIT_POLICY, else WaitAuto.
	wait    WaitPolicy
	waitSet bool
}

// WithDevice picks the device by index or by a case-insensitive substring of
// its name, overriding VKC_DEVICE. Empty picks the best: discrete >
// integrated > virtual > CPU.
func WithDevice(nameOrIndex string) Option {
	return func(c *config) { c.device, c.deviceSet = nameOrIndex, true }
}

// WithValidation turns the Khronos validation layer on or off (default: on
// when VKC_VALIDATION=1). Its messages are logged and counted
// (Device.ValidationMessages).
func WithValidation(on bool) Option {
	return func(c *config) { c.validation, c.validationSet = on, true }
}

// WithSyncValidation also turns on the layer's synchronization validation,
// which checks every barrier the recorder places (slow; for tests).
func WithSyncValidation(on bool) Option {
	return func(c *config) { c.syncValidation = on }
}

// WithLogger sends validation messages and warnings to l instead of
// slog.Default(). The logger is called from inside the Vulkan call that
// made the layer speak, so a panic in its handler cannot unwind through the
// driver: it is recovered and printed to standard error, and the message
// still counts in ValidationMessages.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithPipelineCache keeps compiled kernels in dir between processes, so a
// process does not compile again what an earlier one on the same device
// and driver compiled (on a GPU the first build of a large kernel costs
// tens to hundreds of milliseconds): Open seeds the device's pipeline
// cache from dir's file for this device and driver build, and Close
// writes it back (atomically: a temporary file renamed over the old one).
// Empty turns the file off. The default is VKC_PIPELINE_CACHE when it is
// set (empty: off), else "vkc" in the user's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux). A file that is
// truncated, corrupt, above the size bound, written by another device or
// driver, or that cannot be written is ignored with one warning on the
// logger per device (Open and Close together): the cache never makes Open
// or Close fail and never hands the driver bytes it did not write. A
// directory (or anything but a regular file) where the file should be is
// that one warning, at Open, and Close leaves it as it is. How the file
// is laid out, and why one is ignored, is in docs/ARCHITECTURE.md ("The
// pipeline cache on disk").
func WithPipelineCache(dir string) Option {
	return func(c *config) { c.pipelineCache, c.pipelineCacheSet = dir, true }
}

// pipelineCacheDir is where Open's device keeps its pipeline cache ("": nowhere).
func (c *config) pipelineCacheDir() string {
	if c.pipelineCacheSet {
		return c.pipelineCache
	}
	if dir, ok := os.LookupEnv("VKC_PIPELINE_CACHE"); ok {
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "" // no home: no cache, as for any process that cannot keep one
	}
	return filepath.Join(dir, "vkc")
}

// WaitPolicy is how the host waits for the device (a Sync, a Read, an
// eager launch's completion): the choice CUDA makes with
// cudaDeviceScheduleSpin, Yield and BlockingSync. Polling the fence sees it
// signal within a microsecond; sleeping waits for the operating system to
// wake the thread, tens of microseconds and more on a loaded machine, but
// leaves the processor to other threads, the driver's included.
type WaitPolicy uint8

// The wait policies.
const (
	// WaitAuto, the default, polls for up to 220 µs, then sleeps: short
	// waits (a small launch) return at once, long ones cost no processor.
	// On a GPU the first 20 µs poll busily and the rest yield the
	// processor between polls; on a CPU device (lavapipe), whose work runs
	// on the host's own cores, every poll yields.
	WaitAuto WaitPolicy = iota
	// WaitSpin polls busily until the device is done: the least latency,
	// a whole core for as long as the wait lasts.
	WaitSpin
	// WaitYield polls, giving the processor away between polls: little
	// latency where cores are free, and no sleep to wake from.
	WaitYield
	// WaitBlock sleeps at once until the device is done: no processor
	// spent, the operating system's wake-up latency added to every wait.
	WaitBlock
)

// waitPolicies names the policies for VKC_WAIT_POLICY and String.
var waitPolicies = [...]string{WaitAuto: "auto", WaitSpin: "spin", WaitYield: "yield", WaitBlock: "block"}

// String is the policy's name as VKC_WAIT_POLICY spells it.
func (p WaitPolicy) String() string {
	if int(p) < len(waitPolicies) {
		return waitPolicies[p]
	}
	return fmt.Sprintf("WaitPolicy(%d)", uint8(p))
}

// ErrWaitPolicy: Open was given a wait policy (WithWaitPolicy or
// VKC_WAIT_POLICY) that is none of the four.
var ErrWaitPolicy = errs.WaitPolicy

// WithWaitPolicy chooses how the device's waits wait (default WaitAuto,
// or VKC_WAIT_POLICY=auto|spin|yield|block); Open refuses a policy that
// is none of the four.
//
// VKC_WAIT_POLICY is read with surrounding spaces trimmed and case
// ignored (" Spin " is WaitSpin); empty or unset is WaitAuto, and any
// other value makes Open fail with ErrWaitPolicy. WithWaitPolicy wins over
// the variable: given the option, Open does not read VKC_WAIT_POLICY at
// all, so an invalid value there does not fail it.
func WithWaitPolicy(p WaitPolicy) Option {
	return func(c *config) { c.wait, c.waitSet = p, true }
}

// waitPolicy is the policy Open's device waits with.
func (c *config) waitPolicy() (WaitPolicy, error) {
	if c.waitSet {
		if int(c.wait) >= len(waitPolicies) {
			return 0, fmt.Errorf("%w: %v", ErrWaitPolicy, c.wait)
		}
		return c.wait, nil
	}
	value := os.Getenv("VKC_WAIT_POLICY")
	name := strings.TrimSpace(value)
	if name == "" {
		return WaitAuto, nil
	}
	for p, n := range waitPolicies {
		if strings.EqualFold(n, name) {
			return WaitPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("%w: VKC_WAIT_POLICY=%q", ErrWaitPolicy, value)
}

// WithStreams sets the number of slots (default 4, at most 64; Open
// refuses more): the pooled command streams logical streams share.
// Logical streams share slots by id % n.
func WithStreams(n int) Option { return func(c *config) { c.rec.Slots = n } }

// WithBatchSize sets the most eager launches a command buffer takes before
// it is submitted without waiting (default 1024). A batch is also submitted
// early, every 64 launches, when the stream's slot has no earlier work left
// on the device, so the device runs a long chain while the host records
// the rest of it.
func WithBatchSize(n int) Option { return func(c *config) { c.rec.BatchSize = n } }

// WithPageSize sets the suballocator's page size (default 64 MiB).
func WithPageSize(bytes uint64) Option { return func(c *config) { c.rec.PageSize = bytes } }

// WithMemoryLimit caps the memory the device reserves for buffers,
// staging and readback (MemoryStats.Reserved, every page counted), so a
// library sharing the GPU with others can keep to a budget; 0, the
// default, sets no cap. A request past it first reclaims memory nothing
// uses (empty pages the allocator keeps for reuse, temporaries of work
// that has finished, waiting for it when it is still running) and only
// then fails with ErrOutOfMemory, whose message gives the request,
// the limit, what is reserved and used, and the largest free range.
// Nothing live is touched: every buffer stays intact and every stream
// usable. A page size above the limit is lowered to it; a limit below the
// device's buffer alignment, which no page fits, makes Open fail.
func WithMemoryLimit(bytes uint64) Option { return func(c *config) { c.rec.MemoryLimit = bytes } }

// Devices lists the Vulkan devices of this machine.
func Devices() ([]DeviceInfo, error) {
	infos, err := vkdev.Devices()
	if err != nil {
		return nil, publicOp("Devices", err)
	}
	out := make([]DeviceInfo, len(infos))
	for i, info := range infos {
		out[i] = deviceInfoOf(info)
	}
	return out, nil
}

// Device is an open Vulkan device with its memory, streams and kernels.
// It is safe for concurrent use; each goroutine should drive its own Stream.
type Device struct {
	rec  *recorder.Recorder
	info DeviceInfo

	cacheDir string // where the pipeline cache file lives ("": nowhere); see PipelineCacheDir

	nextStream atomic.Uint64
	def        *Stream

	// life is held by every call on the device or on anything of it, so
	// Close waits for calls in flight and later calls get ErrClosed.
	life lifetime

	builtins atomic.Pointer[map[string]*Kernel] // a copy of kernels, read without the lock

	mu      lockrank.Mutex
	kernels map[string]*Kernel       // catalogue pipelines, built on first use
	buffers map[*bufferCore]struct{} // live buffers and params, freed at Close
	graphs  map[*Graph]struct{}      // live graphs, closed at Close
	user    map[*Kernel]struct{}     // user kernels, released at Close
	onClose []func()                 // what OnClose registered, run first by Close
}

// Open opens a device: WithDevice or VKC_DEVICE chooses it, else the best.
// With no loader or no driver the error says which package to install.
func Open(opts ...Option) (*Device, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if !c.deviceSet {
		c.device = os.Getenv("VKC_DEVICE")
	}
	if !c.validationSet {
		c.validation = os.Getenv("VKC_VALIDATION") == "1"
	}
	wait, err := c.waitPolicy()
	if err != nil {
		return nil, err
	}
	open := c.open
	if open == nil {
		open = func() (recorder.Device, error) {
			return vkdev.Open(vkdev.Options{Device: c.device, Validation: c.validation,
				SyncValidation: c.syncValidation, Logger: c.logger, WithoutFeatures: recorder.Features(c.without),
				Surface: c.surface, InstanceExtensions: c.instanceExtensions, PipelineCacheDir: c.pipelineCacheDir(),
				Wait: vkdev.WaitPolicy(wait)})
		}
	}
	rdev, err := open()
	if err != nil {
		return nil, publicOp("Open", err)
	}
	if c.wrap != nil {
		rdev = c.wrap(rdev)
	}
	rec, err := recorder.New(rdev, c.rec)
	if err != nil {
		return nil, publicOp("Open", err)
	}
	info := deviceInfoOf(rec.Info())
	info.Features &^= c.without // a device vkc did not open through Vulkan leaves them out here
	if !info.Features.Has(FeatureCooperativeMatrix) {
		info.CooperativeMatrices = nil
	}
	d := &Device{rec: rec, info: info, cacheDir: c.pipelineCacheDir(),
		kernels: map[string]*Kernel{}, buffers: map[*bufferCore]struct{}{}, graphs: map[*Graph]struct{}{},
		user: map[*Kernel]struct{}{}}
	d.mu.SetRank(lockrank.Handles, 0)
	d.def = &Stream{dev: d, id: 0}
	d.nextStream.Store(1)
	return d, nil
}

// Info describes the device (zero for a nil Device).
func (d *Device) Info() DeviceInfo {
	if d == nil {
		return DeviceInfo{}
	}
	return d.info
}

// opened reports whether d came from Open: a nil or zero Device has no
// recorder, and every method then returns an error or a zero value.
func (d *Device) opened() bool { return d != nil && d.rec != nil }

// Stream returns the default stream (id 0); nil for a nil Device.
func (d *Device) Stream() *Stream {
	if !d.opened() {
		return nil
	}
	return d.def
}

// NewStream returns a new logical stream with an id no earlier NewStream
// returned (1, 2, ...; 0 is the default stream), so successive streams
// land on distinct slots until the slots run out. Ids picked with
// StreamWithID are the caller's to keep apart from these.
// It is nil for a nil Device (whose streams' methods return errors).
func (d *Device) NewStream() *Stream {
	if !d.opened() {
		return nil
	}
	return &Stream{dev: d, id: d.nextStream.Add(1) - 1}
}

// StreamWithID returns the logical stream id: ids equal modulo the slot
// count share a slot (and so a capture window). It is nil for a
// nil Device.
func (d *Device) StreamWithID(id uint64) *Stream {
	if !d.opened() {
		return nil
	}
	return &Stream{dev: d, id: id}
}

// Slots is the number of slots (0 for a nil Device).
func (d *Device) Slots() int {
	if !d.opened() {
		return 0
	}
	return d.rec.Slots()
}

// Trim gives every empty page back to the driver now and returns the
// bytes released: the allocator otherwise keeps a page's worth for
// reuse, and a program about to hand memory to other code (or idle for a
// while) can release it. Work that has finished is retired first, so its
// temporaries count as free. Buffers, memory a live graph holds (closed
// buffers it recorded), work still running and the pages of a capture
// window in progress are never touched; during a window Trim releases
// nothing.
func (d *Device) Trim() (released uint64, err error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.leave()
	released, err = d.rec.Trim()
	return released, public(err)
}

// MemoryStats reports the suballocator's statistics.
func (d *Device) MemoryStats() MemoryStats {
	if !d.opened() {
		return MemoryStats{}
	}
	return MemoryStats(d.rec.Stats())
}

// ValidationMessages returns how many errors and warnings the validation
// layer reported (0, 0 when it is off) and the most recent messages.
func (d *Device) ValidationMessages() (errs, warnings int64, recent []string) {
	if !d.opened() {
		return 0, 0, nil
	}
	diag := d.rec.Diagnostics()
	return diag.Errors, diag.Warnings, diag.Recent
}

// Validating reports whether the validation layer is active.
func (d *Device) Validating() bool { return d.opened() && d.rec.Diagnostics().Checking }

// LiveObjects counts Vulkan objects alive on the device by kind; after
// Close every count is zero.
func (d *Device) LiveObjects() map[string]int64 {
	if !d.opened() {
		return map[string]int64{}
	}
	return d.rec.Live()
}

// LiveStaging counts host staging claims still held by buffers or graphs.
func (d *Device) LiveStaging() int {
	if !d.opened() {
		return 0
	}
	return d.rec.LiveStaging()
}

// enter holds the device in use for a call (see lifetime); it fails for a
// Device that is nil, zero or closed. A nil error must be paired with leave.
func (d *Device) enter() error {
	if !d.opened() {
		return errNilDevice
	}
	if !d.life.enter() {
		return closedError("device")
	}
	return nil
}

// leave ends a call begun by enter.
func (d *Device) leave() { d.life.leave() }

// Close waits for calls in flight on the device (and on its buffers,
// kernels, graphs and streams), closes every graph, kernel and buffer still
// open, waits for the device and destroys it. It is idempotent, and after
// device loss it still frees what the host holds. Closing a nil Device
// does nothing.
func (d *Device) Close() error {
	if !d.opened() || !d.life.close() {
		return nil
	}
	defer d.life.finish()
	d.runOnClose()
	d.mu.Lock()
	graphs, bufs, user := d.graphs, d.buffers, d.user
	d.graphs, d.buffers, d.user = map[*Graph]struct{}{}, map[*bufferCore]struct{}{}, map[*Kernel]struct{}{}
	d.mu.Unlock()
	var failures []error
	for g := range graphs {
		first := g.life.close()
		if err := g.g.Close(); err != nil && !errors.Is(err, ErrDeviceLost) {
			failures = append(failures, err)
		}
		if first {
			g.life.finish()
		}
	}
	for b := range bufs {
		_ = b.free() // the buffer's host-side bookkeeping, at device close
	}
	var kernels []*Kernel // closed here: the recorder's Close destroys their pipelines
	for k := range user {
		if k.life.close() {
			kernels = append(kernels, k)
		}
	}
	if err := d.rec.Close(); err != nil {
		failures = append(failures, err)
	}
	for _, k := range kernels {
		k.life.finish()
	}
	if len(failures) > 0 {
		return public(fmt.Errorf("vkc: closing device: %w", errors.Join(failures...)))
	}
	return nil
}

// withRecorderDevice opens the recorder on a device of the caller's
// instead of Vulkan: tests run the public API on the host device.
func withRecorderDevice(open func() (recorder.Device, error)) Option {
	return func(c *config) { c.open = open }
}

// withDeviceWrapper wraps the device the recorder drives: tests inject
// faults (a failing allocation, map, submit, fence wait or command-buffer
// end) on the real device through it.
func withDeviceWrapper(w func(recorder.Device) recorder.Device) Option {
	return func(c *config) { c.wrap = w }
}
