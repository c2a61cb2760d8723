// Package hostdev is a device in host memory: it implements recorder.Device
// with byte slices for memory, Go functions for kernels and one in-order
// queue that a goroutine of its own executes, so the recorder's bookkeeping
// runs, is fuzzed and is fault-injected without a GPU (what wgpu's noop
// backend and database/sql's fake driver are to their layers above).
//
// It is also a strict checker. Every call can be made to fail, by kind and
// by occurrence (FailNth, FailFrom). Misuse that Vulkan leaves undefined —
// a stale or wrong handle, a command on a buffer that is not recording, a
// buffer submitted twice without Replayable, a set updated or a page freed
// while pending work uses it, a host flush or invalidate of bytes pending
// work writes, and two accesses to overlapping memory with no barrier
// between them (one a write) — is reported through Diagnostics as an
// error, the way the Vulkan validation layer reports it, so tests fail on
// it. Live counts every object kind; Close reports what is left.
package hostdev

import (
	"errors"
	"fmt"
	"time"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/devinfo"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
	"github.com/vkcompute/vkc/recorder"
)

// Call names a Device method that can fail.
type Call uint8

// The fallible calls of recorder.Device.
const (
	AllocateMemory Call = iota
	MapMemory
	FlushMemory
	InvalidateMemory
	NewPipeline
	NewDescriptorPool
	AllocateSet
	NewCommandPool
	AllocateCommandBuffer
	Begin
	End
	Reset
	NewFence
	Submit
	WaitFence
	ResetFence
	WaitIdle
	NewTimestamps
	ReadTimestamps
	UpdateSet
	numCalls
)

var callNames = [numCalls]string{"AllocateMemory", "MapMemory", "FlushMemory", "InvalidateMemory",
	"NewPipeline", "NewDescriptorPool", "AllocateSet", "NewCommandPool", "AllocateCommandBuffer",
	"Begin", "End", "Reset", "NewFence", "Submit", "WaitFence", "ResetFence", "WaitIdle",
	"NewTimestamps", "ReadTimestamps", "UpdateSet"}

// String names the call.
func (c Call) String() string {
	if c < numCalls {
		return callNames[c]
	}
	return fmt.Sprintf("Call(%d)", uint8(c))
}

// Calls lists every fallible call, for tests that inject a fault at each.
func Calls() []Call {
	out := make([]Call, numCalls)
	for i := range out {
		out[i] = Call(i)
	}
	return out
}

// Invocation is one dispatch as a kernel function sees it: the group
// counts, the workgroup size (the module's, or the specialization), the
// push constants and the bytes of every bound range, in binding order.
type Invocation struct {
	Groups, Local [3]uint32
	Push          []byte
	Buffers       [][]byte
	// Spec reads the pipeline's specialization constant id (ok false when
	// the pipeline does not set it), for kernels whose work depends on one
	// past the workgroup size (matmul's block).
	Spec func(id uint32) (uint32, bool)
}

// Kernel is a kernel the device can execute: its default workgroup size
// and the Go function that does one dispatch's work.
type Kernel struct {
	Local [3]uint32
	Run   func(*Invocation)
}

// Options configure a Device.
type Options struct {
	// Unified makes device-local memory host-visible, so the recorder takes
	// its mapped paths; otherwise it stages every transfer.
	Unified bool
	// Kernels maps PipelineDesc.Name to the kernels the device executes;
	// nil means Builtins().
	Kernels map[string]Kernel
	// MaxStorageBufferRange is the largest binding; 0 means 128 MiB.
	MaxStorageBufferRange uint32
}

// Device is a recorder.Device in host memory. It is safe for concurrent use.
type Device struct {
	mu      lockrank.Mutex
	changed chan struct{} // closed and replaced whenever a submission completes
	info    recorder.DeviceInfo
	kernels map[string]Kernel

	objects map[uint64]any
	next    uint64
	live    map[string]int64

	faults [numCalls]fault
	calls  [numCalls]int

	queue   []*submission
	paused  bool
	lost    bool
	closed  bool
	stopped chan struct{}

	// hazard tracking since the last barrier, in execution order
	reads, writes []span

	// clock is the device time in ticks: every executed dispatch advances
	// it by its invocations and every copy by its bytes, so work that
	// costs more on a real device takes longer here too.
	clock uint64

	errors, warnings int64
	recent           []string
}

// fault is the failure rule of one call.
type fault struct {
	nth   int   // fail the nth call from now (1 = the next); 0: no single failure
	from  int   // fail every call from this count on (after pass successes); 0: off
	err   error // what the failing call returns
	count int   // calls seen since the rule was set
}

type submission struct {
	cb    *commandBuffer
	fence *fence
}

// span is a byte range of one page, for hazard tracking.
type span struct {
	mem        *memory
	start, end uint64
}

func (s span) overlaps(o span) bool { return s.mem == o.mem && s.start < o.end && o.start < s.end }

type memory struct {
	kind    alloc.Kind
	bytes   []byte
	mapped  bool
	pending int // pending submissions that use it
}

type pipeline struct {
	desc   recorder.PipelineDesc
	kernel Kernel
	local  [3]uint32
	uses   int // command buffers recording or pending that bind it
}

type descriptorPool struct{ sets map[*descriptorSet]struct{} }

type descriptorSet struct {
	pool   *descriptorPool
	pipe   *pipeline
	ranges []recorder.BufferRange
	bound  int // command buffers recording or executable that bind it
}

type commandPool struct{ buffers map[*commandBuffer]struct{} }

type cbState uint8

const (
	cbInitial cbState = iota
	cbRecording
	cbExecutable
)

type commandBuffer struct {
	pool    *commandPool
	state   cbState
	usage   recorder.Recording
	pending int
	cmds    []command
}

type command struct {
	dispatch *recorder.Dispatch // copied; Push owned
	pipe     *pipeline
	set      *descriptorSet
	indirect *memory // the group counts, read when the command executes
	barrier  bool
	copySrc  *memory
	copyDst  *memory
	srcOff   uint64
	dstOff   uint64
	size     uint64
	stamp    *timestamps // a timestamp: query index of stamp
	index    uint32
}

// timestamps is a query pool: the clock as each query's last write saw it.
type timestamps struct {
	ticks   []uint64
	written []bool
}

type fence struct {
	signaled bool
	pending  bool
}

// New returns a device with its queue running.
func New(o Options) *Device {
	kernels := o.Kernels
	if kernels == nil {
		kernels = Builtins()
	}
	rng := o.MaxStorageBufferRange
	if rng == 0 {
		rng = 128 << 20
	}
	d := &Device{
		changed: make(chan struct{}),
		kernels: kernels,
		objects: map[uint64]any{},
		live:    map[string]int64{},
		stopped: make(chan struct{}),
		info: recorder.DeviceInfo{
			Name: "hostdev", Type: devinfo.TypeCPU, Vendor: "vkc", DriverVersion: "1.0.0", APIVersion: "1.1.0",
			Limits: recorder.Limits{
				MaxComputeWorkGroupCount:        [3]uint32{65535, 65535, 65535},
				MaxComputeWorkGroupSize:         [3]uint32{1024, 1024, 64},
				MaxComputeWorkGroupInvocations:  1024,
				MaxComputeSharedMemorySize:      32768,
				MaxStorageBufferRange:           rng,
				MaxPushConstantsSize:            256,
				MaxMemoryAllocationCount:        4096,
				MinStorageBufferOffsetAlignment: 16,
				MinTexelBufferOffsetAlignment:   16,
				MaxTexelBufferElements:          rng / recorder.TexelSize,
				MaxUniformBufferRange:           65536,
				MinUniformBufferOffsetAlignment: 16,
				NonCoherentAtomSize:             64,
				TimestampPeriod:                 1,
			},
			Heaps:         []recorder.MemoryHeap{{Size: 8 << 30, DeviceLocal: true}},
			UnifiedMemory: o.Unified,
			Features:      devinfo.AllFeatures, // host memory stores any width; no module runs here
		},
	}
	d.mu.SetRank(lockrank.Adapter, 0)
	go d.run()
	return d
}

// Info describes the device.
func (d *Device) Info() recorder.DeviceInfo { return d.info }

// ErrInjected is what an injected fault returns when the test gave no error.
var ErrInjected = errors.New("injected fault")

// FailNth makes the nth next call of kind c fail with err (1: the next).
// err nil means ErrInjected. It replaces any rule set for c.
func (d *Device) FailNth(c Call, n int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		err = ErrInjected
	}
	d.faults[c] = fault{nth: n, err: err}
}

// FailFrom lets pass calls of kind c succeed and makes every later one fail
// with err (nil: ErrInjected) until Heal.
func (d *Device) FailFrom(c Call, pass int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		err = ErrInjected
	}
	d.faults[c] = fault{from: pass + 1, err: err}
}

// Heal removes the rule of kind c.
func (d *Device) Heal(c Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[c] = fault{}
}

// Count reports how many calls of kind c were made since the device opened.
func (d *Device) Count(c Call) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[c]
}

// Lose makes the device lost: every later fallible call and every wait for
// pending work fails with an error wrapping errs.DeviceLost, and
// the queue executes nothing more. What was pending is no longer pending
// (Vulkan's rule for a lost device), so it may be destroyed.
func (d *Device) Lose() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lost = true
	for _, sub := range d.queue {
		d.retire(sub)
	}
	d.queue = nil
	d.notify()
}

// retire ends a submission's pending state; the caller holds mu.
func (d *Device) retire(sub *submission) {
	sub.cb.pending--
	for _, m := range d.memoriesOf(sub.cb) {
		m.pending--
	}
	sub.fence.pending = false
}

// Pause holds the queue: submissions stay pending until Resume, so a test
// can look at what the recorder does while work is in flight.
func (d *Device) Pause() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused = true
}

// Resume lets the queue run again.
func (d *Device) Resume() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused = false
	d.notify()
}

// Pending reports how many submissions have not completed.
func (d *Device) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}

// errLost is the error of a call on a lost device.
func errLost(call string) error {
	return fmt.Errorf("%s: %w", call, errs.DeviceLost)
}

// enter runs the fault rules of call c; the caller holds mu.
func (d *Device) enter(c Call) error {
	d.calls[c]++
	if d.closed {
		return fmt.Errorf("%s: %w", c, errs.Closed)
	}
	if d.lost {
		return errLost(c.String())
	}
	f := &d.faults[c]
	if f.err == nil {
		return nil
	}
	f.count++
	switch {
	case f.nth != 0 && f.count == f.nth:
		err := f.err
		*f = fault{}
		return fmt.Errorf("%s: %w", c, err)
	case f.from != 0 && f.count >= f.from:
		return fmt.Errorf("%s: %w", c, f.err)
	}
	return nil
}

// misuse reports a violation of the device's rules as a diagnostic error.
func (d *Device) misuse(format string, args ...any) {
	d.errors++
	msg := fmt.Sprintf(format, args...)
	if len(d.recent) == 32 {
		d.recent = d.recent[1:]
	}
	d.recent = append(d.recent, msg)
}

// Diagnostics reports the misuse and hazards found so far.
func (d *Device) Diagnostics() recorder.Diagnostics {
	d.mu.Lock()
	defer d.mu.Unlock()
	return recorder.Diagnostics{Checking: true, Errors: d.errors, Warnings: d.warnings, Recent: append([]string(nil), d.recent...)}
}

// Live counts live objects by kind.
func (d *Device) Live() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int64{}
	for k, n := range d.live {
		if n != 0 {
			out[k] = n
		}
	}
	return out
}

// Lost reports whether Lose was called.
func (d *Device) Lost() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

func (d *Device) add(kind string, v any) uint64 {
	d.next++
	d.objects[d.next] = v
	d.live[kind]++
	return d.next
}

func (d *Device) remove(kind string, h uint64) {
	delete(d.objects, h)
	d.live[kind]--
}

// lookup returns handle h as a T, reporting a stale or mistyped handle.
func lookup[T any](d *Device, call string, h uint64) (T, bool) {
	v, ok := d.objects[h].(T)
	if !ok {
		d.misuse("%s: handle %d is stale or not a %T", call, h, v)
	}
	return v, ok
}

// AllocateMemory makes a zeroed page.
func (d *Device) AllocateMemory(kind alloc.Kind, size uint64) (recorder.Memory, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(AllocateMemory); err != nil {
		return 0, err
	}
	if size == 0 || size > 1<<34 {
		return 0, fmt.Errorf("memory of %d bytes: %w", size, errs.OutOfMemory)
	}
	return recorder.Memory(d.add("memory", &memory{kind: kind, bytes: make([]byte, size)})), nil
}

// MapMemory returns the page's bytes; device-local pages are host-visible
// only when the device is unified.
func (d *Device) MapMemory(h recorder.Memory) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(MapMemory); err != nil {
		return nil, err
	}
	m, ok := lookup[*memory](d, "MapMemory", uint64(h))
	if !ok {
		return nil, fmt.Errorf("MapMemory of a stale handle")
	}
	if m.kind == alloc.DeviceLocal && !d.info.UnifiedMemory {
		d.misuse("MapMemory: device-local memory is not host-visible on this device")
		return nil, fmt.Errorf("device-local memory is not host-visible")
	}
	m.mapped = true
	return m.bytes, nil
}

// hostAccess checks a flush or invalidate: pending work must not write the
// bytes the host is handing over or taking, nor read the bytes it hands
// over (a host write under a pending read races with it).
func (d *Device) hostAccess(call string, h recorder.Memory, off, size uint64, hostWrites bool) error {
	m, ok := lookup[*memory](d, call, uint64(h))
	if !ok {
		return fmt.Errorf("%s of a stale handle", call)
	}
	if !m.mapped {
		d.misuse("%s: memory is not mapped", call)
	}
	if off+size > uint64(len(m.bytes)) || off+size < off {
		d.misuse("%s: [%d,%d) past the page of %d bytes", call, off, off+size, len(m.bytes))
	}
	if m.pending > 0 {
		s := span{m, off, off + size}
		switch {
		case d.pendingAccess(s, d.writesOf):
			d.misuse("%s: host access to [%d,%d) while pending work writes it", call, off, off+size)
		case hostWrites && d.pendingAccess(s, d.readsOf):
			d.misuse("%s: host write to [%d,%d) while pending work reads it", call, off, off+size)
		}
	}
	return nil
}

// pendingAccess reports whether a pending submission accesses s the way
// spans lists (d.writesOf or d.readsOf).
func (d *Device) pendingAccess(s span, spans func(*command) []span) bool {
	for _, sub := range d.queue {
		for i := range sub.cb.cmds {
			for _, o := range spans(&sub.cb.cmds[i]) {
				if o.overlaps(s) {
					return true
				}
			}
		}
	}
	return false
}

// FlushMemory checks the host's write hand-over (memory is coherent).
func (d *Device) FlushMemory(h recorder.Memory, off, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(FlushMemory); err != nil {
		return err
	}
	return d.hostAccess("FlushMemory", h, off, size, true)
}

// InvalidateMemory checks the host's read (memory is coherent).
func (d *Device) InvalidateMemory(h recorder.Memory, off, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(InvalidateMemory); err != nil {
		return err
	}
	return d.hostAccess("InvalidateMemory", h, off, size, false)
}

// FreeMemory frees a page that no pending work uses.
func (d *Device) FreeMemory(h recorder.Memory) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := lookup[*memory](d, "FreeMemory", uint64(h))
	if !ok {
		return
	}
	if m.pending > 0 {
		d.misuse("FreeMemory: memory used by %d pending submissions", m.pending)
	}
	d.remove("memory", uint64(h))
}

// NewPipeline looks the kernel up by desc.Name; the code must only be
// non-empty whole words (hostdev does not read SPIR-V).
func (d *Device) NewPipeline(code []byte, desc recorder.PipelineDesc) (recorder.Pipeline, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(NewPipeline); err != nil {
		return 0, err
	}
	if len(code) == 0 || len(code)%4 != 0 {
		return 0, fmt.Errorf("kernel %q: %d bytes of code: %w", desc.Name, len(code), errs.BadSPIRV)
	}
	k, ok := d.kernels[desc.Name]
	if !ok {
		return 0, fmt.Errorf("no kernel %q registered", desc.Name)
	}
	local := k.Local // constants 0, 1, 2 size x, y, z, as in the catalogue
	for axis := range local {
		if v, ok := desc.SpecValue(uint32(axis)); ok && v != 0 {
			local[axis] = v
		}
	}
	return recorder.Pipeline(d.add("pipeline", &pipeline{desc: desc, kernel: k, local: local})), nil
}

// DestroyPipeline destroys a pipeline no recorded or pending buffer binds.
func (d *Device) DestroyPipeline(h recorder.Pipeline) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := lookup[*pipeline](d, "DestroyPipeline", uint64(h))
	if !ok {
		return
	}
	if p.uses > 0 {
		d.misuse("DestroyPipeline: pipeline %q still used by %d command buffers", p.desc.Name, p.uses)
	}
	d.remove("pipeline", uint64(h))
}

// NewDescriptorPool makes a pool.
func (d *Device) NewDescriptorPool(maxSets uint32) (recorder.DescriptorPool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(NewDescriptorPool); err != nil {
		return 0, err
	}
	return recorder.DescriptorPool(d.add("descriptor-pool", &descriptorPool{sets: map[*descriptorSet]struct{}{}})), nil
}

// DestroyDescriptorPool destroys a pool and its sets.
func (d *Device) DestroyDescriptorPool(h recorder.DescriptorPool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := lookup[*descriptorPool](d, "DestroyDescriptorPool", uint64(h))
	if !ok {
		return
	}
	for h2, v := range d.objects {
		if s, ok := v.(*descriptorSet); ok && s.pool == p {
			if s.bound > 0 {
				d.misuse("DestroyDescriptorPool: a set is still bound by %d command buffers", s.bound)
			}
			d.remove("descriptor-set", h2)
		}
	}
	d.remove("descriptor-pool", uint64(h))
}

// AllocateSet takes a set for pipeline p.
func (d *Device) AllocateSet(pool recorder.DescriptorPool, p recorder.Pipeline) (recorder.DescriptorSet, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(AllocateSet); err != nil {
		return 0, err
	}
	dp, ok1 := lookup[*descriptorPool](d, "AllocateSet", uint64(pool))
	pp, ok2 := lookup[*pipeline](d, "AllocateSet", uint64(p))
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("AllocateSet with stale handles")
	}
	s := &descriptorSet{pool: dp, pipe: pp}
	dp.sets[s] = struct{}{}
	return recorder.DescriptorSet(d.add("descriptor-set", s)), nil
}

// FreeSet frees a set no recorded or pending buffer binds.
func (d *Device) FreeSet(pool recorder.DescriptorPool, h recorder.DescriptorSet) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := lookup[*descriptorSet](d, "FreeSet", uint64(h))
	if !ok {
		return
	}
	if s.bound > 0 {
		d.misuse("FreeSet: set still bound by %d command buffers", s.bound)
	}
	delete(s.pool.sets, s)
	d.remove("descriptor-set", uint64(h))
}

// UpdateSet points the set at ranges; no recorded or pending buffer may
// bind it (Vulkan would invalidate that buffer). A texel binding's range
// that no view may cover is refused as vk refuses it, and the set then
// keeps the ranges it had.
func (d *Device) UpdateSet(h recorder.DescriptorSet, r []recorder.BufferRange) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(UpdateSet); err != nil {
		return err
	}
	s, ok := lookup[*descriptorSet](d, "UpdateSet", uint64(h))
	if !ok {
		return fmt.Errorf("UpdateSet with a stale handle")
	}
	if s.bound > 0 {
		d.misuse("UpdateSet: set bound by %d recorded or pending command buffers", s.bound)
	}
	l := d.info.Limits
	for i, br := range r {
		m, ok := lookup[*memory](d, "UpdateSet", uint64(br.Memory))
		if ok && br.Offset+br.Size > uint64(len(m.bytes)) {
			d.misuse("UpdateSet: range [%d,%d) past its page of %d bytes", br.Offset, br.Offset+br.Size, len(m.bytes))
		}
		if (s.pipe.desc.Texels|s.pipe.desc.StorageTexels)>>uint(i)&1 != 0 {
			if err := l.CheckTexelRangeOf(br.Offset, br.Size, br.Format.Size()); err != nil {
				return fmt.Errorf("texel binding %d: %w", i, err)
			}
			continue
		}
		if br.Size > uint64(l.MaxStorageBufferRange) {
			d.misuse("UpdateSet: range of %d bytes above maxStorageBufferRange", br.Size)
		}
		if align := l.MinStorageBufferOffsetAlignment; br.Offset%align != 0 {
			d.misuse("UpdateSet: offset %d not a multiple of minStorageBufferOffsetAlignment %d", br.Offset, align)
		}
	}
	s.ranges = append(s.ranges[:0], r...)
	return nil
}

// NewCommandPool makes a pool.
func (d *Device) NewCommandPool() (recorder.CommandPool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(NewCommandPool); err != nil {
		return 0, err
	}
	return recorder.CommandPool(d.add("command-pool", &commandPool{buffers: map[*commandBuffer]struct{}{}})), nil
}

// DestroyCommandPool destroys a pool and the buffers still in it.
func (d *Device) DestroyCommandPool(h recorder.CommandPool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := lookup[*commandPool](d, "DestroyCommandPool", uint64(h))
	if !ok {
		return
	}
	for h2, v := range d.objects {
		if cb, ok := v.(*commandBuffer); ok && cb.pool == p {
			if cb.pending > 0 {
				d.misuse("DestroyCommandPool: a command buffer is pending")
			}
			d.release(cb)
			d.remove("command-buffer", h2)
		}
	}
	d.remove("command-pool", uint64(h))
}

// AllocateCommandBuffer takes a buffer from the pool.
func (d *Device) AllocateCommandBuffer(h recorder.CommandPool) (recorder.CommandBuffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(AllocateCommandBuffer); err != nil {
		return 0, err
	}
	p, ok := lookup[*commandPool](d, "AllocateCommandBuffer", uint64(h))
	if !ok {
		return 0, fmt.Errorf("AllocateCommandBuffer from a stale pool")
	}
	cb := &commandBuffer{pool: p}
	p.buffers[cb] = struct{}{}
	return recorder.CommandBuffer(d.add("command-buffer", cb)), nil
}

// release drops what a buffer's commands hold (binds of sets and pipelines).
func (d *Device) release(cb *commandBuffer) {
	for _, c := range cb.cmds {
		if c.set != nil {
			c.set.bound--
			c.pipe.uses--
		}
	}
	cb.cmds = cb.cmds[:0]
}

// FreeCommandBuffer frees a buffer that is not pending.
func (d *Device) FreeCommandBuffer(p recorder.CommandPool, h recorder.CommandBuffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cb, ok := lookup[*commandBuffer](d, "FreeCommandBuffer", uint64(h))
	if !ok {
		return
	}
	if cb.pending > 0 {
		d.misuse("FreeCommandBuffer: buffer is pending")
	}
	d.release(cb)
	delete(cb.pool.buffers, cb)
	d.remove("command-buffer", uint64(h))
}

func (d *Device) cb(call string, h recorder.CommandBuffer) *commandBuffer {
	cb, _ := lookup[*commandBuffer](d, call, uint64(h))
	return cb
}

// Begin starts recording an initial buffer.
func (d *Device) Begin(h recorder.CommandBuffer, r recorder.Recording) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(Begin); err != nil {
		return err
	}
	cb := d.cb("Begin", h)
	if cb == nil {
		return fmt.Errorf("Begin of a stale buffer")
	}
	if cb.state == cbRecording || cb.pending > 0 {
		d.misuse("Begin: buffer is recording or pending")
	}
	d.release(cb)
	cb.state, cb.usage = cbRecording, r
	return nil
}

// End finishes recording.
func (d *Device) End(h recorder.CommandBuffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(End); err != nil {
		return err
	}
	cb := d.cb("End", h)
	if cb == nil {
		return fmt.Errorf("End of a stale buffer")
	}
	if cb.state != cbRecording {
		d.misuse("End: buffer is not recording")
	}
	cb.state = cbExecutable
	return nil
}

// Reset returns a buffer that is not pending to the initial state.
func (d *Device) Reset(h recorder.CommandBuffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(Reset); err != nil {
		return err
	}
	cb := d.cb("Reset", h)
	if cb == nil {
		return fmt.Errorf("Reset of a stale buffer")
	}
	if cb.pending > 0 {
		d.misuse("Reset: buffer is pending")
	}
	d.release(cb)
	cb.state = cbInitial
	return nil
}

// recording returns the buffer if it is recording, reporting misuse.
func (d *Device) recording(call string, h recorder.CommandBuffer) *commandBuffer {
	cb := d.cb(call, h)
	if cb != nil && cb.state != cbRecording {
		d.misuse("%s: buffer is not recording", call)
		return nil
	}
	return cb
}

// CmdDispatch records a launch.
func (d *Device) CmdDispatch(h recorder.CommandBuffer, x *recorder.Dispatch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cb := d.recording("CmdDispatch", h)
	p, ok1 := lookup[*pipeline](d, "CmdDispatch", uint64(x.Pipeline))
	s, ok2 := lookup[*descriptorSet](d, "CmdDispatch", uint64(x.Set))
	if cb == nil || !ok1 || !ok2 {
		return
	}
	if s.pipe != p {
		d.misuse("CmdDispatch: set allocated for pipeline %q bound to %q", s.pipe.desc.Name, p.desc.Name)
	}
	if len(x.Push) != int(p.desc.PushSize) {
		d.misuse("CmdDispatch: %d bytes of push constants for a layout of %d", len(x.Push), p.desc.PushSize)
	}
	if len(s.ranges) != p.desc.Bindings {
		d.misuse("CmdDispatch: set names %d ranges, pipeline %q has %d bindings", len(s.ranges), p.desc.Name, p.desc.Bindings)
	}
	var indirect *memory
	if x.Indirect != 0 {
		m, ok := lookup[*memory](d, "CmdDispatch", uint64(x.Indirect))
		if !ok {
			return
		}
		if x.IndirectOffset%4 != 0 || x.IndirectOffset+12 > uint64(len(m.bytes)) {
			d.misuse("CmdDispatch: indirect command at %d of a page of %d bytes", x.IndirectOffset, len(m.bytes))
			return
		}
		indirect = m
	} else {
		d.checkGroups("CmdDispatch", x.Groups)
	}
	copied := *x
	copied.Push = append([]byte(nil), x.Push...)
	if x.Barrier {
		cb.cmds = append(cb.cmds, command{barrier: true})
	}
	cb.cmds = append(cb.cmds, command{dispatch: &copied, pipe: p, set: s, indirect: indirect})
	s.bound++
	p.uses++
}

// checkGroups reports group counts outside the device's limits (zero is
// allowed: Vulkan dispatches nothing).
func (d *Device) checkGroups(call string, g [3]uint32) {
	for i, n := range g {
		if n > d.info.Limits.MaxComputeWorkGroupCount[i] {
			d.misuse("%s: group counts %v above the limits %v", call, g, d.info.Limits.MaxComputeWorkGroupCount)
			return
		}
	}
}

// CmdBarrier records a barrier.
func (d *Device) CmdBarrier(h recorder.CommandBuffer, _ recorder.Barrier) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cb := d.recording("CmdBarrier", h); cb != nil {
		cb.cmds = append(cb.cmds, command{barrier: true})
	}
}

// CmdCopy records a copy.
func (d *Device) CmdCopy(h recorder.CommandBuffer, src recorder.Memory, srcOff uint64, dst recorder.Memory, dstOff, size uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cb := d.recording("CmdCopy", h)
	sm, ok1 := lookup[*memory](d, "CmdCopy", uint64(src))
	dm, ok2 := lookup[*memory](d, "CmdCopy", uint64(dst))
	if cb == nil || !ok1 || !ok2 {
		return
	}
	if srcOff+size > uint64(len(sm.bytes)) || dstOff+size > uint64(len(dm.bytes)) {
		d.misuse("CmdCopy: %d bytes past a page", size)
		return
	}
	if sm == dm && srcOff < dstOff+size && dstOff < srcOff+size {
		d.misuse("CmdCopy: overlapping regions")
	}
	cb.cmds = append(cb.cmds, command{copySrc: sm, copyDst: dm, srcOff: srcOff, dstOff: dstOff, size: size})
}

// NewTimestamps creates a pool of count timestamp queries.
func (d *Device) NewTimestamps(count uint32) (recorder.Timestamps, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(NewTimestamps); err != nil {
		return 0, err
	}
	if count == 0 {
		return 0, fmt.Errorf("a timestamp pool of zero queries")
	}
	return recorder.Timestamps(d.add("timestamps", &timestamps{ticks: make([]uint64, count), written: make([]bool, count)})), nil
}

// DestroyTimestamps destroys a pool no pending submission writes.
func (d *Device) DestroyTimestamps(h recorder.Timestamps) {
	d.mu.Lock()
	defer d.mu.Unlock()
	q, ok := lookup[*timestamps](d, "DestroyTimestamps", uint64(h))
	if !ok {
		return
	}
	if d.writesPending(q) {
		d.misuse("DestroyTimestamps: a pending submission writes it")
	}
	d.remove("timestamps", uint64(h))
}

// CmdTimestamp records a reset of query i and a write of the clock.
func (d *Device) CmdTimestamp(h recorder.CommandBuffer, qh recorder.Timestamps, i uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cb := d.recording("CmdTimestamp", h)
	q, ok := lookup[*timestamps](d, "CmdTimestamp", uint64(qh))
	if cb == nil || !ok {
		return
	}
	if i >= uint32(len(q.ticks)) {
		d.misuse("CmdTimestamp: query %d of a pool of %d", i, len(q.ticks))
		return
	}
	cb.cmds = append(cb.cmds, command{stamp: q, index: i})
}

// ReadTimestamps waits until no pending submission writes the pool, then
// reads the queries; one never written is misuse, as Vulkan's wait on it
// would never return.
func (d *Device) ReadTimestamps(h recorder.Timestamps, first uint32, out []uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(ReadTimestamps); err != nil {
		return err
	}
	q, ok := lookup[*timestamps](d, "ReadTimestamps", uint64(h))
	if !ok {
		return fmt.Errorf("ReadTimestamps of a stale pool")
	}
	if uint64(first)+uint64(len(out)) > uint64(len(q.ticks)) {
		return fmt.Errorf("timestamps [%d,%d) of a pool of %d", first, uint64(first)+uint64(len(out)), len(q.ticks))
	}
	for d.writesPending(q) {
		if d.lost {
			return errLost("ReadTimestamps")
		}
		ch := d.changed
		d.mu.Unlock()
		<-ch
		d.mu.Lock()
	}
	for i := range out {
		if !q.written[first+uint32(i)] {
			d.misuse("ReadTimestamps: query %d was never written", first+uint32(i))
			return fmt.Errorf("timestamp %d never written", first+uint32(i))
		}
		out[i] = q.ticks[first+uint32(i)]
	}
	return nil
}

// writesPending reports whether a queued submission writes a query of q.
func (d *Device) writesPending(q *timestamps) bool {
	for _, sub := range d.queue {
		for i := range sub.cb.cmds {
			if sub.cb.cmds[i].stamp == q {
				return true
			}
		}
	}
	return false
}

// NewFence creates an unsignaled fence.
func (d *Device) NewFence() (recorder.Fence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(NewFence); err != nil {
		return 0, err
	}
	return recorder.Fence(d.add("fence", &fence{})), nil
}

// DestroyFence destroys a fence no pending submission signals.
func (d *Device) DestroyFence(h recorder.Fence) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := lookup[*fence](d, "DestroyFence", uint64(h))
	if !ok {
		return
	}
	if f.pending {
		d.misuse("DestroyFence: a pending submission signals it")
	}
	d.remove("fence", uint64(h))
}

// Submit queues an executable buffer.
func (d *Device) Submit(h recorder.CommandBuffer, fh recorder.Fence) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(Submit); err != nil {
		return err
	}
	cb := d.cb("Submit", h)
	f, ok := lookup[*fence](d, "Submit", uint64(fh))
	if cb == nil || !ok {
		return fmt.Errorf("Submit with stale handles")
	}
	switch {
	case cb.state != cbExecutable:
		d.misuse("Submit: buffer is not executable")
		return nil
	case cb.pending > 0 && cb.usage != recorder.Replayable:
		d.misuse("Submit: buffer pending again without Replayable")
	case f.signaled || f.pending:
		d.misuse("Submit: fence is signaled or pending")
	}
	cb.pending++
	f.pending = true
	for _, m := range d.memoriesOf(cb) {
		m.pending++
	}
	d.queue = append(d.queue, &submission{cb: cb, fence: f})
	d.notify()
	return nil
}

// memoriesOf lists the pages a buffer's commands use.
func (d *Device) memoriesOf(cb *commandBuffer) []*memory {
	seen := map[*memory]struct{}{}
	var out []*memory
	addMem := func(m *memory) {
		if _, ok := seen[m]; !ok && m != nil {
			seen[m] = struct{}{}
			out = append(out, m)
		}
	}
	for i := range cb.cmds {
		c := &cb.cmds[i]
		addMem(c.copySrc)
		addMem(c.copyDst)
		addMem(c.indirect)
		if c.set != nil {
			for _, r := range c.set.ranges {
				m, _ := d.objects[uint64(r.Memory)].(*memory)
				addMem(m)
			}
		}
	}
	return out
}

// WaitFence waits for a fence to signal.
func (d *Device) WaitFence(h recorder.Fence, timeout time.Duration) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(WaitFence); err != nil {
		return false, err
	}
	f, ok := lookup[*fence](d, "WaitFence", uint64(h))
	if !ok {
		return false, fmt.Errorf("WaitFence of a stale fence")
	}
	var deadline <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for !f.signaled {
		if d.lost {
			return false, errLost("WaitFence")
		}
		if !f.pending {
			d.misuse("WaitFence: fence was never submitted")
			return false, nil
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
			d.mu.Lock()
		case <-deadline:
			d.mu.Lock()
			return f.signaled, nil
		}
	}
	return true, nil
}

// ResetFence returns a signaled fence to unsignaled.
func (d *Device) ResetFence(h recorder.Fence) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(ResetFence); err != nil {
		return err
	}
	f, ok := lookup[*fence](d, "ResetFence", uint64(h))
	if !ok {
		return fmt.Errorf("ResetFence of a stale fence")
	}
	if f.pending {
		d.misuse("ResetFence: fence is pending")
	}
	f.signaled = false
	return nil
}

// WaitIdle waits until the queue is empty.
func (d *Device) WaitIdle() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter(WaitIdle); err != nil {
		return err
	}
	for len(d.queue) > 0 {
		if d.lost {
			return errLost("WaitIdle")
		}
		if d.paused {
			d.paused = false // a device waits for its work; a paused queue would never drain
			d.notify()
		}
		ch := d.changed
		d.mu.Unlock()
		<-ch
		d.mu.Lock()
	}
	return nil
}

// Close stops the queue and reports every object still alive as a leak.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for kind, n := range d.live {
		if n != 0 {
			d.misuse("Close: %d %s objects still alive", n, kind)
		}
	}
	d.notify()
	d.mu.Unlock()
	<-d.stopped
	return nil
}

// notify wakes every waiter; the caller holds mu.
func (d *Device) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// run executes submissions in order until Close.
func (d *Device) run() {
	defer close(d.stopped)
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for !d.closed && (d.paused || d.lost || len(d.queue) == 0) {
			ch := d.changed
			d.mu.Unlock()
			<-ch
			d.mu.Lock()
		}
		if d.closed {
			return
		}
		sub := d.queue[0]
		d.execute(sub.cb)
		d.queue = d.queue[1:]
		d.retire(sub)
		sub.fence.signaled = true
		d.notify()
	}
}

// writesOf lists what a command writes; readsOf what it reads.
func (d *Device) writesOf(c *command) []span {
	switch {
	case c.copyDst != nil:
		return []span{{c.copyDst, c.dstOff, c.dstOff + c.size}}
	case c.dispatch != nil:
		var out []span
		for i, r := range c.set.ranges {
			if c.pipe.desc.Writes&(1<<uint(i)) != 0 {
				if m, ok := d.objects[uint64(r.Memory)].(*memory); ok {
					out = append(out, span{m, r.Offset, r.Offset + r.Size})
				}
			}
		}
		return out
	}
	return nil
}

func (d *Device) readsOf(c *command) []span {
	switch {
	case c.copySrc != nil:
		return []span{{c.copySrc, c.srcOff, c.srcOff + c.size}}
	case c.dispatch != nil:
		var out []span
		if c.indirect != nil {
			off := c.dispatch.IndirectOffset
			out = append(out, span{c.indirect, off, off + 12})
		}
		for i, r := range c.set.ranges {
			if c.pipe.desc.Writes&(1<<uint(i)) == 0 {
				if m, ok := d.objects[uint64(r.Memory)].(*memory); ok {
					out = append(out, span{m, r.Offset, r.Offset + r.Size})
				}
			}
		}
		return out
	}
	return nil
}

// hazard checks one command's accesses against the work since the last
// barrier and adds them. A written binding counts as read too: a
// read-write binding reads its old contents.
func (d *Device) hazard(c *command) {
	ws, rs := d.writesOf(c), d.readsOf(c)
	for _, w := range ws {
		for _, o := range append(d.writes, d.reads...) {
			if w.overlaps(o) {
				d.misuse("hazard: a write to [%d,%d) overlaps earlier work with no barrier between", w.start, w.end)
				break
			}
		}
	}
	for _, r := range rs {
		for _, o := range d.writes {
			if r.overlaps(o) {
				d.misuse("hazard: a read of [%d,%d) follows a write with no barrier between", r.start, r.end)
				break
			}
		}
	}
	d.writes = append(d.writes, ws...)
	d.reads = append(d.reads, rs...)
}

// execute runs a buffer's commands in order.
func (d *Device) execute(cb *commandBuffer) {
	for i := range cb.cmds {
		c := &cb.cmds[i]
		switch {
		case c.barrier:
			d.reads, d.writes = d.reads[:0], d.writes[:0]
		case c.stamp != nil:
			c.stamp.ticks[c.index] = d.clock
			c.stamp.written[c.index] = true
		case c.copySrc != nil:
			d.hazard(c)
			d.clock += c.size
			copy(c.copyDst.bytes[c.dstOff:c.dstOff+c.size], c.copySrc.bytes[c.srcOff:c.srcOff+c.size])
		case c.dispatch != nil:
			d.hazard(c)
			groups := c.dispatch.Groups
			if c.indirect != nil {
				off := c.dispatch.IndirectOffset
				for i := range groups {
					groups[i] = getWord(c.indirect.bytes[off:], uint32(i))
				}
				d.checkGroups("execute", groups)
				if groups[0] == 0 || groups[1] == 0 || groups[2] == 0 {
					continue // Vulkan dispatches nothing
				}
			}
			inv := &Invocation{Groups: groups, Local: c.pipe.local, Push: c.dispatch.Push, Spec: c.pipe.desc.SpecValue}
			for _, r := range c.set.ranges {
				m, ok := d.objects[uint64(r.Memory)].(*memory)
				if !ok {
					d.misuse("execute: a bound page was freed")
					return
				}
				inv.Buffers = append(inv.Buffers, m.bytes[r.Offset:r.Offset+r.Size:r.Offset+r.Size])
			}
			c.pipe.kernel.Run(inv)
			d.clock += uint64(groups[0]) * uint64(groups[1]) * uint64(groups[2]) * uint64(c.pipe.local[0]) * uint64(c.pipe.local[1]) * uint64(c.pipe.local[2])
		}
	}
}
