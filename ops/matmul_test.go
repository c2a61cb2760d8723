package ops

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// openMatmulDevice opens the default device with validation on and its
// pipeline cache (and so the tuner's file) in a temporary directory, and
// at cleanup closes it, failing the test on any validation message.
func openMatmulDevice(t testing.TB) *vkc.Device {
	t.Helper()
	dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithPipelineCache(t.TempDir()))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "validation messages: %q", recent)
	})
	return dev
}

// elemEps is the unit roundoff of T's stored values and of its sums.
func elemEps[T vkc.Float]() (stored, acc float64) {
	switch mmElemOf[T]() {
	case elemF16:
		return 0x1p-11, 0x1p-24
	case elemF64:
		return 0x1p-53, 0x1p-53
	}
	return 0x1p-24, 0x1p-24
}

// toElem and fromElem convert between float64 and T.
func toElem[T vkc.Float](x float64) T {
	var out T
	switch p := any(&out).(type) {
	case *float32:
		*p = float32(x)
	case *float64:
		*p = x
	case *vkc.Float16:
		*p = vkc.Float16From(float32(x))
	}
	return out
}

func fromElem[T vkc.Float](x T) float64 {
	switch v := any(x).(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case vkc.Float16:
		return float64(v.Float32())
	}
	return math.NaN()
}

// hostTensor is a tensor's elements on the host, as float64, addressed
// through the same layout as the device's.
type hostTensor struct {
	data []float64
	at   layout
}

func (h hostTensor) at2(batch []int, i, j int) float64 {
	r := len(h.at.shape)
	idx := h.at.offset + i*h.at.strides[r-2] + j*h.at.strides[r-1]
	lead := len(batch) - (r - 2)
	for ax := 0; ax < r-2; ax++ {
		if h.at.shape[ax] > 1 {
			idx += batch[lead+ax] * h.at.strides[ax]
		}
	}
	return h.data[idx]
}

// activate64 is the activation in float64, the reference's.
func activate64(act Activation, x float64) float64 {
	switch act {
	case ActRelu:
		return math.Max(x, 0)
	case ActGelu:
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	case ActSilu:
		return x / (1 + math.Exp(-x))
	}
	return x
}

// referenceMatmul is act(A·B + bias) in float64 over C's shape, with the
// bound Σ|a||b| + |bias| of each element (for the tolerance).
func referenceMatmul(a, b hostTensor, bias []float64, biasStride int, act Activation, cShape []int) (ref, bound []float64) {
	r := len(cShape)
	m, n, k := cShape[r-2], cShape[r-1], a.at.shape[len(a.at.shape)-1]
	batchShape := cShape[:r-2]
	nb, _ := count(batchShape)
	idx := make([]int, len(batchShape))
	for bi := 0; bi < nb; bi++ {
		rem := bi
		for ax := len(batchShape) - 1; ax >= 0; ax-- {
			idx[ax] = rem % batchShape[ax]
			rem /= batchShape[ax]
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s, mag := 0.0, 0.0
				for kk := 0; kk < k; kk++ {
					x := a.at2(idx, i, kk) * b.at2(idx, kk, j)
					s += x
					mag += math.Abs(x)
				}
				if bias != nil {
					s += bias[j*biasStride]
					mag += math.Abs(bias[j*biasStride])
				}
				ref = append(ref, activate64(act, s))
				bound = append(bound, mag)
			}
		}
	}
	return ref, bound
}

// randomTensor fills a new buffer of n elements with values of T in
// [-1, 1] and returns it with its host copy.
func randomTensor[T vkc.Float](t testing.TB, dev *vkc.Device, rng *rand.Rand, n int) (*vkc.Buffer[T], []float64) {
	t.Helper()
	xs := make([]T, n)
	host := make([]float64, n)
	for i := range xs {
		xs[i] = toElem[T](rng.Float64()*2 - 1)
		host[i] = fromElem(xs[i])
	}
	buf, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = buf.Close() })
	return buf, host
}

// matmulCase is one product to check: A, B and C as shapes over fresh
// buffers, with optional transposes (the buffer holds the transpose and
// the operand is its .T()), a bias and an activation.
type matmulCase struct {
	name         string
	a, b, c      []int
	aT, bT       bool
	bias         int // 0: none; else the bias's length (N or 1)
	act          Activation
	wantVariants []variant // variants that must apply
}

// swapLast is shape with its last two axes swapped.
func swapLast(shape []int) []int {
	out := append([]int(nil), shape...)
	r := len(out)
	out[r-1], out[r-2] = out[r-2], out[r-1]
	return out
}

// checkMatmul runs every variant that applies to tc (and Matmul itself,
// tuned) and compares C with the float64 reference.
func checkMatmul[T vkc.Float](t *testing.T, dev *vkc.Device, tc matmulCase) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(tc.name)), 7))
	s := dev.Stream()
	mk := func(shape []int, transposed bool) (Tensor[T], hostTensor) {
		stored := shape
		if transposed {
			stored = swapLast(shape)
		}
		n, err := count(stored)
		require.NoError(t, err)
		buf, host := randomTensor[T](t, dev, rng, n)
		ten := Of(buf, stored...)
		if transposed {
			ten = ten.T()
		}
		require.NoError(t, ten.Err())
		return ten, hostTensor{host, ten.at}
	}
	a, ha := mk(tc.a, tc.aT)
	b, hb := mk(tc.b, tc.bT)
	var opts MatmulOptions[T]
	var biasHost []float64
	biasStride := 1
	if tc.bias > 0 {
		buf, host := randomTensor[T](t, dev, rng, tc.bias)
		opts.Bias = Of(buf)
		biasHost = host
		if tc.bias == 1 {
			biasStride = 0
		}
	}
	opts.Activation = tc.act
	ref, bound := referenceMatmul(ha, hb, biasHost, biasStride, tc.act, tc.c)
	nc, err := count(tc.c)
	require.NoError(t, err)
	cBuf, err := vkc.NewBuffer[T](dev, nc)
	require.NoError(t, err)
	defer cBuf.Close()
	c := Of(cBuf, tc.c...)

	stored, acc := elemEps[T]()
	k := tc.a[len(tc.a)-1]
	check := func(what string) {
		got, err := cBuf.Read(context.Background())
		require.NoError(t, err)
		for i := range ref {
			// Summation error of K terms, the output's rounding, and the
			// activation's float32 evaluation of its nonlinear factor.
			tol := float64(k+2)*acc*bound[i] + stored*math.Abs(ref[i]) + 1e-6*(bound[i]+1)
			if diff := math.Abs(fromElem(got[i]) - ref[i]); !(diff <= tol) {
				require.Failf(t, "wrong element", "%s: %s element %d: got %v, want %v (tolerance %.3g)", tc.name, what, i, fromElem(got[i]), ref[i], tol)
			}
		}
	}
	p, err := planMatmul(s, a, b, c, opts)
	require.NoError(t, err)
	for _, v := range tc.wantVariants {
		require.True(t, p.applies(v), "%s: variant %v should apply", tc.name, v)
	}
	for _, v := range p.candidates() {
		require.NoError(t, fill(cBuf, toElem[T](math.NaN())))
		require.NoError(t, p.runVariant(s, v), "%s: %v", tc.name, v)
		check(v.String())
	}
	require.NoError(t, fill(cBuf, toElem[T](math.NaN())))
	require.NoError(t, Matmul(s, a, b, c, opts))
	check("Matmul")
}

// fill writes x into every element of buf.
func fill[T vkc.Element](buf *vkc.Buffer[T], x T) error {
	xs := make([]T, buf.Len())
	for i := range xs {
		xs[i] = x
	}
	return buf.Write(xs)
}

var matmulCases = []matmulCase{
	{name: "1x1x1", a: []int{1, 1}, b: []int{1, 1}, c: []int{1, 1}},
	{name: "irregular", a: []int{37, 23}, b: []int{23, 45}, c: []int{37, 45}},
	{name: "irregular transposed", a: []int{19, 29}, b: []int{29, 13}, c: []int{19, 13}, aT: true, bT: true},
	{name: "wide", a: []int{40, 64}, b: []int{64, 72}, c: []int{40, 72}, bias: 72, act: ActGelu, wantVariants: []variant{variantWide}},
	{name: "wide ragged n", a: []int{33, 16}, b: []int{16, 21}, c: []int{33, 21}, act: ActRelu},
	{name: "gemv m=1", a: []int{1, 200}, b: []int{200, 96}, c: []int{1, 96}, bias: 96, act: ActSilu, wantVariants: []variant{variantGEMV}},
	{name: "gemv m=1 transposed", a: []int{1, 77}, b: []int{77, 35}, c: []int{1, 35}, bT: true, wantVariants: []variant{variantGEMV}},
	{name: "gemv n=1", a: []int{90, 130}, b: []int{130, 1}, c: []int{90, 1}, bias: 1, act: ActRelu, wantVariants: []variant{variantGEMV}},
	{name: "gemv n=1 transposed", a: []int{50, 64}, b: []int{64, 1}, c: []int{50, 1}, aT: true, wantVariants: []variant{variantGEMV}},
	{name: "gemv texel m=1", a: []int{1, 200}, b: []int{200, 96}, c: []int{1, 96}, bias: 96, act: ActGelu, wantVariants: []variant{variantGEMVTexel}},
	{name: "gemv texel m=1 ragged", a: []int{1, 203}, b: []int{203, 36}, c: []int{1, 36}, bias: 1, act: ActSilu, wantVariants: []variant{variantGEMVTexel}},
	{name: "gemv texel n=1", a: []int{90, 132}, b: []int{132, 1}, c: []int{90, 1}, bias: 1, act: ActRelu, wantVariants: []variant{variantGEMVTexel}},
	{name: "gemv texel n=1 one row", a: []int{1, 1000}, b: []int{1000, 1}, c: []int{1, 1}, wantVariants: []variant{variantGEMVTexel}},
	{name: "split-K texel", a: []int{3, 3004}, b: []int{3004, 16}, c: []int{3, 16}, bias: 16, act: ActGelu, wantVariants: []variant{variantSplitKTexel}},
	{name: "split-K texel ragged N", a: []int{4, 2048}, b: []int{2048, 20}, c: []int{4, 20}, bias: 1, wantVariants: []variant{variantSplitKTexel}},
	{name: "split-K", a: []int{3, 3000}, b: []int{3000, 16}, c: []int{3, 16}, bias: 16, act: ActGelu, wantVariants: []variant{variantSplitK}},
	{name: "batched", a: []int{4, 20, 24}, b: []int{4, 24, 16}, c: []int{4, 20, 16}, act: ActSilu, wantVariants: []variant{variantWide}},
	{name: "batched plain", a: []int{2, 3, 8, 16}, b: []int{16, 24}, c: []int{2, 3, 8, 24}, wantVariants: []variant{variantWide, variantTexel}},
	{name: "batched broadcast B", a: []int{2, 3, 9, 8}, b: []int{8, 11}, c: []int{2, 3, 9, 11}, bias: 11},
	{name: "batched broadcast A", a: []int{1, 7, 10}, b: []int{3, 10, 5}, c: []int{3, 7, 5}, aT: true},
	{name: "batched gemv", a: []int{5, 1, 40}, b: []int{5, 40, 24}, c: []int{5, 1, 24}, wantVariants: []variant{variantGEMV}},
	{name: "texel square", a: []int{64, 64}, b: []int{64, 64}, c: []int{64, 64}, wantVariants: []variant{variantTexel}},
	{name: "texel K%8=4 N%8=4", a: []int{37, 20}, b: []int{20, 44}, c: []int{37, 44}, bias: 44, act: ActGelu, wantVariants: []variant{variantTexel}},
	{name: "texel 16 x 32 block with epilogue", a: []int{40, 16}, b: []int{16, 136}, c: []int{40, 136}, bias: 136, act: ActGelu, wantVariants: []variant{variantTexel}},
	{name: "texel narrow whole octets with bias", a: []int{20, 24}, b: []int{24, 128}, c: []int{20, 128}, bias: 128, act: ActRelu, wantVariants: []variant{variantTexel, variantWide}},
	{name: "texel tall narrow", a: []int{300, 12}, b: []int{12, 4}, c: []int{300, 4}, bias: 1, act: ActRelu, wantVariants: []variant{variantTexel}},
	{name: "texel batched", a: []int{5, 33, 24}, b: []int{5, 24, 40}, c: []int{5, 33, 40}, act: ActSilu, wantVariants: []variant{variantTexel}},
	{name: "texel batched broadcast B", a: []int{2, 3, 17, 28}, b: []int{28, 36}, c: []int{2, 3, 17, 36}, bias: 36, wantVariants: []variant{variantTexel}},
	{name: "texel-packed", a: []int{70, 90}, b: []int{90, 66}, c: []int{70, 66}, aT: true, bias: 66, act: ActRelu, wantVariants: []variant{variantTexelPacked}},
	{name: "texel-packed ragged K", a: []int{64, 21}, b: []int{21, 72}, c: []int{64, 72}, wantVariants: []variant{variantTexelPacked}},
	{name: "texel-packed transposed B", a: []int{65, 40}, b: []int{40, 67}, c: []int{65, 67}, bT: true, wantVariants: []variant{variantTexelPacked}},
}

func TestMatmulMatchesFloat64ReferenceFloat32(t *testing.T) {
	dev := openMatmulDevice(t)
	for _, tc := range matmulCases {
		t.Run(tc.name, func(t *testing.T) { checkMatmul[float32](t, dev, tc) })
	}
}

func TestMatmulMatchesFloat64ReferenceFloat16(t *testing.T) {
	dev := openMatmulDevice(t)
	if !dev.Info().Features.Has(vkc.FeatureStorage16) {
		t.Skip("no 16-bit storage")
	}
	for _, tc := range matmulCases {
		tc.wantVariants = nil
		if tc.name == "texel square" && dev.Info().Type == vkc.TypeCPU {
			// Float16 runs texel's kernel through float32 temporaries.
			tc.wantVariants = []variant{variantTexelPacked}
		}
		t.Run(tc.name, func(t *testing.T) { checkMatmul[vkc.Float16](t, dev, tc) })
	}
}

func TestMatmulMatchesFloat64ReferenceFloat64(t *testing.T) {
	dev := openMatmulDevice(t)
	if !dev.Info().Features.Has(vkc.FeatureFloat64) {
		t.Skip("no float64")
	}
	for _, tc := range matmulCases {
		tc.wantVariants = nil
		t.Run(tc.name, func(t *testing.T) { checkMatmul[float64](t, dev, tc) })
	}
}

func TestMatmulRefusesBadOperandsNamingShapes(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	buf := func(n int) *vkc.Buffer[float32] {
		b, err := vkc.NewBuffer[float32](dev, n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a, b, c := Of(buf(6), 2, 3), Of(buf(12), 3, 4), Of(buf(8), 2, 4)
	require.NoError(t, fill(a.Buffer(), 1))
	require.NoError(t, fill(b.Buffer(), 1))
	for _, tc := range []struct {
		name    string
		err     error
		contain string
	}{
		{"inner mismatch", Matmul(s, a, Of(buf(8), 2, 4), c), "A's 3 columns are not B's 2 rows"},
		{"C shape", Matmul(s, a, b, Of(buf(6), 2, 3)), "C must be 2 x 4"},
		{"rank 1", Matmul(s, Of(buf(3)), b, c), "at least two axes"},
		{"broadcast C", Matmul(s, a, b, Of(buf(4), 1, 4).BroadcastTo(2, 4)), "writes some elements twice"},
		{"C is A", Matmul(s, Of(a.Buffer(), 2, 3), Of(buf(9), 3, 3), Of(a.Buffer(), 2, 3)), "shares elements with A"},
		{"bias length", Matmul(s, a, b, c, MatmulOptions[float32]{Bias: Of(buf(3))}), "want a vector of 4"},
		{"batch mismatch", Matmul(s, Of(buf(12), 2, 2, 3), Of(buf(36), 3, 3, 4), Of(buf(24), 3, 2, 4)), "batch axis 0 has extent 2"},
		{"two options", Matmul(s, a, b, c, MatmulOptions[float32]{}, MatmulOptions[float32]{}), "at most one"},
		{"bad tensor", Matmul(s, a, b, Of(buf(8), 3, 3)), "vkc: Matmul: C"},
		{"nil stream", Matmul(nil, a, b, c), "nil stream"},
		{"activation", Matmul(s, a, b, c, MatmulOptions[float32]{Activation: 9}), "unknown activation"},
	} {
		require.ErrorContains(t, tc.err, tc.contain, tc.name)
		require.Contains(t, tc.err.Error(), "vkc: Matmul", tc.name)
	}
	err := Matmul(s, a, Of(buf(8), 2, 4), c)
	require.ErrorContains(t, err, "A [2 3] · B [2 4] → C [2 4]")
}

func TestMatmulDynamicRowsFollowTheParamOnReplay(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ m, n, k int }{{40, 24, 16}, {30, 1, 20}, {33, 13, 9}} {
		t.Run(fmt.Sprintf("%dx%dx%d", shape.m, shape.n, shape.k), func(t *testing.T) {
			aBuf, ha := randomTensor[float32](t, dev, rng, shape.m*shape.k)
			bBuf, hb := randomTensor[float32](t, dev, rng, shape.k*shape.n)
			cBuf, err := vkc.NewBuffer[float32](dev, shape.m*shape.n)
			require.NoError(t, err)
			defer cBuf.Close()
			rows, err := vkc.NewParam[uint32](dev, uint32(shape.m))
			require.NoError(t, err)
			defer rows.Close()
			a := Of(aBuf, shape.m, shape.k).Dynamic(rows)
			b := Of(bBuf, shape.k, shape.n)
			c := Of(cBuf, shape.m, shape.n).Dynamic(rows)
			g, err := s.Capture(func(s *vkc.Stream) error { return Matmul(s, a, b, c) })
			require.NoError(t, err)
			defer g.Close()
			ref, bound := referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{shape.m, shape.n})
			for _, m := range []int{shape.m, 1, shape.m / 2} {
				require.NoError(t, fill(cBuf, float32(-7)))
				require.NoError(t, rows.Set(uint32(m)))
				require.NoError(t, g.Replay())
				got, err := cBuf.Read(context.Background())
				require.NoError(t, err)
				for i := range got {
					if i/shape.n >= m {
						require.Equal(t, float32(-7), got[i], "row %d past M=%d was written", i/shape.n, m)
						continue
					}
					tol := float64(shape.k+2)*0x1p-24*bound[i] + 1e-6
					require.InDelta(t, ref[i], float64(got[i]), tol, "M=%d element %d", m, i)
				}
			}
		})
	}
}

// TestMatmulGEMVTexelLayouts checks matmul_gemv_texel and
// matmul_splitk_texel on offset and padded layouts (K and N not multiples
// of 4), and that they stand aside where their operands are not
// texel-aligned.
func TestMatmulGEMVTexelLayouts(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name       string
		m, n, k    int
		aOff, aRow int // A at aOff, rows aRow apart (column stride 1)
		bOff, bRow int
		applies    bool
		v          variant // gemv-texel where zero
	}{
		{"n=1 padded rows, K%4=3", 37, 1, 103, 4, 108, 8, 1, true, 0},
		{"n=1 offset, K%4=1", 9, 1, 17, 12, 20, 4, 1, true, 0},
		{"m=1 offset, N%4=2, K%4=1", 1, 30, 21, 8, 21, 4, 32, true, 0},
		{"n=1 unaligned rows", 20, 1, 30, 0, 30, 0, 1, false, 0},
		{"m=1 unaligned offset", 1, 16, 12, 2, 12, 0, 16, false, 0},
		{"m=1 unaligned rows", 1, 18, 12, 0, 12, 0, 18, false, 0},
		{"split-K texel padded, K%4=2, N%4=3", 3, 15, 1030, 4, 1032, 8, 16, true, variantSplitKTexel},
		{"split-K texel unaligned A", 3, 16, 1030, 0, 1030, 0, 16, false, variantSplitKTexel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aBuf, ha := randomTensor[float32](t, dev, rng, tc.aOff+(tc.m-1)*tc.aRow+tc.k)
			bBuf, hb := randomTensor[float32](t, dev, rng, tc.bOff+(tc.k-1)*tc.bRow+tc.n+4) // room for the last texel past N
			a := Strided(aBuf, tc.aOff, []int{tc.m, tc.k}, []int{tc.aRow, 1})
			b := Strided(bBuf, tc.bOff, []int{tc.k, tc.n}, []int{tc.bRow, 1})
			cBuf, err := vkc.NewBuffer[float32](dev, tc.m*tc.n+3)
			require.NoError(t, err)
			defer cBuf.Close()
			c := Strided(cBuf, 3, []int{tc.m, tc.n}, []int{tc.n, 1})
			p, err := planMatmul(s, a, b, c, MatmulOptions[float32]{})
			require.NoError(t, err)
			if tc.v == 0 {
				tc.v = variantGEMVTexel
			}
			require.Equal(t, tc.applies, p.applies(tc.v))
			if !tc.applies {
				require.NotEqual(t, tc.v, p.problem.heuristic())
			}
			ref, bound := referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{tc.m, tc.n})
			for _, v := range p.candidates() {
				require.NoError(t, fill(cBuf, float32(math.NaN())))
				require.NoError(t, p.runVariant(s, v))
				got, err := cBuf.Read(context.Background())
				require.NoError(t, err)
				for i := range ref {
					tol := float64(tc.k+2)*0x1p-24*bound[i] + 1e-6
					require.InDelta(t, ref[i], float64(got[3+i]), tol, "%v element %d", v, i)
				}
			}
		})
	}
}

// A dynamic M never makes rows of C past it read as written: the product
// runs through the one variant whose launch marks just the rows M covers,
// and a dynamic product no such launch can run (a bias, an activation, a
// strided operand) is refused rather than run over the whole of C.
func TestMatmulDynamicRowsPastMStayUnwritten(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(7, 8))
	const m, n, k = 12, 8, 16
	aBuf, ha := randomTensor[float32](t, dev, rng, m*k)
	bBuf, hb := randomTensor[float32](t, dev, rng, k*n)
	cBuf, err := vkc.NewBuffer[float32](dev, m*n) // never written
	require.NoError(t, err)
	defer cBuf.Close()
	const half = m / 2
	rows, err := vkc.NewParam[uint32](dev, half) // the capture's warmup runs with it too
	require.NoError(t, err)
	defer rows.Close()
	a, b, c := Of(aBuf, m, k).Dynamic(rows), Of(bBuf, k, n), Of(cBuf, m, n).Dynamic(rows)
	g, err := s.Capture(func(s *vkc.Stream) error { return Matmul(s, a, b, c) })
	require.NoError(t, err)
	defer g.Close()
	ref, bound := referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{m, n})

	require.NoError(t, g.Replay())
	head, err := cBuf.View(0, half*n)
	require.NoError(t, err)
	defer head.Close()
	got, err := head.Read(context.Background())
	require.NoError(t, err)
	for i := range got {
		require.InDelta(t, ref[i], float64(got[i]), float64(k+2)*0x1p-24*bound[i]+1e-6, "element %d", i)
	}
	tail, err := cBuf.View(half*n, (m-half)*n)
	require.NoError(t, err)
	defer tail.Close()
	_, err = tail.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten, "rows of C past M were never written")

	// With an epilogue: the bias is read whole, the activation applied,
	// and rows past M still stay unwritten.
	biasBuf, hbias := randomTensor[float32](t, dev, rng, n)
	epi, err := vkc.NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	defer epi.Close()
	ce := Of(epi, m, n).Dynamic(rows)
	opts := MatmulOptions[float32]{Bias: Of(biasBuf, n), Activation: ActGelu}
	ge, err := s.Capture(func(s *vkc.Stream) error { return Matmul(s, a, b, ce, opts) })
	require.NoError(t, err)
	defer ge.Close()
	require.NoError(t, rows.Set(half+2))
	require.NoError(t, ge.Replay())
	ref, bound = referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, hbias, 1, ActGelu, []int{m, n})
	eHead, err := epi.View(0, (half+2)*n)
	require.NoError(t, err)
	defer eHead.Close()
	got, err = eHead.Read(context.Background())
	require.NoError(t, err)
	for i := range got {
		require.InDelta(t, ref[i], float64(got[i]), float64(k+2)*0x1p-24*bound[i]+1e-6*(bound[i]+1), "bias and GELU: element %d", i)
	}
	eTail, err := epi.View((half+2)*n, (m-half-2)*n)
	require.NoError(t, err)
	defer eTail.Close()
	_, err = eTail.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten, "rows of C past M were never written, with an epilogue too")

	err = Matmul(s, a, Of(bBuf, n, k).T(), c)
	require.ErrorIs(t, err, vkc.ErrUnsupported, "a dynamic M with a transposed B")
	require.ErrorContains(t, err, "vkc: Matmul")
}

// TestMatmulTexelLayouts checks matmul_texel (and texel-packed where
// texel stands aside) on offset and padded layouts, N not a multiple of
// 4 or 8, K % 8 of 4, and a transposed C, each variant forced.
func TestMatmulTexelLayouts(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		name       string
		m, n, k    int
		aOff, aRow int // A at aOff, rows aRow apart (column stride 1)
		bOff, bRow int
		cT         bool // C stored transposed
		texel      bool // texel applies
	}{
		{"padded rows, N%4=2, K%8=4", 21, 30, 12, 4, 16, 8, 36, false, true},
		{"offset, N%8=4, C transposed", 70, 68, 24, 8, 24, 4, 68, true, true},
		{"unaligned A offset", 66, 72, 16, 2, 16, 0, 72, false, false},
		{"unaligned B rows", 65, 66, 8, 0, 8, 0, 66, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aBuf, ha := randomTensor[float32](t, dev, rng, tc.aOff+(tc.m-1)*tc.aRow+tc.k)
			bBuf, hb := randomTensor[float32](t, dev, rng, tc.bOff+(tc.k-1)*tc.bRow+tc.n+2) // room for the texel of the last column
			a := Strided(aBuf, tc.aOff, []int{tc.m, tc.k}, []int{tc.aRow, 1})
			b := Strided(bBuf, tc.bOff, []int{tc.k, tc.n}, []int{tc.bRow, 1})
			cBuf, err := vkc.NewBuffer[float32](dev, tc.m*tc.n+3)
			require.NoError(t, err)
			defer cBuf.Close()
			c := Strided(cBuf, 3, []int{tc.m, tc.n}, []int{tc.n, 1})
			if tc.cT {
				c = Strided(cBuf, 3, []int{tc.m, tc.n}, []int{1, tc.m})
			}
			p, err := planMatmul(s, a, b, c, MatmulOptions[float32]{})
			require.NoError(t, err)
			require.Equal(t, tc.texel, p.applies(variantTexel))
			require.Equal(t, !tc.texel, p.applies(variantTexelPacked), "texel-packed where texel stands aside")
			ref, bound := referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{tc.m, tc.n})
			for _, v := range []variant{variantTexel, variantTexelPacked} {
				if !p.applies(v) {
					continue
				}
				require.NoError(t, fill(cBuf, float32(math.NaN())))
				require.NoError(t, p.runVariant(s, v))
				got, err := cBuf.Read(context.Background())
				require.NoError(t, err)
				for i := range ref {
					at := 3 + i
					if tc.cT {
						at = 3 + i%tc.n*tc.m + i/tc.n
					}
					tol := float64(tc.k+2)*0x1p-24*bound[i] + 1e-6
					require.InDelta(t, ref[i], float64(got[at]), tol, "%v element %d", v, i)
				}
			}
		})
	}
}

// TestMatmulDynamicEveryVariant runs each variant that takes a dynamic M
// (texel's and generic's _dyn builds), forced, in a captured graph
// replayed at several M: the rows M covers match the reference and the
// rows past it keep their bytes.
func TestMatmulDynamicEveryVariant(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(11, 12))
	const m, n, k = 150, 40, 20
	aBuf, ha := randomTensor[float32](t, dev, rng, m*k)
	bBuf, hb := randomTensor[float32](t, dev, rng, k*n)
	cBuf, err := vkc.NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	defer cBuf.Close()
	rows, err := vkc.NewParam[uint32](dev, m)
	require.NoError(t, err)
	defer rows.Close()
	a, b, c := Of(aBuf, m, k).Dynamic(rows), Of(bBuf, k, n), Of(cBuf, m, n).Dynamic(rows)
	p, err := planMatmul(s, a, b, c, MatmulOptions[float32]{})
	require.NoError(t, err)
	require.Equal(t, []variant{variantGeneric, variantTexel}, p.candidates())
	ref, bound := referenceMatmul(hostTensor{ha, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{m, n})
	for _, v := range p.candidates() {
		g, err := s.Capture(func(s *vkc.Stream) error { return p.runVariant(s, v) })
		require.NoError(t, err)
		for _, mm := range []int{m, 1, 129} {
			require.NoError(t, fill(cBuf, float32(-7)))
			require.NoError(t, rows.Set(uint32(mm)))
			require.NoError(t, g.Replay())
			got, err := cBuf.Read(context.Background())
			require.NoError(t, err)
			for i := range got {
				if i/n >= mm {
					require.Equal(t, float32(-7), got[i], "%v: row %d past M=%d was written", v, i/n, mm)
					continue
				}
				require.InDelta(t, ref[i], float64(got[i]), float64(k+2)*0x1p-24*bound[i]+1e-6, "%v M=%d element %d", v, mm, i)
			}
		}
		require.NoError(t, g.Close())
	}
}

// A dynamic M reads only A's rows below M: with A written up to M alone
// (the rows past it never written, as a growing batch leaves them), every
// dynamic variant, with no bias (whose stand-in binding is A's buffer),
// writes C's first M rows from them instead of skipping the product.
func TestMatmulDynamicReadsOnlyTheRowsOfAWithinM(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(13, 14))
	const m, n, k, mm = 40, 24, 16, 5
	aBuf, err := vkc.NewBuffer[float32](dev, m*k)
	require.NoError(t, err)
	defer aBuf.Close()
	ha := make([]float32, mm*k)
	host := make([]float64, m*k)
	for i := range ha {
		ha[i] = float32(rng.IntN(9) - 4)
		host[i] = float64(ha[i])
	}
	aRows, err := aBuf.View(0, mm*k)
	require.NoError(t, err)
	defer aRows.Close()
	require.NoError(t, aRows.Write(ha))
	bBuf, hb := randomTensor[float32](t, dev, rng, k*n)
	cBuf, err := vkc.NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	defer cBuf.Close()
	rows, err := vkc.NewParam[uint32](dev, mm)
	require.NoError(t, err)
	defer rows.Close()
	a, b, c := Of(aBuf, m, k).Dynamic(rows), Of(bBuf, k, n), Of(cBuf, m, n).Dynamic(rows)
	p, err := planMatmul(s, a, b, c, MatmulOptions[float32]{})
	require.NoError(t, err)
	ref, bound := referenceMatmul(hostTensor{host, a.at}, hostTensor{hb, b.at}, nil, 0, ActNone, []int{m, n})
	cRows, err := cBuf.View(0, mm*n)
	require.NoError(t, err)
	defer cRows.Close()
	for _, v := range p.candidates() {
		g, err := s.Capture(func(s *vkc.Stream) error { return p.runVariant(s, v) })
		require.NoError(t, err)
		require.NoError(t, g.Replay())
		got, err := cRows.Read(context.Background())
		require.NoError(t, err, "%v: C's first %d rows", v, mm)
		for i := range got {
			require.InDelta(t, ref[i], float64(got[i]), float64(k+2)*0x1p-24*bound[i]+1e-6, "%v element %d", v, i)
		}
		_, err = cBuf.Read(context.Background())
		require.ErrorIs(t, err, vkc.ErrUnwritten, "%v: C's rows past M", v)
		require.NoError(t, g.Close())
	}
}

// TestMatmulLongKSumsEveryTerm runs every variant that applies to products
// whose K takes more loop iterations than a CPU driver runs in one
// invocation (lavapipe stops an invocation's loops after 65535, with no
// error): with every element of A 1/4 and of B 1/2 each element of C is
// exactly K/8, so a sum cut short shows, which a random product's
// tolerance would hide.
func TestMatmulLongKSumsEveryTerm(t *testing.T) {
	dev := openMatmulDevice(t)
	for _, sh := range []struct{ m, n, k int }{{2, 8, 70000}, {8, 8, 530000}} {
		t.Run(fmt.Sprintf("%dx%dx%d float32", sh.m, sh.n, sh.k), func(t *testing.T) { checkLongK[float32](t, dev, sh.m, sh.n, sh.k) })
	}
	t.Run("2x8x70000 Float16", func(t *testing.T) { checkLongK[vkc.Float16](t, dev, 2, 8, 70000) })
	t.Run("2x8x70000 float64", func(t *testing.T) { checkLongK[float64](t, dev, 2, 8, 70000) })
}

func checkLongK[T vkc.Float](t *testing.T, dev *vkc.Device, m, n, k int) {
	s := dev.Stream()
	a, b, c := fresh[T](t, dev, m*k), fresh[T](t, dev, k*n), fresh[T](t, dev, m*n)
	require.NoError(t, fill(a, toElem[T](0.25)))
	require.NoError(t, fill(b, toElem[T](0.5)))
	p, err := planMatmul(s, Of(a, m, k), Of(b, k, n), Of(c, m, n), MatmulOptions[T]{})
	require.NoError(t, err)
	want := toElem[T](float64(k) / 8)
	for _, v := range append(p.candidates(), 0) {
		require.NoError(t, fill(c, toElem[T](math.NaN())))
		if v == 0 {
			require.NoError(t, Matmul(s, Of(a, m, k), Of(b, k, n), Of(c, m, n)), "Matmul")
		} else {
			require.NoError(t, p.runVariant(s, v), "%v", v)
		}
		got, err := c.Read(context.Background())
		require.NoError(t, err)
		for i, x := range got {
			require.Equal(t, want, x, "%v: element %d", v, i)
		}
	}
}

// TestMatmulDynamicLongKRefusedOnCPUDrivers: a dynamic M runs through the
// generic and texel kernels alone, which walk K in one invocation; where
// that is more loop iterations than a CPU driver runs, Matmul refuses the
// product instead of computing a short sum.
func TestMatmulDynamicLongKRefusedOnCPUDrivers(t *testing.T) {
	dev := openMatmulDevice(t)
	if dev.Info().Type != vkc.TypeCPU {
		t.Skip("a GPU runs loops of any length")
	}
	const m, n, k = 4, 8, 530000
	a, b, c := fresh[float32](t, dev, m*k), fresh[float32](t, dev, k*n), fresh[float32](t, dev, m*n)
	rows, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	defer rows.Close()
	err = Matmul(dev.Stream(), Of(a, m, k).Dynamic(rows), Of(b, k, n), Of(c, m, n).Dynamic(rows))
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	require.ErrorContains(t, err, "K of 530000")
	p := problem{m: m, n: n, k: 8000, dynamic: true, whole: true, cpu: true}
	require.NotEmpty(t, p.candidates(), "a K within the budget still runs")
}

// TestMatmulTexelPackedAfterAnotherShape runs texel-packed on one stream
// with shapes whose temporaries have the same sizes but whose padding of
// K lies elsewhere (K 21, then 19; then M and K swapped): a kept
// temporary must hold zeros wherever the next shape pads, or the padded
// product adds stale elements.
func TestMatmulTexelPackedAfterAnotherShape(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	for _, sh := range []struct{ m, n, k int }{{64, 72, 21}, {64, 72, 19}, {72, 64, 21}, {64, 72, 21}} {
		a, b, c := fresh[float32](t, dev, sh.m*sh.k), fresh[float32](t, dev, sh.k*sh.n), fresh[float32](t, dev, sh.m*sh.n)
		require.NoError(t, fill(a, 0.25))
		require.NoError(t, fill(b, 0.5))
		// A stored transposed keeps the product off texel.
		at := Of(a, sh.k, sh.m).T()
		p, err := planMatmul(s, at, Of(b, sh.k, sh.n), Of(c, sh.m, sh.n), MatmulOptions[float32]{})
		require.NoError(t, err)
		require.True(t, p.applies(variantTexelPacked), "%+v", sh)
		require.NoError(t, p.runVariant(s, variantTexelPacked))
		got, err := c.Read(context.Background())
		require.NoError(t, err)
		for i, x := range got {
			require.Equal(t, float32(sh.k)/8, x, "%+v: element %d", sh, i)
		}
	}
}

// TestMatmulStoresNothingOutsideC runs every variant into a C whose rows
// lie 256 elements apart in a buffer filled with a sentinel: a kernel's
// group covers more columns than N, and lanes past N must store nothing,
// neither into the gap between C's rows nor past its last row.
func TestMatmulStoresNothingOutsideC(t *testing.T) {
	dev := openMatmulDevice(t)
	s := dev.Stream()
	const m, n, k, row = 40, 72, 64, 256
	a, b, cBuf := fresh[float32](t, dev, m*k), fresh[float32](t, dev, k*n), fresh[float32](t, dev, m*row)
	require.NoError(t, fill(a, 1))
	require.NoError(t, fill(b, 1))
	c := Strided(cBuf, 0, []int{m, n}, []int{row, 1})
	p, err := planMatmul(s, Of(a, m, k), Of(b, k, n), c, MatmulOptions[float32]{})
	require.NoError(t, err)
	require.Contains(t, p.candidates(), variantWide)
	for _, v := range p.candidates() {
		require.NoError(t, fill(cBuf, -7))
		require.NoError(t, p.runVariant(s, v))
		got, err := cBuf.Read(context.Background())
		require.NoError(t, err)
		for i, x := range got {
			want := float32(-7)
			if i%row < n {
				want = k
			}
			require.Equal(t, want, x, "%v: element %d (row %d, column %d)", v, i, i/row, i%row)
		}
	}
}

// TestMatmulTexelPackedFloat32ThenFloat16OnOneStream runs texel-packed
// for one shape in float32, then in Float16, on one stream: the second
// takes more temporaries than the first kept.
func TestMatmulTexelPackedFloat32ThenFloat16OnOneStream(t *testing.T) {
	dev := openMatmulDevice(t)
	if !dev.Info().Features.Has(vkc.FeatureStorage16) {
		t.Skip("no 16-bit storage")
	}
	s := dev.Stream()
	const m, n, k = 64, 64, 98
	run := func(t *testing.T, half bool) {
		if half {
			a, b, c := fresh[vkc.Float16](t, dev, m*k), fresh[vkc.Float16](t, dev, k*n), fresh[vkc.Float16](t, dev, m*n)
			require.NoError(t, fill(a, toElem[vkc.Float16](0.25)))
			require.NoError(t, fill(b, toElem[vkc.Float16](0.5)))
			p, err := planMatmul(s, Of(a, m, k), Of(b, k, n), Of(c, m, n), MatmulOptions[vkc.Float16]{})
			require.NoError(t, err)
			require.NoError(t, p.runVariant(s, variantTexelPacked))
			requireEvery(t, c, toElem[vkc.Float16](k/8.0))
			return
		}
		a, b, c := fresh[float32](t, dev, m*k), fresh[float32](t, dev, k*n), fresh[float32](t, dev, m*n)
		require.NoError(t, fill(a, 0.25))
		require.NoError(t, fill(b, 0.5))
		p, err := planMatmul(s, Of(a, m, k), Of(b, k, n), Of(c, m, n), MatmulOptions[float32]{})
		require.NoError(t, err)
		require.True(t, p.applies(variantTexelPacked))
		require.NoError(t, p.runVariant(s, variantTexelPacked))
		requireEvery(t, c, float32(k)/8)
	}
	run(t, false)
	run(t, true)
	run(t, false)
}
