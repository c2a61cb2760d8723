package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Softmax along a dynamic axis 0, and LayerNorm and RMSNorm of a dynamic
// vector, captured once, cover only the param's first elements on every
// replay (and Softmax along the rows, their first rows): each column of the first n rows matches float64 over those n
// rows alone, and on the first replay the rows past n, never written,
// read as vkc.ErrUnwritten. x is written in the graph only up to the
// param, so reading its unwritten rows would make the ops skip.
func TestNormsAlongTheDynamicAxisFollowTheParam(t *testing.T) {
	dev := openTest(t)
	const capRows, H = 150, 3 // more rows than a group's lanes
	rng := rand.New(rand.NewPCG(43, 44))
	rows, err := vkc.NewParam[uint32](dev, 40)
	require.NoError(t, err)
	defer rows.Close()
	src := upload[float32](t, dev, make([]float64, capRows*H))
	vsrc := upload[float32](t, dev, make([]float64, capRows))
	x, v := fresh[float32](t, dev, capRows*H), fresh[float32](t, dev, capRows)
	wv, bv := randomValues[float32](rng, capRows, 0.5, 1.5), randomValues[float32](rng, capRows, -1, 1)
	w, b := Of(upload[float32](t, dev, wv), capRows), Of(upload[float32](t, dev, bv), capRows)
	soft, soft1 := fresh[float32](t, dev, capRows*H), fresh[float32](t, dev, capRows)
	softRows := fresh[float32](t, dev, capRows*H)
	layer, rms := fresh[float32](t, dev, capRows), fresh[float32](t, dev, capRows)
	dyn := func(b *vkc.Buffer[float32], shape ...int) Tensor[float32] { return Of(b, shape...).Dynamic(rows) }
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		for _, err := range []error{
			Convert(s, dyn(src, capRows, H), dyn(x, capRows, H)),
			Convert(s, dyn(vsrc, capRows), dyn(v, capRows)),
			Softmax(s, dyn(x, capRows, H), 0, dyn(soft, capRows, H)),
			Softmax(s, dyn(v, capRows), -1, dyn(soft1, capRows)),
			Softmax(s, dyn(x, capRows, H), 1, dyn(softRows, capRows, H)), // along the rows, as before
			LayerNorm(s, dyn(v, capRows), w, b, Const(1e-5), dyn(layer, capRows)),
			RMSNorm(s, dyn(v, capRows), w, Tensor[float32]{}, Const(1e-5), dyn(rms, capRows)),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	const u = 0x1p-24
	for it, n := range []int{40, capRows, 1, 77, capRows - 1} {
		require.NoError(t, rows.Set(uint32(n)))
		xv, vv := randomValues[float32](rng, capRows*H, -4, 4), randomValues[float32](rng, capRows, -4, 4)
		require.NoError(t, src.Write(f32s(xv)))
		require.NoError(t, vsrc.Write(f32s(vv)))
		require.NoError(t, g.Replay())
		first := it == 0
		// Softmax of each column of x's first n rows.
		got := readHead(t, "Softmax along axis 0", soft, n*H, first)
		want := make([]float64, n*H)
		for c := range H {
			col := make([]float64, n)
			for r := range n {
				col[r] = xv[r*H+c]
			}
			ref, _ := softmaxRef(col)
			for r := range n {
				want[r*H+c] = ref[r]
			}
		}
		within(t, "Softmax along axis 0", got, want, func(int) float64 { return (40 + 2*float64(n)) * u })
		got = readHead(t, "Softmax along axis 1", softRows, n*H, first)
		for r := range n {
			ref, _ := softmaxRef(xv[r*H : r*H+H])
			copy(want[r*H:], ref)
		}
		within(t, "Softmax along axis 1", got, want, func(int) float64 { return (40 + 2*H) * u })
		ref, _ := softmaxRef(vv[:n])
		within(t, "Softmax of a vector", readHead(t, "Softmax of a vector", soft1, n, first), ref,
			func(int) float64 { return (40 + 2*float64(n)) * u })
		lw, rw := normRef(vv[:n], true, 1e-5), normRef(vv[:n], false, 1e-5)
		for i := range n {
			lw[i] = lw[i]*wv[i] + bv[i]
			rw[i] *= wv[i]
		}
		tol := func(int) float64 { return (4*float64(n) + 40) * u * 8 }
		within(t, "LayerNorm of a vector", readHead(t, "LayerNorm of a vector", layer, n, first), lw, tol)
		within(t, "RMSNorm of a vector", readHead(t, "RMSNorm of a vector", rms, n, first), rw, tol)
	}
}
