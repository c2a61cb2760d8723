package vkc

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// Access says how a kernel uses a bound buffer: launches are ordered by it
// (a read after a write needs a barrier, two reads do not) and a launch's
// writes are what the taint ledger marks.
type Access uint8

// Buffer access modes for KernelSpec.
const (
	// ReadOnly buffers are only read (GLSL readonly).
	ReadOnly Access = iota + 1
	// WriteOnly buffers are only written (GLSL writeonly); their previous
	// contents do not matter to the kernel. A binding described WriteOnly
	// must be declared writeonly (NonReadable) in the module: a kernel
	// that reads a buffer described as write-only would read bytes the
	// launch never checked were written.
	WriteOnly
	// ReadWrite buffers are read and written in place (an axpy's y).
	ReadWrite
)

// String names the access for error messages and printed specs.
func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read"
	case WriteOnly:
		return "write"
	case ReadWrite:
		return "read-write"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// valid reports whether a is one of ReadOnly, WriteOnly and ReadWrite.
func (a Access) valid() bool { return a >= ReadOnly && a <= ReadWrite }

// Reads reports whether the kernel reads the buffer's old contents.
func (a Access) Reads() bool { return a == ReadOnly || a == ReadWrite }

// Writes reports whether the kernel writes the buffer.
func (a Access) Writes() bool { return a == WriteOnly || a == ReadWrite }

// accessOf is the public form of a module's or catalogue's access.
func accessOf(a shaders.Access) Access {
	switch a {
	case shaders.ReadOnly:
		return ReadOnly
	case shaders.WriteOnly:
		return WriteOnly
	case shaders.ReadWrite:
		return ReadWrite
	}
	return Access(0)
}

// KernelSpec describes a user kernel. SPIRV is the module: an entry point
// (Entry), buffers at set 0 bindings 0..n-1 (the order Launch takes them
// in: storage buffers, uniform buffers, uniform and storage texel
// buffers), push constants in one block. docs/guide/kernels.md is
// the guide.
//
// The description (Bindings and PushSize) is optional. Leave Bindings nil
// and PushSize 0 and LoadKernel derives both from the module: one binding
// per buffer, its access from what the entry point's code (and
// every function it calls) does through it: write-only if it only
// stores, read-only if it only loads (or never touches it), read-write if
// both; where a pointer into it goes somewhere the reader does not follow,
// from its decorations (NonWritable, GLSL readonly: read-only;
// NonReadable, writeonly: write-only; else read-write). A decoration the
// code contradicts (NonWritable on a binding it stores to, NonReadable on
// one it loads) is refused, derived or not. PushSize is the size of the
// push-constant block: the bytes from its start to the end of its last
// member, every member placed by the module's Offset, ArrayStride,
// MatrixStride and RowMajor decorations (a block { mat3 m; } spans 44
// bytes: three columns 16 bytes apart, padding after the last not
// counted). Set either and the description is taken as written and
// checked against the module: a different number of bindings, a binding
// the code writes described as read-only, a binding the code reads
// described as write-only, an Access other than ReadOnly, WriteOnly and
// ReadWrite, or a different push size is refused at load. Describing more
// access than the module uses (read-write for a read-only or a
// write-only buffer) is allowed.
//
// LocalSize is a request, not part of the description, given per axis
// (x, y, z) as Kernel.Spec reports it: zero keeps the module's own
// workgroup size; a non-zero size applies to each axis the module makes
// specializable, through the specialization constant that sizes that axis
// (GLSL local_size_x_id = 2 makes LocalSize[0] set constant 2), and a 0
// on a specializable axis then asks for 1. A size along an axis the
// module fixes is refused, unless it is the size fixed there. Where one
// constant sizes two axes, a request must give both the same size.
// Constants may set a workgroup constant too; a request disagreeing with
// it is refused.
//
// To write the kernel in GLSL, compile it with glslc from go generate and
// embed the module, so that building the program needs no compiler
// (examples/userkernel does this and checks that the module is fresh):
//
//	//go:generate glslc --target-env=vulkan1.1 -O -o saxpy.spv saxpy.comp
//
//	//go:embed saxpy.spv
//	var saxpySPIRV []byte
type KernelSpec struct {
	// Name labels the kernel in errors and in Kernel.Spec.
	Name string
	// SPIRV is the module, as glslc writes it (little-endian words).
	SPIRV []byte
	// Bindings is how the kernel uses each buffer, in binding order; nil
	// (with PushSize 0) derives it from the module.
	Bindings []Access
	// PushSize is the push-constant block's size in bytes, which Launch
	// requires of its push argument.
	PushSize uint32
	// LocalSize requests a workgroup size; see KernelSpec.
	LocalSize [3]uint32
	// Entry names the entry point to run, so one module can hold several
	// kernels. "" means "main", or the module's only GLCompute entry
	// point when it has no "main".
	Entry string
	// Constants sets specialization constants by SpecId, so a kernel's
	// sizes and switches can be fixed at load rather than compiled in.
	// Each value must be representable in the constant's declared type
	// (bool takes 0 or 1); an id the module does not declare is refused.
	// Constants the map leaves out keep the module's defaults.
	Constants map[uint32]float64
	// Vec4Texels lists uniform texel bindings (GLSL samplerBuffer,
	// isamplerBuffer, usamplerBuffer) to view four elements per texel,
	// as R32G32B32A32 of the sampled type, instead of one: a texelFetch
	// then reads four consecutive elements in a single load on every
	// driver, where a storage texel buffer declared rgba32f (the other
	// four-element view) is read with imageLoad, much slower on some
	// drivers. Such a binding takes buffers of 32-bit elements of its
	// sampled type only (float32, int32, uint32), and texel i holds
	// elements 4i..4i+3: a buffer of n elements shows n/4 texels, rounded
	// down, as through a storage texel buffer declared rgba32f. Each entry
	// must be the index of a distinct uniform texel binding of 32-bit
	// sampled type.
	Vec4Texels []int
}

// derivesDescription reports whether spec leaves its description to the
// module: no bindings and no push constants given.
func (spec KernelSpec) derivesDescription() bool {
	return spec.Bindings == nil && spec.PushSize == 0
}

// String describes a spec without its bytes, so that what LoadKernel derived
// (Kernel.Spec) can be printed: name, bindings, push size, local size.
func (spec KernelSpec) String() string {
	name := spec.Name
	if name == "" {
		name = "unnamed kernel"
	}
	s := fmt.Sprintf("%s: bindings %v, %d bytes of push constants, local size %v", name, spec.Bindings, spec.PushSize, spec.LocalSize)
	if spec.Entry != "" && spec.Entry != "main" {
		s += fmt.Sprintf(", entry point %q", spec.Entry)
	}
	if len(spec.Constants) > 0 {
		s += fmt.Sprintf(", constants %v", spec.Constants) // fmt prints a map sorted by key
	}
	if len(spec.Vec4Texels) > 0 {
		s += fmt.Sprintf(", vec4 texels %v", spec.Vec4Texels)
	}
	return s
}

// Kernel is a compute pipeline ready to launch.
type Kernel struct {
	dev    *Device
	name   string
	rk     *recorder.Kernel
	access []Access
	push   uint32
	local  [3]uint32            // the workgroup size the pipeline runs with (catalogue 1-D kernels: x is their Span, the elements a group covers)
	tile   [2]uint32            // output elements per workgroup of 2-D catalogue kernels
	elems  []shaders.ScalarType // what each binding's module block holds (user kernels)
	user   bool

	// What a user kernel was specialized with and derived from its
	// module: the entry point run, the constants set (as given), each
	// binding's minimum size in bytes, and the push-constant block's
	// layout (nil if none), which Push lays values out by.
	entry      string
	constants  map[uint32]float64
	minSize    []uint64
	pushLayout *shaders.Layout
	// kinds is each binding's descriptor kind (user kernels), formats the
	// texel bindings' formats.
	kinds      []shaders.DescriptorKind
	formats    [recorder.MaxBindings]recorder.TexelFormat
	texelTypes [recorder.MaxBindings]shaders.ScalarType // uniform texel bindings' sampled types
	texels     uint32                                   // bit i: binding i is a texel binding
	vec4       uint32                                   // bit i: binding i is a uniform texel binding viewed four elements per texel (KernelSpec.Vec4Texels)

	// life is held by Launch from its check until the launch is recorded,
	// so a launch racing Close on another goroutine is recorded before
	// the kernel is released, or refused.
	life lifetime
}

// Name is the kernel's name ("" for a nil Kernel).
func (k *Kernel) Name() string {
	if k == nil {
		return ""
	}
	return k.name
}

// Spec is the description the kernel runs with, whether LoadKernel derived
// it from the module or checked the one given, so that a caller can print
// it or copy it into code: Name, Bindings (a copy), PushSize, as
// LocalSize the workgroup size the pipeline has (the module's own, or the
// size requested through specialization) — one group covers that many
// invocations —, Entry the entry point run (resolved: "main" when none was
// named), Constants a copy of those set and Vec4Texels the bindings
// viewed four elements per texel, in ascending order. SPIRV is nil: the kernel does not keep the module's bytes.
// Passing the result with the module's bytes back to LoadKernel builds the
// same kernel.
func (k *Kernel) Spec() KernelSpec {
	if k == nil {
		return KernelSpec{}
	}
	return KernelSpec{Name: k.name, Bindings: append([]Access(nil), k.access...), PushSize: k.push, LocalSize: k.local,
		Entry: k.entry, Constants: maps.Clone(k.constants), Vec4Texels: k.vec4Bindings()}
}

// vec4Bindings is the bindings viewed four elements per texel, ascending;
// nil when none is.
func (k *Kernel) vec4Bindings() []int {
	var out []int
	for i := 0; i < recorder.MaxBindings; i++ {
		if k.vec4>>uint(i)&1 != 0 {
			out = append(out, i)
		}
	}
	return out
}

// LoadKernel builds a user kernel from its SPIR-V, deriving its description
// from the module or checking the one given (see KernelSpec). Bytes that
// are not a whole SPIR-V module (ErrBadSPIRV), a module whose SPIR-V
// version needs a newer Vulkan than the device runs (ErrUnsupported; modules
// are validated for the device's Vulkan version), an entry point the module
// lacks (or none named in a module of several without "main"), a
// description that does not match the module, a decoration the code
// contradicts, a constant the module does not declare or a value its type
// cannot hold, bindings other than single storage, uniform or texel
// buffers at set 0 bindings 0..n-1 (an image, a sampler, an array of
// buffers), a texel buffer in a format vkc does not view (see
// docs/guide/kernels.md), a Vec4Texels entry that is not a distinct
// uniform texel binding of the module, or push constants, a workgroup size or shared
// memory above the device's limits are errors here, never a crash at
// launch. A module declaring a capability (OpCapability Float64,
// StorageBuffer16BitAccess, ...) whose device feature the device does not
// have enabled is refused with ErrUnsupported before the driver sees it.
// Shared memory is counted as shaders.SharedSize does (every shared
// variable, tightly packed, under the requested workgroup size); a shared
// array whose length it cannot work out is an error too.
// Kernel.Spec reports the result.
func (d *Device) LoadKernel(spec KernelSpec) (*Kernel, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	mod, err := d.inspectKernel(spec)
	if err != nil {
		return nil, err
	}
	derived := spec.derivesDescription()
	if derived {
		spec.Bindings = make([]Access, len(mod.Bindings))
		for i, b := range mod.Bindings {
			spec.Bindings[i] = accessOf(b.Access)
		}
		spec.PushSize = mod.PushSize
	}
	sp, err := specialize(spec, mod)
	if err != nil {
		return nil, err
	}
	local := sp.local
	if err := matchModule(spec, mod, local, d.info.Limits); err != nil {
		if derived {
			return nil, fmt.Errorf("%w (description derived from the module)", err)
		}
		return nil, err
	}
	if err := checkShared(spec, sp.ints, d.info.Limits); err != nil {
		return nil, err
	}
	if err := d.checkCooperativeMatrices(spec, sp.ints); err != nil {
		return nil, err
	}
	kinds, formats, err := bindingKinds(spec.Name, mod.Bindings)
	if err != nil {
		return nil, err
	}
	vec4, err := vec4Texels(spec.Name, spec.Vec4Texels, mod.Bindings, &formats)
	if err != nil {
		return nil, err
	}
	k, err := d.buildUser(spec, mod.Entry, sp.constants, kinds, formats)
	if err != nil {
		return nil, err
	}
	k.kinds, k.formats, k.vec4 = kinds, formats, vec4
	k.local = local
	k.user = true
	k.entry, k.constants, k.pushLayout = mod.Entry, maps.Clone(spec.Constants), mod.Push
	k.keepBindings(mod.Bindings)
	d.mu.Lock()
	d.user[k] = struct{}{}
	d.mu.Unlock()
	return k, nil
}

// inspectKernel reads spec's module for LoadKernel at the entry point
// spec names, refusing one without a compute entry point to run, one
// needing a device feature the device lacks, and one whose code
// contradicts a binding's decorations, before anything is built from it.
func (d *Device) inspectKernel(spec KernelSpec) (shaders.Module, error) {
	mod, err := shaders.InspectEntry(spec.SPIRV, spec.Entry)
	if errors.Is(err, shaders.ErrNoEntryPoint) {
		return mod, fmt.Errorf("vkc: kernel %q: %w", spec.Name, err)
	}
	if err != nil {
		return mod, publicOp("Device.LoadKernel "+strconv.Quote(spec.Name), err)
	}
	if mod.Entry == "" {
		return mod, fmt.Errorf("vkc: kernel %q: no compute entry point \"main\" and several others (%q): name one in KernelSpec.Entry", spec.Name, mod.EntryPoints)
	}
	if err := d.checkCapabilities(spec.Name, spec.SPIRV); err != nil {
		return mod, err
	}
	for _, b := range mod.Bindings {
		if c := b.Contradiction(); c != "" {
			return mod, fmt.Errorf("vkc: kernel %q: binding %d (set %d) %s", spec.Name, b.Binding, b.Set, c)
		}
	}
	return mod, nil
}

// bindingKinds is each of the module's bindings' descriptor kind and, for
// the texel bindings, the format vkc views them in: the pipeline's
// descriptor layout and the texel views are built from these. A texel
// binding in a format vkc does not view is refused.
func bindingKinds(name string, bindings []shaders.ModuleBinding) ([]shaders.DescriptorKind, [recorder.MaxBindings]recorder.TexelFormat, error) {
	kinds := make([]shaders.DescriptorKind, len(bindings))
	var formats [recorder.MaxBindings]recorder.TexelFormat
	for i, b := range bindings {
		kinds[i] = b.Kind
		if b.Kind == shaders.UniformTexelBuffer || b.Kind == shaders.StorageTexelBuffer {
			var err error
			if formats[i], err = texelFormat(name, i, b); err != nil {
				return nil, formats, err
			}
		}
	}
	return kinds, formats, nil
}

// keepBindings keeps what Launch checks of each of the module's bindings:
// which are texel bindings and their sampled types, each binding's
// element type and the least size its buffer may have.
func (k *Kernel) keepBindings(bindings []shaders.ModuleBinding) {
	for i, b := range bindings {
		if b.Kind == shaders.UniformTexelBuffer || b.Kind == shaders.StorageTexelBuffer {
			k.texels |= 1 << uint(i)
			k.texelTypes[i] = b.TexelType
		}
	}
	for _, b := range bindings {
		k.elems = append(k.elems, b.Elem)
		k.minSize = append(k.minSize, b.MinSize)
	}
}

// matchModule checks a description against the module it describes and
// the device's limits, local being the workgroup size the kernel will have.
func matchModule(spec KernelSpec, mod shaders.Module, local [3]uint32, lim Limits) error {
	for i, a := range spec.Bindings {
		if !a.valid() {
			return fmt.Errorf("vkc: kernel %q: binding %d is described as %v; want ReadOnly, WriteOnly or ReadWrite", spec.Name, i, a)
		}
	}
	if len(mod.Bindings) > recorder.MaxBindings {
		return fmt.Errorf("vkc: kernel %q: module has %d bindings (at most %d)", spec.Name, len(mod.Bindings), recorder.MaxBindings)
	}
	if len(mod.Bindings) != len(spec.Bindings) {
		hint := ""
		if spec.Bindings == nil {
			hint = " (leave PushSize 0 too to derive the description from the module)"
		}
		return fmt.Errorf("vkc: kernel %q: description has %d bindings, module has %d%s", spec.Name, len(spec.Bindings), len(mod.Bindings), hint)
	}
	for i, b := range mod.Bindings {
		if b.Set != 0 || b.Binding != uint32(i) || !bindable(b.Kind) {
			return fmt.Errorf("vkc: kernel %q: module binding %d is set %d binding %d (%v); want storage buffers, uniform buffers, uniform or storage texel buffers at set 0, bindings 0..%d", spec.Name, i, b.Set, b.Binding, b.Kind, len(mod.Bindings)-1)
		}
		if b.Arrayed {
			return fmt.Errorf("vkc: kernel %q: binding %d is an array of %vs (length %d, 0 if runtime-sized); Launch binds one buffer per binding", spec.Name, i, b.Kind, b.Count)
		}
		// Describing more access than the module uses is safe; less is
		// not: a write left out is a buffer the ledger thinks unchanged,
		// a read left out is a buffer read without the check for bytes
		// never written.
		if b.Access.Writes() && !spec.Bindings[i].Writes() {
			return fmt.Errorf("vkc: kernel %q: binding %d is written by the module but described as %v", spec.Name, i, spec.Bindings[i])
		}
		if b.Access.Reads() && !spec.Bindings[i].Reads() {
			return fmt.Errorf("vkc: kernel %q: binding %d is read by the module but described as %v (a binding described WriteOnly must be declared writeonly in the module)", spec.Name, i, spec.Bindings[i])
		}
	}
	if mod.PushSize != spec.PushSize {
		return fmt.Errorf("vkc: kernel %q: description has %d bytes of push constants, module has %d", spec.Name, spec.PushSize, mod.PushSize)
	}
	if spec.PushSize > lim.MaxPushConstantsSize {
		return fmt.Errorf("vkc: kernel %q: %d bytes of push constants exceed the device limit %d", spec.Name, spec.PushSize, lim.MaxPushConstantsSize)
	}
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

// bindable reports whether Launch binds a buffer to a descriptor of kind k.
func bindable(k shaders.DescriptorKind) bool {
	switch k {
	case shaders.StorageBuffer, shaders.UniformBuffer, shaders.UniformTexelBuffer, shaders.StorageTexelBuffer:
		return true
	}
	return false
}

// sharingAxes names the axes whose size specialization constant id sets.
func sharingAxes(specIDs [3]int64, id int64) string {
	var names []string
	for axis, a := range specIDs {
		if a == id {
			names = append(names, string("xyz"[axis]))
		}
	}
	return strings.Join(names, " and ")
}

// checkShared refuses a module whose workgroup (shared) memory, under the
// specialization the kernel will be built with, exceeds the device's
// maxComputeSharedMemorySize, or cannot be sized (shaders.SharedSize
// counts every shared variable, an upper bound).
func checkShared(spec KernelSpec, constants map[uint32]uint32, lim Limits) error {
	size, err := shaders.SharedSize(spec.SPIRV, constants)
	if err != nil {
		return public(fmt.Errorf("vkc: kernel %q: sizing its shared memory: %w", spec.Name, err))
	}
	if size > uint64(lim.MaxComputeSharedMemorySize) {
		return fmt.Errorf("vkc: kernel %q: %d bytes of shared memory exceed the device limit %d", spec.Name, size, lim.MaxComputeSharedMemorySize)
	}
	return nil
}

// catalogueSpec is the specialization of a catalogue kernel: its workgroup
// size as constants 0, 1, 2, the catalogue's convention.
func catalogueSpec(local [3]uint32) []uint32 {
	if local == ([3]uint32{}) {
		return nil
	}
	return []uint32{max(local[0], 1), max(local[1], 1), max(local[2], 1)}
}

// build makes the pipeline of a kernel: texels marks the bindings read as
// texels (catalogue kernels only), spec sets the specialization constants
// with IDs ids (0..len(spec)-1 when ids is nil).
func (d *Device) build(name string, code []byte, access []Access, texels, push uint32, spec, ids []uint32) (*Kernel, error) {
	var writes uint32
	for i, a := range access {
		if a.Writes() {
			writes |= 1 << uint(i)
		}
	}
	rk, err := d.rec.NewKernel(code, recorder.PipelineDesc{Name: name, Bindings: len(access), Writes: writes, Texels: texels, PushSize: push, Spec: spec, SpecIDs: ids})
	if err != nil {
		return nil, publicOp("Device.LoadKernel "+strconv.Quote(name), err)
	}
	return &Kernel{dev: d, name: name, rk: rk, access: append([]Access(nil), access...), push: push}, nil
}

// buildUser makes the pipeline of a user kernel: its entry point and
// constants as the module types them.
func (d *Device) buildUser(spec KernelSpec, entry string, constants []recorder.SpecConstant, kinds []shaders.DescriptorKind, formats [recorder.MaxBindings]recorder.TexelFormat) (*Kernel, error) {
	desc := recorder.PipelineDesc{Name: spec.Name, Bindings: len(spec.Bindings), PushSize: spec.PushSize, Constants: constants, Entry: entry, Formats: formats}
	for i, a := range spec.Bindings {
		bit := uint32(1) << uint(i)
		switch kinds[i] {
		case shaders.UniformBuffer:
			desc.Uniforms |= bit
			continue // read only, whatever the description says
		case shaders.UniformTexelBuffer:
			desc.Texels |= bit
			continue
		case shaders.StorageTexelBuffer:
			desc.StorageTexels |= bit
		}
		if a.Writes() {
			desc.Writes |= bit
		}
	}
	rk, err := d.rec.NewKernel(spec.SPIRV, desc)
	if err != nil {
		return nil, public(err)
	}
	access := append([]Access(nil), spec.Bindings...)
	for i, kind := range kinds {
		if kind == shaders.UniformBuffer || kind == shaders.UniformTexelBuffer {
			access[i] = ReadOnly // no kernel writes these, whatever the description says
		}
	}
	return &Kernel{dev: d, name: spec.Name, rk: rk, access: access, push: spec.PushSize}, nil
}

// target is what the catalogue shapes its kernels by on this device.
func (d *Device) target() shaders.Target {
	lim := d.info.Limits
	return shaders.Target{CPU: d.info.Type == TypeCPU, SubgroupSize: d.info.Subgroup.Size,
		MaxInvocations: lim.MaxComputeWorkGroupInvocations, MaxLocalSize: lim.MaxComputeWorkGroupSize}
}

// builtin returns the catalogue kernel name, building it on first use.
func (d *Device) builtin(name string) (*Kernel, error) {
	if m := d.builtins.Load(); m != nil {
		if k, ok := (*m)[name]; ok {
			return k, nil // the common case: no lock on the launch path
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if k, ok := d.kernels[name]; ok {
		return k, nil
	}
	sk, err := shaders.Get(name)
	if err != nil {
		return nil, fmt.Errorf("vkc: catalogue kernel %q: %w", name, err)
	}
	access := make([]Access, len(sk.Bindings))
	var texels uint32
	for i, b := range sk.Bindings {
		access[i] = accessOf(b.Access)
		if b.Texel {
			texels |= 1 << uint(i)
		}
	}
	shape := sk.ShapeFor(d.target())
	k, err := d.build(name, sk.SPIRV, access, texels, sk.PushSize, append(catalogueSpec(shape.LocalSize), shape.Spec...), nil)
	if err != nil {
		return nil, err
	}
	k.local = shape.LocalSize
	// The launchers' 1-D group counts divide by the elements a group
	// covers, which is the workgroup size where an invocation takes one.
	k.local[0] = sk.Span(k.local[0])
	k.tile = shape.Tile
	d.kernels[name] = k
	published := maps.Clone(d.kernels)
	d.builtins.Store(&published)
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

// errNilKernel is returned by the launches of a nil or zero Kernel.
var errNilKernel = fmt.Errorf("vkc: nil kernel (use Device.LoadKernel)")

// enter starts a launch of k on s: both must be usable, and neither the
// kernel nor the device closes until leave.
func (k *Kernel) enter(s *Stream) error {
	if k == nil || k.rk == nil {
		return errNilKernel
	}
	if err := s.enter(); err != nil {
		return err
	}
	if !k.life.enter() {
		s.leave()
		return closedError("kernel " + strconv.Quote(k.name))
	}
	return nil
}

// leave ends a launch begun by enter.
func (k *Kernel) leave(s *Stream) {
	k.life.leave()
	s.leave()
}

// Launch records the kernel on stream s with the given group counts, push
// constants (exactly the described size) and buffers, in binding order. A
// Param may be bound only where the kernel reads (ErrParamWritten).
func (k *Kernel) Launch(s *Stream, groups [3]uint32, push []byte, args ...Arg) error {
	if err := k.enter(s); err != nil {
		return err
	}
	defer k.leave(s)
	var cores [recorder.MaxBindings]*bufferCore
	n, err := k.bind(&cores, push, args)
	if err != nil {
		return err
	}
	return k.launch(s, groups, push, cores[:n])
}

// bind checks push constants and arguments against the kernel and fills
// cores with the arguments' buffers (on the caller's stack). A buffer or
// param must hold the kind of number the module declares for its binding:
// float for float, int32 or uint32 for int. A binding declared uint takes
// any buffer, as raw 32-bit words (the catalogue's fill and copy work on
// any element type that way). A Param binds only where the kernel reads
// (ErrParamWritten).
func (k *Kernel) bind(cores *[recorder.MaxBindings]*bufferCore, push []byte, args []Arg) (int, error) {
	if uint32(len(push)) != k.push {
		return 0, fmt.Errorf("vkc: kernel %q: %d bytes of push constants, want %d", k.name, len(push), k.push)
	}
	if len(args) != len(k.access) {
		return 0, fmt.Errorf("vkc: kernel %q: %d buffers, want %d", k.name, len(args), len(k.access))
	}
	if len(args) > recorder.MaxBindings {
		return 0, fmt.Errorf("vkc: kernel %q: %d buffers (at most %d)", k.name, len(args), recorder.MaxBindings)
	}
	for i, a := range args {
		cores[i] = nil
		if a != nil {
			cores[i] = a.arg()
		}
		if cores[i] == nil {
			return 0, fmt.Errorf("vkc: kernel %q: buffer %d is nil", k.name, i)
		}
		if i < len(k.elems) && !fits(k.elems[i], cores[i].elem) {
			return 0, fmt.Errorf("vkc: kernel %q: binding %d holds %v in the module, given %v", k.name, i, k.elems[i], cores[i].elem)
		}
		if i < len(k.kinds) && k.kinds[i] != shaders.StorageBuffer {
			if err := k.checkDescriptor(i, cores[i]); err != nil {
				return 0, err
			}
		}
		if i < len(k.minSize) {
			if have := uint64(cores[i].n) * cores[i].elem.size(); have < k.minSize[i] {
				return 0, fmt.Errorf("vkc: kernel %q: binding %d needs at least %d bytes (what its block declares), buffer holds %d", k.name, i, k.minSize[i], have)
			}
		}
		if cores[i].param && k.access[i].Writes() {
			return 0, fmt.Errorf("vkc: kernel %q: binding %d is %v: %w", k.name, i, k.access[i], ErrParamWritten)
		}
	}
	return len(args), nil
}

// fits reports whether a buffer of kind have may bind where the module
// declares want.
func fits(want shaders.ScalarType, have elemKind) bool {
	switch want {
	case shaders.ScalarFloat:
		return have == elemFloat
	case shaders.ScalarInt:
		return have == elemInt || have == elemUint
	}
	return true
}

// launch checks the group counts and the buffers and hands the launch to
// the recorder. It allocates nothing: the bindings live on the stack.
func (k *Kernel) launch(s *Stream, groups [3]uint32, push []byte, cores []*bufferCore) error {
	return k.launchWith(s, cores, nil, &launchSpec{groups: groups, push: push})
}

// launchSpec is a launch beyond its kernel and buffers: group counts (when
// no device view holds them), push constants, and for launches sized by
// a length param the extent of each written buffer and the lengths that size it. It holds no
// pointer to a buffer, so the callers' arrays of buffers stay on their
// stacks.
type launchSpec struct {
	groups  [3]uint32
	push    []byte
	extents []capture.Extent // per core; nil: every buffer used whole
	limits  []recorder.Limit
}

// launchWith is launch with everything a sized launch adds: indirect, when
// not nil, holds the group counts read when the launch runs. The caller
// has entered the stream's device.
func (k *Kernel) launchWith(s *Stream, cores []*bufferCore, indirect *bufferCore, l *launchSpec) error {
	if s.dev != k.dev {
		return fmt.Errorf("vkc: kernel %q launched on a stream of another device", k.name)
	}
	if indirect == nil {
		lim := k.dev.info.Limits.MaxComputeWorkGroupCount
		for i, g := range l.groups {
			if g == 0 || g > lim[i] {
				return fmt.Errorf("vkc: kernel %q: group counts %v outside 1..%v", k.name, l.groups, lim)
			}
		}
	}
	var binds [recorder.MaxBindings]capture.Binding
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
		binds[i] = capture.Binding{Claim: c.claim, Write: k.access[i].Writes(), Read: k.access[i].Reads()}
		if l.extents != nil {
			binds[i].Extent = l.extents[i]
		}
	}
	defer func() {
		for _, c := range cores {
			c.done()
		}
	}()
	args := binds[:len(cores)]
	if err := k.checkAliasing(cores); err != nil {
		return err
	}
	var bs bounces
	if err := bs.in(s, k, cores, args, l.extents != nil); err != nil {
		return err
	}
	rl := recorder.Launch{Args: args, Groups: l.groups, Push: l.push, Limits: l.limits}
	for i := range cores {
		if k.texels>>uint(i)&1 != 0 {
			rl.Formats[i] = k.formatFor(i, cores[i].elem)
			rl.TexelBytes[i] = uint64(cores[i].n) * cores[i].elem.size()
		}
	}
	var err error
	if indirect != nil {
		if err = indirect.use(s); err == nil {
			rl.Indirect = indirect.claim
			err = k.dev.rec.Launch(s.id, k.rk, &rl)
			indirect.done()
		}
	} else {
		err = k.dev.rec.Launch(s.id, k.rk, &rl)
	}
	if err != nil {
		err = publicOp("launch of kernel "+strconv.Quote(k.name), err)
	}
	// Copied back even when the launch failed: a stand-in the failure
	// tainted carries the taint to the view, and one the launch never
	// touched holds the view's own bytes.
	if oerr := bs.out(s, cores, args); err == nil {
		err = oerr
	}
	return err
}

// Close releases a user kernel: later launches fail with ErrClosed. It is
// destroyed after the work using it — or, when a live graph recorded it,
// when the last such graph closes, so the graph keeps replaying.
// Idempotent; built-in kernels live until the device closes.
func (k *Kernel) Close() error {
	if k == nil || !k.user || !k.life.close() {
		return nil
	}
	defer k.life.finish()
	d := k.dev
	if d.enter() != nil {
		return nil // the device is closing, and destroys the kernel
	}
	defer d.leave()
	d.mu.Lock()
	delete(d.user, k)
	d.mu.Unlock()
	return publicOp("Kernel.Close", k.rk.Release())
}
