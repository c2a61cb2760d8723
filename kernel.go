package vkc

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
	"github.com/vkcompute/vkc/vk"
)

// Access says how a kernel uses a bound buffer: the recorder orders
// launches by it and marks a launch's write set with it.
type Access = shaders.Access

// Buffer access modes for KernelSpec.
const (
	ReadOnly  = shaders.ReadOnly
	WriteOnly = shaders.WriteOnly
	ReadWrite = shaders.ReadWrite
)

// KernelSpec describes a user kernel: SPIR-V (entry point "main", storage
// buffers at set 0 bindings 0..n-1), how each binding is used, and the
// push-constant size. LocalSize, when non-zero, is applied through
// specialization constants 0, 1, 2.
type KernelSpec struct {
	Name      string
	SPIRV     []byte
	Bindings  []Access
	PushSize  uint32
	LocalSize [3]uint32
}

// Kernel is a compute pipeline ready to launch.
type Kernel struct {
	dev    *Device
	name   string
	pipe   *vk.Pipeline
	access []Access
	push   uint32
	local  [3]uint32
	tile   [2]uint32 // output elements per workgroup of 2-D catalogue kernels
	user   bool

	// mu is held shared from Launch's closed check until the launch is
	// recorded, and exclusively by Close to set closed: a launch racing
	// Close on another goroutine is recorded before the pipeline is
	// destroyed, or refused.
	mu     sync.RWMutex
	closed bool
}

// Name is the kernel's name ("" for a nil Kernel).
func (k *Kernel) Name() string {
	if k == nil {
		return ""
	}
	return k.name
}

// LoadKernel checks a user kernel against its description and builds it.
// Bytes that are not SPIR-V, bindings or push constants that do not match
// the module, or push constants above the device limit are errors here,
// never a crash at launch.
func (d *Device) LoadKernel(spec KernelSpec) (*Kernel, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := vk.CheckSPIRV(spec.SPIRV); err != nil {
		return nil, err
	}
	mod, err := shaders.Inspect(spec.SPIRV)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSPIRV, err)
	}
	if err := matchModule(spec, mod, d.info.Limits); err != nil {
		return nil, err
	}
	k, err := d.build(spec.Name, spec.SPIRV, spec.Bindings, spec.PushSize, spec.LocalSize)
	if err != nil {
		return nil, err
	}
	k.user = true
	d.mu.Lock()
	d.user[k] = struct{}{}
	d.mu.Unlock()
	return k, nil
}

func matchModule(spec KernelSpec, mod shaders.Module, lim vk.Limits) error {
	hasMain := false
	for _, e := range mod.EntryPoints {
		hasMain = hasMain || e == "main"
	}
	if !hasMain {
		return fmt.Errorf("vkc: kernel %q: no compute entry point \"main\" (have %v)", spec.Name, mod.EntryPoints)
	}
	if len(mod.Bindings) != len(spec.Bindings) {
		return fmt.Errorf("vkc: kernel %q: description has %d bindings, module has %d", spec.Name, len(spec.Bindings), len(mod.Bindings))
	}
	for i, b := range mod.Bindings {
		if b.Set != 0 || b.Binding != uint32(i) || b.Kind != shaders.StorageBuffer {
			return fmt.Errorf("vkc: kernel %q: module binding %d is set %d binding %d (%v); want storage buffers at set 0, bindings 0..%d", spec.Name, i, b.Set, b.Binding, b.Kind, len(mod.Bindings)-1)
		}
		if b.Access == shaders.ReadOnly && spec.Bindings[i].Writes() {
			continue // declaring more access than the module uses is safe
		}
		if b.Access.Writes() && !spec.Bindings[i].Writes() {
			return fmt.Errorf("vkc: kernel %q: binding %d is written by the module but described as %v", spec.Name, i, spec.Bindings[i])
		}
	}
	if mod.PushSize != spec.PushSize {
		return fmt.Errorf("vkc: kernel %q: description has %d bytes of push constants, module has %d", spec.Name, spec.PushSize, mod.PushSize)
	}
	if spec.PushSize > lim.MaxPushConstantsSize {
		return fmt.Errorf("vkc: kernel %q: %d bytes of push constants exceed the device limit %d", spec.Name, spec.PushSize, lim.MaxPushConstantsSize)
	}
	local := effectiveLocalSize(spec.LocalSize, mod)
	invocations := uint64(1)
	for i, n := range local {
		if n > lim.MaxComputeWorkGroupSize[i] {
			return fmt.Errorf("vkc: kernel %q: local size %v exceeds the device limit %v", spec.Name, local, lim.MaxComputeWorkGroupSize)
		}
		invocations *= uint64(n)
	}
	if invocations > uint64(lim.MaxComputeWorkGroupInvocations) {
		return fmt.Errorf("vkc: kernel %q: local size %v is %d invocations, above the device limit %d", spec.Name, local, invocations, lim.MaxComputeWorkGroupInvocations)
	}
	return nil
}

// effectiveLocalSize is the workgroup size the pipeline will have: the
// module's own, except in the dimensions it specializes (through constant
// IDs 0, 1, 2), where a non-zero requested size applies as build passes it.
func effectiveLocalSize(requested [3]uint32, mod shaders.Module) [3]uint32 {
	local := mod.LocalSize
	if requested == ([3]uint32{}) {
		return local
	}
	for i, id := range mod.LocalSizeSpecIDs {
		if id >= 0 && id < 3 {
			local[i] = max(requested[id], 1)
		}
	}
	return local
}

func (d *Device) build(name string, code []byte, access []Access, push uint32, local [3]uint32) (*Kernel, error) {
	var spec []uint32
	if local != ([3]uint32{}) {
		spec = []uint32{max(local[0], 1), max(local[1], 1), max(local[2], 1)}
	}
	pipe, err := d.rec.NewPipeline(code, vk.PipelineDesc{Bindings: len(access), PushSize: push, Spec: spec})
	if err != nil {
		return nil, err
	}
	return &Kernel{dev: d, name: name, pipe: pipe, access: append([]Access(nil), access...), push: push, local: local}, nil
}

// builtin returns the catalogue kernel name, building it on first use.
func (d *Device) builtin(name string) (*Kernel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if k, ok := d.kernels[name]; ok {
		return k, nil
	}
	sk, err := shaders.Get(name)
	if err != nil {
		return nil, err
	}
	access := make([]Access, len(sk.Bindings))
	for i, b := range sk.Bindings {
		access[i] = b.Access
	}
	k, err := d.build(name, sk.SPIRV, access, sk.PushSize, sk.LocalSize)
	if err != nil {
		return nil, err
	}
	k.tile = sk.Tile
	d.kernels[name] = k
	return k, nil
}

// Arg is a buffer bound to a kernel launch: any *Buffer[T].
type Arg interface{ arg() *bufferCore }

func (b *Buffer[T]) arg() *bufferCore {
	if b == nil {
		return nil // a typed nil: Launch refuses it
	}
	return b.core
}

// Launch records the kernel on stream s with the given group counts, push
// constants (exactly the described size) and buffers, in binding order.
func (k *Kernel) Launch(s *Stream, groups [3]uint32, push []byte, args ...Arg) error {
	if k == nil || k.pipe == nil {
		return fmt.Errorf("vkc: nil kernel (use Device.LoadKernel)")
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		return ErrClosed
	}
	if uint32(len(push)) != k.push {
		return fmt.Errorf("vkc: kernel %q: %d bytes of push constants, want %d", k.name, len(push), k.push)
	}
	if len(args) != len(k.access) {
		return fmt.Errorf("vkc: kernel %q: %d buffers, want %d", k.name, len(args), len(k.access))
	}
	var cores [vk.MaxBindings]*bufferCore
	for i, a := range args {
		if a != nil {
			cores[i] = a.arg()
		}
		if cores[i] == nil {
			return fmt.Errorf("vkc: kernel %q: buffer %d is nil", k.name, i)
		}
	}
	return k.launch(s, groups, push, cores[:len(args)])
}

// launch checks the group counts and the buffers and hands the launch to
// the recorder. It allocates nothing: the bindings live on the stack.
func (k *Kernel) launch(s *Stream, groups [3]uint32, push []byte, cores []*bufferCore) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.dev != k.dev {
		return fmt.Errorf("vkc: kernel %q launched on a stream of another device", k.name)
	}
	lim := k.dev.info.Limits.MaxComputeWorkGroupCount
	for i, g := range groups {
		if g == 0 || g > lim[i] {
			return fmt.Errorf("vkc: kernel %q: group counts %v outside 1..%v", k.name, groups, lim)
		}
	}
	var binds [vk.MaxBindings]capture.Binding
	var readWrite uint32
	for i, c := range cores {
		if err := c.use(s); err != nil {
			for _, u := range cores[:i] {
				u.done()
			}
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("vkc: kernel %q: buffer %d: %w", k.name, i, err)
			}
			return err
		}
		binds[i] = capture.Binding{Claim: c.claim, Write: k.access[i].Writes()}
		if k.access[i].Reads() && k.access[i].Writes() {
			readWrite |= 1 << uint(i)
		}
	}
	l := recorder.Launch{Args: binds[:len(cores)], Groups: groups, Push: push, ReadWrite: readWrite}
	err := k.dev.rec.Launch(s.id, k.pipe, &l)
	for _, c := range cores {
		c.done()
	}
	return err
}

// Close destroys a user kernel after the work using it; graphs that
// recorded it must be closed first. Idempotent; built-in kernels live
// until the device closes. Racing Device.Close, the pipeline is destroyed
// once, by whichever takes it first, and before the device.
func (k *Kernel) Close() error {
	if k == nil || !k.user {
		return nil
	}
	k.mu.Lock()
	closed := k.closed
	k.closed = true
	k.mu.Unlock()
	if closed {
		return nil
	}
	d := k.dev
	d.mu.Lock()
	_, mine := d.user[k]
	if mine {
		delete(d.user, k)
		d.destroying.Add(1)
	}
	d.mu.Unlock()
	if !mine {
		return nil // Device.Close took it and destroys it
	}
	defer d.destroying.Done()
	return d.rec.DestroyPipeline(k.pipe)
}
