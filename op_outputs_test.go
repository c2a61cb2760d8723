package vkc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// The output-state property: an op that only writes its output computes
// the same values whatever that output held before — bytes no work ever
// wrote, bytes a skipped launch tainted, or the op's own input where the
// op allows running in place — and an op that reads its output (Axpy's y)
// follows the unwritten rule: an unwritten y stays unwritten, with its
// cause, and the op returns nil.
//
// Every op is one descriptor (opDesc); the property runs each descriptor
// of every element type it supports, static and Dyn forms, in each of the
// cases, against a float64 reference. Moving the op library elsewhere
// means changing the run closures and nothing else.

// Shapes the descriptors use: vectors of outVec elements (not a multiple
// of 4 or 8, so the element-wise kernels' partial last quad runs),
// softmax and transpose as smRows x smCols, matmul as mmM x mmK times
// mmK x mmN.
const (
	outVec         = 37
	smRows, smCols = 4, 9
	mmM, mmN, mmK  = 3, 4, 5
)

// outputParams are the device lengths the Dyn forms take, each set to
// the whole length of the buffers it sizes.
type outputParams struct {
	n, rows, m *Param[uint32]
}

// opDesc describes one op for the output-state property.
type opDesc[T Float] struct {
	name string
	ins  []int // each input's length
	out  int   // the output's length
	// readsOut: the op reads its output (y = a*x + y), so an unwritten
	// output leaves the result unwritten.
	readsOut bool
	// alias is the input the output may be (the op runs in place), -1
	// where the op refuses an output overlapping an input with ErrOverlap.
	alias int
	// aliasIns, when set, are the inputs' lengths for the in-place case
	// (Sum runs in place only on one element).
	aliasIns []int
	run      func(s *Stream, ins []*Buffer[T], out *Buffer[T]) error
	// ref is the expected output from the inputs and the output's earlier
	// values (read only where readsOut).
	ref func(ins [][]float64, out []float64) []float64
	// length is the Dyn form's device length (nil: a static form); units
	// are the elements of each input per unit of it (0: an input it does
	// not size), outUnits those of the output (0: the output is written
	// whole, as a reduction's result).
	length   *Param[uint32]
	units    []int
	outUnits int
}

// dyn is d as a Dyn form sized by length.
func (d opDesc[T]) dyn(length *Param[uint32], outUnits int, units ...int) opDesc[T] {
	d.length, d.outUnits, d.units = length, outUnits, units
	return d
}

// elementwise is the reference of z[i] = f(x[i], y[i]).
func elementwise(f func(x, y float64) float64) func(ins [][]float64, _ []float64) []float64 {
	return func(ins [][]float64, _ []float64) []float64 {
		z := make([]float64, len(ins[0]))
		for i := range z {
			z[i] = f(ins[0][i], ins[1][i])
		}
		return z
	}
}

func refSum(ins [][]float64, _ []float64) []float64 {
	var s float64
	for _, v := range ins[0] {
		s += v
	}
	return []float64{s}
}

func refDot(ins [][]float64, _ []float64) []float64 {
	var s float64
	for i := range ins[0] {
		s += ins[0][i] * ins[1][i]
	}
	return []float64{s}
}

func refSoftmax(ins [][]float64, _ []float64) []float64 {
	src := ins[0]
	out := make([]float64, len(src))
	for r := 0; r < len(src)/smCols; r++ {
		row := src[r*smCols : (r+1)*smCols]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		for c, v := range row {
			out[r*smCols+c] = math.Exp(v-mx) / sum
		}
	}
	return out
}

func refMatmul(ins [][]float64, _ []float64) []float64 {
	a, b := ins[0], ins[1]
	m := len(a) / mmK // the rows a Dyn form's length covers
	c := make([]float64, m*mmN)
	for i := 0; i < m; i++ {
		for j := 0; j < mmN; j++ {
			for p := 0; p < mmK; p++ {
				c[i*mmN+j] += a[i*mmK+p] * b[p*mmN+j]
			}
		}
	}
	return c
}

func refTranspose(ins [][]float64, _ []float64) []float64 {
	out := make([]float64, smRows*smCols)
	for r := 0; r < smRows; r++ {
		for c := 0; c < smCols; c++ {
			out[c*smRows+r] = ins[0][r*smCols+c]
		}
	}
	return out
}

func refCopy(ins [][]float64, _ []float64) []float64 { return append([]float64(nil), ins[0]...) }

// The scalars the ops take: exact in every type, so the reference sees
// what the kernel computes with.
const (
	outA    = -1.5
	outFill = 0.75
)

// typedOps are the ops of every Float type: the …Of ops, static and Dyn,
// and Fill, Copy and Convert (same type: a copy).
func typedOps[T Float](p outputParams) []opDesc[T] {
	vec := []int{outVec}
	two := []int{outVec, outVec}
	binary := func(name string, f func(s *Stream, x, y, z *Buffer[T]) error, ref func(x, y float64) float64) opDesc[T] {
		return opDesc[T]{name: name, ins: two, out: outVec, alias: 0,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return f(s, in[0], in[1], out) },
			ref: elementwise(ref)}
	}
	binaryDyn := func(name string, f func(s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error, ref func(x, y float64) float64) opDesc[T] {
		return binary(name, func(s *Stream, x, y, z *Buffer[T]) error { return f(s, x, y, z, p.n) }, ref).dyn(p.n, 1, 1, 1)
	}
	add := func(x, y float64) float64 { return x + y }
	sub := func(x, y float64) float64 { return x - y }
	mul := func(x, y float64) float64 { return x * y }
	div := func(x, y float64) float64 { return x / y }
	return []opDesc[T]{
		{name: "AxpyOf", ins: vec, out: outVec, readsOut: true, alias: 0,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return AxpyOf(s, outA, in[0], out) },
			ref: func(in [][]float64, y []float64) []float64 {
				return elementwise(func(x, y float64) float64 { return outA*x + y })([][]float64{in[0], y}, nil)
			}},
		{name: "ScaleOf", ins: vec, out: outVec, alias: 0,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return ScaleOf(s, outA, in[0], out) },
			ref: func(in [][]float64, _ []float64) []float64 {
				return elementwise(func(x, _ float64) float64 { return outA * x })([][]float64{in[0], in[0]}, nil)
			}},
		binary("AddOf", AddOf[T], add),
		binary("SubOf", SubOf[T], sub),
		binary("MulOf", MulOf[T], mul),
		binary("DivOf", DivOf[T], div),
		binaryDyn("AddDynOf", AddDynOf[T], add),
		binaryDyn("SubDynOf", SubDynOf[T], sub),
		binaryDyn("MulDynOf", MulDynOf[T], mul),
		binaryDyn("DivDynOf", DivDynOf[T], div),
		{name: "SumOf", ins: vec, out: 1, alias: 0, aliasIns: []int{1},
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return SumOf(s, in[0], out) }, ref: refSum},
		opDesc[T]{name: "SumDynOf", ins: vec, out: 1, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return SumDynOf(s, in[0], out, p.n) }, ref: refSum}.dyn(p.n, 0, 1),
		{name: "DotOf", ins: two, out: 1, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return DotOf(s, in[0], in[1], out) }, ref: refDot},
		opDesc[T]{name: "DotDynOf", ins: two, out: 1, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return DotDynOf(s, in[0], in[1], out, p.n) }, ref: refDot}.dyn(p.n, 0, 1, 1),
		{name: "SoftmaxOf", ins: []int{smRows * smCols}, out: smRows * smCols, alias: 0,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error {
				return SoftmaxOf(s, in[0], out, smRows, smCols)
			}, ref: refSoftmax},
		opDesc[T]{name: "SoftmaxDynOf", ins: []int{smRows * smCols}, out: smRows * smCols, alias: 0,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error {
				return SoftmaxDynOf(s, in[0], out, p.rows, smCols)
			}, ref: refSoftmax}.dyn(p.rows, smCols, smCols),
		{name: "MatmulOf", ins: []int{mmM * mmK, mmK * mmN}, out: mmM * mmN, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error {
				return MatmulOf(s, in[0], in[1], out, mmM, mmN, mmK)
			}, ref: refMatmul},
		opDesc[T]{name: "MatmulDynOf", ins: []int{mmM * mmK, mmK * mmN}, out: mmM * mmN, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error {
				return MatmulDynOf(s, in[0], in[1], out, p.m, mmN, mmK)
			}, ref: refMatmul}.dyn(p.m, mmN, mmK, 0),
		{name: "Fill", out: outVec, alias: -1,
			run: func(s *Stream, _ []*Buffer[T], out *Buffer[T]) error { return Fill(s, out, fromF64[T](outFill)) },
			ref: func([][]float64, []float64) []float64 { return filled(outVec, outFill) }},
		{name: "Copy", ins: vec, out: outVec, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return Copy(s, in[0], out) }, ref: refCopy},
		{name: "Convert", ins: vec, out: outVec, alias: -1,
			run: func(s *Stream, in []*Buffer[T], out *Buffer[T]) error { return Convert(s, in[0], out) }, ref: refCopy},
	}
}

// float32Ops are the ops only float32 has: the float32 forms by their
// own names (the …Of ops on float32 are these, but each door is tested),
// AxpyDyn, ScaleDyn, Transpose, and the dynamic fill and copy, which
// take 32-bit elements.
func float32Ops(p outputParams) []opDesc[float32] {
	rename := func(d opDesc[float32], name string, run func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error) opDesc[float32] {
		d.name, d.run = name, run
		return d
	}
	byName := map[string]opDesc[float32]{}
	for _, d := range typedOps[float32](p) {
		byName[d.name] = d
	}
	a := float32(outA)
	return []opDesc[float32]{
		rename(byName["AxpyOf"], "Axpy", func(s *Stream, in []*Buffer[float32], y *Buffer[float32]) error { return Axpy(s, a, in[0], y) }),
		rename(byName["AxpyOf"], "AxpyDyn", func(s *Stream, in []*Buffer[float32], y *Buffer[float32]) error {
			return AxpyDyn(s, Const(a), in[0], y, p.n)
		}).dyn(p.n, 1, 1),
		rename(byName["ScaleOf"], "Scale", func(s *Stream, in []*Buffer[float32], y *Buffer[float32]) error { return Scale(s, a, in[0], y) }),
		rename(byName["ScaleOf"], "ScaleDyn", func(s *Stream, in []*Buffer[float32], y *Buffer[float32]) error {
			return ScaleDyn(s, Const(a), in[0], y, p.n)
		}).dyn(p.n, 1, 1),
		rename(byName["AddOf"], "Add", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error { return Add(s, in[0], in[1], z) }),
		rename(byName["SubOf"], "Sub", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error { return Sub(s, in[0], in[1], z) }),
		rename(byName["MulOf"], "Mul", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error { return Mul(s, in[0], in[1], z) }),
		rename(byName["DivOf"], "Div", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error { return Div(s, in[0], in[1], z) }),
		rename(byName["AddDynOf"], "AddDyn", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error {
			return AddDyn(s, in[0], in[1], z, p.n)
		}),
		rename(byName["SubDynOf"], "SubDyn", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error {
			return SubDyn(s, in[0], in[1], z, p.n)
		}),
		rename(byName["MulDynOf"], "MulDyn", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error {
			return MulDyn(s, in[0], in[1], z, p.n)
		}),
		rename(byName["DivDynOf"], "DivDyn", func(s *Stream, in []*Buffer[float32], z *Buffer[float32]) error {
			return DivDyn(s, in[0], in[1], z, p.n)
		}),
		rename(byName["SumOf"], "Sum", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error { return Sum(s, in[0], out) }),
		rename(byName["SumDynOf"], "SumDyn", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return SumDyn(s, in[0], out, p.n)
		}),
		rename(byName["DotOf"], "Dot", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error { return Dot(s, in[0], in[1], out) }),
		rename(byName["DotDynOf"], "DotDyn", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return DotDyn(s, in[0], in[1], out, p.n)
		}),
		rename(byName["SoftmaxOf"], "Softmax", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return Softmax(s, in[0], out, smRows, smCols)
		}),
		rename(byName["SoftmaxDynOf"], "SoftmaxDyn", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return SoftmaxDyn(s, in[0], out, p.rows, smCols)
		}),
		rename(byName["MatmulOf"], "Matmul", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return Matmul(s, in[0], in[1], out, mmM, mmN, mmK)
		}),
		rename(byName["MatmulDynOf"], "MatmulDyn", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return MatmulDyn(s, in[0], in[1], out, p.m, mmN, mmK)
		}),
		rename(byName["Fill"], "FillDyn", func(s *Stream, _ []*Buffer[float32], out *Buffer[float32]) error {
			return FillDyn(s, out, Const(float32(outFill)), p.n)
		}).dyn(p.n, 1),
		rename(byName["Copy"], "CopyDyn", func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
			return CopyDyn(s, in[0], out, p.n)
		}).dyn(p.n, 1, 1),
		{name: "Transpose", ins: []int{smRows * smCols}, out: smRows * smCols, alias: -1,
			run: func(s *Stream, in []*Buffer[float32], out *Buffer[float32]) error {
				return Transpose(s, in[0], out, smRows, smCols)
			}, ref: refTranspose},
	}
}

func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// fromF64 is v in T, rounded as T stores it.
func fromF64[T Float](v float64) T {
	var zero T
	switch any(zero).(type) {
	case Float16:
		return any(Float16From(float32(v))).(T)
	case float32:
		return any(float32(v)).(T)
	}
	return any(v).(T)
}

// toF64 is v's exact value.
func toF64[T Float](v T) float64 {
	switch x := any(v).(type) {
	case Float16:
		return float64(x.Float32())
	case float32:
		return float64(x)
	}
	return any(v).(float64)
}

// outputTolerance is the error allowed relative to 1+|want|: a few
// roundings of T (Float16's results go through float32, each rounded to
// Float16 once; lavapipe's exp is within a few float32 ulps).
func outputTolerance[T Float]() float64 {
	switch any(*new(T)).(type) {
	case Float16:
		return 2e-3
	case float32:
		return 1e-5
	}
	return 1e-12
}

// outputCase is one state the output is in before the op runs.
type outputCase int

const (
	neverWritten  outputCase = iota // a new buffer no work wrote
	taintedBySkip                   // written, then tainted by a launch skipped for its unwritten input
	aliasesInput                    // the output is an input (or overlaps one where the op refuses that)
	dynPrefix                       // tainted as above, then a Dyn form writes a shorter prefix of it
)

var outputCases = []outputCase{neverWritten, taintedBySkip, aliasesInput, dynPrefix}

func (c outputCase) String() string {
	return [...]string{"never-written", "tainted-by-skipped-launch", "aliases-input", "dyn-prefix-over-tainted"}[c]
}

// outputInputs uploads inputs of the given lengths, of magnitude 1/2 to 2
// (Div divides by them) and random sign, exact in T, and returns them
// with their values.
func outputInputs[T Float](t *testing.T, dev *Device, lens []int, rng *rand.Rand) ([]*Buffer[T], [][]float64) {
	t.Helper()
	vals := make([][]float64, len(lens))
	bufs := make([]*Buffer[T], len(lens))
	for i, n := range lens {
		xs := make([]T, n)
		vals[i] = make([]float64, n)
		for j := range xs {
			xs[j] = fromF64[T]((0.5 + 1.5*rng.Float64()) * float64(1-2*rng.IntN(2)))
			vals[i][j] = toF64(xs[j])
		}
		b, err := FromSlice(dev, xs)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, b.Close()) })
		bufs[i] = b
	}
	return bufs, vals
}

// taintedOutput is a buffer of n elements that was written, then tainted
// by a launch (Convert between two types runs a kernel) skipped because
// its input was never written: it reads as ErrUnwritten.
func taintedOutput[T Float](t *testing.T, dev *Device, n int) *Buffer[T] {
	t.Helper()
	garbage := make([]T, n)
	for j := range garbage {
		garbage[j] = fromF64[T](1234 + float64(j))
	}
	b, err := FromSlice(dev, garbage)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	unwritten, err := NewBuffer[int32](dev, n)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unwritten.Close()) })
	require.NoError(t, Convert(dev.Stream(), unwritten, b))
	_, err = b.Read(context.Background())
	require.ErrorIs(t, err, ErrUnwritten, "the skipped launch tainted the output")
	return b
}

// requireNear checks got against the float64 reference within T's tolerance.
func requireNear[T Float](t *testing.T, want []float64, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	tol := outputTolerance[T]()
	for j := range want {
		g := toF64(got[j])
		require.LessOrEqual(t, math.Abs(g-want[j]), tol*(1+math.Abs(want[j])),
			"element %d: got %v, want %v (float64 reference)", j, g, want[j])
	}
}

// outputTrial runs descriptor d in case c on dev's default stream and
// checks the result; it reports whether the case applies to d. short is
// d sized by shorter lengths, for dynPrefix.
func outputTrial[T Float](t *testing.T, dev *Device, d, short opDesc[T], c outputCase, rng *rand.Rand) bool {
	t.Helper()
	s, ctx := dev.Stream(), context.Background()
	switch {
	case c == aliasesInput && len(d.ins) == 0, c == dynPrefix && d.length == nil:
		return false
	case c == dynPrefix:
		return prefixTrial(t, dev, short, rng)
	}
	lens := d.ins
	if c == aliasesInput && d.alias >= 0 && d.aliasIns != nil {
		lens = d.aliasIns
	}
	ins, inVals := outputInputs[T](t, dev, lens, rng)

	var out *Buffer[T]
	var prior []float64 // the output's values before the op, where it has any
	switch c {
	case neverWritten:
		b, err := NewBuffer[T](dev, d.out)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, b.Close()) })
		out = b
	case taintedBySkip:
		out = taintedOutput[T](t, dev, d.out)
	case aliasesInput:
		if d.alias >= 0 {
			out, prior = ins[d.alias], inVals[d.alias]
			break
		}
		// An output overlapping an input, which the op refuses: the input
		// itself where the lengths match, else a view of its head.
		in := ins[0]
		if in.Len() != d.out {
			if in.Len() < d.out {
				return false
			}
			v, err := in.View(0, d.out)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, v.Close()) })
			in = v
		}
		require.ErrorIs(t, d.run(s, ins, in), ErrOverlap, "an output overlapping an input")
		got, err := ins[0].Read(ctx)
		require.NoError(t, err)
		requireNear(t, inVals[0], got) // the refused op left its input as it was
		return true
	}

	require.NoError(t, d.run(s, ins, out))
	got, err := out.Read(ctx)
	if d.readsOut && prior == nil {
		// The op reads an output no executed work wrote: it is skipped and
		// its output stays unwritten, with the first failure as its cause.
		require.ErrorIs(t, err, ErrUnwritten)
		require.ErrorIs(t, err, ErrNeverWritten)
		return true
	}
	require.NoError(t, err, "an op whose output it only writes must not inherit that output's state")
	refIns := inVals
	if c == aliasesInput {
		refIns = append([][]float64(nil), inVals...)
		refIns[d.alias] = prior
	}
	requireNear(t, d.ref(refIns, prior), got)
	return true
}

// prefixTrial runs a Dyn form d, whose length is shorter than its
// buffers, over a tainted output: the prefix it covers reads back right,
// the rest stays unwritten (a reduction's one-element result is written
// whole, from the prefix of its inputs). Where the op reads its output
// (AxpyDyn's y), the output stays unwritten.
func prefixTrial[T Float](t *testing.T, dev *Device, d opDesc[T], rng *rand.Rand) bool {
	t.Helper()
	s, ctx := dev.Stream(), context.Background()
	ins, inVals := outputInputs[T](t, dev, d.ins, rng)
	out := taintedOutput[T](t, dev, d.out)
	require.NoError(t, d.run(s, ins, out))
	if d.readsOut {
		_, err := out.Read(ctx)
		require.ErrorIs(t, err, ErrUnwritten, "y was tainted: the launch is skipped")
		return true
	}
	k := int(d.length.Value())
	if d.outUnits == 0 {
		sized := make([][]float64, len(inVals))
		for i, v := range inVals {
			sized[i] = v
			if d.units[i] > 0 {
				sized[i] = v[:k*d.units[i]]
			}
		}
		got, err := out.Read(ctx)
		require.NoError(t, err, "a reduction's result is written whole")
		requireNear(t, d.ref(sized, nil), got)
		return true
	}
	prefix := k * d.outUnits
	require.Less(t, prefix, d.out, "the length is shorter than the buffers")
	head, err := out.View(0, prefix)
	require.NoError(t, err)
	defer head.Close()
	tail, err := out.View(prefix, d.out-prefix)
	require.NoError(t, err)
	defer tail.Close()
	got, err := head.Read(ctx)
	require.NoError(t, err, "the prefix the length covers is written")
	requireNear(t, d.ref(inVals, nil)[:prefix], got)
	_, err = tail.Read(ctx)
	require.ErrorIs(t, err, ErrUnwritten, "the rest keeps the output's old state")
	_, err = out.Read(ctx)
	require.ErrorIs(t, err, ErrUnwritten)
	return true
}

// runOutputProperty runs every descriptor of T in every case on dev;
// short are the same descriptors with shorter device lengths.
func runOutputProperty[T Float](t *testing.T, dev *Device, descs, short []opDesc[T], rng *rand.Rand) (ran int) {
	require.Len(t, short, len(descs))
	for i, d := range descs {
		require.Equal(t, d.name, short[i].name)
		for _, c := range outputCases {
			t.Run(fmt.Sprintf("%s[%T]/%v", d.name, *new(T), c), func(t *testing.T) {
				if outputTrial(t, dev, d, short[i], c, rng) {
					ran++
				}
			})
		}
	}
	return ran
}

// newOutputParams makes the Dyn forms' lengths: the buffers' whole
// lengths, or (short) shorter ones, an odd element count among them so a
// Float16 prefix ends inside a word.
func newOutputParams(t *testing.T, dev *Device, short bool) outputParams {
	t.Helper()
	param := func(v int) *Param[uint32] {
		if short {
			v -= 1 + v/4
		}
		p, err := NewParam(dev, uint32(v))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, p.Close()) })
		return p
	}
	return outputParams{n: param(outVec), rows: param(smRows), m: param(mmM)}
}

// outputOps are every op form of T: the typed ops, and for float32 its
// own forms too.
func outputOps[T Float](p outputParams) []opDesc[T] {
	ops := typedOps[T](p)
	if f32, ok := any(ops).([]opDesc[float32]); ok {
		return any(append(f32, float32Ops(p)...)).([]opDesc[T])
	}
	return ops
}

// runOutputType runs the property for T where dev has what T needs.
func runOutputType[T Float](t *testing.T, dev *Device, full, short outputParams, rng *rand.Rand) (forms, trials int) {
	needs := map[elemKind]Features{elemFloat16: FeatureStorage16, elemFloat64: FeatureFloat64}[kindOf[T]()]
	if needs != 0 && !dev.Info().Features.Has(needs) {
		t.Logf("%T not tested: the device lacks %v", *new(T), needs)
		return 0, 0
	}
	descs := outputOps[T](full)
	return len(descs), runOutputProperty(t, dev, descs, outputOps[T](short), rng)
}

// On lavapipe (validation layer on) and on the host device, whose kernels
// are the catalogue's Go references.
func TestOpOutputsDoNotInheritTheirOldState(t *testing.T) {
	devices := map[string]func(t *testing.T) *Device{
		"vulkan": func(t *testing.T) *Device { return openTest(t) },
		"host": func(t *testing.T) *Device {
			dev, err := Open(withRecorderDevice(func() (recorder.Device, error) { return hostdev.New(hostdev.Options{}), nil }))
			require.NoError(t, err)
			t.Cleanup(func() { closeAndCheck(t, dev) })
			return dev
		},
	}
	for name, open := range devices {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			full, short := newOutputParams(t, dev, false), newOutputParams(t, dev, true)
			rng := rand.New(rand.NewPCG(5, uint64(len(name))))
			var forms, trials int
			for _, run := range []func() (int, int){
				func() (int, int) { return runOutputType[float32](t, dev, full, short, rng) },
				func() (int, int) { return runOutputType[Float16](t, dev, full, short, rng) },
				func() (int, int) { return runOutputType[float64](t, dev, full, short, rng) },
			} {
				f, n := run()
				forms, trials = forms+f, trials+n
			}
			t.Logf("%d op forms (op x element type) x %d cases: %d trials that apply", forms, len(outputCases), trials)
		})
	}
}
