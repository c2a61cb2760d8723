package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// A differential check of "a replay lies no more than the same launches
// done one by one": a random program of launches over a few buffers, some
// of them sized by two device lengths (each binding's extent a prefix of
// the length), is run twice eagerly on one recorder, and captured (its
// warmup the first run) and replayed on another, the lengths changed
// between the two runs alike. Every element of every buffer must then
// read the same on both: unwritten on both, or written with the same value.

const (
	diffBufs    = 4
	diffLengths = 2
	diffMaxOps  = 8
)

// diffRig is one recorder of the comparison with its buffers, lengths
// (each with its group counts) and the scalar the scaling kernel reads.
type diffRig struct {
	*rig
	dyn     map[string]*recorder.Kernel
	bufs    [diffBufs]alloc.Claim
	lengths [diffLengths]alloc.Claim
	groups  [diffLengths]alloc.Claim
	scalar  alloc.Claim
}

func newDiffRig(t *testing.T) *diffRig {
	g := &diffRig{rig: newRig(t, true, recorder.Options{Slots: 1}), dyn: map[string]*recorder.Kernel{}}
	for name, desc := range map[string]recorder.PipelineDesc{
		"copy_dyn":  {Name: "copy_dyn", Bindings: 3, Writes: 1 << 1},
		"scale_dyn": {Name: "scale_dyn", Bindings: 4, Writes: 1 << 1},
	} {
		k, err := g.r.NewKernel(code, desc)
		if err != nil {
			t.Fatal(err)
		}
		g.dyn[name] = k
	}
	for i := range g.bufs {
		g.bufs[i] = g.buf()
	}
	alloc4 := func() alloc.Claim {
		c, err := g.r.Alloc(alloc.Upload, 4)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i := range g.lengths {
		g.lengths[i] = alloc4()
		g.groups[i], _ = g.r.Alloc(alloc.Upload, 12)
	}
	g.scalar = alloc4()
	if err := g.r.SetHost([]alloc.Claim{g.scalar}, [][]byte{bytesOf([]float32{2})}); err != nil {
		t.Fatal(err)
	}
	return g
}

// setLengths sets each length (1..n) and its one group of 256.
func (g *diffRig) setLengths(v [diffLengths]uint32) error {
	for i := range v {
		if err := g.r.SetLength([]alloc.Claim{g.lengths[i], g.groups[i]}, [][]byte{words(v[i]), words(1, 1, 1)}, v[i]); err != nil {
			return err
		}
	}
	return nil
}

// diffOp is one launch of a program: kind 0 copy_dyn, 1 scale_dyn, 2 copy
// (whole buffers), 3 add (whole buffers), over buffers a, b (and c).
type diffOp struct {
	kind, a, b, c, length int
}

func (op diffOp) String() string {
	switch op.kind {
	case 0:
		return fmt.Sprintf("copy_dyn b%d->b%d [L%d]", op.a, op.b, op.length)
	case 1:
		return fmt.Sprintf("scale_dyn b%d->b%d [L%d]", op.a, op.b, op.length)
	case 2:
		return fmt.Sprintf("copy b%d->b%d", op.a, op.b)
	}
	return fmt.Sprintf("add b%d+b%d->b%d", op.a, op.b, op.c)
}

func (g *diffRig) launch(op diffOp) error {
	src, dst := g.bufs[op.a], g.bufs[op.b]
	switch op.kind {
	case 0, 1:
		l, ext := g.lengths[op.length], capture.Extent{Param: g.lengths[op.length], Scale: 4}
		args := []capture.Binding{{Claim: src, Extent: ext}, {Claim: dst, Write: true, Extent: ext}}
		name := "copy_dyn"
		if op.kind == 1 {
			name = "scale_dyn"
			args = append(args, capture.Binding{Claim: g.scalar})
		}
		args = append(args, capture.Binding{Claim: l})
		launch := recorder.Launch{Args: args, Indirect: g.groups[op.length], Limits: []recorder.Limit{{Param: l, Max: n}}}
		return g.r.Launch(0, g.dyn[name], &launch)
	case 2:
		return g.launch2("copy", words(n), rd(src), wr(dst))
	}
	return g.launch2("add", words(n), rd(src), rd(dst), wr(g.bufs[op.c]))
}

func (g *diffRig) launch2(name string, push []byte, args ...capture.Binding) error {
	return g.rig.launch(0, name, push, args...)
}

// element reads element i of buffer b: its value, or ok false when it
// reads as unwritten.
func (g *diffRig) element(b, i int) (float32, bool, error) {
	c := g.bufs[b]
	c.Offset, c.Size = c.Offset+4*uint64(i), 4
	out := make([]byte, 4)
	err := g.r.Read(context.Background(), 0, c, out)
	if err != nil {
		if errors.Is(err, errs.Unwritten) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return floatsOf(out)[0], true, nil
}

// diffProgram decodes a program from the fuzz input: which buffers start
// written (whole, or a prefix), the lengths of each run, and the ops.
type diffProgram struct {
	written    [diffBufs]int // elements written before the program (0: none)
	first, two [diffLengths]uint32
	ops        []diffOp
}

func decodeDiff(data []byte) diffProgram {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	var p diffProgram
	for i := range p.written {
		p.written[i] = next() % (n + 1)
	}
	for i := range p.first {
		p.first[i] = uint32(next()%n + 1)
		p.two[i] = uint32(next()%n + 1)
	}
	count := next()%diffMaxOps + 1
	for range count {
		kind := next() % 4
		op := diffOp{kind: kind, a: next() % diffBufs, b: next() % diffBufs, c: next() % diffBufs, length: next() % diffLengths}
		if kind != 3 && op.a == op.b {
			op.b = (op.b + 1) % diffBufs // copies into themselves are refused above the recorder
		}
		p.ops = append(p.ops, op)
	}
	return p
}

// launchValid is launch, then the recorder's allocator and ledger
// invariants (Recorder.Validate).
func (g *diffRig) launchValid(op diffOp) error {
	if err := g.launch(op); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	if err := g.r.Validate(); err != nil {
		return fmt.Errorf("after %v: %w", op, err)
	}
	return nil
}

// requireValid fails unless every rig's recorder passes Validate.
func requireValid(t *testing.T, when string, gs ...*diffRig) {
	t.Helper()
	for _, g := range gs {
		if err := g.r.Validate(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
}

func runDiff(t *testing.T, data []byte) {
	p := decodeDiff(data)
	eager, replayed := newDiffRig(t), newDiffRig(t)
	defer eager.close()
	defer replayed.close()
	for _, g := range []*diffRig{eager, replayed} {
		for b, w := range p.written {
			if w == 0 {
				continue
			}
			vals := ramp(float32(10 * (b + 1)))
			c := g.bufs[b]
			c.Size = 4 * uint64(w)
			if err := g.write(0, c, nil, vals[:w]); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.setLengths(p.first); err != nil {
			t.Fatal(err)
		}
	}
	program := func(g *diffRig) func() error {
		return func() error {
			for _, op := range p.ops {
				if err := g.launchValid(op); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := program(eager)(); err != nil {
		t.Fatal(err)
	}
	graph, err := replayed.capture(0, program(replayed))
	if err != nil {
		t.Fatal(err)
	}
	defer graph.Close()
	for _, g := range []*diffRig{eager, replayed} {
		if err := g.setLengths(p.two); err != nil {
			t.Fatal(err)
		}
	}
	if err := program(eager)(); err != nil {
		t.Fatal(err)
	}
	if err := graph.Replay(); err != nil {
		t.Fatal(err)
	}
	requireValid(t, "after the replay", eager, replayed)
	for b := range diffBufs {
		for i := range n {
			ev, eok, err := eager.element(b, i)
			if err != nil {
				t.Fatal(err)
			}
			rv, rok, err := replayed.element(b, i)
			if err != nil {
				t.Fatal(err)
			}
			if eok != rok || (eok && ev != rv) {
				t.Fatalf("b%d[%d]: eagerly %v (written %v), replayed %v (written %v)\nprogram: written %v, lengths %v then %v, ops %v",
					b, i, ev, eok, rv, rok, p.written, p.first, p.two, p.ops)
			}
		}
	}
}

func FuzzReplayMatchesEager(f *testing.F) {
	for _, seed := range [][]byte{
		// b0 written, b1 fresh: copy_dyn b0->b1 [4], then copy b1->b2 whole.
		{n, 0, 0, 0, 3, 3, 1, 1, 2, 0, 0, 1, 0, 0, 2, 1, 2, 0, 0},
		// b0 prefix 5 written; scale_dyn over L0 = 4 then 8; add b0+b1->b3.
		{5, n, 0, 0, 3, 7, 2, 2, 2, 1, 0, 3, 0, 0, 3, 0, 1, 3, 0},
		// the written prefix of a fresh buffer read by a dynamic op over the same length.
		{n, 0, 0, 0, 5, 5, 5, 5, 2, 0, 0, 1, 0, 0, 1, 1, 2, 0, 0},
		// every buffer written whole, the lengths 4 then 8: the replay
		// touches no unwritten byte (the ledger is clean).
		{n, n, n, n, 3, 7, 2, 2, 2, 0, 0, 1, 0, 0, 1, 1, 2, 0, 0, 3, 0, 1, 3, 1},
		// the same with b3 never written and never touched: the ledger
		// holds unwritten bytes, none of them the replay's.
		{n, n, n, 0, 3, 7, 2, 2, 1, 0, 0, 1, 0, 0, 1, 1, 2, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runDiff(t, data) })
}
