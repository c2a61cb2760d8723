package ops

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops/internal/kernels"
)

// deviceKernels is what ops keeps per device: the kernels it loaded, by
// variant name (and specialization constants); the stand-in params bound where a kernel's optional
// binding (a dynamic row count, a scalar param) is not used, since every
// binding a kernel declares must be bound; and the reductions' scratch.
// All of it is released when the device closes (Device.OnClose).
type deviceKernels struct {
	dev *vkc.Device

	mu      sync.Mutex
	closed  bool
	kernels map[string]*vkc.Kernel
	// refused are the variants (by kernelWith's key) the device or this
	// build refused for good (ErrUnsupported, ErrBadSPIRV): a module whose
	// capabilities the linked SPIR-V validator does not know, say. An op
	// that asks for one again gets the same error without a second load.
	refused map[string]error
	rows    *vkc.Param[uint32]
	f32     *vkc.Param[float32]
	f64     *vkc.Param[float64]
	scratch map[string]*scratch // by element type: reductions' partials
}

// scratch is device memory a multi-pass op writes in one pass and reads
// in the next, one per element type and device, so that an op never
// frees memory its own pending work uses (Buffer.Close would wait for
// that work, making the op synchronous). An op holds mu from its first
// pass to its last, so two ops never interleave their use of it; vkc
// orders the device work of ops on other streams (and graph replays)
// that use it by the bytes they read and write, as for any buffer.
type scratch struct {
	mu     sync.Mutex
	buf    interface{ Close() error } // a *vkc.Buffer of the type; nil until first use
	n      int
	closed bool // released at the device's close: buf stays nil
}

// cache holds the deviceKernels of every open device ops has used.
var cache = struct {
	mu   sync.Mutex
	devs map[*vkc.Device]*deviceKernels
}{devs: map[*vkc.Device]*deviceKernels{}}

// kernelsOf is d's entry, made (and its release at d's close registered)
// on first use.
func kernelsOf(d *vkc.Device) (*deviceKernels, error) {
	if d == nil {
		return nil, fmt.Errorf("vkc: ops: nil device")
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if dk := cache.devs[d]; dk != nil {
		return dk, nil
	}
	dk := &deviceKernels{dev: d, kernels: map[string]*vkc.Kernel{}}
	// Registered under cache.mu: a Close racing this either waits for the
	// registration (and then runs forget) or refuses it (and nothing is
	// kept).
	if err := d.OnClose(func() { forget(d) }); err != nil {
		return nil, err
	}
	cache.devs[d] = dk
	return dk, nil
}

// forget drops d's entry and releases what it held; d is closing. Under
// dk.mu it only marks dk closed and takes its maps and params, so that no
// lookup recreates them; it closes them after unlocking dk.mu, since an op
// holding a scratch lock takes dk.mu (for its kernels) and forget takes
// each scratch lock.
func forget(d *vkc.Device) {
	cache.mu.Lock()
	dk := cache.devs[d]
	delete(cache.devs, d)
	cache.mu.Unlock()
	if dk == nil {
		return
	}
	dk.mu.Lock()
	dk.closed = true
	loaded, scratches := dk.kernels, dk.scratch
	var params []interface{ Close() error }
	if dk.rows != nil {
		params = append(params, dk.rows)
	}
	if dk.f32 != nil {
		params = append(params, dk.f32)
	}
	if dk.f64 != nil {
		params = append(params, dk.f64)
	}
	dk.kernels, dk.scratch = nil, nil
	dk.rows, dk.f32, dk.f64 = nil, nil, nil
	dk.mu.Unlock()
	for _, k := range loaded {
		_ = k.Close() // the closing device destroys it anyway
	}
	for _, p := range params {
		_ = p.Close()
	}
	for _, sc := range scratches {
		sc.mu.Lock()
		if sc.buf != nil {
			_ = sc.buf.Close()
		}
		sc.buf, sc.closed = nil, true
		sc.mu.Unlock()
	}
}

// cachedDevices is how many devices the cache holds (for tests: a closed
// device must not stay).
func cachedDevices() int {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	return len(cache.devs)
}

// kernel is the variant named (variants.txt), loaded on first use.
func (dk *deviceKernels) kernel(name string) (*vkc.Kernel, error) {
	return dk.kernelWith(name, nil)
}

// kernelWith is the variant named with its specialization constants set
// (KernelSpec.Constants, by SpecId), loaded on first use and kept under
// the name and the constants: each set of constants is a pipeline of its
// own.
func (dk *deviceKernels) kernelWith(name string, consts map[uint32]float64) (*vkc.Kernel, error) {
	key := kernelKey(name, consts)
	dk.mu.Lock()
	defer dk.mu.Unlock()
	if dk.closed {
		return nil, vkc.ErrClosed
	}
	if k := dk.kernels[key]; k != nil {
		return k, nil
	}
	if err := dk.refused[key]; err != nil {
		return nil, err
	}
	code, err := kernels.SPIRV(name)
	if err != nil {
		return nil, err
	}
	k, err := dk.dev.LoadKernel(vkc.KernelSpec{Name: "ops/" + key, SPIRV: code, Constants: consts})
	if err != nil {
		if errors.Is(err, vkc.ErrUnsupported) || errors.Is(err, vkc.ErrBadSPIRV) {
			if dk.refused == nil {
				dk.refused = map[string]error{}
			}
			dk.refused[key] = err
		}
		return nil, err
	}
	dk.kernels[key] = k
	return k, nil
}

// kernelKey is the name kernelWith keeps a variant under: its name and
// its constants, by SpecId.
func kernelKey(name string, consts map[uint32]float64) string {
	key := name
	for _, id := range slices.Sorted(maps.Keys(consts)) {
		key += fmt.Sprintf(" %d=%g", id, consts[id])
	}
	return key
}

// standIns are the params bound where a kernel's row-count binding or
// scalar binding is not used: a uint32, and a float32 and a float64.
func (dk *deviceKernels) standIns() (rows *vkc.Param[uint32], f32 *vkc.Param[float32], f64 *vkc.Param[float64], err error) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	if dk.closed {
		return nil, nil, nil, vkc.ErrClosed
	}
	if dk.rows == nil {
		if dk.rows, err = vkc.NewParam[uint32](dk.dev, 1); err != nil {
			return nil, nil, nil, err
		}
	}
	if dk.f32 == nil {
		if dk.f32, err = vkc.NewParam[float32](dk.dev, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	if dk.f64 == nil && dk.dev.Info().Features.Has(vkc.FeatureFloat64) {
		if dk.f64, err = vkc.NewParam[float64](dk.dev, 0); err != nil {
			return nil, nil, nil, err
		}
	}
	return dk.rows, dk.f32, dk.f64, nil
}

// scratchOf is dk's scratch of T with at least n elements, locked: the
// caller calls release once the work using it is recorded. Growing it
// closes the smaller buffer (which waits for the work using it) and
// keeps the larger.
func scratchOf[T vkc.Element](dk *deviceKernels, n int) (*vkc.Buffer[T], func(), error) {
	name := typeOf[T]().name
	dk.mu.Lock()
	if dk.closed {
		dk.mu.Unlock()
		return nil, nil, vkc.ErrClosed
	}
	if dk.scratch == nil {
		dk.scratch = map[string]*scratch{}
	}
	sc := dk.scratch[name]
	if sc == nil {
		sc = &scratch{}
		dk.scratch[name] = sc
	}
	dk.mu.Unlock()
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return nil, nil, vkc.ErrClosed
	}
	if sc.buf == nil || sc.n < n {
		if sc.buf != nil {
			if err := sc.buf.Close(); err != nil {
				sc.mu.Unlock()
				return nil, nil, err
			}
			sc.buf = nil
		}
		b, err := vkc.NewBuffer[T](dk.dev, n)
		if err != nil {
			sc.mu.Unlock()
			return nil, nil, err
		}
		sc.buf, sc.n = b, n
	}
	return sc.buf.(*vkc.Buffer[T]), sc.mu.Unlock, nil
}
