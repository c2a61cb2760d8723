package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// binaryRef is each binary op in float64, as the kernels define it for
// T: integer division truncates and gives 0 for a zero divisor.
func binaryRef[T vkc.Element](code uint32, x, y float64) float64 {
	r := binaryExact[T](code, x, y)
	if typeOf[T]().name == "uint32" { // wraps around, as uint32 does
		r = math.Mod(r, 1<<32)
		if r < 0 {
			r += 1 << 32
		}
	}
	return r
}

// binaryExact is the op's exact result.
func binaryExact[T vkc.Element](code uint32, x, y float64) float64 {
	switch code {
	case binAdd:
		return x + y
	case binSub:
		return x - y
	case binMul:
		return x * y
	case binDiv:
		if !typeOf[T]().float {
			if y == 0 {
				return 0
			}
			return math.Trunc(x / y)
		}
		return x / y
	case binMax:
		return math.Max(x, y)
	}
	return math.Min(x, y)
}

var binaryOps = []struct {
	name string
	code uint32
	fn   func(*vkc.Stream, Tensor[float32], Tensor[float32], Tensor[float32]) error
}{
	{"Add", binAdd, Add[float32]}, {"Sub", binSub, Sub[float32]}, {"Mul", binMul, Mul[float32]},
	{"Div", binDiv, Div[float32]}, {"Maximum", binMax, Maximum[float32]}, {"Minimum", binMin, Minimum[float32]},
}

// binaryOf is the op of code for T.
func binaryOf[T vkc.Element](code uint32) func(*vkc.Stream, Tensor[T], Tensor[T], Tensor[T]) error {
	return [...]func(*vkc.Stream, Tensor[T], Tensor[T], Tensor[T]) error{Add[T], Sub[T], Mul[T], Div[T], Maximum[T], Minimum[T]}[code]
}

// checkBinary runs every binary op on T over a broadcast, transposed
// input pair into a never-written output, against float64.
func checkBinary[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo := -8.0
	if typeOf[T]().name == "uint32" {
		lo = 1
	}
	av := randomValues[T](rng, 3*4, lo, 8) // a: [4, 3] seen transposed as [3, 4]
	bv := randomValues[T](rng, 4, lo, 8)   // b: [4], broadcast over rows
	for i := range bv {
		if bv[i] == 0 {
			bv[i] = 1
		}
	}
	a := Of(upload[T](t, dev, av), 4, 3).T()
	b := Of(upload[T](t, dev, bv), 4)
	for code := binAdd; code <= binMin; code++ {
		ob := fresh[T](t, dev, 12)
		require.NoError(t, binaryOf[T](code)(dev.Stream(), a, b, Of(ob, 3, 4)))
		got := download(t, ob)
		want := make([]float64, 12)
		for i := range 3 {
			for j := range 4 {
				want[i*4+j] = toFloat(fromFloat[T](binaryRef[T](code, av[j*3+i], bv[j])))
			}
		}
		// One rounding of the exact result to T (float32 first for Float16).
		u := unit[T]() + computeUnit[T]()
		within(t, typeOf[T]().name, got, want, func(i int) float64 { return 2 * u * math.Abs(want[i]) })
	}
}

func TestBinaryOpsMatchFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkBinary[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkBinary[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkBinary[float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkBinary[int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkBinary[uint32](t, dev) })
}

// A scalar (a tensor of no axes) broadcasts against any shape, and an
// op over scalars writes one element.
func TestScalarTensorsBroadcast(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	two := Of(upload[float32](t, dev, []float64{2}), 1).Reshape()
	require.NoError(t, two.Err())
	require.Equal(t, 0, two.Rank())
	x := Of(upload[float32](t, dev, []float64{1, 2, 3, 4, 5, 6}), 2, 3)
	ob := fresh[float32](t, dev, 6)
	require.NoError(t, Mul(s, x, two, Of(ob, 2, 3)))
	require.Equal(t, []float64{2, 4, 6, 8, 10, 12}, download(t, ob))
	sb := fresh[float32](t, dev, 1)
	require.NoError(t, Add(s, two, two, Of(sb, 1).Reshape()))
	require.Equal(t, []float64{4}, download(t, sb))
}

// Contiguous float32 operands from offsets of whole vectors take the
// linear kernel (eight elements a load on a CPU driver with 64-bit
// integers, else four), other offsets the general one; both match
// float64.
func TestContiguousFloat32TakesTheWideKernel(t *testing.T) {
	dev := openTest(t)
	rng := rand.New(rand.NewPCG(21, 22))
	const n = 1003
	av := randomValues[float32](rng, n+16, -8, 8)
	bv := randomValues[float32](rng, n+16, 0.5, 8)
	ab, bb := upload[float32](t, dev, av), upload[float32](t, dev, bv)
	for _, off := range []int{0, 8, 4, 3} {
		a := Strided(ab, off, []int{n}, []int{1})
		b := Strided(bb, off, []int{n}, []int{1})
		for code := binAdd; code <= binMin; code++ {
			ob := fresh[float32](t, dev, n)
			prof, err := dev.Stream().Profile(func(s *vkc.Stream) error {
				return binaryOf[float32](code)(s, a, b, Of(ob))
			})
			require.NoError(t, err)
			var names []string
			for _, l := range prof.Launches {
				names = append(names, l.Kernel)
			}
			require.Equal(t, []string{wantLinear[float32](dev, "binary", off)}, names, "offset %d", off)
			want := make([]float64, n)
			for i := range want {
				want[i] = toFloat(fromFloat[float32](binaryRef[float32](code, av[off+i], bv[off+i])))
			}
			within(t, "wide", download(t, ob), want, func(i int) float64 { return 0x1p-22 * math.Abs(want[i]) })
		}
	}
}

// TestAddBroadcastOverLongRowsWritesEveryElement adds a row to each of
// two rows too long to merge with it: a group takes whole rows, and each
// element costs a lane three loop iterations, so rows of some 1.4
// million elements once ran a lane past a CPU driver's budget.
func TestAddBroadcastOverLongRowsWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	out := fresh[float32](t, dev, 2*N)
	require.NoError(t, Add(dev.Stream(), Of(constants(t, dev, 2*N, 1), 2, N), Of(constants(t, dev, N, 2), N), Of(out, 2, N)))
	requireEvery(t, out, 3)
	require.NoError(t, Mul(dev.Stream(), Of(constants(t, dev, 1, 5), 1, 1), Of(out, 2, N), Of(out, 2, N)))
	requireEvery(t, out, 15)
}

// TestAddDynamicOverLongRowsAddsOrRefuses: a dynamic axis 0 cannot be
// split into launches, so a CPU driver must refuse what its lanes would
// cut short.
func TestAddDynamicOverLongRowsAddsOrRefuses(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	p, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	out := fresh[float32](t, dev, 2*N)
	a := Of(constants(t, dev, 2*N, 1), 2, N).Dynamic(p)
	if refusedOnCPU(t, dev, Add(dev.Stream(), a, Of(constants(t, dev, N, 2), N), Of(out, 2, N).Dynamic(p))) {
		return
	}
	requireEvery(t, out, 3)
}

// TestUnaryDynamicOverLongContiguousRowsMapsOrRefuses: the linear
// kernels' group covers whole rows, 256 elements a lane a step (two
// loop iterations), so a dynamic axis 0 of rows of some 8.5 million
// elements runs a lane past a CPU driver's loop budget: it must map
// every element or refuse.
func TestUnaryDynamicOverLongContiguousRowsMapsOrRefuses(t *testing.T) {
	dev := openTest(t)
	const N = 128*(loopBudget+1024) + 1
	p, err := vkc.NewParam[uint32](dev, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	out := constants(t, dev, N, 0)
	err = Relu(dev.Stream(), Of(constants(t, dev, N, 1), 1, N).Dynamic(p), Of(out, 1, N).Dynamic(p))
	if refusedOnCPU(t, dev, err) {
		require.ErrorContains(t, err, fmt.Sprintf("dynamic rows of %d elements", N))
		return
	}
	requireEvery(t, out, 1)
}

// TestLinearItersBoundsEveryPlan: a static contiguous plan merged to one
// axis stays within the loop budget at the most elements the kernels
// take; a dynamic one of rows of 128 x the budget does not.
func TestLinearItersBoundsEveryPlan(t *testing.T) {
	const maxX = 65535
	static := elementPlan{shape: []int{maxElements}}
	dynamic := elementPlan{shape: []int{4, 128 * loopBudget}, flags: flagDynamic}
	for _, v := range []int{4, 8} {
		require.True(t, loopsFit(true, linearIters(static, v, maxX)), "static, width %d", v)
		require.False(t, loopsFit(true, linearIters(dynamic, v, maxX)), "dynamic, width %d", v)
	}
}
