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
