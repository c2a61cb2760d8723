package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// linearLengths are odd and even lengths around the vector widths (4 and
// 8) and a group's share, and linearOffsets offsets of whole eight- and
// four-element vectors and one of neither (the general kernel).
var (
	linearLengths = []int{1, 3, 7, 8, 13, 256, 1003, 4099}
	linearOffsets = []int{0, 8, 4, 3}
)

// kernelsOfLaunch are the kernels fn launches, in order.
func kernelsOfLaunch(t *testing.T, dev *vkc.Device, fn func(s *vkc.Stream) error) []string {
	prof, err := dev.Stream().Profile(fn)
	require.NoError(t, err)
	var names []string
	for _, l := range prof.Launches {
		names = append(names, l.Kernel)
	}
	return names
}

// wantLinear is the kernel an op of family on T whose operands start at
// offset off takes.
func wantLinear[T vkc.Element](dev *vkc.Device, family string, off int) string {
	et := typeOf[T]()
	info := dev.Info()
	switch {
	case off%8 == 0 && et.suffix == "f32" && info.Type == vkc.TypeCPU && info.Features.Has(vkc.FeatureInt64):
		return "ops/" + family + "_lin_wide_f32"
	case off%4 == 0:
		return "ops/" + family + "_lin_" + et.suffix
	}
	return "ops/" + family + "_" + et.suffix
}

// checkLinearBinary runs every binary op on T over contiguous operands of
// one shape, each length and offset, against float64, and checks the
// kernel each takes.
func checkLinearBinary[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range linearLengths {
		av := randomValues[T](rng, n+8, -50, 50)
		bv := randomValues[T](rng, n+8, 1, 9) // no zero divisor, no uint32 wrap below 0 for Sub's tolerance
		ab, bb := upload[T](t, dev, av), upload[T](t, dev, bv)
		for _, off := range linearOffsets {
			a := Strided(ab, off, []int{n}, []int{1})
			b := Strided(bb, off, []int{n}, []int{1})
			for code := binAdd; code <= binMin; code++ {
				ob := fresh[T](t, dev, n+off)
				o := Strided(ob, off, []int{n}, []int{1})
				names := kernelsOfLaunch(t, dev, func(s *vkc.Stream) error { return binaryOf[T](code)(s, a, b, o) })
				require.Equal(t, []string{wantLinear[T](dev, "binary", off)}, names, "n %d offset %d", n, off)
				got := download(t, ob)[off:]
				want := make([]float64, n)
				for i := range want {
					want[i] = binaryRef[T](code, av[off+i], bv[off+i])
				}
				within(t, fmt.Sprintf("op %d n %d offset %d", code, n, off), got, want, func(i int) float64 {
					return 4*computeUnit[T]()*math.Abs(want[i]) + unit[T]()*math.Abs(want[i]) + tiny[T]()
				})
			}
		}
	}
}

func TestLinearBinaryMatchesFloat64(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkLinearBinary[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkLinearBinary[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkLinearBinary[float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkLinearBinary[int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkLinearBinary[uint32](t, dev) })
}

// checkLinearUnary runs the unary ops T takes (cases), Scale and Axpy on
// contiguous operands of one shape, each length and offset, against
// float64, and checks the kernel each takes.
func checkLinearUnary[T vkc.Element](t *testing.T, dev *vkc.Device, cases []unaryCase) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, n := range linearLengths {
		for _, off := range linearOffsets {
			for _, c := range cases {
				xv := randomValues[T](rng, n+off, c.lo, c.hi)
				x := Strided(upload[T](t, dev, xv), off, []int{n}, []int{1})
				yb := fresh[T](t, dev, n+off)
				y := Strided(yb, off, []int{n}, []int{1})
				names := kernelsOfLaunch(t, dev, func(s *vkc.Stream) error { return unaryFn[T](c.name)(s, x, y) })
				require.Equal(t, []string{wantLinear[T](dev, "unary", off)}, names, "%s n %d offset %d", c.name, n, off)
				want := make([]float64, n)
				for i := range want {
					want[i] = c.ref(xv[off+i])
				}
				within(t, fmt.Sprintf("%s n %d offset %d", c.name, n, off), download(t, yb)[off:], want, func(i int) float64 {
					return unaryTolerance[T](c, xv[off+i], want[i])
				})
			}
			xv := randomValues[T](rng, n+off, -3, 3)
			yv := randomValues[T](rng, n+off, -3, 3)
			x := Strided(upload[T](t, dev, xv), off, []int{n}, []int{1})
			yb := upload[T](t, dev, yv)
			y := Strided(yb, off, []int{n}, []int{1})
			names := kernelsOfLaunch(t, dev, func(s *vkc.Stream) error { return Axpy(s, Const(-0.75), x, y) })
			require.Equal(t, []string{wantLinear[T](dev, "axpy", off)}, names, "Axpy n %d offset %d", n, off)
			want := make([]float64, n)
			for i := range want {
				want[i] = -0.75*xv[off+i] + yv[off+i]
			}
			within(t, fmt.Sprintf("Axpy n %d offset %d", n, off), download(t, yb)[off:], want, func(i int) float64 {
				return 2*computeUnit[T]()*(math.Abs(0.75*xv[off+i])+math.Abs(yv[off+i])) + unit[T]()*math.Abs(want[i])
			})
			require.NoError(t, Scale(dev.Stream(), Const(1.5), x, y))
			for i := range want {
				want[i] = 1.5 * xv[off+i]
			}
			within(t, fmt.Sprintf("Scale n %d offset %d", n, off), download(t, yb)[off:], want, func(i int) float64 {
				return (computeUnit[T]() + unit[T]()) * math.Abs(want[i])
			})
		}
	}
}

func TestLinearUnaryMatchesFloat64(t *testing.T) {
	dev := openTest(t)
	var sqrtRelu []unaryCase
	for _, c := range unaryCases {
		if c.name == "Sqrt" || c.name == "Relu" {
			sqrtRelu = append(sqrtRelu, c)
		}
	}
	t.Run("float32", func(t *testing.T) { checkLinearUnary[float32](t, dev, unaryCases) })
	t.Run("Float16", func(t *testing.T) { checkLinearUnary[vkc.Float16](t, dev, unaryCases) })
	t.Run("float64", func(t *testing.T) { checkLinearUnary[float64](t, dev, sqrtRelu) })
}

// The fast path with dynamic rows: contiguous [rows, 3] operands follow
// the param on every replay (rows of 3 elements: a group's rows make
// whole vectors), and rows past it keep what they held.
func TestLinearDynamicRowsFollowTheParam(t *testing.T) {
	dev := openTest(t)
	const capRows, C = 4099, 3
	rng := rand.New(rand.NewPCG(35, 36))
	rows, err := vkc.NewParam[uint32](dev, capRows)
	require.NoError(t, err)
	defer rows.Close()
	xv := randomValues[float32](rng, capRows*C, -3, 3)
	bv := randomValues[float32](rng, capRows*C, -3, 3)
	x := Of(upload[float32](t, dev, xv), capRows, C).Dynamic(rows)
	b := Of(upload[float32](t, dev, bv), capRows, C).Dynamic(rows)
	addB := upload[float32](t, dev, make([]float64, capRows*C))
	reluB := upload[float32](t, dev, make([]float64, capRows*C))
	axpyB := upload[float32](t, dev, make([]float64, capRows*C))
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		return errors.Join(
			Add(s, x, b, Of(addB, capRows, C).Dynamic(rows)),
			Relu(s, x, Of(reluB, capRows, C).Dynamic(rows)),
			Axpy(s, Const(2), x, Of(axpyB, capRows, C).Dynamic(rows)))
	})
	require.NoError(t, err)
	defer g.Close()
	axpyWant := make([]float64, capRows*C) // the capture ran the work once, over every row
	for i := range axpyWant {
		axpyWant[i] = float64(float32(2 * xv[i]))
	}
	for _, n := range []int{5, 1, 4099, 1000, 2} {
		require.NoError(t, rows.Set(uint32(n)))
		require.NoError(t, g.Replay())
		for i := range n * C {
			axpyWant[i] = float64(float32(2*xv[i] + axpyWant[i]))
		}
		gotAdd, gotRelu, gotAxpy := download(t, addB), download(t, reluB), download(t, axpyB)
		for i := range capRows * C {
			require.InDelta(t, axpyWant[i], gotAxpy[i], 1e-5*(1+math.Abs(axpyWant[i])), "Axpy n %d element %d", n, i)
			if i >= n*C {
				continue
			}
			require.InDelta(t, xv[i]+bv[i], gotAdd[i], 1e-6*(1+math.Abs(xv[i]+bv[i])), "Add n %d element %d", n, i)
			require.Equal(t, math.Max(xv[i], 0), gotRelu[i], "Relu n %d element %d", n, i)
		}
	}
}

// In place on a view the device binds through a copy (its byte offset not
// a multiple of MinStorageBufferOffsetAlignment) is refused with an error
// wrapping vkc.ErrOverlap that names the alignment and leaves the view as
// it was; the same view as the input alone, and in place on an aligned
// view, work.
func TestInPlaceOnAnUnalignedView(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	align := int(dev.Info().Limits.MinStorageBufferOffsetAlignment)
	if align <= 4 {
		t.Skipf("the device binds views at any 4-byte offset (alignment %d)", align)
	}
	const n = 40
	vals := make([]float64, 3*n)
	for i := range vals {
		vals[i] = float64(i%7) - 3
	}
	b := upload[float32](t, dev, vals)
	u, err := b.View(1, n)
	require.NoError(t, err)
	defer u.Close()
	yb := fresh[float32](t, dev, n)
	require.NoError(t, Relu(s, Of(u, n), Of(yb, n)), "the unaligned view as the input alone")
	want := make([]float64, n)
	for i := range want {
		want[i] = math.Max(vals[1+i], 0)
	}
	require.Equal(t, want, download(t, yb))
	for _, off := range []int{1, align / 4} {
		v, err := b.View(off, n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = v.Close() })
		x := Of(v, 4, n/4)
		errs := map[string]error{
			"Relu":    Relu(s, x, x),
			"Add":     Add(s, x, x, x),
			"Axpy":    Axpy(s, Const(2), x, x),
			"Softmax": Softmax(s, x, 1, x),
			"RMSNorm": RMSNorm(s, x, Tensor[float32]{}, Tensor[float32]{}, Const(1e-5), x),
		}
		for name, err := range errs {
			if off*4%align == 0 {
				require.NoError(t, err, "%s in place at element %d", name, off)
				continue
			}
			require.ErrorIs(t, err, vkc.ErrOverlap, "%s in place at element %d", name, off)
			require.ErrorContains(t, err, "MinStorageBufferOffsetAlignment", name)
			require.ErrorContains(t, err, "vkc: "+name+": in place", name)
		}
		if off*4%align != 0 {
			require.Equal(t, vals[off:off+n], download(t, v), "the refused ops wrote nothing")
		}
	}
}
