package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// checkGatherScatter gathers rows of a transposed table by int32 indices
// (one out of range, one negative) and scatters rows back with repeats.
func checkGatherScatter[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(17, 18))
	const V, D, N = 6, 5, 9
	lo := -9.0
	if typeOf[T]().name == "uint32" {
		lo = 0
	}
	tv := randomValues[T](rng, V*D, lo, 9)
	table := Of(upload[T](t, dev, tv), D, V).T() // [V, D], strided
	iv := []float64{3, 0, 5, 3, 6, -1, 2, 3, 0}
	idx := Of(upload[int32](t, dev, iv))
	ob := fresh[T](t, dev, N*D)
	require.NoError(t, Gather(dev.Stream(), table, idx, Of(ob, N, D)))
	tl := gatherLayout(tv, table.at)
	var want []float64
	for _, i := range iv {
		for c := range D {
			if i < 0 || i >= V {
				want = append(want, 0)
			} else {
				want = append(want, tl[int(i)*D+c])
			}
		}
	}
	require.Equal(t, want, download(t, ob), "Gather")

	sv := randomValues[T](rng, N*D, lo, 9)
	base := randomValues[T](rng, V*D, lo, 9)
	out := upload[T](t, dev, base)
	require.NoError(t, ScatterAdd(dev.Stream(), Of(upload[T](t, dev, sv), N, D), idx, Of(out, V, D)))
	sums := make([]float64, V*D)
	abs := make([]float64, V*D)
	for r, i := range iv {
		if i < 0 || i >= V {
			continue
		}
		for c := range D {
			sums[int(i)*D+c] += sv[r*D+c]
			abs[int(i)*D+c] += math.Abs(sv[r*D+c])
		}
	}
	exp := make([]float64, V*D)
	for i := range exp {
		exp[i] = base[i] + sums[i]
	}
	// At most N additions in the compute type, then the sum with out and
	// one rounding to T.
	within(t, "ScatterAdd", download(t, out), exp, func(i int) float64 {
		return (N+1)*computeUnit[T]()*(abs[i]+math.Abs(base[i])) + unit[T]()*math.Abs(exp[i])
	})
}

func TestGatherAndScatterAddMatchFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkGatherScatter[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkGatherScatter[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkGatherScatter[float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkGatherScatter[int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkGatherScatter[uint32](t, dev) })
}

// TestScatterAddOfManyRowsIntoOneAddsEveryRow: each lane scans all N
// source rows for its output row (N+1 loop iterations a lane); past the
// CPU driver's budget the sum must not stop short.
func TestScatterAddOfManyRowsIntoOneAddsEveryRow(t *testing.T) {
	dev := openTest(t)
	const N = loopBudget + 4465 // 70000
	idx := fresh[uint32](t, dev, N)
	require.NoError(t, Fill(dev.Stream(), 0, Of(idx, N)))
	out := constants(t, dev, 2, 1)
	require.NoError(t, ScatterAdd(dev.Stream(), Of(constants(t, dev, N, 1), N, 1), Of(idx, N), Of(out, 2, 1)))
	require.Equal(t, []float64{N + 1, 1}, download(t, out))
}

// TestScatterAddOfFewRowsIntoManyAddsEachOnce: a group an output row,
// each scanning the two source rows, over more output rows than the
// budget.
func TestScatterAddOfFewRowsIntoManyAddsEachOnce(t *testing.T) {
	dev := openTest(t)
	const V = loopBudget + 4465
	idx := upload[uint32](t, dev, []float64{0, V - 1})
	out := constants(t, dev, V, 1)
	require.NoError(t, ScatterAdd(dev.Stream(), Of(constants(t, dev, 2, 1), 2, 1), Of(idx, 2), Of(out, V, 1)))
	got := download(t, out)
	require.Equal(t, []float64{2, 1, 1, 2}, []float64{got[0], got[1], got[V-2], got[V-1]})
	require.Equal(t, float64(V+2), sumOf(got))
}

// TestScatterAddDynamicIntoManyRowsAddsOrRefuses: a dynamic src's groups
// follow the param, so at one row a single group strides over all V
// output rows; a CPU driver must add right or refuse.
func TestScatterAddDynamicIntoManyRowsAddsOrRefuses(t *testing.T) {
	dev := openTest(t)
	const V, N = loopBudget + 4465, 4
	p, err := vkc.NewParam[uint32](dev, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	idx := upload[uint32](t, dev, []float64{V - 1, 0, 0, 0})
	out := constants(t, dev, V, 1)
	src := Of(constants(t, dev, N, 1), N, 1).Dynamic(p)
	if refusedOnCPU(t, dev, ScatterAdd(dev.Stream(), src, Of(idx, N).Dynamic(p), Of(out, V, 1))) {
		return
	}
	got := download(t, out)
	require.Equal(t, []float64{1, 2}, []float64{got[0], got[V-1]})
}

// TestScatterAddDynamicOfMoreRowsThanOutputsAddsOrRefuses: N above V
// makes the launch's groups two param rows each, so at a param of 2 one
// group walks all V output rows, 4 loop iterations each (about 80,000):
// a CPU driver must add the last row too, or refuse.
func TestScatterAddDynamicOfMoreRowsThanOutputsAddsOrRefuses(t *testing.T) {
	dev := openTest(t)
	const V, N, D = 20000, 21000, 64
	p, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	ix := make([]float64, N)
	ix[0], ix[1] = V-1, V-1
	idx := upload[uint32](t, dev, ix)
	out := constants(t, dev, V*D, 1)
	src := Of(constants(t, dev, N*D, 1), N, D).Dynamic(p)
	if refusedOnCPU(t, dev, ScatterAdd(dev.Stream(), src, Of(idx, N).Dynamic(p), Of(out, V, D))) {
		return
	}
	got := download(t, out)
	require.Equal(t, []float64{1, 3, 3}, []float64{got[0], got[(V-1)*D], got[V*D-1]})
}

// TestGatherOfWideRowsCopiesEveryColumn: a group takes whole rows, a
// lane every 64th element of them: a row of more than 64 times the
// budget once ran past it.
func TestGatherOfWideRowsCopiesEveryColumn(t *testing.T) {
	dev := openTest(t)
	const D = overBudget
	idx := upload[uint32](t, dev, []float64{0})
	out := fresh[float32](t, dev, D)
	require.NoError(t, Gather(dev.Stream(), Of(constants(t, dev, D, 1), 1, D), Of(idx, 1), Of(out, 1, D)))
	requireEvery(t, out, 1)
}

// TestGatherOfManyRowsCopiesEveryRow: many narrow rows, 4096 a group.
func TestGatherOfManyRowsCopiesEveryRow(t *testing.T) {
	dev := openTest(t)
	const N = overBudget
	idx := fresh[uint32](t, dev, N)
	require.NoError(t, Fill(dev.Stream(), 1, Of(idx, N)))
	out := fresh[float32](t, dev, N)
	table := upload[float32](t, dev, []float64{0, 3})
	require.NoError(t, Gather(dev.Stream(), Of(table, 2, 1), Of(idx, N), Of(out, N, 1)))
	requireEvery(t, out, 3)
}

// sumOf is the sum of xs.
func sumOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
