package blackbox_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// openDevice opens the default device with the validation layer on and, at
// cleanup, closes it and checks what closeAndCheck checks.
func openDevice(t testing.TB, opts ...vkc.Option) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(append([]vkc.Option{vkc.WithValidation(true)}, opts...)...)
	require.NoError(t, err, "Open")
	t.Cleanup(func() { closeAndCheck(t, dev) })
	return dev
}

// closeAndCheck closes dev and checks the promises of Close, LiveObjects
// ("after Close every count is zero") and the validation layer (silent).
func closeAndCheck(t testing.TB, dev *vkc.Device) {
	t.Helper()
	assert.NoError(t, dev.Close(), "Device.Close")
	assertClosedClean(t, dev)
}

// assertClosedClean checks a device already closed: no Vulkan object alive
// and no validation message.
func assertClosedClean(t testing.TB, dev *vkc.Device) {
	t.Helper()
	for kind, n := range dev.LiveObjects() {
		assert.Zero(t, n, "Vulkan objects of kind %s alive after Close", kind)
	}
	errs, warns, recent := dev.ValidationMessages()
	assert.Zero(t, errs+warns, "validation messages: %d errors, %d warnings: %q", errs, warns, recent)
}

// testCtx is a context for reads and syncs: a hung read fails the test
// instead of hanging it. The bound is a safety net, far above any read.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// upload makes a buffer holding xs, closed at cleanup.
func upload[T vkc.Element](t testing.TB, dev *vkc.Device, xs []T) *vkc.Buffer[T] {
	t.Helper()
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err, "FromSlice(%d)", len(xs))
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// newBuffer makes a fresh (unwritten) buffer of n elements, closed at cleanup.
func newBuffer[T vkc.Element](t testing.TB, dev *vkc.Device, n int) *vkc.Buffer[T] {
	t.Helper()
	b, err := vkc.NewBuffer[T](dev, n)
	require.NoError(t, err, "NewBuffer(%d)", n)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// newParam makes a param holding v, closed at cleanup.
func newParam[T vkc.Element](t testing.TB, dev *vkc.Device, v T) *vkc.Param[T] {
	t.Helper()
	p, err := vkc.NewParam(dev, v)
	require.NoError(t, err, "NewParam(%v)", v)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// read reads b on s, failing the test on error.
func read[T vkc.Element](t testing.TB, s *vkc.Stream, b *vkc.Buffer[T]) []T {
	t.Helper()
	out, err := b.ReadOn(testCtx(t), s)
	require.NoError(t, err, "ReadOn")
	return out
}

// readAll reads b after the default stream's work (Buffer.Read), failing
// the test on error.
func readAll[T vkc.Element](t testing.TB, b *vkc.Buffer[T]) []T {
	t.Helper()
	out, err := b.Read(testCtx(t))
	require.NoError(t, err, "Read")
	return out
}

// requireUnwritten checks that reading b on s fails with ErrUnwritten
// unwrapping to cause.
func requireUnwritten[T vkc.Element](t testing.TB, s *vkc.Stream, b *vkc.Buffer[T], cause error, msgAndArgs ...any) {
	t.Helper()
	_, err := b.ReadOn(testCtx(t), s)
	require.ErrorIs(t, err, vkc.ErrUnwritten, msgAndArgs...)
	require.ErrorIs(t, err, cause, msgAndArgs...)
}

// f32Size is the byte size of a float32 element.
const f32Size = int(unsafe.Sizeof(float32(0)))

// syncValidation reports whether tests should also turn on synchronization
// validation (VKC_SYNC_VALIDATION=0 turns it off where it is too slow).
func syncValidation() bool { return os.Getenv("VKC_SYNC_VALIDATION") != "0" }

// seq is []float32{f(0), ..., f(n-1)}.
func seq(n int, f func(i int) float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = f(i)
	}
	return xs
}

// ramp is []float32{b, a+b, 2a+b, ...} of n elements.
func ramp(n int, a, b float32) []float32 {
	return seq(n, func(i int) float32 { return a*float32(i) + b })
}

// filled is n copies of v.
func filled(n int, v float32) []float32 { return seq(n, func(int) float32 { return v }) }

// requireNear checks got against want elementwise, relative tolerance tol.
func requireNear(t testing.TB, want, got []float32, tol float64, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgAndArgs...)
	for i := range got {
		w := float64(want[i])
		if math.Abs(float64(got[i])-w) > tol*math.Max(1, math.Abs(w)) {
			require.Failf(t, "values differ", "[%d] = %v, want %v; %v", i, got[i], want[i], msgAndArgs)
		}
	}
}

// sameSlot is the stream with the next id that shares s's slot.
func sameSlot(dev *vkc.Device, s *vkc.Stream) *vkc.Stream {
	return dev.StreamWithID(s.ID() + uint64(dev.Slots()))
}

// affineSPIRV is the root package's test kernel (testdata/affine.comp):
// y[i] = a*x[i] + b for i < n; bindings x (read), y (write); push a, b, n.
func affineSPIRV(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/affine.spv")
	require.NoError(t, err)
	return b
}

// affineSpec is the affine kernel with its bindings and push size
// declared, as a user who knows the kernel's interface would load it.
func affineSpec(t testing.TB) vkc.KernelSpec {
	t.Helper()
	return vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t), Bindings: []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, PushSize: 12}
}

// ceilDiv is the number of workgroups of size b covering a elements.
func ceilDiv(a, b int) uint32 { return uint32((a + b - 1) / b) }

// loadAffine loads the affine kernel, closed at cleanup.
func loadAffine(t testing.TB, dev *vkc.Device) *vkc.Kernel {
	t.Helper()
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t)})
	require.NoError(t, err, "LoadKernel(affine)")
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// affinePush is the affine kernel's push constants.
func affinePush(a, b float32, n uint32) []byte {
	p := make([]byte, 12)
	binary.LittleEndian.PutUint32(p[0:], math.Float32bits(a))
	binary.LittleEndian.PutUint32(p[4:], math.Float32bits(b))
	binary.LittleEndian.PutUint32(p[8:], n)
	return p
}

// push packs 32-bit words as push constants.
func push(words ...uint32) []byte {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// axpyRuns checks that stream s still runs eager work: y = x + y.
func axpyRuns(t testing.TB, s *vkc.Stream) {
	t.Helper()
	dev := s.Device()
	x := upload(t, dev, ramp(8, 1, 1))
	y := upload(t, dev, ramp(8, 10, 10))
	require.NoError(t, opAxpy(s, 1, x, y))
	assert.Equal(t, axpyRef(1, ramp(8, 1, 1), ramp(8, 10, 10)), read(t, s, y))
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
}

// warmAndBegin prepares s's window, runs fn as the warmup, syncs and
// begins recording.
func warmAndBegin(t testing.TB, s *vkc.Stream, fn func(*vkc.Stream) error) {
	t.Helper()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, fn(s))
	require.NoError(t, s.Sync(testCtx(t)))
	require.NoError(t, s.BeginCapture())
}

// isolated runs the calling test in a child process when what it attacks
// can crash the process (a fault in the driver or the layer): the parent
// then reports the crash, with the child's output, as this test's failure
// instead of dying with every other test. It returns true in the child,
// which runs the test's body; the parent's body returns at once.
func isolated(t *testing.T) bool {
	t.Helper()
	if os.Getenv("VKC_ISOLATED") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VKC_ISOLATED="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process failed:\n%s", out)
	require.True(t, strings.Contains(string(out), "--- PASS: "+t.Name()), "the child did not pass:\n%s", out)
	return false
}

// noPanic runs f and reports a panic as a test failure.
func noPanic(t testing.TB, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// settledGoroutines waits a bounded while for the goroutine count to come
// back to at most before, and returns the count it saw last.
func settledGoroutines(before int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > before; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// axpyChain is a capture function of k launches of y = x + y: each reads
// what the one before wrote.
func axpyChain(k int, x, y *vkc.Buffer[float32]) func(*vkc.Stream) error {
	return func(s *vkc.Stream) error {
		for range k {
			if err := opAxpy(s, 1, x, y); err != nil {
				return err
			}
		}
		return nil
	}
}

// rng is a deterministic generator seeded from the given numbers, so each
// worker and round draws its own reproducible values.
func rng(seed ...int) *rand.Rand {
	var b uint64
	for _, s := range seed {
		b = b*1000003 + uint64(s)
	}
	return rand.New(rand.NewPCG(0x9e3779b97f4a7c15, b))
}

// randFloats returns n values uniform in [lo, hi).
func randFloats(r *rand.Rand, n int, lo, hi float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = lo + (hi-lo)*r.Float32()
	}
	return xs
}

// ulps is k units in the last place of float32 at magnitude m: the
// tolerance of a float32 sum over values of that size.
func ulps(k, m float64) float64 { return k * 0x1p-23 * m }
