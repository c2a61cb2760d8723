package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// unaryCase is an activation, its float64 reference, the inputs it is
// checked on and its error bound in units of the compute type's roundoff
// u: |got - want| <= (c0 + c1*|x|) * u * max(1, |want|) + extra(x), plus
// one rounding of the result to T. c0 and c1 come from Vulkan's precision
// rules (exp within 3 + 2|x| ULP, division and inversesqrt within 2.5 and
// 2 ULP) summed over the operations each kernel does; docs/guide/ops.md
// lists them.
type unaryCase struct {
	name   string
	ref    func(float64) float64
	lo, hi float64
	c0, c1 float64
	extra  func(x float64) float64
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

var unaryCases = []unaryCase{
	{name: "Exp", ref: math.Exp, lo: -8, hi: 8, c0: 8, c1: 4},
	{name: "Log", ref: math.Log, lo: 0.01, hi: 100, c0: 8, extra: func(float64) float64 { return 0x1p-21 }},
	{name: "Sqrt", ref: math.Sqrt, lo: 0, hi: 100, c0: 8},
	{name: "Tanh", ref: math.Tanh, lo: -10, hi: 10, c0: 32},
	{name: "Sigmoid", ref: sigmoid, lo: -20, hi: 20, c0: 16, c1: 4},
	{name: "Relu", ref: func(x float64) float64 { return math.Max(x, 0) }, lo: -4, hi: 4},
	{name: "Gelu", ref: geluTanh, lo: -6, hi: 6, c0: 64, c1: 16},
	{name: "GeluErf", ref: func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, lo: -6, hi: 6, c0: 64, c1: 16,
		extra: func(x float64) float64 { return 0.5 * math.Abs(x) * 1.5e-7 }},
	{name: "Silu", ref: func(x float64) float64 { return x * sigmoid(x) }, lo: -20, hi: 20, c0: 16, c1: 8},
}

// unaryFn is the exported op named name for T.
func unaryFn[T vkc.Element](name string) func(*vkc.Stream, Tensor[T], Tensor[T]) error {
	return map[string]func(*vkc.Stream, Tensor[T], Tensor[T]) error{
		"Exp": Exp[T], "Log": Log[T], "Sqrt": Sqrt[T], "Tanh": Tanh[T], "Sigmoid": Sigmoid[T],
		"Relu": Relu[T], "Gelu": Gelu[T], "GeluErf": GeluErf[T], "Silu": Silu[T],
	}[name]
}

// unaryTolerance is the bound of c for input x and result want on T.
func unaryTolerance[T vkc.Element](c unaryCase, x, want float64) float64 {
	tol := (c.c0 + c.c1*math.Abs(x)) * computeUnit[T]() * math.Max(1, math.Abs(want))
	if c.extra != nil {
		tol += c.extra(x)
	}
	return tol + unit[T]()*math.Abs(want)
}

// checkUnary runs c on T over a transposed input into a never-written
// output and compares with the float64 reference.
func checkUnary[T vkc.Element](t *testing.T, dev *vkc.Device, c unaryCase) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 5, 7
	xv := randomValues[T](rng, rows*cols, c.lo, c.hi)
	x := Of(upload[T](t, dev, xv), cols, rows).T() // [rows, cols], strided
	yb := fresh[T](t, dev, rows*cols)
	require.NoError(t, unaryFn[T](c.name)(dev.Stream(), x, Of(yb, rows, cols)))
	got := download(t, yb)
	in := gatherLayout(xv, x.at)
	want := make([]float64, len(in))
	for i, v := range in {
		want[i] = c.ref(v)
	}
	within(t, c.name, got, want, func(i int) float64 { return unaryTolerance[T](c, in[i], want[i]) })
}

func TestActivationsMatchFloat64(t *testing.T) {
	dev := openTest(t)
	for _, c := range unaryCases {
		t.Run(c.name+"/float32", func(t *testing.T) { checkUnary[float32](t, dev, c) })
		t.Run(c.name+"/Float16", func(t *testing.T) { checkUnary[vkc.Float16](t, dev, c) })
		if c.name == "Sqrt" || c.name == "Relu" {
			t.Run(c.name+"/float64", func(t *testing.T) { checkUnary[float64](t, dev, c) })
		}
	}
}

// checkScaleAxpy checks Scale (a constant) and Axpy (a param) on T, x a
// row broadcast over y's rows.
func checkScaleAxpy[T vkc.Element, P float32 | float64](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(5, 6))
	xv := randomValues[T](rng, 4, -3, 3)
	yv := randomValues[T](rng, 12, -3, 3)
	x := Of(upload[T](t, dev, xv), 4)
	yb := fresh[T](t, dev, 12)
	require.NoError(t, Scale(dev.Stream(), Const(1.5), x, Of(yb, 3, 4)))
	got := download(t, yb)
	want := make([]float64, 12)
	for i := range want {
		want[i] = 1.5 * xv[i%4]
	}
	u := computeUnit[T]() + unit[T]()
	within(t, "Scale", got, want, func(i int) float64 { return u * math.Abs(want[i]) })

	p, err := vkc.NewParam[P](dev, P(-0.75))
	require.NoError(t, err)
	defer p.Close()
	y := upload[T](t, dev, yv)
	require.NoError(t, Axpy(dev.Stream(), ParamOf(p), x, Of(y, 3, 4)))
	got = download(t, y)
	for i := range want {
		want[i] = -0.75*xv[i%4] + yv[i]
	}
	// a*x and the sum each round once in the compute type (each error at
	// most u_c times |a*x| + |y|), the result once more to T.
	within(t, "Axpy", got, want, func(i int) float64 {
		return 2*computeUnit[T]()*(math.Abs(0.75*xv[i%4])+math.Abs(yv[i])) + unit[T]()*math.Abs(want[i])
	})
}

func TestScaleAndAxpyMatchFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkScaleAxpy[float32, float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkScaleAxpy[vkc.Float16, float32](t, dev) })
	t.Run("float64", func(t *testing.T) { checkScaleAxpy[float64, float64](t, dev) })
}

// TestUnaryOfTransposedLongAxisWritesEveryElement: unary, Scale and Axpy
// reading a transposed [2, N] (no fast path), rows too long for one
// group's lanes to cover within a CPU driver's loop budget.
func TestUnaryOfTransposedLongAxisWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	x := Of(constants(t, dev, 2*N, 2), N, 2).T()
	y := fresh[float32](t, dev, 2*N)
	require.NoError(t, Relu(dev.Stream(), x, Of(y, 2, N)))
	requireEvery(t, y, 2)
	require.NoError(t, Scale(dev.Stream(), Const(3), x, Of(y, 2, N)))
	requireEvery(t, y, 6)
	require.NoError(t, Axpy(dev.Stream(), Const(-1), x, Of(y, 2, N)))
	requireEvery(t, y, 4)
}
