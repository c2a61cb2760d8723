package vkc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/gcpressure"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// The views property test: random programs over views of a few buffers
// (overlapping and disjoint, at offsets a storage buffer binds and at
// offsets it does not) — host writes, Fill, Scale, Axpy, Add, Copy, a user
// kernel, capture windows and their replays, injected submit failures,
// on several streams — run against a model of every element: its value,
// or the cause it reads as unwritten. Every read of a random view must
// return the model's bytes exactly, or fail with ErrUnwritten exactly
// where the model has an unwritten element. Ops the library must refuse
// (buffers overlapping in part) are tried too, and must change nothing.

const (
	viewRoots    = 3
	viewRootLen  = 40
	viewPoolSize = 14
)

// viewRef is one view of the program: its buffer and the model's range.
type viewRef struct {
	b        *Buffer[float32]
	root     int
	off, n   int
	lastHost []float32 // the last host write through this view: what a replay of a recorded write copies
}

// viewOp is one step a graph replays.
type viewOp struct {
	kind  string
	a, c  float32
	in    []*viewRef
	out   *viewRef
	host  bool // a host write of data
	data  []float32
	reads bool // the op reads out too (Axpy)
}

type viewModel struct {
	t       *testing.T
	dev     *Device
	fd      *faultyDevice
	r       *rand.Rand
	k       *Kernel
	streams []*Stream
	vals    [viewRoots][viewRootLen]float32
	cause   [viewRoots][viewRootLen]error
	roots   []*Buffer[float32]
	pool    []*viewRef
	graphs  []viewGraph
	history []string
	step    int

	reads, unwrittenReads, refused, faults, replays, bounced int
}

type viewGraph struct {
	g   *Graph
	s   *Stream
	ops []viewOp
}

func (m *viewModel) note(format string, args ...any) {
	if len(m.history) == 40 {
		m.history = m.history[1:]
	}
	m.history = append(m.history, fmt.Sprintf("%d: ", m.step)+fmt.Sprintf(format, args...))
}

// newView makes a view at a random place, aligned or not.
func (m *viewModel) newView(n int) *viewRef {
	root := m.r.IntN(viewRoots)
	off := m.r.IntN(viewRootLen - n + 1)
	v, err := m.roots[root].View(off, n)
	require.NoError(m.t, err)
	if !v.core.bindable() {
		m.bounced++
	}
	return &viewRef{b: v, root: root, off: off, n: n}
}

func (m *viewModel) pick() *viewRef { return m.pool[m.r.IntN(len(m.pool))] }

// pickLike is a view of v's length: from the pool when one matches, else
// a new one the caller closes.
func (m *viewModel) pickLike(v *viewRef) (*viewRef, bool) {
	for range 4 {
		if w := m.pick(); w.n == v.n {
			return w, false
		}
	}
	return m.newView(v.n), true
}

func overlap(a, b *viewRef) bool {
	return a.root == b.root && a.off < b.off+b.n && b.off < a.off+a.n
}

func same(a, b *viewRef) bool { return a.root == b.root && a.off == b.off && a.n == b.n }

// firstCause is the cause of the first unwritten element of the views
// (in order), or nil when all are written.
func (m *viewModel) firstCause(vs ...*viewRef) error {
	for _, v := range vs {
		for i := range v.n {
			if c := m.cause[v.root][v.off+i]; c != nil {
				return c
			}
		}
	}
	return nil
}

// apply runs op on the model as the library runs it: skipped, with its
// output inheriting the failure, when an input holds an unwritten byte.
func (m *viewModel) apply(op viewOp) {
	out := op.out
	if op.host {
		for i := range out.n {
			m.vals[out.root][out.off+i], m.cause[out.root][out.off+i] = out.lastHost[i], nil
		}
		return
	}
	ins := op.in
	if op.reads {
		ins = append(append([]*viewRef(nil), ins...), out)
	}
	if c := m.firstCause(ins...); c != nil {
		for i := range out.n {
			m.cause[out.root][out.off+i] = c
		}
		return
	}
	res := make([]float32, out.n)
	for i := range out.n {
		x := func(j int) float32 { return m.vals[op.in[j].root][op.in[j].off+i] }
		switch op.kind {
		case "fill":
			res[i] = op.a
		case "scale":
			res[i] = op.a * x(0)
		case "axpy":
			res[i] = op.a*x(0) + m.vals[out.root][out.off+i]
		case "add":
			res[i] = x(0) + x(1)
		case "copy":
			res[i] = x(0)
		case "affine":
			res[i] = op.a*x(0) + op.c
		}
	}
	for i := range out.n {
		m.vals[out.root][out.off+i], m.cause[out.root][out.off+i] = res[i], nil
	}
}

// taint marks op's output unwritten with cause (a submission that failed).
func (m *viewModel) taint(op viewOp, cause error) {
	for i := range op.out.n {
		m.cause[op.out.root][op.out.off+i] = cause
	}
}

// run issues op on s. It reports whether the library accepted it; a
// refusal must be one the model expects (buffers overlapping in part).
func (m *viewModel) run(s *Stream, op viewOp) error {
	if op.host {
		err := op.out.b.WriteOn(s, op.data)
		if err == nil {
			op.out.lastHost = op.data
		}
		return err
	}
	in, out := op.in, op.out.b
	switch op.kind {
	case "fill":
		return Fill(s, out, op.a)
	case "scale":
		return Scale(s, op.a, in[0].b, out)
	case "axpy":
		return Axpy(s, op.a, in[0].b, out)
	case "add":
		return Add(s, in[0].b, in[1].b, out)
	case "copy":
		return Copy(s, in[0].b, out)
	case "affine":
		return m.k.Launch(s, [3]uint32{1, 1, 1}, affinePush(op.a, op.c, uint32(op.out.n)), in[0].b, out)
	}
	return fmt.Errorf("unknown op %q", op.kind)
}

// refusedBy reports whether the library must refuse op (and how the model
// knows): buffers of a catalogue op overlapping in part with one written,
// a copy between overlapping ranges, a user kernel's overlapping buffers
// when one goes through a stand-in. ok false: an op the model cannot
// predict (a user kernel's partly overlapping aligned buffers), skipped.
func refusedBy(op viewOp) (refused, ok bool) {
	for _, in := range op.in {
		switch {
		case !overlap(in, op.out):
		case op.kind == "copy":
			return true, true
		case op.kind == "affine":
			if !in.b.core.bindable() || !op.out.b.core.bindable() {
				return true, true
			}
			if !same(in, op.out) {
				return false, false
			}
		case !same(in, op.out):
			return true, true
		}
	}
	return false, true
}

// newOp draws a random op; closers are the new views it made.
func (m *viewModel) newOp() (op viewOp, closers []*viewRef) {
	out := m.pick()
	like := func() *viewRef {
		v, fresh := m.pickLike(out)
		if fresh {
			closers = append(closers, v)
		}
		return v
	}
	a := []float32{-1, 1, 2}[m.r.IntN(3)]
	switch k := m.r.IntN(11); k {
	case 0, 8, 9:
		data := make([]float32, out.n)
		for i := range data {
			data[i] = float32(m.r.IntN(2001) - 1000)
		}
		op = viewOp{kind: "write", host: true, out: out, data: data}
	case 1, 10:
		op = viewOp{kind: "fill", a: float32(m.r.IntN(200) - 100), out: out}
	case 2:
		op = viewOp{kind: "scale", a: a, in: []*viewRef{like()}, out: out}
	case 3:
		op = viewOp{kind: "axpy", a: []float32{-1, 1}[m.r.IntN(2)], in: []*viewRef{like()}, out: out, reads: true}
	case 4:
		op = viewOp{kind: "add", in: []*viewRef{like(), like()}, out: out}
	case 5:
		op = viewOp{kind: "copy", in: []*viewRef{like()}, out: out}
	default:
		op = viewOp{kind: "affine", a: []float32{-1, 1}[m.r.IntN(2)], c: float32(m.r.IntN(7) - 3), in: []*viewRef{like()}, out: out}
	}
	return op, closers
}

func (m *viewModel) stream() *Stream { return m.streams[m.r.IntN(len(m.streams))] }

// eager runs a random op on a random stream.
func (m *viewModel) eager() {
	op, closers := m.newOp()
	defer m.closeViews(closers)
	refused, ok := refusedBy(op)
	if !ok {
		return
	}
	s := m.stream()
	m.note("%s on stream %d: out %d[%d,+%d)", op.kind, s.ID(), op.out.root, op.out.off, op.out.n)
	err := m.run(s, op)
	if refused {
		require.Error(m.t, err, "step %d: %s of overlapping views must be refused", m.step, op.kind)
		m.refused++
		return
	}
	require.NoError(m.t, err, "step %d: %s", m.step, op.kind)
	m.apply(op)
}

func (m *viewModel) closeViews(vs []*viewRef) {
	for _, v := range vs {
		require.NoError(m.t, v.b.Close())
	}
}

// syncAll waits for every stream, so the next batch holds only what comes next.
func (m *viewModel) syncAll() {
	for _, s := range m.streams {
		require.NoError(m.t, s.Sync(context.Background()))
	}
}

// fault runs one op whose inputs are all written, alone in its batch, and
// makes the batch's submit fail: the op's output, and nothing else, must
// read as unwritten with the injected cause.
func (m *viewModel) fault() {
	op, closers := m.newOp()
	defer m.closeViews(closers)
	if refused, ok := refusedBy(op); refused || !ok || op.host || m.firstCause(op.in...) != nil || (op.reads && m.firstCause(op.out) != nil) {
		return
	}
	m.syncAll()
	s := m.stream()
	cause := injected(fmt.Sprintf("submit at step %d", m.step), errs.OutOfMemory)
	m.note("%s on stream %d with a failing submit: out %d[%d,+%d)", op.kind, s.ID(), op.out.root, op.out.off, op.out.n)
	require.NoError(m.t, m.run(s, op))
	m.fd.failNext(callSubmit, 1, cause)
	err := s.Sync(context.Background())
	m.fd.heal(callSubmit)
	require.ErrorIs(m.t, err, cause, "step %d", m.step)
	m.taint(op, cause)
	m.faults++
}

// capture records 1–3 random ops on a stream into a graph; the warmup
// runs them.
func (m *viewModel) capture() {
	var ops []viewOp
	var closers []*viewRef
	for range 1 + m.r.IntN(3) {
		op, cs := m.newOp()
		closers = append(closers, cs...)
		if refused, ok := refusedBy(op); refused || !ok {
			continue
		}
		ops = append(ops, op)
	}
	s := m.stream()
	m.note("capture of %d ops on stream %d", len(ops), s.ID())
	g, err := s.Capture(func(s *Stream) error {
		for _, op := range ops {
			if err := m.run(s, op); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(m.t, err, "step %d", m.step)
	for _, op := range ops {
		m.apply(op) // the warmup
	}
	// The graph keeps the memory of the views it recorded, not the views:
	// the new ones close now, and replays must still work.
	m.closeViews(closers)
	m.graphs = append(m.graphs, viewGraph{g: g, s: s, ops: ops})
}

// replay replays a random graph, sometimes with a failing submit, which
// taints every output of the graph.
func (m *viewModel) replay() {
	if len(m.graphs) == 0 {
		return
	}
	g := m.graphs[m.r.IntN(len(m.graphs))]
	if m.r.IntN(5) == 0 {
		m.syncAll()
		cause := injected(fmt.Sprintf("replay at step %d", m.step), errs.OutOfMemory)
		m.note("replay with a failing submit of %d ops", len(g.ops))
		m.fd.failNext(callSubmit, 1, cause)
		err := g.g.Replay()
		m.fd.heal(callSubmit)
		require.ErrorIs(m.t, err, cause, "step %d", m.step)
		for _, op := range g.ops {
			m.taint(op, cause)
		}
		m.faults++
		return
	}
	m.note("replay of %d ops", len(g.ops))
	require.NoError(m.t, g.g.Replay(), "step %d", m.step)
	for _, op := range g.ops {
		m.apply(op)
	}
	m.replays++
}

// read checks a random view (or a fresh one) against the model.
func (m *viewModel) read() {
	v := m.pick()
	if m.r.IntN(3) == 0 {
		v = m.newView(1 + m.r.IntN(viewRootLen/2))
		defer m.closeViews([]*viewRef{v})
	}
	s := m.stream()
	got, err := v.b.ReadOn(context.Background(), s)
	m.reads++
	if c := m.firstCause(v); c != nil {
		require.ErrorIs(m.t, err, ErrUnwritten, "step %d: read of %d[%d,+%d) where the model has an unwritten element", m.step, v.root, v.off, v.n)
		if single := m.singleCause(v); single != nil {
			require.ErrorIs(m.t, err, single, "step %d: the cause", m.step)
		}
		m.unwrittenReads++
		return
	}
	require.NoError(m.t, err, "step %d: read of %d[%d,+%d)", m.step, v.root, v.off, v.n)
	require.Equal(m.t, m.vals[v.root][v.off:v.off+v.n], got, "step %d: read of %d[%d,+%d)", m.step, v.root, v.off, v.n)
}

// singleCause is the one cause of every unwritten element of v, or nil
// when they have several.
func (m *viewModel) singleCause(v *viewRef) error {
	var one error
	for i := range v.n {
		switch c := m.cause[v.root][v.off+i]; {
		case c == nil:
		case one == nil:
			one = c
		case !errors.Is(c, one):
			return nil
		}
	}
	return one
}

// affineHost is the user kernel on the host device: y = a*x + b.
func affineHost() hostdev.Kernel {
	return hostdev.Kernel{Local: [3]uint32{64, 1, 1}, Run: func(in *hostdev.Invocation) {
		a := math.Float32frombits(binary.LittleEndian.Uint32(in.Push[0:]))
		b := math.Float32frombits(binary.LittleEndian.Uint32(in.Push[4:]))
		n := binary.LittleEndian.Uint32(in.Push[8:])
		x, y := in.Buffers[0], in.Buffers[1]
		for i := range min(int(n), int(in.Groups[0]*64)) {
			v := math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:]))
			binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(a*v+b))
		}
	}}
}

func runViewModel(t *testing.T, seed, steps int, opts ...Option) *viewModel {
	dev, fd := openFaulty(t, opts...)
	k, err := dev.LoadKernel(affineSpec(t))
	require.NoError(t, err)
	m := &viewModel{t: t, dev: dev, fd: fd, r: rng(97, seed), k: k,
		streams: []*Stream{dev.Stream(), dev.StreamWithID(1), dev.StreamWithID(uint64(dev.Slots()))}}
	failedBefore := t.Failed()
	defer func() {
		if t.Failed() && !failedBefore {
			t.Logf("seed %d, last steps:\n%s", seed, strings.Join(m.history, "\n"))
		}
	}()
	before := dev.MemoryStats().Used
	for i := range viewRoots {
		b, err := NewBuffer[float32](dev, viewRootLen)
		require.NoError(t, err)
		m.roots = append(m.roots, b)
		for j := range viewRootLen {
			m.cause[i][j] = ErrNeverWritten
		}
		if i > 0 { // one buffer starts unwritten
			host := make([]float32, viewRootLen)
			for j := range host {
				host[j] = float32(j + 100*i)
			}
			require.NoError(t, b.Write(host))
			for j := range host {
				m.vals[i][j], m.cause[i][j] = host[j], nil
			}
		}
	}
	for range viewPoolSize {
		m.pool = append(m.pool, m.newView(1+m.r.IntN(12)))
	}
	for i := range viewRoots {
		m.pool = append(m.pool, &viewRef{b: m.roots[i], root: i, n: viewRootLen})
	}
	for m.step = 0; m.step < steps; m.step++ {
		switch n := m.r.IntN(100); {
		case n < 45:
			m.eager()
		case n < 70:
			m.read()
		case n < 77:
			m.capture()
		case n < 90:
			m.replay()
		case n < 95:
			m.fault()
		default:
			if len(m.graphs) > 0 && m.r.IntN(2) == 0 {
				i := m.r.IntN(len(m.graphs))
				require.NoError(t, m.graphs[i].g.Close())
				m.graphs = append(m.graphs[:i], m.graphs[i+1:]...)
			} else {
				require.NoError(t, m.stream().Sync(context.Background()))
			}
		}
	}
	for range m.pool {
		m.read()
	}
	// Closing the buffers first: their views and graphs keep the memory,
	// which goes with the last of them.
	for _, b := range m.roots {
		require.NoError(t, b.Close())
	}
	for _, g := range m.graphs {
		require.NoError(t, g.g.Close())
	}
	for _, v := range m.pool[:viewPoolSize] {
		require.NoError(t, v.b.Close())
	}
	require.NoError(t, k.Close())
	require.NoError(t, dev.Stream().Sync(context.Background()))
	require.Equal(t, before, dev.MemoryStats().Used, "the memory of every buffer and view went back")
	return m
}

// The property on lavapipe (validation layer on) and on the host device,
// which also reports a binding at an offset the device does not accept.
func TestViewsMatchTheModel(t *testing.T) {
	steps, seeds := gcpressure.Scaled(400, 2000), gcpressure.Scaled(6, 40)
	if testing.Short() {
		steps, seeds = 150, 2
	}
	devices := map[string][]Option{
		"vulkan": nil,
		"host": {withRecorderDevice(func() (recorder.Device, error) {
			ks := hostdev.Builtins()
			ks["affine"] = affineHost()
			return hostdev.New(hostdev.Options{Kernels: ks}), nil
		})},
	}
	for name, opts := range devices {
		t.Run(name, func(t *testing.T) {
			var total viewModel
			for seed := range seeds {
				m := runViewModel(t, seed, steps, opts...)
				total.reads += m.reads
				total.unwrittenReads += m.unwrittenReads
				total.refused += m.refused
				total.faults += m.faults
				total.replays += m.replays
				total.bounced += m.bounced
				if t.Failed() {
					return
				}
			}
			t.Logf("%d seeds × %d steps: %d reads (%d unwritten), %d refused ops, %d injected failures, %d replays, %d views bound through a stand-in",
				seeds, steps, total.reads, total.unwrittenReads, total.refused, total.faults, total.replays, total.bounced)
			require.NotZero(t, total.unwrittenReads)
			require.NotZero(t, total.refused)
			require.NotZero(t, total.faults)
			require.NotZero(t, total.replays)
			require.NotZero(t, total.bounced)
		})
	}
}

// The same programs with the collector running constantly and a goroutine
// allocating: views, their stand-ins and the graphs that hold their memory
// survive collections at every point (a view's memory is never a Go
// object's to finalize).
func TestViewsMatchTheModelUnderGCPressure(t *testing.T) {
	churn := gcpressure.Start(t)
	for seed := range gcpressure.Scaled(1, 10) {
		runViewModel(t, 100+seed, 300)
	}
	require.NotZero(t, churn.Stop(), "the allocating goroutine ran")
}
