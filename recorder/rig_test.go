package recorder_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
	"github.com/vkcompute/vkc/shaders"
)

// errFresh is what a buffer that nothing wrote yet is tainted with, as the
// public package does for a new buffer.
var errFresh = errors.New("test: buffer never written")

// code is a kernel's SPIR-V: the recorder reads every module before the
// device sees it, so it is a real one (the catalogue's copy), but hostdev
// runs the Go reference that PipelineDesc.Name names whatever it is.
var code = func() []byte {
	k, err := shaders.Get("copy")
	if err != nil {
		panic(err)
	}
	return k.SPIRV
}()

// descs are the catalogue kernels the tests launch, with the interfaces
// hostdev's references expect.
var descs = map[string]recorder.PipelineDesc{
	"fill": {Name: "fill", Bindings: 1, Writes: 1, PushSize: 8},
	"copy": {Name: "copy", Bindings: 2, Writes: 2, PushSize: 4},
	"axpy": {Name: "axpy", Bindings: 2, Writes: 2, PushSize: 8},
	"add":  {Name: "add", Bindings: 3, Writes: 4, PushSize: 4},
	"sum":  {Name: "sum", Bindings: 2, Writes: 2, PushSize: 4},
}

// n is the element count of the tests' buffers: small, so every run is fast.
const n = 16

// rig is a recorder on a host device, with the catalogue kernels loaded and
// an optional spy that logs the commands the recorder records.
type rig struct {
	t   testing.TB
	dev *hostdev.Device
	spy *spy
	r   *recorder.Recorder
	k   map[string]*recorder.Kernel
}

func newRig(t testing.TB, unified bool, o recorder.Options) *rig {
	t.Helper()
	g := &rig{t: t, dev: hostdev.New(hostdev.Options{Unified: unified}), k: map[string]*recorder.Kernel{}}
	g.spy = &spy{Device: g.dev}
	if o.PageSize == 0 {
		o.PageSize = 64 << 10
	}
	r, err := recorder.New(g.spy, o)
	require.NoError(t, err)
	g.r = r
	for name, d := range descs {
		k, err := r.NewKernel(code, d)
		require.NoError(t, err)
		g.k[name] = k
	}
	return g
}

// buf allocates a buffer of n floats, tainted as never written.
func (g *rig) buf() alloc.Claim {
	g.t.Helper()
	c, err := g.r.Alloc(alloc.DeviceLocal, 4*n)
	require.NoError(g.t, err)
	g.r.Taint([]alloc.Claim{c}, errFresh)
	return c
}

// close closes the recorder and checks that the device is left clean: no
// live object, no diagnostic.
func (g *rig) close() {
	g.t.Helper()
	require.NoError(g.t, g.r.Close())
	requireClean(g.t, g.dev)
}

func requireClean(t testing.TB, dev *hostdev.Device) {
	t.Helper()
	require.Empty(t, dev.Live(), "live objects after Close")
	d := dev.Diagnostics()
	require.Zero(t, d.Errors, "hostdev diagnostics: %v", d.Recent)
}

// write writes vals into c on stream s; st nil means a buffer that never
// gets persistent staging (written outside any window).
func (g *rig) write(s recorder.StreamID, c alloc.Claim, st **recorder.Staging, vals []float32) error {
	if st == nil {
		var none *recorder.Staging
		st = &none
	}
	return g.r.Write(s, c, st, bytesOf(vals))
}

func (g *rig) read(s recorder.StreamID, c alloc.Claim) ([]float32, error) {
	out := make([]byte, c.Size)
	if err := g.r.Read(context.Background(), s, c, out); err != nil {
		return nil, err
	}
	return floatsOf(out), nil
}

// mustRead reads c and requires it to hold want.
func (g *rig) mustRead(s recorder.StreamID, c alloc.Claim, want []float32, msg ...any) {
	g.t.Helper()
	got, err := g.read(s, c)
	require.NoError(g.t, err, msg...)
	require.Equal(g.t, want, got, msg...)
}

// requireUnwritten requires c to read as unwritten with the given cause.
func (g *rig) requireUnwritten(s recorder.StreamID, c alloc.Claim, cause error) {
	g.t.Helper()
	_, err := g.read(s, c)
	require.ErrorIs(g.t, err, errs.Unwritten)
	require.ErrorIs(g.t, err, cause)
}

func (g *rig) launch(s recorder.StreamID, name string, push []byte, args ...capture.Binding) error {
	l := recorder.Launch{Args: args, Groups: [3]uint32{1, 1, 1}, Push: push}
	return g.r.Launch(s, g.k[name], &l)
}

func rd(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c} }
func wr(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c, Write: true} }
func rw(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c, Write: true, Read: true} }

// fill sets every element of dst to v.
func (g *rig) fill(s recorder.StreamID, dst alloc.Claim, v float32) error {
	return g.launch(s, "fill", words(math.Float32bits(v), n), wr(dst))
}

// copyK copies src to dst with the copy kernel.
func (g *rig) copyK(s recorder.StreamID, src, dst alloc.Claim) error {
	return g.launch(s, "copy", words(n), rd(src), wr(dst))
}

// axpy computes y = a*x + y.
func (g *rig) axpy(s recorder.StreamID, a float32, x, y alloc.Claim) error {
	return g.launch(s, "axpy", words(math.Float32bits(a), n), rd(x), rw(y))
}

// add computes z = x + y.
func (g *rig) add(s recorder.StreamID, x, y, z alloc.Claim) error {
	return g.launch(s, "add", words(n), rd(x), rd(y), wr(z))
}

func words(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, w := range v {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

func bytesOf(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func floatsOf(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// ramp is base, base+1, ... (n values).
func ramp(base float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = base + float32(i)
	}
	return v
}

// splat is n copies of x.
func splat(x float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// both runs f as a subtest on a unified-memory device (mapped transfers) and
// on a discrete one (staged transfers).
func both(t *testing.T, f func(t *testing.T, unified bool)) {
	for _, unified := range []bool{true, false} {
		name := "staged"
		if unified {
			name = "unified"
		}
		t.Run(name, func(t *testing.T) { f(t, unified) })
	}
}

// goroutines returns a check that the goroutine count came back to what
// it is now, letting goroutines that are finishing settle first.
func goroutines(t testing.TB) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		now := runtime.NumGoroutine()
		for i := 0; i < 500 && now > before; i++ {
			time.Sleep(time.Millisecond)
			now = runtime.NumGoroutine()
		}
		if now > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left over (before %d):\n%s", now-before, before, buf[:runtime.Stack(buf, true)])
		}
	}
}

// eventually polls cond, for states another goroutine reaches; it fails
// the test only if cond never holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("never reached: %s", what)
}

// event is one call the spy saw.
type event struct {
	kind    string // "dispatch", "barrier", "copy", "stamp", "begin", "end", "submit"
	cb      recorder.CommandBuffer
	barrier bool // dispatch: recorded with a barrier first
	b       recorder.Barrier
	pipe    recorder.Pipeline
}

func (e event) String() string {
	switch e.kind {
	case "dispatch":
		return fmt.Sprintf("dispatch(cb%d, barrier=%v)", e.cb, e.barrier)
	case "barrier":
		return fmt.Sprintf("barrier(cb%d, %d)", e.cb, e.b)
	}
	return fmt.Sprintf("%s(cb%d)", e.kind, e.cb)
}

// spy is a Device that logs the recording calls the recorder makes and
// passes everything on.
type spy struct {
	recorder.Device
	mu     sync.Mutex
	events []event
}

func (s *spy) log(e event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

// take returns the events logged since the last take.
func (s *spy) take() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events
	s.events = nil
	return e
}

func (s *spy) CmdDispatch(cb recorder.CommandBuffer, x *recorder.Dispatch) {
	s.log(event{kind: "dispatch", cb: cb, barrier: x.Barrier, pipe: x.Pipeline})
	s.Device.CmdDispatch(cb, x)
}

func (s *spy) CmdBarrier(cb recorder.CommandBuffer, b recorder.Barrier) {
	s.log(event{kind: "barrier", cb: cb, b: b})
	s.Device.CmdBarrier(cb, b)
}

func (s *spy) CmdCopy(cb recorder.CommandBuffer, src recorder.Memory, srcOff uint64, dst recorder.Memory, dstOff, size uint64) {
	s.log(event{kind: "copy", cb: cb})
	s.Device.CmdCopy(cb, src, srcOff, dst, dstOff, size)
}

func (s *spy) Begin(cb recorder.CommandBuffer, r recorder.Recording) error {
	s.log(event{kind: "begin", cb: cb})
	return s.Device.Begin(cb, r)
}

func (s *spy) End(cb recorder.CommandBuffer) error {
	s.log(event{kind: "end", cb: cb})
	return s.Device.End(cb)
}

func (s *spy) CmdTimestamp(cb recorder.CommandBuffer, q recorder.Timestamps, i uint32) {
	s.log(event{kind: "stamp", cb: cb})
	s.Device.CmdTimestamp(cb, q, i)
}

func (s *spy) Submit(cb recorder.CommandBuffer, f recorder.Fence) error {
	s.log(event{kind: "submit", cb: cb})
	return s.Device.Submit(cb, f)
}

// kinds lists the events' kinds, with "dispatch+barrier" for a dispatch
// recorded behind a barrier, "toHost" and "between" for barriers.
func kinds(es []event) []string {
	var out []string
	for _, e := range es {
		switch {
		case e.kind == "dispatch" && e.barrier:
			out = append(out, "dispatch+barrier")
		case e.kind == "barrier" && e.b == recorder.BarrierToHost:
			out = append(out, "toHost")
		case e.kind == "barrier":
			out = append(out, "between")
		default:
			out = append(out, e.kind)
		}
	}
	return out
}
