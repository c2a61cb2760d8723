package ops

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// A captured graph of element-wise and row-wise ops over dynamic tensors
// follows the rows param on every replay: the first n rows hold the ops'
// results on the inputs of that replay, the rows past n keep what they
// held, for n going up and down.
func TestDynamicRowsFollowTheParamOnReplay(t *testing.T) {
	dev := openTest(t)
	const capRows, C, V = 6, 5, 4
	rng := rand.New(rand.NewPCG(19, 20))
	rows, err := vkc.NewParam[uint32](dev, capRows)
	require.NoError(t, err)
	defer rows.Close()
	alpha, err := vkc.NewParam[float32](dev, 2)
	require.NoError(t, err)
	defer alpha.Close()

	xb := upload[float32](t, dev, randomValues[float32](rng, capRows*C, -3, 3))
	bias := randomValues[float32](rng, C, -1, 1)
	tv := randomValues[float32](rng, V*C, -5, 5)
	x := Of(xb, capRows, C).Dynamic(rows)
	b := Of(upload[float32](t, dev, bias), C)
	idxb := upload[uint32](t, dev, make([]float64, capRows))
	idx := Of(idxb, capRows).Dynamic(rows)
	table := Of(upload[float32](t, dev, tv), V, C)

	type result struct {
		name string
		buf  *vkc.Buffer[float32]
		ref  func(x []float64, idx []float64, r, c int) float64
		tol  float64
	}
	var outs []result
	out := func(name string, tol float64, ref func(x, idx []float64, r, c int) float64) Tensor[float32] {
		ob := upload[float32](t, dev, make([]float64, capRows*C)) // written: rows past n read back
		outs = append(outs, result{name, ob, ref, tol})
		return Of(ob, capRows, C).Dynamic(rows)
	}
	u := 0x1p-24
	yAdd := out("Add", 2*u*8, func(x, _ []float64, r, c int) float64 { return x[r*C+c] + bias[c] })
	yGelu := out("Gelu", (64+16*3)*u*4, func(x, _ []float64, r, c int) float64 { return geluTanh(x[r*C+c]) })
	yScale := out("Scale", 2*u*8, func(x, _ []float64, r, c int) float64 { return 2 * x[r*C+c] })
	ySoft := out("Softmax", 200*u, func(x, _ []float64, r, c int) float64 {
		ref, _ := softmaxRef(x[r*C : r*C+C])
		return ref[c]
	})
	yNorm := out("RMSNorm", 64*u*4, func(x, _ []float64, r, c int) float64 { return normRef(x[r*C:r*C+C], false, 1e-5)[c] })
	yGather := out("Gather", 0, func(_, idx []float64, r, c int) float64 { return tv[int(idx[r])*C+c] })
	yLayer := out("LayerNorm", 64*u*4+2*u, func(x, _ []float64, r, c int) float64 {
		return normRef(x[r*C:r*C+C], true, 1e-5)[c]*2 + bias[c]
	})
	yAxpy := out("Axpy", 2*u*8, func(x, _ []float64, r, c int) float64 { return 2 * x[r*C+c] })
	two := Of(upload[float32](t, dev, []float64{2, 2, 2, 2, 2}), C)
	halves := upload[vkc.Float16](t, dev, make([]float64, capRows*C))
	yHalf := Of(halves, capRows, C).Dynamic(rows)

	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		for _, err := range []error{
			Add(s, x, b, yAdd),
			Gelu(s, x, yGelu),
			Scale(s, ParamOf(alpha), x, yScale),
			Softmax(s, x, -1, ySoft),
			RMSNorm(s, x, Tensor[float32]{}, Tensor[float32]{}, Const(1e-5), yNorm),
			Gather(s, table, idx, yGather),
			LayerNorm(s, x, two, b, Const(1e-5), yLayer),
			Scale(s, Const(0), x, yAxpy),
			Axpy(s, ParamOf(alpha), x, yAxpy),
			Convert(s, x, yHalf),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	defer g.Close()

	for _, n := range []int{2, 6, 1, 4, 3} {
		before := make([][]float64, len(outs))
		for i, o := range outs {
			before[i] = download(t, o.buf)
		}
		require.NoError(t, rows.Set(uint32(n)))
		xv := randomValues[float32](rng, capRows*C, -3, 3)
		iv := make([]float64, capRows)
		for i := range iv {
			iv[i] = float64(rng.IntN(V))
		}
		require.NoError(t, xb.Write(f32s(xv)))
		require.NoError(t, idxb.Write(u32s(iv)))
		require.NoError(t, g.Replay())
		halfBefore := download(t, halves)
		for i, o := range outs {
			got := download(t, o.buf)
			for r := range capRows {
				for c := range C {
					at := r*C + c
					if r >= n {
						require.Equal(t, before[i][at], got[at], "%s: row %d past n=%d was written", o.name, r, n)
						continue
					}
					want := o.ref(xv, iv, r, c)
					require.LessOrEqual(t, math.Abs(got[at]-want), o.tol, "%s: row %d col %d with n=%d: got %v, want %v", o.name, r, c, n, got[at], want)
				}
			}
		}
		half := download(t, halves)
		for at := range half {
			want := halfBefore[at]
			if at < n*C {
				want = toFloat(fromFloat[vkc.Float16](xv[at]))
			}
			require.Equal(t, want, half[at], "Convert: element %d with n=%d", at, n)
		}
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func u32s(v []float64) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// Dynamic ops mark written only the rows the param covers: a fresh
// output reads back its first n rows and, past them, ErrUnwritten; a
// second op reading those rows of it runs, rather than being skipped for
// the rows no one wrote.
func TestDynamicOpsMarkOnlyTheirRowsWritten(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	const capRows, C = 8, 3
	rows, err := vkc.NewParam[uint32](dev, 3)
	require.NoError(t, err)
	defer rows.Close()
	xv := make([]float64, capRows*C)
	for i := range xv {
		xv[i] = float64(i) - 10
	}
	x := Of(upload[float32](t, dev, xv), capRows, C).Dynamic(rows)
	mid := fresh[float32](t, dev, capRows*C)
	out := fresh[float32](t, dev, capRows*C)
	require.NoError(t, Relu(s, x, Of(mid, capRows, C).Dynamic(rows)))
	require.NoError(t, Scale(s, Const(2), Of(mid, capRows, C).Dynamic(rows), Of(out, capRows, C).Dynamic(rows)))
	head, err := out.View(0, 3*C)
	require.NoError(t, err)
	defer head.Close()
	got := download(t, head)
	for i, v := range got {
		require.Equal(t, 2*math.Max(xv[i], 0), v, "element %d", i)
	}
	_, err = out.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten, "rows past the param were never written")
}

// A dynamic output whose first rows do not lie in a prefix of its buffer
// (not from offset 0, rows longer than axis 0's stride, or a buffer short
// of its last row's stride) is refused as unsupported, writing nothing,
// since its launch could not mark written only the rows it wrote. A
// dynamic input laid out so is read whole.
func TestDynamicOutputsOutsideAPrefixAreRefused(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	const capRows, C = 8, 3
	rows, err := vkc.NewParam[uint32](dev, 3)
	require.NoError(t, err)
	defer rows.Close()
	xv := make([]float64, capRows*C)
	for i := range xv {
		xv[i] = float64(i) - 10
	}
	x := Of(upload[float32](t, dev, xv), capRows, C).Dynamic(rows)
	idx := Of(upload[int32](t, dev, []float64{0, 1, 2, 0, 1, 2, 0, 1}), capRows).Dynamic(rows)
	table := Of(upload[float32](t, dev, xv[:3*C]), 3, C)
	wide := fresh[float32](t, dev, capRows*(C+1))
	cols := fresh[float32](t, dev, C*capRows)
	short := fresh[float32](t, dev, capRows*(C+1)-1)
	outs := map[string]Tensor[float32]{
		"a Slice along axis 1":     Of(wide, capRows, C+1).Slice(1, 1, C+1).Dynamic(rows),
		"a T":                      Of(cols, C, capRows).T().Dynamic(rows),
		"rows past a short buffer": Strided(short, 0, []int{capRows, C}, []int{C + 1, 1}).Dynamic(rows),
		"an offset Strided":        Strided(wide, 1, []int{capRows, C}, []int{C + 1, 1}).Dynamic(rows),
	}
	for name, out := range outs {
		require.NoError(t, out.Err(), name)
		runs := map[string]error{
			"Relu":      Relu(s, x, out),
			"Add":       Add(s, x, x, out),
			"Transpose": Transpose(s, x, out),
			"Softmax":   Softmax(s, x, -1, out),
			"Gather":    Gather(s, table, idx, out),
		}
		for op, err := range runs {
			require.ErrorIs(t, err, vkc.ErrUnsupported, "%s into %s", op, name)
			require.ErrorContains(t, err, op, "%s into %s", op, name)
		}
	}
	for _, b := range []*vkc.Buffer[float32]{wide, cols, short} {
		_, err := b.Read(context.Background())
		require.ErrorIs(t, err, vkc.ErrUnwritten, "a refused op writes nothing")
	}
	// A dynamic input of such a layout is read whole.
	in := Of(upload[float32](t, dev, xv), C, capRows).T().Dynamic(rows)
	out := fresh[float32](t, dev, capRows*C)
	require.NoError(t, Relu(s, in, Of(out, capRows, C).Dynamic(rows)))
	head, err := out.View(0, 3*C)
	require.NoError(t, err)
	defer head.Close()
	got := download(t, head)
	for i, v := range got {
		r, c := i/C, i%C
		require.Equal(t, math.Max(xv[c*capRows+r], 0), v, "element %d", i)
	}
}
