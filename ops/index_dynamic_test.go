package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// ScatterAdd of a dynamic src and idx, captured once, adds only the
// param's first rows on every replay, matching float64; src is written in
// the graph only up to the param, so reading its unwritten rows would
// make the op skip. Indices outside the output's rows add nowhere.
func TestScatterAddOfDynamicRowsFollowsTheParam(t *testing.T) {
	dev := openTest(t)
	for _, shape := range [][3]int{{7, 4, 5}, {300, 3, 70}} { // N, V, D: fewer rows than groups, and more
		N, V, D := shape[0], shape[1], shape[2]
		rng := rand.New(rand.NewPCG(45, uint64(N)))
		rows, err := vkc.NewParam[uint32](dev, uint32(N/2))
		require.NoError(t, err)
		defer rows.Close()
		srcUp := upload[float32](t, dev, make([]float64, N*D))
		src := fresh[float32](t, dev, N*D)
		idxb := upload[int32](t, dev, make([]float64, N))
		out := upload[float32](t, dev, make([]float64, V*D))
		g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
			if err := Convert(s, Of(srcUp, N, D).Dynamic(rows), Of(src, N, D).Dynamic(rows)); err != nil {
				return err
			}
			return ScatterAdd(s, Of(src, N, D).Dynamic(rows), Of(idxb, N).Dynamic(rows), Of(out, V, D))
		})
		require.NoError(t, err)
		defer g.Close()
		for _, n := range []int{N / 2, N, 1, N - 1} {
			require.NoError(t, rows.Set(uint32(n)))
			sv := randomValues[float32](rng, N*D, -3, 3)
			iv := make([]float64, N)
			for i := range iv {
				iv[i] = float64(rng.IntN(V+2) - 1) // -1 and V add nowhere
			}
			base := randomValues[float32](rng, V*D, -3, 3)
			require.NoError(t, srcUp.Write(f32s(sv)))
			require.NoError(t, idxb.Write(typedValues[int32](iv)))
			require.NoError(t, out.Write(f32s(base)))
			require.NoError(t, g.Replay())
			want, mag := append([]float64(nil), base...), make([]float64, V*D)
			for i := range n {
				v := int(iv[i])
				if v < 0 || v >= V {
					continue
				}
				for c := range D {
					want[v*D+c] += sv[i*D+c]
					mag[v*D+c] += math.Abs(sv[i*D+c])
				}
			}
			within(t, "ScatterAdd", download(t, out), want, func(i int) float64 {
				return float64(n+1) * 0x1p-24 * (mag[i] + math.Abs(base[i]))
			})
		}
	}
}
