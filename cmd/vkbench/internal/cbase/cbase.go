// Package cbase is vkbench's plain-C reference: the work vkbench's suites
// measure on vkc, done by a small C program that talks to the Vulkan loader
// directly (no vkc, no vk package, no vulkan-go), so that vkbench's ratios
// against it compare vkc with what the same device does for code that has
// no library at all. It is built with vkbench through cgo and needs only
// the Vulkan headers to build and the loader to run.
//
// Each operation is one cgo call that does all of its work in C (a chain of
// K launches is one call), so the call itself adds about a tenth of a
// microsecond per operation, not per launch.
//
// Values are not safe for concurrent use.
package cbase

/*
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "cbase.h"
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vkcompute/vkc/shaders"
)

//go:generate glslc -O --target-env=vulkan1.1 sgemm_naive.comp -o sgemm_naive.spv

//go:generate glslc -O --target-env=vulkan1.1 sgemm_blocked.comp -o sgemm_blocked.spv

//go:generate glslc -O --target-env=vulkan1.1 empty.comp -o empty.spv

//go:generate glslc -O --target-env=vulkan1.1 axpy_scalar.comp -o axpy_scalar.spv

//go:embed sgemm_naive.spv
var sgemmNaiveSPIRV []byte

//go:embed sgemm_blocked.spv
var sgemmBlockedSPIRV []byte

//go:embed empty.spv
var emptySPIRV []byte

//go:embed axpy_scalar.spv
var axpyScalarSPIRV []byte

// scalarLocal is the workgroup size of axpy_scalar.comp and empty.comp.
const scalarLocal = 256

// ErrVulkan means a Vulkan call of the reference failed; the error names the
// call and its VkResult.
var ErrVulkan = errors.New("cbase: Vulkan call failed")

// ErrNoLoader means the Vulkan loader library could not be opened.
var ErrNoLoader = errors.New("cbase: no Vulkan loader")

// ErrValidation means the Khronos validation layer reported warnings or
// errors while the reference ran: its figures measured invalid usage.
var ErrValidation = errors.New("cbase: validation messages")

// ErrLive means Close found Vulkan objects still alive (an operation was not
// closed); the device is then left open, since destroying it under live
// objects is itself invalid.
var ErrLive = errors.New("cbase: objects still alive")

// ErrClosed means an operation was used after Close.
var ErrClosed = errors.New("cbase: closed")

var loader struct {
	once sync.Once
	err  error
}

func load() error {
	loader.once.Do(func() {
		if why := C.cbase_load(); why != nil {
			loader.err = fmt.Errorf("%w: %s", ErrNoLoader, C.GoString(why))
		}
	})
	return loader.err
}

// Device is the reference's own Vulkan instance and device.
type Device struct {
	c    *C.cbase_device
	name string
}

// Open creates an instance and a device on physical device index (the
// order vkEnumeratePhysicalDevices gives, the same as vkc.DeviceInfo.Index);
// a non-empty name must match that device's name, so that the reference
// never runs on another device than the one vkc was measured on. validate
// turns the Khronos validation layer on.
func Open(index int, name string, validate bool) (*Device, error) {
	if err := load(); err != nil {
		return nil, err
	}
	if index < 0 {
		return nil, fmt.Errorf("cbase: device index %d", index)
	}
	d := &Device{c: C.cbase_new()}
	if d.c == nil {
		return nil, errors.New("cbase: out of memory")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.int(0)
	if validate {
		v = 1
	}
	if C.cbase_open(d.c, v, C.uint32_t(index), cname) != 0 {
		err := d.err()
		C.cbase_close(d.c)
		C.cbase_free(d.c)
		return nil, err
	}
	d.name = C.GoString(C.cbase_device_name(d.c))
	return d, nil
}

func (d *Device) err() error {
	return fmt.Errorf("%w: %s", ErrVulkan, C.GoString(C.cbase_error(d.c)))
}

// Name is the device's name as the driver reports it.
func (d *Device) Name() string { return d.name }

// Live counts the Vulkan objects the device's operations hold; zero once
// every operation is closed.
func (d *Device) Live() int {
	if d.c == nil {
		return 0
	}
	return int(C.cbase_live(d.c))
}

// setStaged makes the buffers made from now on go through staging copies
// even where the host could map them: the path discrete GPUs take, which
// the tests can then run on a CPU driver.
func (d *Device) setStaged(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.cbase_set_staged(d.c, v)
}

// ValidationMessages returns how many errors and warnings the validation
// layer reported and the last of them.
func (d *Device) ValidationMessages() (errs, warnings int, last string) {
	if d.c == nil {
		return 0, 0, ""
	}
	var e, w C.int
	buf := make([]byte, 512)
	C.cbase_validation(d.c, &e, &w, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	return int(e), int(w), C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
}

// Close destroys the device and the instance. It fails with ErrLive, and
// destroys nothing, while an operation is still open, and with
// ErrValidation when the layer reported anything over the device's life
// (tear-down included). A second Close does nothing.
func (d *Device) Close() error {
	if d.c == nil {
		return nil
	}
	if live := C.cbase_close(d.c); live != 0 {
		return fmt.Errorf("%w: %d", ErrLive, int(live))
	}
	errs, warnings, last := d.ValidationMessages()
	C.cbase_free(d.c)
	d.c = nil
	if errs+warnings > 0 {
		return fmt.Errorf("%w: %d errors, %d warnings, last: %s", ErrValidation, errs, warnings, last)
	}
	return nil
}

func (d *Device) open() error {
	if d.c == nil {
		return ErrClosed
	}
	return nil
}

func floatPtr(xs []float32) *C.float {
	if len(xs) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&xs[0]))
}

// Chain is k dependent axpy launches (y = x + y, one buffer barrier on y
// after each) over the x it was made with: the dispatch suite's work. Its
// batched, record and replay ways come in two recordings: Batched, Record
// and Replay bind the pipeline and the set and push the constants before
// every launch (the plain program most people write); BatchedBound,
// RecordBound and ReplayBound bind and push once per command buffer, since
// nothing changes between launches, and record only a dispatch and a
// barrier per launch (the best plain C).
type Chain struct {
	d *Device
	c *C.cbase_chain
	n int
}

// NewChain builds the chain over x with the scalar axpy of
// axpy_scalar.comp (one element per invocation, one workgroup per 256
// elements) and y zeroed, and records the two command buffers Replay and
// ReplayBound submit.
func (d *Device) NewChain(x []float32, k int) (*Chain, error) {
	return d.newChain(axpyScalarSPIRV, scalarLocal, x, k)
}

// NewVec4Chain builds the same chain with the project's own axpy module
// (four elements per invocation, vec4 loads and stores, one workgroup per
// Span elements): plain C running the kernel shape vkc runs, so that vkc's
// replay compares with the best plain C with the same kernel too.
func (d *Device) NewVec4Chain(x []float32, k int) (*Chain, error) {
	kernel, err := shaders.Get("axpy")
	if err != nil {
		return nil, err
	}
	return d.newChain(kernel.SPIRV, int(kernel.Span(kernel.LocalSize[0])), x, k)
}

// ErrNoInt64 is NewWideChain's answer on a device without shaderInt64.
var ErrNoInt64 = errors.New("cbase: the device has no shaderInt64 (the wide axpy moves 64-bit words)")

// NewWideChain builds the same chain with the project's wide axpy module
// (axpy_wide: eight elements per invocation as 64-bit words, its own 32
// invocations per workgroup, one workgroup per Span elements), the kernel
// vkc runs on a CPU driver with shaderInt64: plain C running that shape,
// so that vkc's replay there compares with the best plain C with the same
// kernel. ErrNoInt64 on a device without shaderInt64.
func (d *Device) NewWideChain(x []float32, k int) (*Chain, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	if C.cbase_has_int64(d.c) == 0 {
		return nil, ErrNoInt64
	}
	kernel, err := shaders.Get("axpy_wide")
	if err != nil {
		return nil, err
	}
	return d.newChain(kernel.SPIRV, int(kernel.Span(kernel.LocalSize[0])), x, k)
}

// NewEmptyChain builds the same chain as NewChain, same groups, bindings,
// constants and barriers, with a kernel whose body is empty (empty.comp):
// y stays as it is. Its ReplayBound is what the driver charges per launch
// with no kernel work, the share of a replay no library can remove.
func (d *Device) NewEmptyChain(x []float32, k int) (*Chain, error) {
	return d.newChain(emptySPIRV, scalarLocal, x, k)
}

func (d *Device) newChain(spirv []byte, local int, x []float32, k int) (*Chain, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	if len(x) == 0 || k < 1 {
		return nil, fmt.Errorf("cbase: a chain needs elements and k >= 1 (got %d, %d)", len(x), k)
	}
	groups := (len(x) + local - 1) / local
	ch := &Chain{d: d, n: len(x)}
	if C.cbase_chain_new(d.c, unsafe.Pointer(&spirv[0]), C.size_t(len(spirv)), floatPtr(x),
		C.uint32_t(len(x)), C.uint32_t(groups), C.uint32_t(k), &ch.c) != 0 {
		return nil, d.err()
	}
	return ch, nil
}

func (ch *Chain) do(f func(*C.cbase_chain) C.int) error {
	if ch.c == nil || ch.d.c == nil {
		return ErrClosed
	}
	if f(ch.c) != 0 {
		return ch.d.err()
	}
	return nil
}

// Eager runs the k launches with one submit and fence wait each, the
// command buffer re-recorded for every launch (one launch per command
// buffer: it binds once per launch, so it has no bound variant).
func (ch *Chain) Eager() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_eager(c) })
}

// Batched re-records the k launches into one command buffer, binding and
// pushing before every launch, and submits it once.
func (ch *Chain) Batched() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_batched(c, 0) })
}

// BatchedBound is Batched with the pipeline and set bound and the
// constants pushed once for the command buffer.
func (ch *Chain) BatchedBound() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_batched(c, 1) })
}

// Record records the k launches as Batched does and submits nothing: the
// part of Batched that is recording.
func (ch *Chain) Record() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_record(c, 0) })
}

// RecordBound records the k launches as BatchedBound does and submits
// nothing.
func (ch *Chain) RecordBound() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_record(c, 1) })
}

// Replay submits the command buffer recorded at creation, binding and
// pushing before every launch, once more.
func (ch *Chain) Replay() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_replay(c, 0) })
}

// ReplayBound submits the command buffer recorded at creation with one
// bind and one push for all k launches once more.
func (ch *Chain) ReplayBound() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_replay(c, 1) })
}

// ResetY zeroes y.
func (ch *Chain) ResetY() error {
	return ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_reset_y(c) })
}

// Y reads y back.
func (ch *Chain) Y() ([]float32, error) {
	out := make([]float32, ch.n)
	err := ch.do(func(c *C.cbase_chain) C.int { return C.cbase_chain_read_y(c, floatPtr(out)) })
	return out, err
}

// Close waits for the device and destroys the chain; a second Close does
// nothing.
func (ch *Chain) Close() {
	if ch.c != nil && ch.d.c != nil {
		C.cbase_chain_free(ch.c)
	}
	ch.c = nil
}

// Copy is one vkCmdCopyBuffer between two device buffers, recorded once.
type Copy struct {
	d *Device
	c *C.cbase_copy
	n int
}

// NewCopy makes a source holding src and a zeroed destination of the same
// size, and records the copy.
func (d *Device) NewCopy(src []uint32) (*Copy, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	if len(src) == 0 {
		return nil, errors.New("cbase: empty copy")
	}
	cp := &Copy{d: d, n: len(src)}
	if C.cbase_copy_new(d.c, unsafe.Pointer(&src[0]), C.uint64_t(4*len(src)), &cp.c) != 0 {
		return nil, d.err()
	}
	return cp, nil
}

func (cp *Copy) do(f func(*C.cbase_copy) C.int) error {
	if cp.c == nil || cp.d.c == nil {
		return ErrClosed
	}
	if f(cp.c) != 0 {
		return cp.d.err()
	}
	return nil
}

// Run submits the copy and waits for it.
func (cp *Copy) Run() error { return cp.do(func(c *C.cbase_copy) C.int { return C.cbase_copy_run(c) }) }

// ClearDst zeroes the destination, so that a check after Run sees the copy's
// work and not an earlier one's.
func (cp *Copy) ClearDst() error {
	return cp.do(func(c *C.cbase_copy) C.int { return C.cbase_copy_clear_dst(c) })
}

// Dst reads the destination into out, which must hold the copy's length.
func (cp *Copy) Dst(out []uint32) error {
	if len(out) != cp.n {
		return fmt.Errorf("cbase: Dst into %d elements, the copy has %d", len(out), cp.n)
	}
	return cp.do(func(c *C.cbase_copy) C.int { return C.cbase_copy_read_dst(c, unsafe.Pointer(&out[0])) })
}

// Close waits for the device and destroys the copy; a second Close does
// nothing.
func (cp *Copy) Close() {
	if cp.c != nil && cp.d.c != nil {
		C.cbase_copy_free(cp.c)
	}
	cp.c = nil
}

// Memcpy is the C library's memcpy between two heap blocks, both written
// before the clock runs so that no page fault is timed.
type Memcpy struct {
	m *C.cbase_memcpy
	n int
}

// NewMemcpy copies src into a fresh source block and zeroes a destination
// of the same size.
func NewMemcpy(src []byte) (*Memcpy, error) {
	if len(src) == 0 {
		return nil, errors.New("cbase: empty memcpy")
	}
	m := C.cbase_memcpy_new(unsafe.Pointer(&src[0]), C.size_t(len(src)))
	if m == nil {
		return nil, errors.New("cbase: out of memory")
	}
	return &Memcpy{m: m, n: len(src)}, nil
}

// Run copies the source block to the destination once.
func (m *Memcpy) Run() error {
	if m.m == nil {
		return ErrClosed
	}
	C.cbase_memcpy_run(m.m)
	return nil
}

// ClearDst zeroes the destination block, so that a check after Run sees
// that copy's work.
func (m *Memcpy) ClearDst() error {
	if m.m == nil {
		return ErrClosed
	}
	C.cbase_memcpy_clear_dst(m.m)
	return nil
}

// Dst reads the destination block into out, which must hold its length.
func (m *Memcpy) Dst(out []byte) error {
	if m.m == nil {
		return ErrClosed
	}
	if len(out) != m.n {
		return fmt.Errorf("cbase: Dst into %d bytes, the memcpy has %d", len(out), m.n)
	}
	C.cbase_memcpy_read_dst(m.m, unsafe.Pointer(&out[0]))
	return nil
}

// Close frees both blocks; a second Close does nothing.
func (m *Memcpy) Close() {
	C.cbase_memcpy_free(m.m)
	m.m = nil
}

// Sgemm is C = A·B for n x n row-major float32 matrices with one of the
// baseline's kernels, recorded once.
type Sgemm struct {
	d *Device
	s *C.cbase_sgemm
	n int
}

// NewSgemm uploads a and b (n*n each) and records the product with the
// naive kernel of sgemm_naive.comp (one invocation per element of C).
func (d *Device) NewSgemm(n int, a, b []float32) (*Sgemm, error) {
	return d.newSgemm(n, a, b, sgemmNaiveSPIRV, [2]uint32{16, 16}, 0, 1)
}

// NewSgemmTexel uploads a and b (n*n each, n a multiple of 8) and records
// the product with vkc's own matmul_texel module (A and B read as texels of
// uniform texel buffers, 16 x 32 elements of C per invocation, groups of
// 8 x 8 covering 128 rows by 256 columns): plain C running the kernel vkc
// runs for these shapes on a CPU driver, so that the comparison shows what
// vkc adds around it.
func (d *Device) NewSgemmTexel(n int, a, b []float32) (*Sgemm, error) {
	if n%8 != 0 {
		return nil, fmt.Errorf("cbase: texel sgemm of n=%d: n must be a multiple of 8", n)
	}
	k, err := shaders.Get("matmul_texel")
	if err != nil {
		return nil, err
	}
	return d.newSgemm(n, a, b, k.SPIRV, k.Tile, 0b011, 3)
}

// NewSgemmBlocked uploads a and b (n*n each, n a multiple of 4) and
// records the product with the register-blocked kernel of
// sgemm_blocked.comp (16 x 16 elements of C per invocation): plain C
// running the block of vkc's blocked matmul on a CPU driver, so that the
// comparison shows what vkc adds around that kernel shape, or, where vkc
// runs matmul_texel or matmul_wide, what its kernel gains over it.
func (d *Device) NewSgemmBlocked(n int, a, b []float32) (*Sgemm, error) {
	if n%4 != 0 {
		return nil, fmt.Errorf("cbase: blocked sgemm of n=%d: n must be a multiple of 4", n)
	}
	return d.newSgemm(n, a, b, sgemmBlockedSPIRV, [2]uint32{128, 128}, 0, 1)
}

// newSgemm records the product with a module pushing n pushWords times
// (1, or 3 as M, N, K), of tile[0] x tile[1] columns by rows per group,
// whose bindings with their bit set in texels are uniform texel buffers.
func (d *Device) newSgemm(n int, a, b []float32, spirv []byte, tile [2]uint32, texels, pushWords uint32) (*Sgemm, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	if n < 1 || n > 1<<15 || len(a) != n*n || len(b) != n*n {
		return nil, fmt.Errorf("cbase: sgemm of n=%d with %d and %d elements", n, len(a), len(b))
	}
	sg := &Sgemm{d: d, n: n}
	if C.cbase_sgemm_new(d.c, unsafe.Pointer(&spirv[0]), C.size_t(len(spirv)), C.uint32_t(n), C.uint32_t(tile[0]),
		C.uint32_t(tile[1]), C.uint32_t(texels), C.uint32_t(pushWords), floatPtr(a), floatPtr(b), &sg.s) != 0 {
		return nil, d.err()
	}
	return sg, nil
}

// Run submits the product and waits for it.
func (sg *Sgemm) Run() error {
	if sg.s == nil || sg.d.c == nil {
		return ErrClosed
	}
	if C.cbase_sgemm_run(sg.s) != 0 {
		return sg.d.err()
	}
	return nil
}

// C reads the product back.
func (sg *Sgemm) C() ([]float32, error) {
	if sg.s == nil || sg.d.c == nil {
		return nil, ErrClosed
	}
	out := make([]float32, sg.n*sg.n)
	if C.cbase_sgemm_read_c(sg.s, floatPtr(out)) != 0 {
		return nil, sg.d.err()
	}
	return out, nil
}

// Close waits for the device and destroys the product; a second Close does
// nothing.
func (sg *Sgemm) Close() {
	if sg.s != nil && sg.d.c != nil {
		C.cbase_sgemm_free(sg.s)
	}
	sg.s = nil
}
