package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// Fuzz configuration: two slots, three streams (0 and 2 share slot 0),
// small batches and cache, five buffers of n floats.
const (
	fzSlots   = 2
	fzStreams = 3
	fzBufs    = 5
	fzSteps   = 48
)

// fz is one FuzzRecorder execution: the recorder on hostdev, and a model
// of what every buffer must read as.
type fz struct {
	t     *testing.T
	dev   *hostdev.Device
	r     *recorder.Recorder
	k     map[string]*recorder.Kernel
	bufs  [fzBufs]*mbuf
	win   [fzSlots]fzWindow
	grs   []*fzGraph
	data  []byte
	log   []string
	lost  bool
	fault struct {
		armed  bool
		call   hostdev.Call
		target int
		cause  error
		n      int
	}
	pending [fzSlots]map[*mbuf]struct{} // written by work not known complete
	reading [fzSlots]map[*mbuf]struct{} // read by work not known complete
	// gens numbers each slot's recordings; born says, per buffer made
	// while windows recorded, which recording of each slot saw it born
	// (0: none). The recorder serves such a buffer a claim the warmup
	// freed, or a new one its window refuses to record work on; the model
	// cannot tell which, so it accepts either.
	gens [fzSlots]int
	born map[*mbuf][fzSlots]int
}

// maybeBorn reports whether one of bufs was allocated during the slot's
// current recording, which may refuse work on it.
func (f *fz) maybeBorn(slot int, bufs ...[]*mbuf) bool {
	if f.win[slot].state != capture.Recording {
		return false
	}
	for _, list := range bufs {
		for _, b := range list {
			if f.born[b][slot] == f.gens[slot] {
				return true
			}
		}
	}
	return false
}

type fzWindow struct {
	state  capture.State
	owner  recorder.StreamID
	ops    []func()
	writes []*mbuf
	ins    []*mbuf
	doom   error // the first failure of the recording, which End wraps
}

type fzGraph struct {
	g      *recorder.Graph
	slot   int
	ops    []func()
	writes []*mbuf
	ins    []*mbuf
	closed bool
}

// next consumes one byte of the input (0 once it is spent).
func (f *fz) next() byte {
	if len(f.data) == 0 {
		return 0
	}
	b := f.data[0]
	f.data = f.data[1:]
	return b
}

func (f *fz) fatalf(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf("%s\nsteps:\n  %s", fmt.Sprintf(format, args...), joinLines(f.log))
}

func joinLines(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += "\n  "
		}
		out += s
	}
	return out
}

func slotOf(s recorder.StreamID) int { return int(s) % fzSlots }

// result checks what a call returned against what the model expects
// (want nil: success; else an error wrapping want), allowing the armed
// fault's cause when the fault fired during the call, and settles the
// model: a fault that fired puts everything pending and the call's
// outputs at risk; a call that failed taints its outputs with its error.
func (f *fz) result(what string, err, want error, outs ...*mbuf) {
	f.t.Helper()
	fired := f.fault.armed && f.dev.Count(f.fault.call) >= f.fault.target
	f.log = append(f.log, fmt.Sprintf("%s -> %v", what, err))
	okErr := func(e error) bool {
		if want != nil && errors.Is(e, want) {
			return true
		}
		if f.lost {
			return e == nil || errors.Is(e, errs.DeviceLost) || errors.Is(e, errs.CaptureState) ||
				errors.Is(e, errs.StreamCapturing)
		}
		if want == nil {
			return e == nil
		}
		return errors.Is(e, want)
	}
	if !okErr(err) && !(fired && (err == nil || errors.Is(err, f.fault.cause))) {
		f.fatalf("%s: got %v, want %v", what, err, want)
	}
	if fired {
		f.fault.armed = false
		for _, p := range f.pending {
			for b := range p {
				b.risk(f.fault.cause)
			}
		}
		for _, o := range outs {
			o.risk(f.fault.cause)
		}
	}
	if err != nil {
		for _, o := range outs {
			o.taint(err)
		}
	}
}

func (f *fz) drained(slot int) {
	clear(f.pending[slot])
	clear(f.reading[slot])
}

// settleReaders makes a race-free program of the next write to bs on slot
// self: work of another slot that still reads one of them is synced first,
// as a program must do (the recorder orders a read after another stream's
// pending write, not a write after another stream's pending read).
func (f *fz) settleReaders(self int, bs ...*mbuf) {
	for slot := range f.reading {
		if slot == self {
			continue
		}
		for _, b := range bs {
			if _, ok := f.reading[slot][b]; ok {
				s := recorder.StreamID(slot)
				if w := f.win[slot]; w.state != capture.Idle {
					s = w.owner
				}
				if f.sync(s) != nil && !f.lost {
					f.sync(s) // the fault fired in it: a program syncs again
				}
				break
			}
		}
	}
}

// want is the refusal a stream call meets, from the model's windows: a
// neighbour of an open window is refused.
func (f *fz) want(s recorder.StreamID) error {
	if f.lost {
		return errs.DeviceLost
	}
	w := f.win[slotOf(s)]
	if w.state != capture.Idle && w.owner != s {
		return errs.StreamCapturing
	}
	return nil
}

func (f *fz) recording(s recorder.StreamID) bool {
	w := f.win[slotOf(s)]
	return w.state == capture.Recording && w.owner == s
}

// work is one launch or copy: done now, recorded, or refused.
func (f *fz) work(what string, s recorder.StreamID, ins, outs []*mbuf, compute func() [][]float32, call func() error) {
	slot := slotOf(s)
	want := f.want(s)
	rec := f.recording(s)
	if want == nil && !rec {
		f.settleReaders(slot, outs...)
	}
	run := func() {
		apply(ins, outs, compute)
		for _, o := range outs {
			f.pending[slot][o] = struct{}{}
		}
		for _, i := range ins {
			f.reading[slot][i] = struct{}{}
		}
	}
	err := call()
	switch {
	case want != nil || f.lost:
	case rec && err == nil:
		w := &f.win[slot]
		w.ops = append(w.ops, run)
		w.writes = append(w.writes, outs...)
		w.ins = append(w.ins, ins...)
	case rec:
		f.doom(slot, err)
		if errors.Is(err, errs.AllocInCapture) && f.maybeBorn(slot, ins, outs) {
			want = errs.AllocInCapture // a buffer born in the window
		}
	default:
		run()
	}
	f.result(fmt.Sprintf("%s on %d", what, s), err, want, outs...)
}

func (f *fz) doom(slot int, err error) {
	if w := &f.win[slot]; w.state == capture.Recording && w.doom == nil {
		w.doom = err
	}
}

func (f *fz) launch(s recorder.StreamID, name string, push []byte, args []arg, compute func() [][]float32) {
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
	names := ""
	for _, a := range args {
		names += a.b.name
	}
	f.work(name+"("+names+")", s, ins, outs, compute, func() error {
		l := recorder.Launch{Args: binds, Groups: [3]uint32{1, 1, 1}, Push: push}
		return f.r.Launch(s, f.k[name], &l)
	})
}

// write writes vals into b on stream s.
func (f *fz) write(s recorder.StreamID, b *mbuf, vals []float32) {
	slot := slotOf(s)
	want := f.want(s)
	rec := f.recording(s)
	if want == nil && !rec {
		f.settleReaders(slot, b)
	}
	err := f.r.Write(s, b.c, &b.st, bytesOf(vals))
	outs := []*mbuf{b}
	if stg := b.staging(); stg != nil {
		// A write fills the staging too; one that fails or is refused
		// leaves it unwritten.
		if want == nil && !f.lost {
			stg.setClean(vals)
		}
		outs = append(outs, stg)
	}
	switch {
	case want != nil || f.lost:
	case rec && err == nil:
		w := &f.win[slot]
		w.ops = append(w.ops, func() {
			b.refill()
			f.pending[slot][b] = struct{}{}
		})
		w.writes = append(w.writes, b)
	case rec:
		f.doom(slot, err)
		if errors.Is(err, errs.AllocInCapture) {
			want = errs.AllocInCapture // no room for the staging, or a buffer born in the window: the model cannot tell
		}
	default:
		b.setClean(vals)
	}
	f.result(fmt.Sprintf("write %s on %d", b.name, s), err, want, outs...)
	if want == nil && !rec && !f.lost && err == nil {
		f.drained(slot) // an eager write waits for the slot first
		f.pending[slot][b] = struct{}{}
	}
}

func (f *fz) read(s recorder.StreamID, b *mbuf) {
	want := f.want(s)
	if want == nil && f.recording(s) {
		want = errs.SyncInCapture
	}
	out := make([]byte, b.c.Size)
	err := f.r.Read(context.Background(), s, b.c, out)
	what := fmt.Sprintf("read %s on %d", b.name, s)
	if want != nil || f.lost {
		if want == errs.SyncInCapture {
			f.doom(slotOf(s), err)
		}
		if f.lost && err == nil {
			f.fatalf("%s: a read on a lost device returned data", what)
		}
		f.result(what, err, want)
		return
	}
	driverErr := err
	if errors.Is(err, errs.Unwritten) {
		driverErr = nil
	}
	f.result(what, driverErr, nil)
	if err == nil {
		f.drained(slotOf(s)) // an unwritten staged source fails before the read drains the slot
	}
	if driverErr != nil {
		return // the fault fired in the read itself
	}
	var got []float32
	if err == nil {
		got = floatsOf(out)
	}
	if msg := checkRead(b, got, err); msg != "" {
		f.fatalf("%s (%s, causes %v): %s; got %v, model %v", what, b.status, b.causes, msg, got, b.val)
	}
}

func (f *fz) sync(s recorder.StreamID) error {
	want := f.want(s)
	if want == nil && f.recording(s) {
		want = errs.SyncInCapture
	}
	err := f.r.Sync(context.Background(), s)
	if want == errs.SyncInCapture {
		f.doom(slotOf(s), err)
	}
	f.result(fmt.Sprintf("sync %d", s), err, want)
	if want == nil && err == nil {
		f.drained(slotOf(s)) // a sync that failed may leave work pending
	}
	return err
}

func (f *fz) flush(s recorder.StreamID) {
	f.result(fmt.Sprintf("flush %d", s), f.r.Flush(s), f.want(s))
}

func (f *fz) prepare(s recorder.StreamID) {
	w := &f.win[slotOf(s)]
	var want error
	switch {
	case f.lost:
		want = errs.DeviceLost
	case w.state != capture.Idle && w.owner != s:
		want = errs.StreamCapturing
	case w.state != capture.Idle:
		want = errs.CaptureState
	}
	err := f.r.PrepareCapture(s)
	if want == nil && err == nil {
		*w = fzWindow{state: capture.Prepared, owner: s}
	}
	f.result(fmt.Sprintf("prepare %d", s), err, want)
}

func (f *fz) begin(s recorder.StreamID) {
	slot := slotOf(s)
	w := &f.win[slot]
	var want error
	switch {
	case f.lost:
		want = errs.DeviceLost
	case w.state != capture.Idle && w.owner != s:
		want = errs.StreamCapturing
	case w.state != capture.Prepared:
		want = errs.CaptureState
	}
	err := f.r.BeginCapture(s)
	if want == nil {
		if err == nil {
			w.state = capture.Recording
			f.gens[slot]++
		} else {
			*w = fzWindow{} // a driver refusal returns the slot to idle
		}
	}
	f.result(fmt.Sprintf("begin %d", s), err, want)
	if want == nil && err == nil {
		f.drained(slot)
	}
}

func (f *fz) end(s recorder.StreamID) {
	slot := slotOf(s)
	w := &f.win[slot]
	var want error
	recorded := w.state == capture.Recording
	switch {
	case recorded && w.owner != s:
		want = errs.CaptureState
	case recorded && w.doom != nil:
		want = w.doom
	case recorded:
	case w.state != capture.Idle && w.owner != s:
		want = errs.StreamCapturing
	default:
		want = errs.CaptureState
	}
	g, err := f.r.EndCapture(s)
	if recorded || (w.state == capture.Prepared && w.owner == s) {
		if err == nil {
			f.grs = append(f.grs, &fzGraph{g: g, slot: slot, ops: w.ops, writes: w.writes, ins: w.ins})
		}
		writes := w.writes
		*w = fzWindow{}
		f.result(fmt.Sprintf("end %d", s), err, want, writes...)
		return
	}
	f.result(fmt.Sprintf("end %d", s), err, want)
}

func (f *fz) abort(s recorder.StreamID) {
	w := &f.win[slotOf(s)]
	var want error
	switch {
	case w.state == capture.Idle:
		want = errs.CaptureState
	case w.owner != s:
		want = errs.StreamCapturing
	}
	err := f.r.AbortCapture(s)
	if want == nil {
		if w.state == capture.Recording {
			cause := []error{errs.CaptureState}
			if w.doom != nil {
				cause = []error{w.doom}
			}
			for _, b := range w.writes {
				b.taint(cause...)
			}
		}
		*w = fzWindow{}
	}
	f.result(fmt.Sprintf("abort %d", s), err, want)
}

func (f *fz) replay(i int) {
	g := f.grs[i]
	var want error
	switch {
	case g.closed:
		want = errs.Closed
	case f.lost:
		want = errs.DeviceLost
	case f.win[g.slot].state == capture.Recording:
		want = errs.StreamCapturing
	default:
		f.settleReaders(g.slot, g.writes...)
	}
	err := g.g.Replay()
	if want == nil && err == nil {
		for _, op := range g.ops {
			op()
		}
	}
	var outs []*mbuf
	if want != errs.Closed {
		outs = g.writes
	}
	f.result(fmt.Sprintf("replay %d", i), err, want, outs...)
}

func (f *fz) closeGraph(i int) {
	g := f.grs[i]
	err := g.g.Close()
	g.closed = true
	f.result(fmt.Sprintf("close graph %d", i), err, nil)
}

// renew frees buffer i (after the streams that used it, as the public
// package does) and allocates a new one in its place. A window that
// recorded the old one keeps its range until its graph closes.
func (f *fz) renew(i int) {
	old := f.bufs[i]
	if old.ok {
		err := f.r.Quiesce(1<<fzSlots - 1)
		f.result("quiesce", err, nil)
		if err != nil && !f.lost {
			// Free needs the slots quiesced: a program whose quiesce
			// failed (the fault fired in it) quiesces again.
			err = f.r.Quiesce(1<<fzSlots - 1)
			f.result("quiesce again", err, nil)
		}
		for slot := range f.win {
			if f.win[slot].state != capture.Recording && err == nil {
				f.drained(slot)
			}
		}
		f.r.ReleaseStaging(old.st)
		f.result("free "+old.name, f.r.Free(old.c), nil)
	}
	b := newMbuf(fmt.Sprintf("%c%d", 'a'+i, len(f.log)), n)
	c, err := f.r.Alloc(alloc.DeviceLocal, 4*n)
	var want error
	if errors.Is(err, errs.AllocInCapture) {
		f.fatalf("alloc %s refused for a capture window: %v", b.name, err) // buffers are served in windows too
	}
	if err == nil {
		var gens [fzSlots]int
		for slot := range f.win {
			if f.win[slot].state == capture.Recording {
				gens[slot] = f.gens[slot]
			}
		}
		f.born[b] = gens
	}
	f.result("alloc "+b.name, err, want)
	if err == nil {
		b.c, b.ok = c, true
		f.r.Taint([]alloc.Claim{c}, errFresh)
		f.bufs[i] = b
	} else {
		f.bufs[i] = &mbuf{name: b.name} // not usable: later steps skip it
	}
}

// step decodes and runs one operation from two bytes: the first picks the
// operation (op % 18) and a modifier (op / 18), the second the stream
// (x % 3) and the buffers (x / 3).
func (f *fz) step() {
	op, x := f.next(), f.next()
	code, mod := op%18, op/18
	s := recorder.StreamID(x % fzStreams)
	i1 := int(x/3) % fzBufs
	i2 := (i1 + 1 + int(x/15)%(fzBufs-1)) % fzBufs
	i3 := int(x/60) % fzBufs
	for i3 == i1 || i3 == i2 {
		i3 = (i3 + 1) % fzBufs
	}
	b1, b2, b3 := f.bufs[i1], f.bufs[i2], f.bufs[i3]
	switch code {
	case 0, 1:
		if b1.ok {
			v := float32(int(mod%7) - 3)
			f.launch(s, "fill", words(bits(v), n), []arg{{b1, argW}},
				func() [][]float32 { return [][]float32{splatN(n, v)} })
		}
	case 2, 3:
		if b1.ok && b2.ok {
			a := float32(int(mod%3) - 1)
			f.launch(s, "axpy", words(bits(a), n), []arg{{b1, argR}, {b2, argRW}},
				func() [][]float32 { return [][]float32{modelAxpy(a, b1.val, b2.val)} })
		}
	case 4:
		if b1.ok && b2.ok && b3.ok {
			f.launch(s, "add", words(n), []arg{{b1, argR}, {b2, argR}, {b3, argW}},
				func() [][]float32 { return [][]float32{modelAdd(b1.val, b2.val)} })
		}
	case 5:
		if b1.ok && b2.ok {
			f.launch(s, "copy", words(n), []arg{{b1, argR}, {b2, argW}},
				func() [][]float32 { return [][]float32{slices.Clone(b1.val)} })
		}
	case 6:
		if b1.ok && b2.ok {
			f.work("transfer("+b1.name+b2.name+")", s, []*mbuf{b1}, []*mbuf{b2},
				func() [][]float32 { return [][]float32{slices.Clone(b1.val)} },
				func() error { return f.r.Copy(s, b1.c, b2.c, 4*n) })
		}
	case 7, 8:
		if b1.ok {
			f.write(s, b1, ramp(float32(mod)))
		}
	case 9, 10:
		if b1.ok {
			f.read(s, b1)
		}
	case 11:
		_ = f.sync(s)
	case 12:
		switch mod % 4 {
		case 0, 1:
			f.prepare(s)
		case 2:
			f.begin(s)
		case 3:
			f.flush(s)
		}
	case 13:
		switch mod % 4 {
		case 0:
			f.begin(s)
		case 1:
			f.end(s)
		case 2:
			f.abort(s)
		case 3:
			f.end(f.win[slotOf(s)].owner)
		}
	case 14:
		if len(f.grs) > 0 {
			f.replay(int(x/3) % len(f.grs))
		}
	case 15:
		if len(f.grs) > 0 && mod%4 == 3 {
			f.closeGraph(int(x/3) % len(f.grs))
		} else {
			f.renew(i1)
		}
	case 16:
		if !f.lost {
			calls := hostdev.Calls()
			f.dev.Heal(f.fault.call)
			nth := 1 + int(mod)%4
			f.fault.n++
			f.fault.call = calls[int(x)%len(calls)]
			f.fault.target = f.dev.Count(f.fault.call) + nth
			f.fault.cause = fmt.Errorf("fuzz fault %d (%s #%d)", f.fault.n, f.fault.call, nth)
			f.fault.armed = true
			f.dev.FailNth(f.fault.call, nth, f.fault.cause)
			f.log = append(f.log, "arm "+f.fault.cause.Error())
		}
	case 17:
		if mod == 13 && !f.lost {
			f.dev.Lose()
			f.lost = true
			f.log = append(f.log, "lose the device")
		}
	}
}

// finish closes every window, reads every buffer, closes the graphs and
// the recorder, and checks that nothing is left.
func (f *fz) finish() {
	for _, w := range f.win {
		if w.state != capture.Idle {
			f.abort(w.owner)
		}
	}
	f.dev.Heal(f.fault.call)
	f.fault.armed = false
	for i, b := range f.bufs {
		if b.ok {
			f.read(recorder.StreamID(i%fzStreams), b)
		}
	}
	for i, g := range f.grs {
		if !g.closed {
			f.closeGraph(i)
		}
	}
	if err := f.r.Close(); err != nil {
		f.fatalf("close: %v", err)
	}
	if live := f.dev.Live(); len(live) != 0 {
		f.fatalf("live objects after Close: %v", live)
	}
	if d := f.dev.Diagnostics(); d.Errors != 0 {
		f.fatalf("hostdev diagnostics: %v", d.Recent)
	}
}

func runFuzz(t *testing.T, data []byte) {
	f := &fz{t: t, data: data, born: map[*mbuf][fzSlots]int{}}
	unified := f.next()&1 == 1
	f.dev = hostdev.New(hostdev.Options{Unified: unified})
	r, err := recorder.New(f.dev, recorder.Options{Slots: fzSlots, BatchSize: 3, CacheSize: 3, PageSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	f.k = map[string]*recorder.Kernel{}
	for _, name := range []string{"fill", "axpy", "add", "copy"} {
		k, err := r.NewKernel(code, descs[name])
		if err != nil {
			t.Fatal(err)
		}
		f.k[name] = k
	}
	for i := range f.pending {
		f.pending[i], f.reading[i] = map[*mbuf]struct{}{}, map[*mbuf]struct{}{}
	}
	for i := range f.bufs {
		b := newMbuf(string(rune('a'+i)), n)
		c, err := r.Alloc(alloc.DeviceLocal, 4*n)
		if err != nil {
			t.Fatal(err)
		}
		b.c, b.ok = c, true
		r.Taint([]alloc.Claim{c}, errFresh)
		f.bufs[i] = b
	}
	for i := 0; i < fzSteps && len(f.data) > 0; i++ {
		f.step()
		if err := r.Validate(); err != nil {
			f.fatalf("after step %d: %v", i, err)
		}
	}
	f.finish()
}

// FuzzRecorder runs random sequences of launches, host writes and reads,
// transfers, capture windows (prepare, begin, recorded work, end, abort),
// replays, graph closes, buffer frees, syncs and injected device faults on
// three streams over two slots, on a unified or a staged hostdev, against
// a model of what every buffer must read as: its value, or unwritten with
// a known cause, never stale bytes.
func FuzzRecorder(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(runFuzz)
}

// fuzzSeeds are hand-written sequences that reach each part of the model:
// every operation with varied operands, captures that seal and replay,
// refusals, faults, buffer frees and a lost device.
func fuzzSeeds() [][]byte {
	// o encodes one step: operation code, modifier, stream, buffer pick.
	o := func(code, mod, s, k byte) []byte { return []byte{code + 18*mod, 3*k + s} }
	const (
		fill, axpy, add, kcopy, xfer, write, read, sync, win12, win13, replay, renew, fault, lose = 0, 2, 4, 5, 6, 7, 9, 11, 12, 13, 14, 15, 16, 17
	)
	prepare := func(s byte) []byte { return o(win12, 0, s, 0) }
	begin := func(s byte) []byte { return o(win13, 0, s, 0) }
	end := func(s byte) []byte { return o(win13, 1, s, 0) }
	abort := func(s byte) []byte { return o(win13, 2, s, 0) }
	prog := func(unified byte, steps ...[]byte) []byte { return append([]byte{unified}, slices.Concat(steps...)...) }
	var seeds [][]byte
	for _, u := range []byte{0, 1} {
		seeds = append(seeds,
			// eager work on every stream, cross-slot reads and writes
			prog(u, o(write, 1, 0, 0), o(write, 2, 0, 1), o(fill, 4, 1, 2), o(axpy, 2, 0, 0), o(add, 0, 2, 1),
				o(kcopy, 0, 1, 3), o(xfer, 0, 0, 2), o(read, 0, 1, 1), o(read, 0, 2, 3), o(sync, 0, 1, 0),
				o(write, 3, 1, 0), o(axpy, 1, 0, 0), o(read, 0, 0, 0), o(read, 0, 1, 4)),
			// a capture that seals and replays, fed by a host write
			prog(u, o(write, 1, 0, 0), o(write, 2, 0, 1), prepare(0), o(write, 3, 0, 0), o(axpy, 2, 0, 0),
				o(sync, 0, 0, 0), begin(0), o(write, 3, 0, 0), o(axpy, 2, 0, 0), o(add, 0, 0, 5), end(0),
				o(replay, 0, 0, 0), o(write, 4, 1, 0), o(replay, 0, 0, 0), o(read, 0, 1, 1), o(read, 0, 0, 2)),
			// refusals: stream 2 shares slot 0 with the owner; a read inside the recording
			prog(u, o(write, 1, 0, 0), prepare(0), o(fill, 1, 2, 1), o(fill, 2, 0, 2), begin(2), begin(0),
				o(kcopy, 0, 0, 2), o(read, 0, 2, 0), o(write, 1, 2, 1), o(read, 0, 0, 0), end(0), o(read, 0, 1, 2),
				o(read, 0, 1, 1), prepare(0), abort(2), abort(0), end(0)),
			// faults at a submit and a fence wait, then reads
			prog(u, o(write, 1, 0, 0), o(write, 2, 0, 1), o(fault, 0, 13, 0), o(axpy, 1, 0, 0), o(fill, 3, 0, 2),
				o(sync, 0, 0, 0), o(read, 0, 0, 1), o(fault, 1, 14, 0), o(add, 0, 0, 0), o(sync, 0, 0, 0),
				o(read, 0, 0, 0), o(read, 0, 1, 3)),
			// a fault inside a recording, then an abort
			prog(u, o(write, 1, 0, 0), prepare(0), o(fill, 1, 0, 1), o(write, 2, 0, 2), o(sync, 0, 0, 0), begin(0),
				o(fill, 1, 0, 1), o(fault, 0, 2, 0), o(write, 2, 0, 2), abort(0), o(read, 0, 0, 1), o(read, 0, 1, 2)),
			// buffer frees around a window and a graph
			prog(u, o(write, 1, 0, 0), prepare(0), o(fill, 0, 0, 1), o(renew, 0, 0, 1), begin(0),
				o(fill, 0, 0, 2), o(renew, 0, 0, 2), end(0), o(replay, 0, 0, 0), o(renew, 0, 0, 0),
				o(read, 0, 0, 0), o(renew, 3, 0, 0), o(read, 0, 1, 1)),
			// a lost device
			prog(u, o(write, 1, 0, 0), o(fill, 1, 0, 1), o(lose, 13, 0, 0), o(read, 0, 0, 0), o(sync, 0, 1, 0),
				o(write, 1, 1, 1), o(renew, 0, 0, 2)),
		)
	}
	return seeds
}
