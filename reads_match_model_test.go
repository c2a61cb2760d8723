package vkc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// The property test: random programs of host writes, launches, copies,
// captures, replays, injected driver failures and reads on several streams
// (two of them sharing a slot), run against a model of what completed work
// wrote. The model mirrors, per slot, the open command buffer and the
// submissions in flight, so it knows which launches an injected failure
// undoes. Every read must return exactly the model's bytes, or fail with
// ErrUnwritten unwrapping to the model's cause when no completed work wrote
// them; never stale bytes.

// propElems is each buffer's length: one workgroup of every kernel.
const propElems = 32

// propMax bounds the model's magnitudes, so every value stays an integer
// that float32 holds exactly whatever the order or fusion of operations.
const propMax = 1 << 20

// The ops of the property test's programs.
const (
	propAdd = iota
	propSub
	propAxpy
	propScale
	propFill
	propCopy
	propAffine // the user kernel
	numPropOps
)

// propOp is one launch or copy: inputs in the order the recorder checks
// them for taint (bindings read, in binding order), and the output.
type propOp struct {
	kind int
	a, b float32
	in   []int
	out  int
}

// propBuf is a buffer with the model's view of it.
type propBuf struct {
	b     *Buffer[float32]
	want  []float32 // what completed (or in-order pending) work wrote; nil: unwritten
	cause error     // with want nil, the cause the read's ErrUnwritten unwraps to
}

// propBatch is one submission of a slot: what its work writes and touches.
type propBatch struct {
	serial  int
	writes  []int
	touches []int
}

// propSlot is the model of one backend slot's queue.
type propSlot struct {
	open     *propBatch
	inflight []*propBatch
	serial   int
}

// propGraph is a captured program and the serial of its last replay.
type propGraph struct {
	g    *Graph
	s    *Stream
	ops  []propOp
	last int
}

// propOptions lift the restrictions the stress run keeps until the
// recorder's fixes land (capture_edges_test.go lifts them all).
type propOptions struct {
	// crossSlotReads also reads buffers that work pending on another slot
	// writes, accepting the model's bytes or ErrUnwritten.
	crossSlotReads bool
	// taintedReplays also replays graphs whose inputs are unwritten, whose
	// outputs must then be unwritten as after the same launches done eagerly.
	taintedReplays bool
	// lateFailedWork goes on after an injected fence-wait failure without
	// first waiting for the device: the failed submission may still run.
	lateFailedWork bool
}

type propTest struct {
	t       *testing.T
	dev     *Device
	fd      *faultyDevice
	r       *rand.Rand
	k       *Kernel
	streams []*Stream
	bufs    []*propBuf
	slots   []*propSlot
	graphs  []*propGraph
	propOptions

	steps, launches, replays, reads, checks, faults, relaxedReads int
	history                                                       []string // the last steps, printed when the test fails
}

// note records a step for the failure report.
func (p *propTest) note(format string, args ...any) {
	if len(p.history) == 60 {
		p.history = p.history[1:]
	}
	p.history = append(p.history, fmt.Sprintf("%d: ", p.steps)+fmt.Sprintf(format, args...))
}

// runProperty runs one random program of steps on a fresh device.
func runProperty(t *testing.T, seed, steps int, opts propOptions) *propTest {
	dev, fd := openFaulty(t)
	k, err := dev.LoadKernel(affineSpec(t))
	require.NoError(t, err)
	p := &propTest{t: t, dev: dev, fd: fd, r: rng(83, seed), k: k, propOptions: opts,
		streams: []*Stream{dev.StreamWithID(0), dev.StreamWithID(1), dev.StreamWithID(2), dev.StreamWithID(uint64(dev.Slots()))}}
	failedBefore := t.Failed()
	defer func() {
		if t.Failed() && !failedBefore {
			t.Logf("seed %d, last steps:\n%s", seed, strings.Join(p.history, "\n"))
		}
	}()
	for range dev.Slots() {
		p.slots = append(p.slots, &propSlot{})
	}
	for i := range 6 {
		b, err := NewBuffer[float32](dev, propElems)
		require.NoError(t, err)
		p.bufs = append(p.bufs, &propBuf{b: b, cause: ErrNeverWritten})
		if i >= 2 { // two stay never written
			p.write(i, p.stream())
		}
	}
	for p.steps = 0; p.steps < steps; p.steps++ {
		p.step()
	}
	for len(p.graphs) > 0 {
		p.closeGraph(0)
	}
	for i := range p.bufs {
		p.read(i, p.stream())
	}
	for _, b := range p.bufs {
		require.NoError(t, b.b.Close())
	}
	require.NoError(t, k.Close())
	closeAndCheck(t, dev) // now, not at the test's end: a soak runs hundreds
	return p
}

func (p *propTest) step() {
	switch n := p.r.IntN(100); {
	case n < 18:
		p.write(p.r.IntN(len(p.bufs)), p.stream())
	case n < 50:
		p.eager(p.stream(), p.newOp())
	case n < 70:
		p.read(p.r.IntN(len(p.bufs)), p.stream())
	case n < 75:
		p.sync(p.stream())
	case n < 79:
		p.flush(p.stream())
	case n < 83:
		p.capture(p.stream())
	case n < 92:
		if len(p.graphs) > 0 {
			p.replay(p.graphs[p.r.IntN(len(p.graphs))])
		}
	case n < 94:
		if len(p.graphs) > 0 {
			p.closeGraph(p.r.IntN(len(p.graphs)))
		}
	default:
		p.fault()
	}
}

func (p *propTest) stream() *Stream { return p.streams[p.r.IntN(len(p.streams))] }

func (p *propTest) slotOf(s *Stream) *propSlot { return p.slots[s.ID()%uint64(len(p.slots))] }

func (p *propTest) what() string { return fmt.Sprintf("step %d", p.steps) }

// newOp picks a random op over random buffers. Copy and the user kernel
// get distinct buffers; the elementwise ops may alias, which they allow.
func (p *propTest) newOp() propOp {
	pick := func() int { return p.r.IntN(len(p.bufs)) }
	op := propOp{kind: p.r.IntN(numPropOps), out: pick()}
	switch op.kind {
	case propAdd, propSub:
		op.in = []int{pick(), pick()}
	case propAxpy:
		op.a = float32([]int{-1, 1, 2}[p.r.IntN(3)])
		op.in = []int{pick(), op.out}
	case propScale:
		op.a = float32([]int{-1, 2}[p.r.IntN(2)])
		op.in = []int{pick()}
	case propFill:
		op.b = float32(p.r.IntN(201) - 100)
	case propCopy, propAffine:
		op.a, op.b = float32([]int{-1, 1, 2}[p.r.IntN(3)]), float32(p.r.IntN(7)-3)
		src := pick()
		for src == op.out {
			src = pick()
		}
		op.in = []int{src}
	}
	return op
}

// eval is op's result on the model's values, or ok false when it would
// leave the exactly representable range.
func (p *propTest) eval(op propOp, vals func(int) []float32) (out []float32, ok bool) {
	out = make([]float32, propElems)
	in := func(k int) []float32 { return vals(op.in[k]) }
	for i := range out {
		var v float32
		switch op.kind {
		case propAdd:
			v = in(0)[i] + in(1)[i]
		case propSub:
			v = in(0)[i] - in(1)[i]
		case propAxpy:
			v = op.a*in(0)[i] + in(1)[i]
		case propScale:
			v = op.a * in(0)[i]
		case propFill:
			v = op.b
		case propCopy:
			v = in(0)[i]
		case propAffine:
			v = op.a*in(0)[i] + op.b
		}
		if math.Abs(float64(v)) > propMax {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// issue makes op's call on s.
func (p *propTest) issue(s *Stream, op propOp) error {
	b := func(i int) *Buffer[float32] { return p.bufs[i].b }
	switch op.kind {
	case propAdd:
		return Add(s, b(op.in[0]), b(op.in[1]), b(op.out))
	case propSub:
		return Sub(s, b(op.in[0]), b(op.in[1]), b(op.out))
	case propAxpy:
		return Axpy(s, op.a, b(op.in[0]), b(op.out))
	case propScale:
		return Scale(s, op.a, b(op.in[0]), b(op.out))
	case propFill:
		return Fill(s, b(op.out), op.b)
	case propCopy:
		return Copy(s, b(op.in[0]), b(op.out))
	default:
		return p.k.Launch(s, [3]uint32{1, 1, 1}, affinePush(op.a, op.b, propElems), b(op.in[0]), b(op.out))
	}
}

// firstUnknown is the cause of op's first unwritten input, or nil.
func (p *propTest) firstUnknown(in []int) error {
	for _, i := range in {
		if p.bufs[i].want == nil {
			return p.bufs[i].cause
		}
	}
	return nil
}

// record applies op to the model as the recorder runs it eagerly on slot
// sl: skipped, its output inheriting the cause, when an input is
// unwritten; else joined to the open batch (opened when there is none).
func (p *propTest) record(sl *propSlot, op propOp, result []float32) {
	out := p.bufs[op.out]
	if cause := p.firstUnknown(op.in); cause != nil {
		out.want, out.cause = nil, cause
		return
	}
	out.want, out.cause = result, nil
	if sl.open == nil {
		sl.open = &propBatch{}
	}
	sl.open.writes = append(sl.open.writes, op.out)
	sl.open.touches = append(append(sl.open.touches, op.in...), op.out)
	if len(sl.open.writes) >= 1024 { // the default batch size
		sl.submitOpen()
	}
}

// pending reports whether work not yet completed on sl writes buffer i
// (or, with touches, reads or writes it).
func (sl *propSlot) pending(i int, touches bool) bool {
	for _, x := range append([]*propBatch{sl.open}, sl.inflight...) {
		if x == nil {
			continue
		}
		if slices.Contains(x.writes, i) || (touches && slices.Contains(x.touches, i)) {
			return true
		}
	}
	return false
}

// settleOthers syncs every slot but s's whose pending work touches any of
// bufs, as a program must before another stream uses its results (and as
// the model needs, to know what each call sees).
func (p *propTest) settleOthers(s *Stream, bufs []int) {
	mine := p.slotOf(s)
	for i, sl := range p.slots {
		if sl == mine {
			continue
		}
		for _, b := range bufs {
			if sl.pending(b, true) {
				p.syncSlot(i)
				break
			}
		}
	}
}

// submitted moves a batch into flight; past 16 in flight the recorder
// waits for the oldest, which completes.
func (sl *propSlot) submitted(x *propBatch) {
	sl.serial++
	x.serial = sl.serial
	sl.inflight = append(sl.inflight, x)
	if len(sl.inflight) > 16 {
		sl.inflight = sl.inflight[1:]
	}
}

// submitOpen submits the open batch, if any.
func (sl *propSlot) submitOpen() {
	if sl.open != nil {
		sl.submitted(sl.open)
		sl.open = nil
	}
}

// drained is a slot whose work all completed.
func (sl *propSlot) drained() {
	sl.submitOpen()
	sl.inflight = nil
}

func (p *propTest) syncSlot(i int) {
	p.note("sync slot %d", i)
	require.NoError(p.t, p.dev.StreamWithID(uint64(i)).Sync(context.Background()), p.what())
	p.slots[i].drained()
}

func (p *propTest) write(i int, s *Stream) {
	p.settleOthers(s, []int{i})
	data := smallInts(p.r, propElems, -100, 100)
	p.note("write buffer %d on stream %d", i, s.ID())
	require.NoError(p.t, p.bufs[i].b.WriteOn(s, data), p.what())
	p.slotOf(s).drained() // a write waits for its slot's work first
	p.bufs[i].want, p.bufs[i].cause = data, nil
}

func (p *propTest) eager(s *Stream, op propOp) {
	result, ok := p.eval(op, p.value)
	if !ok {
		op = propOp{kind: propFill, out: op.out, b: float32(p.r.IntN(100))}
		result, _ = p.eval(op, p.value)
	}
	p.settleOthers(s, append([]int{op.out}, op.in...))
	p.note("op %+v on stream %d", op, s.ID())
	require.NoError(p.t, p.issue(s, op), p.what())
	p.launches++
	p.record(p.slotOf(s), op, result)
}

// value is buffer i's model bytes, zeros when unwritten (only read by
// eval for ops that will be skipped anyway).
func (p *propTest) value(i int) []float32 {
	if w := p.bufs[i].want; w != nil {
		return w
	}
	return make([]float32, propElems)
}

func (p *propTest) read(i int, s *Stream) {
	mine := p.slotOf(s)
	var others []int
	for j, sl := range p.slots {
		if sl != mine && sl.pending(i, false) {
			if !p.crossSlotReads {
				p.syncSlot(j)
				continue
			}
			others = append(others, j)
		}
	}
	b := p.bufs[i]
	p.note("read buffer %d on stream %d (model %v, cause %v)", i, s.ID(), b.want, b.cause)
	got, err := b.b.ReadOn(context.Background(), s)
	mine.drained()
	p.reads++
	p.checks++
	if len(others) > 0 {
		// Work pending on another slot writes these bytes: the read waits
		// for it (the model's bytes) or fails with ErrUnwritten.
		p.relaxedReads++
		if err != nil {
			require.ErrorIs(p.t, err, ErrUnwritten, "%s: read of buffer %d pending on another slot", p.what(), i)
		} else if b.want != nil {
			require.Equal(p.t, b.want, got, "%s: read of buffer %d pending on another slot", p.what(), i)
		} else {
			p.t.Fatalf("%s: read of unwritten buffer %d returned %v", p.what(), i, got)
		}
		for _, j := range others {
			p.syncSlot(j)
		}
		return
	}
	if b.want == nil {
		require.ErrorIs(p.t, err, ErrUnwritten, "%s: buffer %d (got %v)", p.what(), i, got)
		require.ErrorIs(p.t, err, b.cause, "%s: buffer %d", p.what(), i)
		return
	}
	require.NoError(p.t, err, "%s: buffer %d", p.what(), i)
	require.Equal(p.t, b.want, got, "%s: buffer %d", p.what(), i)
}

func (p *propTest) sync(s *Stream) {
	p.note("sync stream %d", s.ID())
	require.NoError(p.t, s.Sync(context.Background()), p.what())
	p.slotOf(s).drained()
}

func (p *propTest) flush(s *Stream) {
	p.note("flush stream %d", s.ID())
	require.NoError(p.t, s.Flush(), p.what())
	p.slotOf(s).submitOpen()
}

// capture records one to three random ops on s; the warmup runs them
// eagerly and Capture's own sync completes the slot.
func (p *propTest) capture(s *Stream) {
	if len(p.graphs) >= 3 {
		return
	}
	var ops []propOp
	vals := map[int][]float32{}
	val := func(i int) []float32 {
		if v, ok := vals[i]; ok {
			return v
		}
		return p.value(i)
	}
	var touched []int
	for range 1 + p.r.IntN(3) {
		op := p.newOp()
		out, ok := p.eval(op, val)
		if !ok {
			return
		}
		vals[op.out] = out
		ops = append(ops, op)
		touched = append(append(touched, op.in...), op.out)
	}
	p.settleOthers(s, touched)
	p.note("capture %+v on stream %d", ops, s.ID())
	g, err := s.Capture(func(s *Stream) error {
		for _, op := range ops {
			if err := p.issue(s, op); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(p.t, err, p.what())
	sl := p.slotOf(s)
	for _, op := range ops {
		result, _ := p.eval(op, p.value)
		p.record(sl, op, result)
	}
	sl.drained()
	p.graphs = append(p.graphs, &propGraph{g: g, s: s, ops: ops})
}

// simulate runs g's ops on the model's values with the eager rules and
// returns the new values and causes of its outputs; ok is false if a value
// would leave the exact range, and clean false if an input was unwritten.
func (p *propTest) simulate(g *propGraph) (want map[int][]float32, cause map[int]error, ok, clean bool) {
	want, cause = map[int][]float32{}, map[int]error{}
	known := func(i int) ([]float32, error) {
		if v, ok := want[i]; ok {
			return v, cause[i]
		}
		return p.bufs[i].want, p.bufs[i].cause
	}
	clean = true
	for _, op := range g.ops {
		var bad error
		for _, i := range op.in {
			if v, c := known(i); v == nil {
				bad = c
				break
			}
		}
		if bad != nil {
			want[op.out], cause[op.out], clean = nil, bad, false
			continue
		}
		out, fits := p.eval(op, func(i int) []float32 { v, _ := known(i); return v })
		if !fits {
			return nil, nil, false, clean
		}
		want[op.out], cause[op.out] = out, nil
	}
	return want, cause, true, clean
}

func (p *propTest) replay(g *propGraph) {
	want, cause, ok, clean := p.simulate(g)
	if !ok || (!clean && !p.taintedReplays) {
		return
	}
	var touched []int
	for _, op := range g.ops {
		touched = append(append(touched, op.in...), op.out)
	}
	p.settleOthers(g.s, touched)
	p.note("replay %+v on stream %d", g.ops, g.s.ID())
	require.NoError(p.t, g.g.Replay(), p.what())
	p.replays++
	sl := p.slotOf(g.s)
	sl.submitOpen()
	x := &propBatch{touches: touched}
	for i, v := range want {
		p.bufs[i].want, p.bufs[i].cause = v, cause[i]
		x.writes = append(x.writes, i)
	}
	sl.submitted(x)
	g.last = x.serial
}

func (p *propTest) closeGraph(k int) {
	g := p.graphs[k]
	p.note("close graph %+v", g.ops)
	require.NoError(p.t, g.g.Close(), p.what())
	sl := p.slotOf(g.s)
	for len(sl.inflight) > 0 && sl.inflight[0].serial <= g.last {
		sl.inflight = sl.inflight[1:]
	}
	p.graphs = slices.Delete(p.graphs, k, k+1)
}

// fault injects one driver failure where the model knows exactly which
// work it undoes, and checks that the call reports it.
func (p *propTest) fault() {
	s := p.stream()
	sl := p.slotOf(s)
	cause := injected("injected", errs.OutOfMemory)
	taint := func(bufs []int) {
		for _, i := range bufs {
			p.bufs[i].want, p.bufs[i].cause = nil, cause
		}
	}
	inject := func(c faultCall, call func() error) {
		p.note("inject a failure of call %d", c)
		before := p.fd.injectedCount(c)
		p.fd.failNext(c, 1, cause)
		err := call()
		p.fd.heal(c)
		require.Equal(p.t, before+1, p.fd.injectedCount(c), "%s: the injected failure was not met", p.what())
		require.ErrorIs(p.t, err, cause, p.what())
		p.faults++
	}
	switch p.r.IntN(4) {
	case 0: // the open batch's submit (or end) fails at a sync
		if sl.open == nil {
			return
		}
		open := sl.open
		inject([]faultCall{callSubmit, callEnd}[p.r.IntN(2)], func() error { return s.Sync(context.Background()) })
		sl.open = nil
		sl.drained()
		taint(open.writes)
	case 1: // the wait for the oldest submission fails at a sync
		batches := slices.Clone(sl.inflight)
		if sl.open != nil {
			batches = append(batches, sl.open)
		}
		if len(batches) == 0 {
			return
		}
		for _, later := range batches[1:] {
			for _, i := range batches[0].writes {
				if slices.Contains(later.writes, i) {
					return // the taint would cover what later work rewrote
				}
			}
		}
		inject(callWaitFence, func() error { return s.Sync(context.Background()) })
		sl.drained()
		taint(batches[0].writes)
		if !p.lateFailedWork {
			// The recorder keeps the failed submission, which may still be
			// pending, until Close; let it finish before anything reuses
			// what it writes.
			require.NoError(p.t, p.dev.rec.Device().WaitIdle())
		}
	case 2: // a replay's submit fails
		if len(p.graphs) == 0 {
			return
		}
		g := p.graphs[p.r.IntN(len(p.graphs))]
		s, sl = g.s, p.slotOf(g.s)
		p.sync(s)
		var touched, writes []int
		for _, op := range g.ops {
			touched = append(append(touched, op.in...), op.out)
			writes = append(writes, op.out)
		}
		p.settleOthers(s, touched)
		inject(callSubmit, g.g.Replay)
		taint(writes)
	case 3: // beginning a command buffer fails at an eager launch
		op := p.newOp()
		result, ok := p.eval(op, p.value)
		if sl.open != nil || !ok || p.firstUnknown(op.in) != nil {
			return
		}
		p.settleOthers(s, append([]int{op.out}, op.in...))
		inject(callBegin, func() error { return p.issue(s, op) })
		_ = result
		taint([]int{op.out})
	}
}

// Random programs on several streams, with injected failures, against the
// model: every read returns exactly what completed work wrote or fails with
// ErrUnwritten unwrapping to the cause. Cross-slot reads are synced first
// and replays only run on written inputs, and the work of a submission
// whose fence wait failed is let finish (the run without these
// restrictions awaits the recorder's fixes: capture_edges_test.go).
func TestStressPropertyReadsMatchModel(t *testing.T) {
	seeds, steps := gcpressure.Scaled(20, 200), gcpressure.Scaled(800, 2000)
	var total propTest
	for seed := range seeds {
		p := runProperty(t, seed, steps, propOptions{})
		total.add(p)
	}
	total.log(t, seeds)
}

func (p *propTest) add(o *propTest) {
	p.steps += o.steps
	p.launches += o.launches
	p.replays += o.replays
	p.reads += o.reads
	p.checks += o.checks
	p.faults += o.faults
	p.relaxedReads += o.relaxedReads
}

func (p *propTest) log(t *testing.T, seeds int) {
	t.Logf("property: %d programs, %d steps: %d launches, %d replays, %d injected failures, %d reads checked (%d of work pending on another slot); every device closed with no live object and no validation message (closeAndCheck)",
		seeds, p.steps, p.launches, p.replays, p.faults, p.checks, p.relaxedReads)
}

// smallInts returns n integers in [lo, hi] as float32s.
func smallInts(r *rand.Rand, n, lo, hi int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(lo + r.IntN(hi-lo+1))
	}
	return xs
}
