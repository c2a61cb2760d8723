package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// fx runs the fault scenario against a model: one hostdev device whose
// call of kind call fails at its nth occurrence (nth 0: no fault).
type fx struct {
	t       *testing.T
	dev     *hostdev.Device
	r       *recorder.Recorder
	k       map[string]*recorder.Kernel
	call    hostdev.Call
	nth     int
	cause   error
	fired   bool
	slots   int
	pending []map[*mbuf]struct{} // per slot: buffers written by work not known complete
	win     mwindow
	bufs    []*mbuf
}

// mwindow is the model of the one capture window the scenario opens.
type mwindow struct {
	state  capture.State
	owner  recorder.StreamID
	ops    []func() // what a replay does, in recorded order
	writes []*mbuf  // what the recording writes
}

// mgraph is a sealed graph and the model of what its replay does.
type mgraph struct {
	g      *recorder.Graph
	ops    []func()
	writes []*mbuf
}

type argKind uint8

const (
	argR argKind = iota
	argW
	argRW
)

type arg struct {
	b    *mbuf
	kind argKind
}

// absorbed reports whether a failure of the call is absorbed by the
// recorder (a fence or buffer that cannot be reset is dropped and a new
// one made), so nothing may be at risk: every value must be right.
func (f *fx) absorbed() bool { return f.call == hostdev.Reset || f.call == hostdev.ResetFence }

// after checks what a recorder call returned and settles the model: an
// error must wrap the injected cause (and come no earlier than the fault);
// when the fault fired during the call, everything pending and the call's
// own outputs are at risk; a call that failed leaves its outputs tainted.
func (f *fx) after(what string, err error, outs ...*mbuf) {
	f.t.Helper()
	firedNow := f.nth > 0 && !f.fired && f.dev.Count(f.call) >= f.nth
	if err != nil {
		require.Truef(f.t, f.fired || firedNow, "%s failed with no fault injected yet: %v", what, err)
		require.ErrorIsf(f.t, err, f.cause, "%s", what)
	}
	if firedNow {
		f.fired = true
		if f.absorbed() {
			require.NoErrorf(f.t, err, "%s: a failed %s is absorbed", what, f.call)
		} else {
			for _, p := range f.pending {
				for b := range p {
					b.risk(f.cause)
				}
			}
			for _, o := range outs {
				o.risk(f.cause)
			}
		}
	}
	if err != nil {
		for _, o := range outs {
			o.taint(f.cause)
		}
	}
}

func (f *fx) slot(s recorder.StreamID) int { return int(s) % f.slots }

// pend records that work on stream s writes bs.
func (f *fx) pend(s recorder.StreamID, bs ...*mbuf) {
	for _, b := range bs {
		f.pending[f.slot(s)][b] = struct{}{}
	}
}

// drained records that stream s's slot waited for all its work.
func (f *fx) drained(s recorder.StreamID) { clear(f.pending[f.slot(s)]) }

func (f *fx) drainedAll() {
	for _, p := range f.pending {
		clear(p)
	}
}

func (f *fx) recording(s recorder.StreamID) bool {
	return f.win.state == capture.Recording && f.win.owner == s
}

func (f *fx) have(args ...arg) bool {
	for _, a := range args {
		if !a.b.ok {
			return false
		}
	}
	return true
}

// alloc allocates b (tainted as never written, as the public package does).
func (f *fx) alloc(b *mbuf) {
	c, err := f.r.Alloc(alloc.DeviceLocal, uint64(4*len(b.val)))
	f.after("alloc "+b.name, err)
	if err == nil {
		b.c, b.ok = c, true
		f.r.Taint([]alloc.Claim{c}, errFresh)
		f.bufs = append(f.bufs, b)
	}
}

// launch runs kernel name on stream s; compute gives the written
// arguments' new values from the model's current ones. Work whose kernel
// or buffer could not be made (an earlier fault) is skipped.
func (f *fx) launch(s recorder.StreamID, name string, push []byte, args []arg, compute func() [][]float32) error {
	f.t.Helper()
	k := f.k[name]
	if k == nil || !f.have(args...) {
		return nil
	}
	var ins, outs []*mbuf
	binds := make([]capture.Binding, len(args))
	for i, a := range args {
		binds[i] = capture.Binding{Claim: a.b.c, Write: a.kind != argR, Read: a.kind == argRW}
		if a.kind != argW {
			ins = append(ins, a.b)
		}
		if a.kind != argR {
			outs = append(outs, a.b)
		}
	}
	f.model(s, ins, outs, compute)
	l := recorder.Launch{Args: binds, Groups: [3]uint32{1, 1, 1}, Push: push}
	err := f.r.Launch(s, k, &l)
	f.after(name, err, outs...)
	return err
}

// model applies work on stream s now, or records it when s's window records.
func (f *fx) model(s recorder.StreamID, ins, outs []*mbuf, compute func() [][]float32) {
	run := func() {
		apply(ins, outs, compute)
		f.pend(s, outs...)
	}
	if f.recording(s) {
		f.win.ops = append(f.win.ops, run)
		f.win.writes = append(f.win.writes, outs...)
		return
	}
	run()
}

func bits(v float32) uint32 { return math.Float32bits(v) }

func (f *fx) fill(s recorder.StreamID, b *mbuf, v float32) error {
	return f.launch(s, "fill", words(bits(v), uint32(len(b.val))), []arg{{b, argW}},
		func() [][]float32 { return [][]float32{splatN(len(b.val), v)} })
}

func (f *fx) axpy(s recorder.StreamID, a float32, x, y *mbuf) error {
	return f.launch(s, "axpy", words(bits(a), n), []arg{{x, argR}, {y, argRW}},
		func() [][]float32 { return [][]float32{modelAxpy(a, x.val, y.val)} })
}

func (f *fx) add(s recorder.StreamID, x, y, z *mbuf) error {
	return f.launch(s, "add", words(n), []arg{{x, argR}, {y, argR}, {z, argW}},
		func() [][]float32 { return [][]float32{modelAdd(x.val, y.val)} })
}

func (f *fx) sum(s recorder.StreamID, src, dst *mbuf) error {
	return f.launch(s, "sum", words(n), []arg{{src, argR}, {dst, argW}},
		func() [][]float32 { return [][]float32{modelSum(src.val)} })
}

// copy is a transfer (Recorder.Copy) of all of src into dst.
func (f *fx) copy(s recorder.StreamID, src, dst *mbuf) error {
	if !f.have(arg{b: src}, arg{b: dst}) {
		return nil
	}
	f.model(s, []*mbuf{src}, []*mbuf{dst}, func() [][]float32 { return [][]float32{slices.Clone(src.val)} })
	err := f.r.Copy(s, src.c, dst.c, src.c.Size)
	f.after("copy", err, dst)
	return err
}

// write writes vals into b on stream s. Eagerly it drains the slot first;
// inside the owner's window it is recorded as a copy from b's staging,
// which a replay copies as it is then.
func (f *fx) write(s recorder.StreamID, b *mbuf, vals []float32) error {
	if !b.ok {
		return nil
	}
	rec := f.recording(s)
	err := f.r.Write(s, b.c, &b.st, bytesOf(vals))
	outs := []*mbuf{b}
	if stg := b.staging(); stg != nil {
		// A write fills the staging too; one that fails leaves it unwritten.
		stg.setClean(vals)
		outs = append(outs, stg)
	}
	if rec {
		f.win.ops = append(f.win.ops, func() { b.refill(); f.pend(s, b) })
		f.win.writes = append(f.win.writes, b)
	} else {
		b.setClean(vals)
	}
	f.after("write "+b.name, err, outs...)
	if !rec {
		f.drained(s)
		f.pend(s, b)
	}
	return err
}

// read reads b on stream s and checks it against the model. A read that
// fails because the fault fired inside it is tried once more.
func (f *fx) read(s recorder.StreamID, b *mbuf) {
	f.t.Helper()
	if !b.ok {
		return
	}
	for try := 0; ; try++ {
		out := make([]byte, b.c.Size)
		err := f.r.Read(context.Background(), s, b.c, out)
		driverErr := err
		if errors.Is(err, errs.Unwritten) {
			driverErr = nil
		}
		f.after("read "+b.name, driverErr)
		f.drained(s)
		if driverErr != nil && try == 0 {
			continue
		}
		require.NoError(f.t, driverErr, "read %s again", b.name)
		var got []float32
		if err == nil {
			got = floatsOf(out)
		}
		if msg := checkRead(b, got, err); msg != "" {
			f.t.Fatalf("read %s on stream %d (%s, causes %v): %s; got %v, model %v", b.name, s, b.status, b.causes, msg, got, b.val)
		}
		return
	}
}

func (f *fx) sync(s recorder.StreamID) error {
	err := f.r.Sync(context.Background(), s)
	f.after("sync", err)
	f.drained(s)
	return err
}

// capture runs fn as the public package's Capture does.
func (f *fx) capture(s recorder.StreamID, fn func() error) *mgraph {
	err := f.r.PrepareCapture(s)
	f.after("prepare", err)
	if err != nil {
		return nil
	}
	f.win = mwindow{state: capture.Prepared, owner: s}
	if fn() != nil || f.sync(s) != nil {
		f.abort(s)
		return nil
	}
	err = f.r.BeginCapture(s)
	f.after("begin", err)
	f.drained(s)
	if err != nil {
		f.win = mwindow{}
		return nil
	}
	f.win.state = capture.Recording
	if fn() != nil {
		f.abort(s)
		return nil
	}
	g, err := f.r.EndCapture(s)
	f.after("end", err, f.win.writes...)
	w := f.win
	f.win = mwindow{}
	if err != nil {
		return nil
	}
	return &mgraph{g: g, ops: w.ops, writes: w.writes}
}

func (f *fx) abort(s recorder.StreamID) {
	err := f.r.AbortCapture(s)
	f.after("abort", err)
	if f.win.state == capture.Recording {
		// The recorded work never ran, for the reason the window failed.
		for _, b := range f.win.writes {
			b.taint(f.cause)
		}
	}
	f.win = mwindow{}
}

func (f *fx) replay(g *mgraph) {
	if g == nil {
		return
	}
	err := g.g.Replay()
	if err == nil {
		for _, op := range g.ops {
			op()
		}
	}
	f.after("replay", err, g.writes...)
}

// scenarioOptions keep batches and the cache small, so the scenario
// crosses every boundary: batch submits at 4 launches, cache evictions.
var scenarioOptions = recorder.Options{Slots: 2, BatchSize: 4, CacheSize: 4, PageSize: 64 << 10}

// scenario is the work every fault case runs: writes, eager launches (a
// chain across batches), a transfer, a reduction through a temporary that
// is dropped, work on a second stream that reads the first's, a capture
// and its replays, reads of everything, and teardown.
func (f *fx) scenario(unified bool) {
	t := f.t
	f.slots = scenarioOptions.Slots
	for range f.slots {
		f.pending = append(f.pending, map[*mbuf]struct{}{})
	}
	r, err := recorder.New(f.dev, scenarioOptions)
	f.after("new", err)
	if err != nil {
		return
	}
	f.r = r
	f.k = map[string]*recorder.Kernel{}
	for _, name := range []string{"fill", "axpy", "copy", "add", "sum"} {
		k, err := r.NewKernel(code, descs[name])
		f.after("kernel "+name, err)
		if err == nil {
			f.k[name] = k
		}
	}
	names := "abcdefghij"
	b := map[byte]*mbuf{}
	for i := range len(names) {
		b[names[i]] = newMbuf(names[i:i+1], n)
		f.alloc(b[names[i]])
	}
	o := newMbuf("o", 1)
	f.alloc(o)
	a, bb, c, d, e, g, h, i, j, k := b['a'], b['b'], b['c'], b['d'], b['e'], b['g'], b['h'], b['i'], b['j'], b['f']

	_ = f.write(0, a, ramp(1))
	_ = f.write(0, bb, ramp(10))
	_ = f.fill(0, c, 3)
	_ = f.axpy(0, 2, a, bb)
	_ = f.add(0, a, bb, d)
	for range 6 {
		_ = f.axpy(0, 1, a, d) // a chain across batches
	}
	_ = f.copy(0, d, e)

	// A reduction-like temporary: allocated on the stream, dropped after use.
	tmp := newMbuf("tmp", n)
	tc, err := r.AllocOn(0, alloc.DeviceLocal, 4*n)
	f.after("alloc on", err)
	if err == nil {
		tmp.c, tmp.ok = tc, true
		r.Taint([]alloc.Claim{tc}, errFresh)
		_ = f.add(0, a, c, tmp)
		_ = f.sum(0, tmp, o)
		f.after("drop", r.Drop(0, tc))
	}

	_ = f.add(1, d, c, g) // reads slot 0's pending work
	f.read(1, bb)
	_ = f.sync(0)

	graph := f.capture(0, func() error {
		if err := f.add(0, a, c, i); err != nil {
			return err
		}
		if err := f.write(0, h, ramp(20)); err != nil {
			return err
		}
		return f.add(0, h, i, j)
	})
	f.replay(graph)
	f.replay(graph)
	_ = f.write(0, h, ramp(50))
	f.replay(graph)
	_ = f.add(1, j, a, k) // reads the replay's output
	for idx, buf := range f.bufs {
		f.read(recorder.StreamID(idx%2), buf)
	}

	if graph != nil {
		f.after("graph close", graph.g.Close())
	}
	for _, name := range []string{"fill", "axpy", "copy", "add", "sum"} {
		if k := f.k[name]; k != nil {
			f.after("release "+name, k.Release())
			f.drainedAll()
		}
	}
	for _, buf := range f.bufs {
		f.after("quiesce", r.Quiesce(3))
		r.ReleaseStaging(buf.st)
		f.after("free "+buf.name, r.Free(buf.c))
	}
	f.after("close", r.Close())
	require.Zero(t, r.LiveStaging())
}

// runScenario runs the scenario once on a fresh device with the fault
// (call, nth) armed (nth 0: none) and checks what it leaves.
func runScenario(t *testing.T, unified bool, call hostdev.Call, nth int) *hostdev.Device {
	leftover := goroutines(t)
	dev := hostdev.New(hostdev.Options{Unified: unified})
	cause := fmt.Errorf("injected %s #%d", call, nth)
	if nth > 0 {
		dev.FailNth(call, nth, cause)
	}
	f := &fx{t: t, dev: dev, call: call, nth: nth, cause: cause}
	f.scenario(unified)
	if nth > 0 {
		require.True(t, f.fired, "the fault never fired")
	}
	requireClean(t, dev)
	leftover()
	return dev
}

// TestFaultEveryCall injects a failure at every occurrence of every
// fallible device call the scenario makes, one per run, and checks the
// recorder's promise at each: every call succeeds or fails with an error
// wrapping the cause; outputs of failed work read as unwritten with the
// cause; every other buffer holds exactly its model value; after Close
// nothing is alive, the device's checker found nothing, no goroutine is
// left.
func TestFaultEveryCall(t *testing.T) {
	cases := 0
	both(t, func(t *testing.T, unified bool) {
		clean := runScenario(t, unified, 0, 0)
		var counts []string
		for _, call := range hostdev.Calls() {
			count := clean.Count(call)
			counts = append(counts, fmt.Sprintf("%s×%d", call, count))
			for nth := 1; nth <= count; nth++ {
				cases++
				t.Run(fmt.Sprintf("%s#%d", call, nth), func(t *testing.T) { runScenario(t, unified, call, nth) })
			}
		}
		t.Logf("calls of the scenario: %v", counts)
	})
	t.Logf("%d (call kind × occurrence) fault cases", cases)
}
