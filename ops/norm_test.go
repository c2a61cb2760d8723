package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// rowsOf lists x's rows along its last axis (x row-major).
func rowsOf(x []float64, C int) [][]float64 {
	var out [][]float64
	for i := 0; i < len(x); i += C {
		out = append(out, x[i:i+C])
	}
	return out
}

// softmaxRef is the softmax of a row in float64, and the largest |x - max|.
func softmaxRef(row []float64) ([]float64, float64) {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	s, spread := 0.0, 0.0
	for _, v := range row {
		s += math.Exp(v - m)
		spread = math.Max(spread, m-v)
	}
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = math.Exp(v-m) / s
	}
	return out, spread
}

// normRef is LayerNorm (center) or RMSNorm of a row in float64, before
// weight and bias.
func normRef(row []float64, center bool, eps float64) []float64 {
	m := 0.0
	if center {
		for _, v := range row {
			m += v
		}
		m /= float64(len(row))
	}
	ss := 0.0
	for _, v := range row {
		ss += (v - m) * (v - m)
	}
	inv := 1 / math.Sqrt(ss/float64(len(row))+eps)
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = (v - m) * inv
	}
	return out
}

// checkSoftmax runs Softmax on T along axis 1 of a [3, 70, 2] tensor
// (strided rows) into a never-written output.
func checkSoftmax[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(13, 14))
	v := randomValues[T](rng, 3*70*2, -6, 6)
	x := Of(upload[T](t, dev, v), 3, 70, 2)
	yb := fresh[T](t, dev, len(v))
	require.NoError(t, Softmax(dev.Stream(), x, 1, Of(yb, 3, 70, 2)))
	got := download(t, yb)
	want := make([]float64, len(v))
	tol := make([]float64, len(v))
	uc, ut := computeUnit[T](), unit[T]()
	for a := range 3 {
		for c := range 2 {
			row := make([]float64, 70)
			for k := range row {
				row[k] = v[a*140+k*2+c]
			}
			ref, spread := softmaxRef(row)
			for k, r := range ref {
				i := a*140 + k*2 + c
				want[i] = r
				// Each exponential within 3 + 2|x - max| ULP (2u each), the
				// sum of 70 within 70u, the division 2.5 ULP: relative.
				tol[i] = ((6+4*spread)*2+70+5)*uc*r + ut*r + tiny[T]()
			}
		}
	}
	within(t, "Softmax", got, want, func(i int) float64 { return tol[i] })
}

func TestSoftmaxMatchesFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkSoftmax[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkSoftmax[vkc.Float16](t, dev) })
}

// checkNorms runs LayerNorm and RMSNorm on T over rows of 100 with a
// strided weight and, for LayerNorm, a bias, in place and not.
func checkNorms[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(15, 16))
	const rows, C = 4, 100
	v := randomValues[T](rng, rows*C, -2, 3)
	wv := randomValues[T](rng, 2*C, 0.5, 2)
	bv := randomValues[T](rng, C, -1, 1)
	w := Strided(upload[T](t, dev, wv), 1, []int{C}, []int{2}) // every other element
	b := Of(upload[T](t, dev, bv))
	uc, ut := computeUnit[T](), unit[T]()
	for _, center := range []bool{true, false} {
		name, fn, bias := "LayerNorm", LayerNorm[T], b
		if !center {
			name, fn, bias = "RMSNorm", RMSNorm[T], Tensor[T]{}
		}
		xb := upload[T](t, dev, v)
		yb := xb // in place
		if center {
			yb = fresh[T](t, dev, rows*C)
		}
		require.NoError(t, fn(dev.Stream(), Of(xb, rows, C), w, bias, Const(1e-5), Of(yb, rows, C)))
		got := download(t, yb)
		var want, tol []float64
		for _, row := range rowsOf(v, C) {
			z := normRef(row, center, 1e-5)
			for k, zk := range z {
				wk, bk := wv[1+2*k], 0.0
				if center {
					bk = bv[k]
				}
				r := zk*wk + bk
				want = append(want, r)
				// Sums of C terms (relative C*u each), inversesqrt (2 ULP),
				// the products and the sum with the bias.
				tol = append(tol, (4*C+16)*uc*(1+math.Abs(zk))*wk+uc*math.Abs(bk)+ut*math.Abs(r)+tiny[T]())
			}
		}
		within(t, name, got, want, func(i int) float64 { return tol[i] })
	}
}

func TestNormsMatchFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkNorms[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkNorms[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkNorms[float64](t, dev) })
}

// An epsilon given as a param is read when the work runs: a graph
// follows its Set.
func TestNormEpsilonParam(t *testing.T) {
	dev := openTest(t)
	eps, err := vkc.NewParam[float32](dev, 0)
	require.NoError(t, err)
	defer eps.Close()
	v := []float64{0.001, -0.002, 0.003, 0.0005}
	x := Of(upload[float32](t, dev, v), 1, 4)
	yb := fresh[float32](t, dev, 4)
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		return RMSNorm(s, x, Tensor[float32]{}, Tensor[float32]{}, ParamOf(eps), Of(yb, 1, 4))
	})
	require.NoError(t, err)
	defer g.Close()
	for _, e := range []float64{0, 1e-5, 1} {
		require.NoError(t, eps.Set(float32(e)))
		require.NoError(t, g.Replay())
		want := normRef(v, false, float64(float32(e)))
		within(t, "RMSNorm", download(t, yb), want, func(i int) float64 { return 32 * 0x1p-24 * (1 + math.Abs(want[i])) })
	}
}

// checkShortRows runs Softmax (not for float64), LayerNorm and RMSNorm
// on T over [rows, C] for each shape, with a weight and a bias, into
// outputs that start as 7 (a row left unwritten shows), against float64.
func checkShortRows[T vkc.Element](t *testing.T, dev *vkc.Device, shapes [][2]int) {
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(17, 18))
	uc, ut := computeUnit[T](), unit[T]()
	ops := []string{"Softmax", "LayerNorm", "RMSNorm"}
	if typeOf[T]().suffix == "f64" {
		ops = ops[1:]
	}
	for _, sh := range shapes {
		rows, C := sh[0], sh[1]
		v := randomValues[T](rng, rows*C, -3, 3)
		wv := randomValues[T](rng, C, 0.5, 2)
		bv := randomValues[T](rng, C, -1, 1)
		w, b := Of(upload[T](t, dev, wv)), Of(upload[T](t, dev, bv))
		x := Of(upload[T](t, dev, v), rows, C)
		sentinel := make([]float64, rows*C)
		for i := range sentinel {
			sentinel[i] = 7
		}
		eps := toFloat(fromFloat[T](1e-5))
		if typeOf[T]().suffix != "f64" {
			eps = float64(float32(1e-5))
		}
		for _, op := range ops {
			yb := upload[T](t, dev, sentinel)
			y := Of(yb, rows, C)
			var err error
			switch op {
			case "Softmax":
				err = Softmax(s, x, 1, y)
			case "LayerNorm":
				err = LayerNorm(s, x, w, b, Const(1e-5), y)
			default:
				err = RMSNorm(s, x, w, b, Const(1e-5), y)
			}
			require.NoError(t, err, "%s [%d, %d]", op, rows, C)
			var want, tol []float64
			for _, row := range rowsOf(v, C) {
				if op == "Softmax" {
					ref, _ := softmaxRef(row)
					for _, r := range ref {
						want = append(want, r)
						tol = append(tol, 64*uc*r+ut*r+tiny[T]())
					}
					continue
				}
				// x - mean is within u|x| of the exact difference, which
				// the division by a standard deviation as small as
				// sqrt(eps) magnifies.
				inv := 1 / math.Sqrt(1e-5)
				for k, z := range normRef(row, op == "LayerNorm", eps) {
					r := z*wv[k] + bv[k]
					want = append(want, r)
					tol = append(tol, 64*uc*(1+math.Abs(z)*wv[k]+math.Abs(bv[k])+3*inv*wv[k])+ut*math.Abs(r)+tiny[T]())
				}
			}
			within(t, fmt.Sprintf("%s [%d, %d]", op, rows, C), download(t, yb), want, func(i int) float64 { return tol[i] })
		}
	}
}

// Many short rows: the row kernel gives each lane whole rows, and a
// group's share stays within the loop iterations a CPU driver runs an
// invocation (loopBudget). Each shape's rows straddle the counts at which
// one group a row, 4096 rows a group, ran out of them on lavapipe
// (Softmax from row 2427, RMSNorm from 3277); 17 columns take a group a
// row.
func TestRowOpsOnManyShortRows(t *testing.T) {
	dev := openTest(t)
	var shapes [][2]int
	for _, rows := range []int{2426, 2427, 2428, 3276, 3277, 3278, 5000, 65537} {
		for _, C := range []int{1, 2, 3} {
			shapes = append(shapes, [2]int{rows, C})
		}
	}
	shapes = append(shapes, [2]int{5000, 17}, [2]int{65537, 17})
	few := [][2]int{{5000, 1}, {3277, 3}, {300, 16}, {300, 17}}
	t.Run("float32", func(t *testing.T) { checkShortRows[float32](t, dev, shapes) })
	t.Run("Float16", func(t *testing.T) { checkShortRows[vkc.Float16](t, dev, few) })
	t.Run("float64", func(t *testing.T) { checkShortRows[float64](t, dev, few) })
}

// Along a dynamic axis 0 with many rows to each of its indices, a group
// takes every row of one index: 4096 rows of 32, more than a group a row
// keeps within loopBudget (RMSNorm failed from row 3120 on lavapipe), go
// a lane a row. Rows past the param's value keep what they held.
func TestRowOpsOnADynamicAxisOfManyRows(t *testing.T) {
	dev := openTest(t)
	const L, R, C = 2, 4096, 32
	rows, err := vkc.NewParam[uint32](dev, 1)
	require.NoError(t, err)
	defer rows.Close()
	rng := rand.New(rand.NewPCG(19, 20))
	xs := randomValues[float32](rng, L*R*C, -3, 3)
	x := Of(upload[float32](t, dev, xs), L, R, C).Dynamic(rows)
	for _, op := range []string{"Softmax", "RMSNorm"} {
		yb := upload[float32](t, dev, make([]float64, L*R*C))
		y := Of(yb, L, R, C).Dynamic(rows)
		if op == "Softmax" {
			require.NoError(t, Softmax(dev.Stream(), x, -1, y))
		} else {
			require.NoError(t, RMSNorm(dev.Stream(), x, Tensor[float32]{}, Tensor[float32]{}, Const(1e-5), y))
		}
		want := make([]float64, L*R*C)
		for r, row := range rowsOf(xs[:R*C], C) {
			ref := normRef(row, false, float64(float32(1e-5)))
			if op == "Softmax" {
				ref, _ = softmaxRef(row)
			}
			copy(want[r*C:], ref)
		}
		within(t, op, download(t, yb), want, func(i int) float64 { return 64 * 0x1p-24 * (1 + math.Abs(want[i])) })
	}
}

// TestRowOpsAlongLongRowNormaliseOrRefuse: a group takes a row whole, a
// lane making three passes over its share, so a row of some 1.4 million
// elements runs past a CPU driver's loop budget: the ops must then
// refuse, not write a short row's result.
func TestRowOpsAlongLongRowNormaliseOrRefuse(t *testing.T) {
	dev := openTest(t)
	const C = 1 << 21
	x := Of(constants(t, dev, C, 1), 1, C)
	y := fresh[float32](t, dev, C)
	if !refusedOnCPU(t, dev, Softmax(dev.Stream(), x, -1, Of(y, 1, C))) {
		requireEvery(t, y, 1.0/C)
	}
	if !refusedOnCPU(t, dev, RMSNorm(dev.Stream(), x, Tensor[float32]{}, Tensor[float32]{}, Const(0), Of(y, 1, C))) {
		requireEvery(t, y, 1)
	}
	if !refusedOnCPU(t, dev, LayerNorm(dev.Stream(), x, Tensor[float32]{}, Tensor[float32]{}, Const(0), Of(y, 1, C))) {
		requireEvery(t, y, 0)
	}
}
