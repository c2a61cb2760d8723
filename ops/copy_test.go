package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Transpose materialises a permutation of a 3-D tensor, for every type,
// bit for bit.
func checkTranspose[T vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(7, 8))
	v := randomValues[T](rng, 2*3*4, -50, 50)
	src := Of(upload[T](t, dev, v), 2, 3, 4).Permute(2, 0, 1) // [4, 2, 3]
	db := fresh[T](t, dev, 24)
	require.NoError(t, Transpose(dev.Stream(), src, Of(db, 4, 2, 3)))
	require.Equal(t, gatherLayout(v, src.at), download(t, db))
}

func TestTransposeCopiesEveryLayoutExactly(t *testing.T) {
	dev := openTest(t)
	t.Run("float32", func(t *testing.T) { checkTranspose[float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkTranspose[vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkTranspose[float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkTranspose[int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkTranspose[uint32](t, dev) })
}

// convertRef is Convert's rule in float64 for a value of S going to D.
func convertRef[D vkc.Element](v float64) float64 {
	d := typeOf[D]()
	switch {
	case d.float:
		if d.suffix == "f16" {
			return toFloat(fromFloat[D](float64(float32(v)))) // through float32
		}
		return toFloat(fromFloat[D](v))
	case math.IsNaN(v):
		return 0
	case d.name == "int32":
		return math.Max(math.MinInt32, math.Min(math.MaxInt32, math.Trunc(v)))
	}
	return math.Max(0, math.Min(math.MaxUint32, math.Trunc(v)))
}

// checkConvert converts values of S, among them some past D's range,
// into D.
func checkConvert[S, D vkc.Element](t *testing.T, dev *vkc.Device) {
	rng := rand.New(rand.NewPCG(9, 10))
	lo := -1e3
	if typeOf[S]().name == "uint32" {
		lo = 0
	}
	v := randomValues[S](rng, 16, lo, 1e3)
	if typeOf[S]().float {
		v[0], v[1] = toFloat(fromFloat[S](-0.75)), toFloat(fromFloat[S](2.5))
		if typeOf[S]().suffix != "f16" {
			v[2], v[3] = -5e9, 5e9 // saturate
		}
	}
	db := fresh[D](t, dev, 16)
	require.NoError(t, Convert(dev.Stream(), Of(upload[S](t, dev, v)), Of(db)))
	got := download(t, db)
	for i := range v {
		want := convertRef[D](v[i])
		if !typeOf[S]().float && !typeOf[D]().float {
			want = toFloat(fromFloat[D](v[i])) // integers keep their bits
		}
		require.Equal(t, want, got[i], "%s -> %s of %v", typeOf[S]().name, typeOf[D]().name, v[i])
	}
}

func TestConvertBetweenEveryPair(t *testing.T) {
	dev := openTest(t)
	each := func(name string, f func(*testing.T)) { t.Run(name, f) }
	each("float32", func(t *testing.T) { convertFrom[float32](t, dev) })
	each("Float16", func(t *testing.T) { convertFrom[vkc.Float16](t, dev) })
	each("float64", func(t *testing.T) { convertFrom[float64](t, dev) })
	each("int32", func(t *testing.T) { convertFrom[int32](t, dev) })
	each("uint32", func(t *testing.T) { convertFrom[uint32](t, dev) })
}

func convertFrom[S vkc.Element](t *testing.T, dev *vkc.Device) {
	t.Run("float32", func(t *testing.T) { checkConvert[S, float32](t, dev) })
	t.Run("Float16", func(t *testing.T) { checkConvert[S, vkc.Float16](t, dev) })
	t.Run("float64", func(t *testing.T) { checkConvert[S, float64](t, dev) })
	t.Run("int32", func(t *testing.T) { checkConvert[S, int32](t, dev) })
	t.Run("uint32", func(t *testing.T) { checkConvert[S, uint32](t, dev) })
}

// TestCopyOfTransposedLongAxisWritesEveryElement: Copy, Transpose and
// Convert of a transposed [2, N], rows too long for one group's lanes to
// cover within a CPU driver's loop budget.
func TestCopyOfTransposedLongAxisWritesEveryElement(t *testing.T) {
	dev := openTest(t)
	const N = overBudget / 2
	src := Of(constants(t, dev, 2*N, 3), N, 2).T()
	dst := fresh[float32](t, dev, 2*N)
	require.NoError(t, Copy(dev.Stream(), src, Of(dst, 2, N)))
	requireEvery(t, dst, 3)
	back := fresh[float32](t, dev, 2*N)
	require.NoError(t, Transpose(dev.Stream(), Of(dst, 2, N).T(), Of(back, N, 2)))
	requireEvery(t, back, 3)
	ints := fresh[int32](t, dev, 2*N)
	require.NoError(t, Convert(dev.Stream(), src, Of(ints, 2, N)))
	requireEvery(t, ints, 3)
}
