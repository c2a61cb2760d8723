package ops

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// The output-state property of the op library: an op that only writes its
// output computes the same values whatever that output held before —
// memory no work wrote, memory a skipped launch tainted, or the op's own
// input where the op allows running in place (elsewhere an output sharing
// an input's memory is ErrOverlap and the input is left as it was) — and a
// dynamic form replayed over fewer rows than its capacity writes those
// rows right and leaves the rest as they were (unwritten). An op that
// reads its output (Axpy's y, ScatterAdd's out, both documented as read
// and written) follows the unwritten rule instead: an unwritten output
// stays unwritten, with its cause, and the call returns nil.
//
// Every op is one descriptor (outOp), run for every element type
// docs/guide/ops.md's table gives it (Matmul: its three float types) in
// each case, against a float64 reference within the bounds the guide
// lists.

// Shapes: outR rows of outC columns (neither a multiple of 4 or 8, so
// the kernels' partial tails run); Gather's table has gatherV rows,
// ScatterAdd's output scatterV, Matmul's inner extent is mmInner; a
// dynamic form is replayed over outShort rows.
const (
	outR, outC = 5, 7
	gatherV    = 6
	scatterV   = 3
	mmInner    = 9
	outShort   = 3
	outAlpha   = -1.5
)

// outputCase is the state the output is in before the op runs.
type outputCase int

const (
	neverWritten  outputCase = iota // a buffer no work wrote
	taintedBySkip                   // written, then tainted by a launch skipped for its unwritten input
	aliasesInput                    // the output is an input (in place), or overlaps one where the op refuses that
	dynPrefix                       // a captured dynamic form replayed over fewer rows, over a tainted output
)

var outputCases = []outputCase{neverWritten, taintedBySkip, aliasesInput, dynPrefix}

func (c outputCase) String() string {
	return [...]string{"never-written", "tainted-by-skipped-launch", "aliases-input", "dynamic-prefix-over-tainted"}[c]
}

// inSpec is one input of I: a contiguous buffer of shape, values from lo
// to hi, seen through view (nil: as it is); rows marks an input whose
// axis 0 is the output's rows (made Dynamic in the dynamic case).
type inSpec[I vkc.Element] struct {
	shape  []int
	lo, hi float64
	view   func(Tensor[I]) Tensor[I]
	rows   bool
}

// outOp describes one op for the property: inputs of I, an output of O.
type outOp[I, O vkc.Element] struct {
	name string
	ins  []inSpec[I]
	out  []int
	// readsOut: the op reads its output, so an unwritten one stays
	// unwritten.
	readsOut bool
	// alias is the input the output may be (in place), -1 where an output
	// sharing an input's memory is ErrOverlap.
	alias int
	// dynamic: the op follows Tensor.Dynamic.
	dynamic bool
	run     func(s *vkc.Stream, in []Tensor[I], out Tensor[O]) error
	// ref is the output from the inputs' values as the op sees them
	// (row-major over each view) and the output's earlier values (read
	// only where readsOut).
	ref func(in [][]float64, prior []float64) []float64
	// tol is the bound on element i of the output.
	tol func(in [][]float64, prior []float64, i int, want float64) float64
}

// outputTrial is an outOp of some types.
type outputTrial interface {
	opName() string
	try(t *testing.T, dev *vkc.Device, c outputCase, rng *rand.Rand) bool
}

func (d outOp[I, O]) opName() string { return d.name }

// outLen is the output's number of elements.
func (d outOp[I, O]) outLen() int {
	n, _ := count(d.out)
	return n
}

// outInputs uploads d's inputs: their tensors (Dynamic on rows where
// given and the spec says so), buffers, stored values and the values as
// the op sees them.
func (d outOp[I, O]) outInputs(t *testing.T, dev *vkc.Device, rng *rand.Rand, rows *vkc.Param[uint32]) ([]Tensor[I], []*vkc.Buffer[I], [][]float64, [][]float64) {
	t.Helper()
	ts := make([]Tensor[I], len(d.ins))
	bufs := make([]*vkc.Buffer[I], len(d.ins))
	raw := make([][]float64, len(d.ins))
	seen := make([][]float64, len(d.ins))
	for i, sp := range d.ins {
		n, err := count(sp.shape)
		require.NoError(t, err)
		lo := sp.lo
		if typeOf[I]().name == "uint32" {
			lo = math.Max(lo, 0)
		}
		raw[i] = randomValues[I](rng, n, lo, sp.hi)
		bufs[i] = upload[I](t, dev, raw[i])
		ts[i] = Of(bufs[i], sp.shape...)
		if sp.view != nil {
			ts[i] = sp.view(ts[i])
		}
		seen[i] = gatherLayout(raw[i], ts[i].at)
		if rows != nil && sp.rows {
			ts[i] = ts[i].Dynamic(rows)
		}
		require.NoError(t, ts[i].Err())
	}
	return ts, bufs, raw, seen
}

// check compares got with the reference within d's bounds.
func (d outOp[I, O]) check(t *testing.T, seen [][]float64, prior, got []float64) {
	t.Helper()
	want := d.ref(seen, prior)[:len(got)]
	within(t, d.name, got, want, func(i int) float64 { return d.tol(seen, prior, i, want[i]) })
}

func (d outOp[I, O]) try(t *testing.T, dev *vkc.Device, c outputCase, rng *rand.Rand) bool {
	switch c {
	case aliasesInput:
		return d.tryAlias(t, dev, rng)
	case dynPrefix:
		if !d.dynamic {
			return false
		}
		d.tryPrefix(t, dev, rng)
		return true
	}
	ins, _, _, seen := d.outInputs(t, dev, rng, nil)
	ob := fresh[O](t, dev, d.outLen())
	if c == taintedBySkip {
		taint(t, dev, ob)
	}
	require.NoError(t, d.run(dev.Stream(), ins, Of(ob, d.out...)))
	got, err := ob.Read(context.Background())
	if d.readsOut {
		// The op reads an output no executed work wrote: it is skipped and
		// the output stays unwritten, with the first failure as its cause.
		require.ErrorIs(t, err, vkc.ErrUnwritten)
		if c == neverWritten {
			require.ErrorIs(t, err, vkc.ErrNeverWritten)
		}
		return true
	}
	require.NoError(t, err, "an op whose output it only writes must not inherit that output's state")
	d.check(t, seen, nil, floats(got))
	return true
}

// tryAlias runs d with its output the input it may be, in place, or, where
// it may be none, over input 0's memory, which it must refuse with
// ErrOverlap, leaving the input as it was. An op whose output's type is
// not its inputs' has no such case.
func (d outOp[I, O]) tryAlias(t *testing.T, dev *vkc.Device, rng *rand.Rand) bool {
	if typeOf[I]().name != typeOf[O]().name || len(d.ins) == 0 {
		return false
	}
	ins, bufs, raw, seen := d.outInputs(t, dev, rng, nil)
	s := dev.Stream()
	if d.alias >= 0 {
		out := any(ins[d.alias]).(Tensor[O])
		prior := seen[d.alias]
		require.NoError(t, d.run(s, ins, out), "in place")
		d.check(t, seen, prior, gatherLayout(download(t, any(bufs[d.alias]).(*vkc.Buffer[O])), out.at))
		return true
	}
	n := d.outLen()
	if bufs[0].Len() < n {
		return false
	}
	head, err := bufs[0].View(0, n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = head.Close() })
	out := Of(any(head).(*vkc.Buffer[O]), d.out...)
	require.ErrorIs(t, d.run(s, ins, out), vkc.ErrOverlap, "an output sharing an input's memory")
	require.Equal(t, raw[0], download(t, bufs[0]), "the refused op left its input as it was")
	return true
}

// tryPrefix captures d over dynamic tensors of outR rows, taints the
// output, and replays the graph over outShort rows: those read back the
// reference, the rest stay unwritten. Where d reads its output, the
// replay is skipped and the output stays unwritten.
func (d outOp[I, O]) tryPrefix(t *testing.T, dev *vkc.Device, rng *rand.Rand) {
	rows, err := vkc.NewParam[uint32](dev, outR)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rows.Close() })
	ins, _, _, seen := d.outInputs(t, dev, rng, rows)
	n := d.outLen()
	ob := upload[O](t, dev, make([]float64, n)) // written: the capture's warmup runs the op
	out := Of(ob, d.out...).Dynamic(rows)
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error { return d.run(s, ins, out) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	taint(t, dev, ob)
	require.NoError(t, rows.Set(outShort))
	require.NoError(t, g.Replay())
	ctx := context.Background()
	if d.readsOut {
		_, err := ob.Read(ctx)
		require.ErrorIs(t, err, vkc.ErrUnwritten, "the output was tainted: the replayed launch is skipped")
		return
	}
	prefix := outShort * (n / d.out[0])
	head, err := ob.View(0, prefix)
	require.NoError(t, err)
	t.Cleanup(func() { _ = head.Close() })
	tail, err := ob.View(prefix, n-prefix)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tail.Close() })
	got, err := head.Read(ctx)
	require.NoError(t, err, "the rows the param covers are written")
	d.check(t, seen, nil, floats(got))
	_, err = tail.Read(ctx)
	require.ErrorIs(t, err, vkc.ErrUnwritten, "the rows past the param keep the output's old state")
}

// taint makes b, written, read as ErrUnwritten: a Convert into it from a
// buffer of another type no work wrote is skipped and passes that on.
func taint[O vkc.Element](t *testing.T, dev *vkc.Device, b *vkc.Buffer[O]) {
	t.Helper()
	s, n := dev.Stream(), b.Len()
	if typeOf[O]().name == "float32" {
		require.NoError(t, Convert(s, Of(fresh[int32](t, dev, n)), Of(b)))
	} else {
		require.NoError(t, Convert(s, Of(fresh[float32](t, dev, n)), Of(b)))
	}
	_, err := b.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten, "the skipped launch tainted the output")
}

// floats is xs as float64s.
func floats[T vkc.Element](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = toFloat(x)
	}
	return out
}

// rowsIn is the spec of an input of outR x outC values from lo to hi.
func rowsIn[I vkc.Element](lo, hi float64) inSpec[I] {
	return inSpec[I]{shape: []int{outR, outC}, lo: lo, hi: hi, rows: true}
}

// vecIn is the spec of a static vector of outC values.
func vecIn[I vkc.Element](lo, hi float64) inSpec[I] {
	return inSpec[I]{shape: []int{outC}, lo: lo, hi: hi}
}

// perElement is the reference out[i] = f(x[i], y[i]) over the first
// input's elements (y from input 1 where there is one).
func perElement(f func(x, y float64) float64) func(in [][]float64, _ []float64) []float64 {
	return func(in [][]float64, _ []float64) []float64 {
		out := make([]float64, len(in[0]))
		for i, x := range in[0] {
			y := 0.0
			if len(in) > 1 {
				y = in[1][i]
			}
			out[i] = f(x, y)
		}
		return out
	}
}

// binaryOutOps are Add … Minimum on T.
func binaryOutOps[T vkc.Element]() []outputTrial {
	names := []string{"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"}
	var out []outputTrial
	for code, name := range names {
		u, uT := computeUnit[T](), unit[T]()
		out = append(out, outOp[T, T]{
			name: name, ins: []inSpec[T]{rowsIn[T](-3, 3), rowsIn[T](0.5, 3)}, out: []int{outR, outC},
			alias: 0, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error {
				return binaryOf[T](uint32(code))(s, in[0], in[1], o)
			},
			ref: perElement(func(x, y float64) float64 { return binaryRef[T](uint32(code), x, y) }),
			tol: func(_ [][]float64, _ []float64, _ int, want float64) float64 { return 2 * (u + uT) * math.Abs(want) },
		})
	}
	return out
}

// unaryOutOps are the activations on T, Scale and Axpy.
func unaryOutOps[T vkc.Element]() []outputTrial {
	var out []outputTrial
	for _, c := range unaryCases {
		lo, hi := math.Max(c.lo, -4), math.Min(c.hi, 4)
		out = append(out, outOp[T, T]{
			name: c.name, ins: []inSpec[T]{rowsIn[T](lo, hi)}, out: []int{outR, outC}, alias: 0, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return unaryFn[T](c.name)(s, in[0], o) },
			ref: perElement(func(x, _ float64) float64 { return c.ref(x) }),
			tol: func(in [][]float64, _ []float64, i int, want float64) float64 {
				return unaryTolerance[T](c, in[0][i], want)
			},
		})
	}
	u, uT := computeUnit[T](), unit[T]()
	out = append(out, outOp[T, T]{
		name: "Scale", ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{outR, outC}, alias: 0, dynamic: true,
		run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Scale(s, Const(outAlpha), in[0], o) },
		ref: perElement(func(x, _ float64) float64 { return outAlpha * x }),
		tol: func(_ [][]float64, _ []float64, _ int, want float64) float64 { return (u + uT) * math.Abs(want) },
	}, outOp[T, T]{
		name: "Axpy", ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{outR, outC}, readsOut: true, alias: 0, dynamic: true,
		run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Axpy(s, Const(outAlpha), in[0], o) },
		ref: func(in [][]float64, y []float64) []float64 {
			out := make([]float64, len(in[0]))
			for i, x := range in[0] {
				out[i] = outAlpha*x + y[i]
			}
			return out
		},
		tol: func(in [][]float64, y []float64, i int, want float64) float64 {
			return 2*u*(math.Abs(outAlpha*in[0][i])+math.Abs(y[i])) + uT*math.Abs(want)
		},
	})
	return out
}

// rowStats is, for each row of outC values, its sum, its sum of
// magnitudes, its largest value and that value's first index.
func rowStats(x []float64) (sum, abs, maxv, arg []float64) {
	l := layout{shape: []int{len(x) / outC, outC}, strides: []int{outC, 1}}
	return reduceRef(x, l, 1)
}

// reduceOutOps are Sum, Mean, Max and Argmax along the rows' axis.
func reduceOutOps[T vkc.Element]() []outputTrial {
	u, uT := computeUnit[T](), unit[T]()
	reduce := func(name string, fn func(*vkc.Stream, Tensor[T], int, Tensor[T]) error, pick func(sum, maxv []float64) []float64,
		tol func(abs float64) float64) outputTrial {
		return outOp[T, T]{
			name: name, ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{outR}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return fn(s, in[0], 1, o) },
			ref: func(in [][]float64, _ []float64) []float64 {
				sum, _, maxv, _ := rowStats(in[0])
				return pick(sum, maxv)
			},
			tol: func(in [][]float64, _ []float64, i int, want float64) float64 {
				_, abs, _, _ := rowStats(in[0])
				return tol(abs[i]) + uT*math.Abs(want)
			},
		}
	}
	mean := func(sum, _ []float64) []float64 {
		out := slices.Clone(sum)
		for i := range out {
			out[i] /= outC
		}
		return out
	}
	return []outputTrial{
		reduce("Sum", Sum[T], func(sum, _ []float64) []float64 { return sum }, func(abs float64) float64 { return outC * u * abs }),
		reduce("Mean", Mean[T], mean, func(abs float64) float64 { return (outC + 1) * u * abs / outC }),
		reduce("Max", Max[T], func(_, maxv []float64) []float64 { return maxv }, func(float64) float64 { return 0 }),
		outOp[T, uint32]{
			name: "Argmax", ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{outR}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[uint32]) error { return Argmax(s, in[0], 1, o) },
			ref: func(in [][]float64, _ []float64) []float64 {
				_, _, _, arg := rowStats(in[0])
				return arg
			},
			tol: func([][]float64, []float64, int, float64) float64 { return 0 },
		},
	}
}

// normOutOps are Softmax, LayerNorm (weight and bias) and RMSNorm
// (weight, no bias) over the rows.
func normOutOps[T vkc.Element]() []outputTrial {
	u, uT, tn := computeUnit[T](), unit[T](), tiny[T]()
	perRow := func(in []float64, f func(row []float64) []float64) []float64 {
		var out []float64
		for _, row := range rowsOf(in, outC) {
			out = append(out, f(row)...)
		}
		return out
	}
	norm := func(name string, center bool) outputTrial {
		ins := []inSpec[T]{rowsIn[T](-3, 3), vecIn[T](-2, 2)}
		if center {
			ins = append(ins, vecIn[T](-1, 1))
		}
		bias := func(in [][]float64, c int) float64 {
			if center {
				return in[2][c]
			}
			return 0
		}
		return outOp[T, T]{
			name: name, ins: ins, out: []int{outR, outC}, alias: 0, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error {
				if center {
					return LayerNorm(s, in[0], in[1], in[2], Const(1e-5), o)
				}
				return RMSNorm(s, in[0], in[1], Tensor[T]{}, Const(1e-5), o)
			},
			ref: func(in [][]float64, _ []float64) []float64 {
				z := perRow(in[0], func(row []float64) []float64 { return normRef(row, center, 1e-5) })
				for i := range z {
					z[i] = z[i]*in[1][i%outC] + bias(in, i%outC)
				}
				return z
			},
			tol: func(in [][]float64, _ []float64, i int, want float64) float64 {
				r := i / outC
				z := normRef(in[0][r*outC:(r+1)*outC], center, 1e-5)[i%outC]
				return (4*outC+16)*u*(1+math.Abs(z))*math.Abs(in[1][i%outC]) + u*math.Abs(bias(in, i%outC)) + uT*math.Abs(want) + tn
			},
		}
	}
	return []outputTrial{
		outOp[T, T]{
			name: "Softmax", ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{outR, outC}, alias: 0, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Softmax(s, in[0], -1, o) },
			ref: func(in [][]float64, _ []float64) []float64 {
				return perRow(in[0], func(row []float64) []float64 { ref, _ := softmaxRef(row); return ref })
			},
			tol: func(in [][]float64, _ []float64, i int, want float64) float64 {
				r := i / outC
				_, d := softmaxRef(in[0][r*outC : (r+1)*outC])
				return ((6+4*d)*2+outC+5)*u*want + uT*want + tn
			},
		},
		norm("LayerNorm", true),
		norm("RMSNorm", false),
	}
}

// indexOutOps are Gather (outR rows of a table of gatherV, one index past
// it, which writes zeros) and ScatterAdd (outR source rows into scatterV,
// one index past them, which adds nowhere). ScatterAdd's output is read
// and written (its doc: out[idx[i], :] += src[i, :], so written before),
// so it follows the unwritten rule as Axpy's y does.
func indexOutOps[T vkc.Element](t *testing.T, dev *vkc.Device) []outputTrial {
	u, uT := computeUnit[T](), unit[T]()
	gIdx := []float64{5, 0, 2, gatherV, 5}
	sIdx := []float64{1, 2, 1, scatterV, 0}
	gi := Of(upload[uint32](t, dev, gIdx), outR)
	si := Of(upload[uint32](t, dev, sIdx), outR)
	return []outputTrial{
		outOp[T, T]{
			name: "Gather", ins: []inSpec[T]{{shape: []int{gatherV, outC}, lo: -3, hi: 3}}, out: []int{outR, outC},
			alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Gather(s, in[0], gi, o) },
			ref: func(in [][]float64, _ []float64) []float64 {
				out := make([]float64, outR*outC)
				for r, k := range gIdx {
					if int(k) < gatherV {
						copy(out[r*outC:(r+1)*outC], in[0][int(k)*outC:])
					}
				}
				return out
			},
			tol: func([][]float64, []float64, int, float64) float64 { return 0 },
		},
		outOp[T, T]{
			name: "ScatterAdd", ins: []inSpec[T]{rowsIn[T](-3, 3)}, out: []int{scatterV, outC}, readsOut: true, alias: -1,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return ScatterAdd(s, in[0], si, o) },
			ref: func(in [][]float64, prior []float64) []float64 {
				out := slices.Clone(prior)
				for r, k := range sIdx {
					for c := 0; c < outC && int(k) < scatterV; c++ {
						out[int(k)*outC+c] += in[0][r*outC+c]
					}
				}
				return out
			},
			tol: func(in [][]float64, prior []float64, i int, want float64) float64 {
				mag := math.Abs(prior[i])
				for r := range outR {
					mag += math.Abs(in[0][r*outC+i%outC])
				}
				return (outR+1)*u*mag + uT*math.Abs(want)
			},
		},
	}
}

// copyOutOps are Transpose (of a transposed view), Copy, and Convert, to
// T and to another type D.
func copyOutOps[T, D vkc.Element]() []outputTrial {
	exact := func([][]float64, []float64, int, float64) float64 { return 0 }
	tview := func(x Tensor[T]) Tensor[T] { return x.T() }
	return []outputTrial{
		outOp[T, T]{
			name: "Transpose", ins: []inSpec[T]{{shape: []int{outC, outR}, lo: -50, hi: 50, view: tview, rows: true}},
			out: []int{outR, outC}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Transpose(s, in[0], o) },
			ref: perElement(func(x, _ float64) float64 { return x }), tol: exact,
		},
		outOp[T, T]{
			name: "Copy", ins: []inSpec[T]{rowsIn[T](-50, 50)}, out: []int{outR, outC}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Copy(s, in[0], o) },
			ref: perElement(func(x, _ float64) float64 { return x }), tol: exact,
		},
		outOp[T, T]{
			name: "Convert", ins: []inSpec[T]{rowsIn[T](-50, 50)}, out: []int{outR, outC}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error { return Convert(s, in[0], o) },
			ref: perElement(func(x, _ float64) float64 { return x }), tol: exact,
		},
		outOp[T, D]{
			name: fmt.Sprintf("Convert-to-%s", typeOf[D]().name), ins: []inSpec[T]{rowsIn[T](-50, 50)}, out: []int{outR, outC},
			alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[D]) error { return Convert(s, in[0], o) },
			ref: perElement(func(x, _ float64) float64 { return convertRef[D](x) }), tol: exact,
		},
	}
}

// matmulOutOps are Matmul of [outR, mmInner] by [mmInner, outC], plain
// (A's and C's rows dynamic in the dynamic case) and with a bias and Gelu.
func matmulOutOps[T vkc.Float]() []outputTrial {
	stored, acc := elemEps[T]()
	mm := func(name string, withBias bool) outputTrial {
		ins := []inSpec[T]{{shape: []int{outR, mmInner}, lo: -1, hi: 1, rows: true}, {shape: []int{mmInner, outC}, lo: -1, hi: 1}}
		act := ActNone
		if withBias {
			ins, act = append(ins, vecIn[T](-1, 1)), ActGelu
		}
		host := func(in [][]float64) (ref, bound []float64) {
			a := hostTensor{in[0], layout{shape: []int{outR, mmInner}, strides: []int{mmInner, 1}}}
			b := hostTensor{in[1], layout{shape: []int{mmInner, outC}, strides: []int{outC, 1}}}
			var bias []float64
			if withBias {
				bias = in[2]
			}
			return referenceMatmul(a, b, bias, 1, act, []int{outR, outC})
		}
		return outOp[T, T]{
			name: name, ins: ins, out: []int{outR, outC}, alias: -1, dynamic: true,
			run: func(s *vkc.Stream, in []Tensor[T], o Tensor[T]) error {
				opts := MatmulOptions[T]{Activation: act}
				if withBias {
					opts.Bias = in[2]
				}
				return Matmul(s, in[0], in[1], o, opts)
			},
			ref: func(in [][]float64, _ []float64) []float64 { ref, _ := host(in); return ref },
			tol: func(in [][]float64, _ []float64, i int, want float64) float64 {
				_, bound := host(in)
				return (mmInner+2)*acc*bound[i] + stored*math.Abs(want) + 1e-6*(bound[i]+1)
			},
		}
	}
	return []outputTrial{mm("Matmul", false), mm("Matmul+bias+Gelu", true)}
}

// outputOps are the descriptors of every op on T, by the op's name in
// docs/guide/ops.md's table (Matmul, not in it, by its own).
func outputOps[T vkc.Element](t *testing.T, dev *vkc.Device) []outputTrial {
	ops := slices.Concat(binaryOutOps[T](), unaryOutOps[T](), reduceOutOps[T](), normOutOps[T](), indexOutOps[T](t, dev))
	if typeOf[T]().name == "float32" {
		return append(ops, copyOutOps[T, int32]()...)
	}
	return append(ops, copyOutOps[T, float32]()...)
}

// tableName is the op a descriptor runs, as the table names it.
func tableName(name string) string {
	for i, c := range name {
		if c == '-' || c == '+' {
			return name[:i]
		}
	}
	return name
}

// runOutputType runs every descriptor of T whose op the table gives T, in
// every case; it returns how many descriptors ran and how many trials
// applied.
func runOutputType[T vkc.Element](t *testing.T, dev *vkc.Device, table map[string][]string, ops []outputTrial, rng *rand.Rand) (forms, trials int) {
	name := typeOf[T]().name
	for _, d := range ops {
		op := tableName(d.opName())
		if types, ok := table[op]; ok && !slices.Contains(types, name) {
			continue
		}
		forms++
		for _, c := range outputCases {
			t.Run(fmt.Sprintf("%s[%s]/%v", d.opName(), name, c), func(t *testing.T) {
				if d.try(t, dev, c, rng) {
					trials++
				}
			})
		}
	}
	return forms, trials
}

func TestOpOutputsDoNotInheritTheirOldState(t *testing.T) {
	dev := openTest(t)
	table := opsTable(t)
	rng := rand.New(rand.NewPCG(23, 24))
	has := dev.Info().Features.Has
	var forms, trials int
	add := func(f, n int) { forms, trials = forms+f, trials+n }
	add(runOutputType[float32](t, dev, table, append(outputOps[float32](t, dev), matmulOutOps[float32]()...), rng))
	if has(vkc.FeatureStorage16) {
		add(runOutputType[vkc.Float16](t, dev, table, append(outputOps[vkc.Float16](t, dev), matmulOutOps[vkc.Float16]()...), rng))
	} else {
		t.Log("Float16 not tested: the device lacks FeatureStorage16")
	}
	if has(vkc.FeatureFloat64) {
		add(runOutputType[float64](t, dev, table, append(outputOps[float64](t, dev), matmulOutOps[float64]()...), rng))
	} else {
		t.Log("float64 not tested: the device lacks FeatureFloat64")
	}
	add(runOutputType[int32](t, dev, table, outputOps[int32](t, dev), rng))
	add(runOutputType[uint32](t, dev, table, outputOps[uint32](t, dev), rng))
	t.Logf("%d op forms (op x element type) x %d cases: %d trials that apply", forms, len(outputCases), trials)
}
