package vkc

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// cachedConstants counts the device copies of constants every slot holds.
func cachedConstants(dev *Device) int {
	n := 0
	for i := range dev.consts {
		c := &dev.consts[i]
		c.mu.Lock()
		n += len(c.entries)
		c.mu.Unlock()
	}
	return n
}

// Each op is one implementation with two doors: its Dyn form given only
// constants and no length param is the static op (the same kernel, push
// constants, no device copy of any constant), and with a param scalar and
// no length it runs the dynamic variant over the whole buffers. All three
// write the same bits.
func TestDynFormWithConstantsIsTheStaticOp(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	ctx := context.Background()
	const rows, cols = 9, 37
	const size = rows * cols
	r := rand.New(rand.NewPCG(3, 4))
	data := func(n int) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(r.IntN(512)-256) / 32
		}
		return xs
	}
	x, y := capBuffer(t, dev, data(size)), capBuffer(t, dev, data(size))
	require.Zero(t, cachedConstants(dev))
	b := capBuffer(t, dev, data(cols*cols))
	a, err := NewParam(dev, float32(1.75))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()

	type form func(s *Stream, out *Buffer[float32]) error
	for _, tc := range []struct {
		name                  string
		outLen                int // 0: size
		static, consts, param form
	}{
		{"Fill", 0,
			func(s *Stream, o *Buffer[float32]) error { return Fill(s, o, 1.75) },
			func(s *Stream, o *Buffer[float32]) error { return FillDyn(s, o, Const[float32](1.75), nil) },
			func(s *Stream, o *Buffer[float32]) error { return FillDyn(s, o, Value[float32](a), nil) }},
		{"Copy", 0,
			func(s *Stream, o *Buffer[float32]) error { return Copy(s, x, o) },
			func(s *Stream, o *Buffer[float32]) error { return CopyDyn(s, x, o, nil) }, nil},
		{"Axpy", 0,
			func(s *Stream, o *Buffer[float32]) error { return Axpy(s, 1.75, x, o) },
			func(s *Stream, o *Buffer[float32]) error { return AxpyDyn(s, Const[float32](1.75), x, o, nil) },
			func(s *Stream, o *Buffer[float32]) error { return AxpyDyn(s, a, x, o, nil) }},
		{"Scale", 0,
			func(s *Stream, o *Buffer[float32]) error { return Scale(s, 1.75, x, o) },
			func(s *Stream, o *Buffer[float32]) error { return ScaleDyn(s, Const[float32](1.75), x, o, nil) },
			func(s *Stream, o *Buffer[float32]) error { return ScaleDyn(s, a, x, o, nil) }},
		{"Add", 0,
			func(s *Stream, o *Buffer[float32]) error { return Add(s, x, y, o) },
			func(s *Stream, o *Buffer[float32]) error { return AddDyn(s, x, y, o, nil) }, nil},
		{"Sub", 0,
			func(s *Stream, o *Buffer[float32]) error { return Sub(s, x, y, o) },
			func(s *Stream, o *Buffer[float32]) error { return SubDyn(s, x, y, o, nil) }, nil},
		{"Mul", 0,
			func(s *Stream, o *Buffer[float32]) error { return Mul(s, x, y, o) },
			func(s *Stream, o *Buffer[float32]) error { return MulDyn(s, x, y, o, nil) }, nil},
		{"Div", 0,
			func(s *Stream, o *Buffer[float32]) error { return Div(s, x, y, o) },
			func(s *Stream, o *Buffer[float32]) error { return DivDyn(s, x, y, o, nil) }, nil},
		{"Sum", 1,
			func(s *Stream, o *Buffer[float32]) error { return Sum(s, x, o) },
			func(s *Stream, o *Buffer[float32]) error { return SumDyn(s, x, o, nil) }, nil},
		{"Dot", 1,
			func(s *Stream, o *Buffer[float32]) error { return Dot(s, x, y, o) },
			func(s *Stream, o *Buffer[float32]) error { return DotDyn(s, x, y, o, nil) }, nil},
		{"Softmax", 0,
			func(s *Stream, o *Buffer[float32]) error { return Softmax(s, x, o, rows, cols) },
			func(s *Stream, o *Buffer[float32]) error { return SoftmaxDyn(s, x, o, nil, cols) }, nil},
		{"Matmul", 0,
			func(s *Stream, o *Buffer[float32]) error { return Matmul(s, x, b, o, rows, cols, cols) },
			func(s *Stream, o *Buffer[float32]) error { return MatmulDyn(s, x, b, o, nil, cols, cols) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := size
			if tc.outLen != 0 {
				n = tc.outLen
			}
			run := func(f form) []float32 {
				out := scratch[float32](t, dev, n)
				require.NoError(t, Fill(s, out, 0.5)) // Axpy reads it
				require.NoError(t, f(s, out))
				got, err := out.ReadOn(ctx, s)
				require.NoError(t, err)
				return got
			}
			want := run(tc.static)
			claims, cached := dev.MemoryStats().LiveClaims, cachedConstants(dev)
			requireSame(t, want, run(tc.consts))
			require.Equal(t, cached, cachedConstants(dev), "constants only: the static kernel, no device copy")
			require.Equal(t, claims+1, dev.MemoryStats().LiveClaims, "nothing but the output buffer was allocated")
			if tc.param != nil {
				requireSame(t, want, run(tc.param))
				// The dynamic kernel reads the length (size, for every op
				// here) from one device copy, made once and reused.
				require.Equal(t, 1, cachedConstants(dev), "a param scalar: the dynamic kernel")
			}
		})
	}
}
