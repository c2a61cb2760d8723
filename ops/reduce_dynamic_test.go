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

// dynReduction is a reduction of a dynamic x of shape (its capacity
// first) along axis, with its param, buffers and the param's values to
// replay: out keeps the dynamic axis 0 unless axis is 0.
type dynReduction[T vkc.Element] struct {
	shape   []int
	axis    int
	keep    bool // out has the reduced axis, of extent 1
	rows    *vkc.Param[uint32]
	ns      []int
	src, x  *vkc.Buffer[T]
	outs    map[string]*vkc.Buffer[T]
	arg     *vkc.Buffer[uint32]
	srcVals []float64
}

// outShape is the output's shape, its capacity.
func (d *dynReduction[T]) outShape() []int {
	if d.keep {
		s := slices.Clone(d.shape)
		s[d.axis] = 1
		return s
	}
	return slices.Delete(slices.Clone(d.shape), d.axis, d.axis+1)
}

// dynReduceOut is buffer b as d's output: dynamic on the param unless
// axis is 0.
func dynReduceOut[T vkc.Element](d interface {
	outShape() []int
	dynamicOut() *vkc.Param[uint32]
}, b *vkc.Buffer[T]) Tensor[T] {
	o := Of(b, d.outShape()...)
	if p := d.dynamicOut(); p != nil {
		o = o.Dynamic(p)
	}
	return o
}

// dynamicOut is the output's param: nil when axis 0 is reduced.
func (d *dynReduction[T]) dynamicOut() *vkc.Param[uint32] {
	if d.axis == 0 {
		return nil
	}
	return d.rows
}

// record queues x = src over the param's rows, then the reductions.
func (d *dynReduction[T]) record(s *vkc.Stream) error {
	x := Of(d.x, d.shape...).Dynamic(d.rows)
	if err := Convert(s, Of(d.src, d.shape...).Dynamic(d.rows), x); err != nil {
		return err
	}
	fns := map[string]func(*vkc.Stream, Tensor[T], int, Tensor[T]) error{"Sum": Sum[T], "Mean": Mean[T], "Max": Max[T]}
	for _, op := range []string{"Sum", "Mean", "Max"} {
		if b := d.outs[op]; b != nil {
			if err := fns[op](s, x, d.axis, dynReduceOut(d, b)); err != nil {
				return fmt.Errorf("%s of %v along %d: %w", op, d.shape, d.axis, err)
			}
		}
	}
	return Argmax(s, x, d.axis, dynReduceOut(d, d.arg))
}

// check compares the outputs with float64 over the first n rows; first
// also checks that a dynamic output's rows past n read as ErrUnwritten.
func (d *dynReduction[T]) check(t *testing.T, n int, first bool) {
	t.Helper()
	l, err := contiguous(0, d.shape)
	require.NoError(t, err)
	l.shape = slices.Clone(l.shape)
	l.shape[0] = n
	sum, abs, maxv, arg := reduceRef(d.srcVals, l, d.axis)
	R := float64(l.shape[d.axis])
	uc, u := computeUnit[T](), unit[T]()
	want := map[string][]float64{"Sum": sum, "Max": maxv, "Argmax": arg}
	tols := map[string]func(i int) float64{
		"Sum":    func(i int) float64 { return R*uc*abs[i] + u*math.Abs(sum[i]) + tiny[T]() },
		"Max":    func(int) float64 { return 0 },
		"Argmax": func(int) float64 { return 0 },
		"Mean": func(i int) float64 {
			return (R+2)*uc*abs[i]/R + u*math.Abs(sum[i]/R) + tiny[T]()
		},
	}
	mean := make([]float64, len(sum))
	for i := range sum {
		mean[i] = sum[i] / R
	}
	want["Mean"] = mean
	what := fmt.Sprintf("%s along %d of %v, n=%d", typeOf[T]().name, d.axis, d.shape, n)
	for op, w := range want {
		var got []float64
		switch {
		case op == "Argmax":
			got = readHead(t, op+" "+what, d.arg, len(w), first)
		case d.outs[op] != nil:
			got = readHead(t, op+" "+what, d.outs[op], len(w), first)
		default:
			continue
		}
		within(t, op+" "+what, got, w, tols[op])
	}
}

// readHead reads b's first m elements and, with unwritten and m short of
// b, checks the rest reads as ErrUnwritten.
func readHead[E vkc.Element](t *testing.T, what string, b *vkc.Buffer[E], m int, unwritten bool) []float64 {
	t.Helper()
	head, err := b.View(0, m)
	require.NoError(t, err)
	defer head.Close()
	got := download(t, head)
	if unwritten && m < b.Len() {
		tail, err := b.View(m, b.Len()-m)
		require.NoError(t, err)
		defer tail.Close()
		_, err = tail.Read(context.Background())
		require.ErrorIs(t, err, vkc.ErrUnwritten, "%s: the rows past the param were never written", what)
	}
	return got
}

// checkDynamicReductions captures Sum, Mean (floats), Max and Argmax of
// dynamic tensors once, along their dynamic axis 0 (a static out) and
// along others (a dynamic out), in lanes, groups and two passes, and
// replays the graph over several values of the params: every output
// matches float64 over the first rows only, and on the first replay a
// dynamic output's rows past the param, never written, read as
// vkc.ErrUnwritten. x is written in the graph only up to the param, so
// the reductions reading its unwritten rows would be skipped.
func checkDynamicReductions[T vkc.Element](t *testing.T, dev *vkc.Device) {
	type shape struct {
		shape []int
		axis  int
		keep  bool
	}
	shapes := []shape{
		{[]int{6, 5}, 1, false},     // lanes
		{[]int{4, 3, 40}, 2, false}, // lanes over merged rows
		{[]int{4, 3, 5}, 1, true},   // keepdims
		{[]int{3, 2000}, 1, false},  // groups
		{[]int{3, 5000}, 1, false},  // two passes
		{[]int{6, 5}, 0, false},     // along the dynamic axis: lanes
		{[]int{40, 3}, 0, true},     // lanes, keepdims
		{[]int{2000, 2}, 0, false},  // groups
		{[]int{5000, 2}, 0, false},  // two passes
	}
	et := typeOf[T]()
	rng := rand.New(rand.NewPCG(41, 42))
	lo := -3.0
	if et.name == "uint32" {
		lo = 0
	}
	var ds []*dynReduction[T]
	for _, sh := range shapes {
		capRows := sh.shape[0]
		ns := []int{max(1, capRows/3), capRows, 1, capRows - 1, max(1, capRows/2)}
		rows, err := vkc.NewParam[uint32](dev, uint32(ns[0]))
		require.NoError(t, err)
		t.Cleanup(func() { _ = rows.Close() })
		n, _ := count(sh.shape)
		d := &dynReduction[T]{shape: sh.shape, axis: sh.axis, keep: sh.keep, rows: rows, ns: ns,
			src: upload[T](t, dev, make([]float64, n)), x: fresh[T](t, dev, n), outs: map[string]*vkc.Buffer[T]{}}
		outN := n / sh.shape[sh.axis]
		for _, op := range []string{"Sum", "Mean", "Max"} {
			if op != "Mean" || et.float {
				d.outs[op] = fresh[T](t, dev, outN)
			}
		}
		d.arg = fresh[uint32](t, dev, outN)
		ds = append(ds, d)
	}
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		for _, d := range ds {
			if err := d.record(s); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	for it := range 5 {
		for _, d := range ds {
			require.NoError(t, d.rows.Set(uint32(d.ns[it])))
			d.srcVals = randomValues[T](rng, d.src.Len(), lo, 3)
			require.NoError(t, d.src.Write(typedValues[T](d.srcVals)))
		}
		require.NoError(t, g.Replay())
		for _, d := range ds {
			d.check(t, d.ns[it], it == 0 && d.axis != 0)
		}
	}
}

// typedValues is vs as T.
func typedValues[T vkc.Element](vs []float64) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = fromFloat[T](v)
	}
	return out
}

// Reductions of dynamic tensors, along the dynamic axis and others,
// follow the param on every replay of one capture.
func TestDynamicReductionsFollowTheParam(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkDynamicReductions[float32](t, dev) })
	t.Run("int32", func(t *testing.T) { checkDynamicReductions[int32](t, dev) })
	if dev.Info().Features.Has(vkc.FeatureStorage16) {
		t.Run("Float16", func(t *testing.T) { checkDynamicReductions[vkc.Float16](t, dev) })
	}
}

// TestDynamicSumOfALongVectorAtEveryParam sums a dynamic vector of ones
// whose capacity takes two passes of many splits, at params from one
// element to the capacity: a dynamic launch has as few groups as the
// param's value makes, so at a small param one group walks every split,
// most of them past the param (a step each); the sum must be the param's
// value exactly at every one, within a CPU driver's loop budget.
func TestDynamicSumOfALongVectorAtEveryParam(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	const capacity = 1<<24 - 255
	x := constants(t, dev, capacity, 1)
	out := fresh[float32](t, dev, 1)
	rows, err := vkc.NewParam[uint32](dev, 1)
	require.NoError(t, err)
	defer rows.Close()
	for _, n := range []uint32{1, 100, 4096, 4097, 70000, 1 << 20, capacity} {
		require.NoError(t, rows.Set(n))
		require.NoError(t, Sum(s, Of(x, capacity).Dynamic(rows), 0, Of(out)), "param %d", n)
		got, err := out.Read(context.Background())
		require.NoError(t, err)
		require.Equal(t, float32(n), got[0], "Sum of %d ones", n)
	}
}
