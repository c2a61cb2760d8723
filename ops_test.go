package vkc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/shaders"
)

// opLengths are the vector lengths every elementwise kernel is checked at:
// one element, lengths that are not a multiple of the 256-element group
// with every remainder modulo the 4 elements an invocation takes (the vec4
// path and the element-by-element tail: 1000, 1001, 1002, 1003), and a
// million (4096 groups).
var opLengths = []int{1, 1000, 1001, 1002, 1003, 1 << 20}

// f32eps is float32's machine epsilon (the gap between 1 and the next float).
const f32eps = 1.0 / (1 << 23)

// rng returns a generator seeded by the test's shape, so every run sees the
// same data and a failure reproduces.
func rng(seed ...int) *rand.Rand {
	var a, b uint64 = 0x9e3779b97f4a7c15, 0
	for _, s := range seed {
		b = b*1000003 + uint64(s)
	}
	return rand.New(rand.NewPCG(a, b))
}

// randFloats returns n values uniform in [lo, hi).
func randFloats(r *rand.Rand, n int, lo, hi float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = lo + (hi-lo)*r.Float32()
	}
	return xs
}

// upload puts xs on dev and closes the buffer when the test ends.
func upload[T Element](t testing.TB, dev *Device, xs []T) *Buffer[T] {
	t.Helper()
	b, err := FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// scratch allocates an unwritten buffer of n elements, closed when the test ends.
func scratch[T Element](t testing.TB, dev *Device, n int) *Buffer[T] {
	t.Helper()
	b, err := NewBuffer[T](dev, n)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// requireClose fails unless every got[i] is within tol[i] of want[i]
// (want computed in float64); it reports the first offender only, so a
// million-element mismatch stays readable.
func requireClose(t testing.TB, want []float64, got []float32, tol func(i int) float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol(i)) {
			require.Failf(t, "value out of tolerance", "element %d of %d: got %g, want %g (|diff| %g > tol %g)",
				i, len(want), got[i], want[i], d, tol(i))
		}
	}
}

// requireSame fails unless got equals want element for element (bit for
// bit for floats: NaN payloads included); it names the first difference
// instead of diffing a million elements.
func requireSame[T Element](t testing.TB, want, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if bitsOf(want[i]) != bitsOf(got[i]) {
			require.Failf(t, "values differ", "element %d of %d: got %v, want %v", i, len(want), got[i], want[i])
		}
	}
}

// ulps is a tolerance of k float32 rounding steps relative to the magnitude m.
func ulps(k, m float64) float64 { return k * f32eps * m }

func TestFillAndCopyAllTypes(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, n := range opLengths {
		t.Run(fmt.Sprint("float32/", n), func(t *testing.T) {
			r := rng(1, n)
			checkFillCopy(t, dev, s, randFloats(r, n, -1e6, 1e6), float32(r.NormFloat64()))
		})
		t.Run(fmt.Sprint("int32/", n), func(t *testing.T) {
			r := rng(2, n)
			xs := make([]int32, n)
			for i := range xs {
				xs[i] = r.Int32() - 1<<30
			}
			checkFillCopy(t, dev, s, xs, -r.Int32())
		})
		t.Run(fmt.Sprint("uint32/", n), func(t *testing.T) {
			r := rng(3, n)
			xs := make([]uint32, n)
			for i := range xs {
				xs[i] = r.Uint32()
			}
			checkFillCopy(t, dev, s, xs, r.Uint32()|1<<31)
		})
	}
}

// checkFillCopy fills one buffer with v and copies src into another; both
// must match bit for bit, since neither kernel does arithmetic.
func checkFillCopy[T Element](t *testing.T, dev *Device, s *Stream, src []T, v T) {
	filled := scratch[T](t, dev, len(src))
	require.NoError(t, Fill(s, filled, v))
	want := make([]T, len(src))
	for i := range want {
		want[i] = v
	}
	requireSame(t, want, readAll(t, filled))

	in := upload(t, dev, src)
	out := scratch[T](t, dev, len(src))
	require.NoError(t, Copy(s, in, out))
	requireSame(t, src, readAll(t, out))
}

func TestElementwiseAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, n := range opLengths {
		r := rng(4, n)
		xs := randFloats(r, n, -100, 100)
		ys := randFloats(r, n, -100, 100)
		// Keep divisors away from zero: the quotient's tolerance is
		// relative, and IEEE x/0 is covered by the Div doc, not by data.
		ds := randFloats(r, n, 0.5, 50)
		for i := range ds {
			if r.IntN(2) == 0 {
				ds[i] = -ds[i]
			}
		}
		a := float32(r.Float64()*4 - 2)
		x, y, d := upload(t, dev, xs), upload(t, dev, ys), upload(t, dev, ds)
		want := make([]float64, n)

		t.Run(fmt.Sprint("Axpy/", n), func(t *testing.T) {
			yy := upload(t, dev, ys)
			require.NoError(t, Axpy(s, a, x, yy))
			for i := range want {
				want[i] = float64(a)*float64(xs[i]) + float64(ys[i])
			}
			// a*x is rounded once unless the driver fuses it into an FMA.
			requireClose(t, want, readAll(t, yy), func(i int) float64 {
				return ulps(2, math.Abs(float64(a*xs[i]))+math.Abs(float64(ys[i])))
			})
		})
		t.Run(fmt.Sprint("Scale/", n), func(t *testing.T) {
			out := scratch[float32](t, dev, n)
			require.NoError(t, Scale(s, a, x, out))
			for i := range want {
				want[i] = float64(a) * float64(xs[i])
			}
			requireClose(t, want, readAll(t, out), func(i int) float64 { return ulps(1, math.Abs(want[i])) })
		})
		binaries := []struct {
			name string
			op   func(s *Stream, x, y, z *Buffer[float32]) error
			rhs  []float32
			ref  func(p, q float64) float64
			ulp  float64
		}{
			{"Add", Add, ys, func(p, q float64) float64 { return p + q }, 1},
			{"Sub", Sub, ys, func(p, q float64) float64 { return p - q }, 1},
			{"Mul", Mul, ys, func(p, q float64) float64 { return p * q }, 1},
			// Vulkan allows 2.5 ULP for division.
			{"Div", Div, ds, func(p, q float64) float64 { return p / q }, 3},
		}
		for _, bc := range binaries {
			t.Run(fmt.Sprint(bc.name, "/", n), func(t *testing.T) {
				rhs := y
				if bc.name == "Div" {
					rhs = d
				}
				out := scratch[float32](t, dev, n)
				require.NoError(t, bc.op(s, x, rhs, out))
				for i := range want {
					want[i] = bc.ref(float64(xs[i]), float64(bc.rhs[i]))
				}
				requireClose(t, want, readAll(t, out), func(i int) float64 {
					// Sums and differences are rounded relative to their
					// operands (cancellation), products and quotients to
					// the result.
					m := math.Abs(want[i])
					if bc.name == "Add" || bc.name == "Sub" {
						m = math.Max(math.Abs(float64(xs[i])), math.Abs(float64(bc.rhs[i])))
					}
					return ulps(bc.ulp, m)
				})
			})
		}
	}
}

func TestReductionsAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, n := range append(opLengths, 256, 257, 65536+3) {
		r := rng(5, n)
		xs := randFloats(r, n, -1, 1)
		ys := randFloats(r, n, -1, 1)
		x, y := upload(t, dev, xs), upload(t, dev, ys)
		// A tree (or any ordered) float32 sum of n terms is off by at most
		// about log2(n)+1 roundings of the sum of magnitudes; allow 4x that.
		depth := math.Ceil(math.Log2(float64(n))) + 1

		t.Run(fmt.Sprint("Sum/", n), func(t *testing.T) {
			out := scratch[float32](t, dev, 1)
			require.NoError(t, Sum(s, x, out))
			var want, mag float64
			for _, v := range xs {
				want += float64(v)
				mag += math.Abs(float64(v))
			}
			requireClose(t, []float64{want}, readAll(t, out), func(int) float64 { return ulps(4*depth, mag) })
		})
		t.Run(fmt.Sprint("Dot/", n), func(t *testing.T) {
			out := scratch[float32](t, dev, 1)
			require.NoError(t, Dot(s, x, y, out))
			var want, mag float64
			for i := range xs {
				p := float64(xs[i]) * float64(ys[i])
				want += p
				mag += math.Abs(p)
			}
			requireClose(t, []float64{want}, readAll(t, out), func(int) float64 { return ulps(4*(depth+1), mag) })
		})
	}
}

// matmulShapes are the shapes the matmul tests check: ones, odd sizes,
// N a multiple of 4 and not (the vec4 and the scalar paths), and sides
// just past one and two tiles of both blocks (64 and 128 on lavapipe).
// A 1024x1024 output costs a billion multiply-adds, seconds on lavapipe;
// the 1x1024x1024 case covers the long rows and the full-width output.
// Those with N and K multiples of 8 run matmul_texel on a CPU driver: one
// octet of columns, one block of k, M past its 128-row tile and N one
// octet past its 256-column tile, odd M.
var matmulShapes = [][3]int{{1, 1, 1}, {37, 53, 29}, {64, 64, 64}, {256, 256, 256}, {1, 1024, 1024}, {3, 5, 1000},
	{129, 132, 7}, {65, 257, 9}, {257, 131, 3}, {200, 260, 40},
	{1, 8, 8}, {17, 8, 16}, {129, 520, 8}, {67, 264, 136}}

// checkMatmul runs mul on random inputs of every shape in matmulShapes and
// compares C with a float64 reference.
func checkMatmul(t *testing.T, dev *Device, mul func(a, b, c *Buffer[float32], m, n, k int) error) {
	checkMatmulShapes(t, dev, func([3]int) bool { return true }, mul)
}

// checkMatmulShapes is checkMatmul over the shapes take accepts.
func checkMatmulShapes(t *testing.T, dev *Device, take func([3]int) bool, mul func(a, b, c *Buffer[float32], m, n, k int) error) {
	for _, sh := range matmulShapes {
		if !take(sh) {
			continue
		}
		m, n, k := sh[0], sh[1], sh[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
			r := rng(6, m, n, k)
			as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
			a, b := upload(t, dev, as), upload(t, dev, bs)
			c := scratch[float32](t, dev, m*n)
			require.NoError(t, mul(a, b, c, m, n, k))
			want, mag := make([]float64, m*n), make([]float64, m*n)
			for i := range m {
				for p := range k {
					av := float64(as[i*k+p])
					for j := range n {
						want[i*n+j] += av * float64(bs[p*n+j])
						mag[i*n+j] += math.Abs(av * float64(bs[p*n+j]))
					}
				}
			}
			// Sequential accumulation over k: up to k+1 roundings.
			requireClose(t, want, readAll(t, c), func(i int) float64 { return ulps(float64(k+1), mag[i]) + 1e-30 })
		})
	}
}

// Matmul as the device runs it: on lavapipe, matmul_texel where N and K
// are multiples of 8, the CPU block (16x16 per invocation) elsewhere.
func TestMatmulAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	checkMatmul(t, dev, func(a, b, c *Buffer[float32], m, n, k int) error { return Matmul(s, a, b, c, m, n, k) })
}

// Each CPU-driver kernel a Matmul may run, whichever this device picks for
// aligned inputs: matmul_texel, and matmul_wide (what a view through a
// stand-in gets), launched by name on the shapes they take.
func TestCPUMatmulKernelsAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, name := range []string{"matmul_texel", "matmul_wide"} {
		t.Run(name, func(t *testing.T) {
			kern, err := dev.builtin(name)
			if errors.Is(err, ErrUnsupported) {
				t.Skipf("%s: %v", name, err)
			}
			require.NoError(t, err)
			checkMatmulShapes(t, dev, func(sh [3]int) bool { return sh[1]%8 == 0 && sh[2]%8 == 0 }, func(a, b, c *Buffer[float32], m, n, k int) error {
				var p [16]byte
				groups := [3]uint32{ceilDiv(n, int(kern.tile[0])), ceilDiv(m, int(kern.tile[1])), 1}
				return kern.launch(s, groups, pushWords(&p, uint32(m), uint32(n), uint32(k)), []*bufferCore{a.core, b.core, c.core})
			})
		})
	}
}

// The catalogue module's other block (8x8 per invocation, what a GPU
// runs), loaded as a user kernel so that its BLOCK constant keeps its
// default, against the same reference: every block the module holds is
// checked on lavapipe, not only the one this device picks.
func TestMatmulGPUBlockAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	sk, err := shaders.Get("matmul")
	require.NoError(t, err)
	gpu := sk.ShapeFor(shaders.Target{})
	require.Equal(t, sk.LocalSize, gpu.LocalSize, "the GPU shape is the module's default")
	kern, err := dev.LoadKernel(KernelSpec{Name: "matmul-gpu-block", SPIRV: sk.SPIRV})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kern.Close() })
	checkMatmul(t, dev, func(a, b, c *Buffer[float32], m, n, k int) error {
		var p [16]byte
		groups := [3]uint32{ceilDiv(n, int(gpu.Tile[0])), ceilDiv(m, int(gpu.Tile[1])), 1}
		return kern.Launch(s, groups, pushWords(&p, uint32(m), uint32(n), uint32(k)), a, b, c)
	})
}

// A CPU driver runs matmul_texel for the shapes it takes (N and K
// multiples of 8) for float32 and Float16 when its inputs can be bound as
// texels, matmul_wide when one cannot (a view through a stand-in) and the
// device has 64-bit integers, and the blocked kernel otherwise and for
// float64.
func TestMatmulPicksTheTexelKernelWhereItApplies(t *testing.T) {
	dev := openTest(t)
	if dev.info.Type != TypeCPU || !dev.info.Features.Has(FeatureInt64) {
		t.Skip("matmul_texel and matmul_wide run on a CPU driver (the second with shaderInt64)")
	}
	assert.Equal(t, "matmul_texel", dev.matmulKernel("", 64, 64))
	assert.Equal(t, "matmul_texel_f16", dev.matmulKernel("_f16", 8, 1024))
	assert.Equal(t, "matmul_f64", dev.matmulKernel("_f64", 64, 64))
	assert.Equal(t, "matmul", dev.matmulKernel("", 60, 64))
	assert.Equal(t, "matmul", dev.matmulKernel("", 64, 12))
	assert.Equal(t, "matmul_f16", dev.matmulKernel("_f16", 45, 129))

	buf, err := NewBuffer[float32](dev, 64)
	require.NoError(t, err)
	t.Cleanup(func() { _ = buf.Close() })
	aligned, err := buf.View(4, 32) // 16 bytes in: bound as it is
	require.NoError(t, err)
	unaligned, err := buf.View(1, 32) // 4 bytes in: through a stand-in
	require.NoError(t, err)
	assert.Equal(t, "matmul_texel", dev.matmulKernel("", 8, 8, buf.core, aligned.core))
	assert.Equal(t, "matmul_wide", dev.matmulKernel("", 8, 8, buf.core, unaligned.core))

	without := openTest(t, WithoutFeatures(FeatureInt64))
	assert.Equal(t, "matmul_texel", without.matmulKernel("", 64, 64), "texel loads need no 64-bit integers")
	assert.Equal(t, "matmul_f16", without.matmulKernel("_f16", 64, 64, unaligned.core))
	assert.Equal(t, "matmul", without.matmulKernel("", 64, 64, unaligned.core))
}

func TestTransposeAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, sh := range [][2]int{{1, 1}, {37, 53}, {1024, 1024}, {1, 1000}, {1000, 1}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			xs := randFloats(rng(7, rows, cols), rows*cols, -1e3, 1e3)
			src := upload(t, dev, xs)
			dst := scratch[float32](t, dev, rows*cols)
			require.NoError(t, Transpose(s, src, dst, rows, cols))
			want := make([]float32, rows*cols)
			for i := range rows {
				for j := range cols {
					want[j*rows+i] = xs[i*cols+j]
				}
			}
			requireSame(t, want, readAll(t, dst))
		})
	}
}

func TestSoftmaxAgainstReference(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	for _, sh := range [][2]int{{1, 1}, {37, 53}, {3, 100000}, {2, 257}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			r := rng(8, rows, cols)
			xs := randFloats(r, rows*cols, -8, 8)
			// A large offset on one row shows the kernel subtracts the row
			// maximum: exp(90) overflows float32.
			for j := range cols {
				xs[j] += 90
			}
			src := upload(t, dev, xs)
			dst := scratch[float32](t, dev, rows*cols)
			require.NoError(t, Softmax(s, src, dst, rows, cols))
			want := make([]float64, rows*cols)
			for i := range rows {
				row := xs[i*cols : (i+1)*cols]
				m := math.Inf(-1)
				for _, v := range row {
					m = math.Max(m, float64(v))
				}
				var sum float64
				for j, v := range row {
					want[i*cols+j] = math.Exp(float64(v) - m)
					sum += want[i*cols+j]
				}
				for j := range row {
					want[i*cols+j] /= sum
				}
			}
			got := readAll(t, dst)
			// exp is allowed 3+2|x| ULP in Vulkan; |x| <= 16 here, plus the
			// row sum's roundings.
			requireClose(t, want, got, func(i int) float64 { return ulps(64, want[i]) + 1e-12 })
			for i := range rows {
				var sum float64
				for _, v := range got[i*cols : (i+1)*cols] {
					sum += float64(v)
				}
				require.InDelta(t, 1, sum, 1e-4, "row %d sums to %g", i, sum)
			}
		})
	}
}

func TestOpsRejectMismatchedShapes(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	a := upload(t, dev, make([]float32, 6))
	b := upload(t, dev, make([]float32, 4))
	one := upload(t, dev, make([]float32, 1))
	calls := map[string]func() error{
		"Copy":              func() error { return Copy(s, a, b) },
		"Axpy":              func() error { return Axpy(s, 1, a, b) },
		"Scale":             func() error { return Scale(s, 1, a, b) },
		"Add":               func() error { return Add(s, a, a, b) },
		"Sub":               func() error { return Sub(s, a, b, a) },
		"Mul":               func() error { return Mul(s, b, a, a) },
		"Div":               func() error { return Div(s, a, a, b) },
		"Sum out of 4":      func() error { return Sum(s, a, b) },
		"Dot lengths":       func() error { return Dot(s, a, b, one) },
		"Dot out of 6":      func() error { return Dot(s, a, a, a) },
		"Matmul shape":      func() error { return Matmul(s, a, b, one, 2, 2, 3) },
		"Matmul zero":       func() error { return Matmul(s, a, a, a, 0, 2, 3) },
		"Matmul negative":   func() error { return Matmul(s, a, a, a, -2, -3, 1) },
		"Transpose shape":   func() error { return Transpose(s, a, a, 4, 2) },
		"Transpose dst":     func() error { return Transpose(s, a, b, 2, 3) },
		"Transpose zero":    func() error { return Transpose(s, a, a, 0, 6) },
		"Softmax shape":     func() error { return Softmax(s, a, a, 3, 3) },
		"Softmax negative":  func() error { return Softmax(s, a, a, -2, -3) },
		"Softmax dst short": func() error { return Softmax(s, a, b, 2, 3) },
	}
	for name, call := range calls {
		require.Error(t, call(), name)
	}
	// None of the refused calls wrote anything: b still holds its zeros.
	require.Equal(t, make([]float32, 4), readAll(t, b))
	require.NoError(t, s.Sync(context.Background()))
}

// Inputs with more texels than the device views (maxTexelBufferElements)
// take matmul_wide instead, and the product is the same, bit for bit.
func TestMatmulBeyondTheTexelLimitsTakesTheWideKernel(t *testing.T) {
	dev := openTest(t)
	if dev.info.Type != TypeCPU || !dev.info.Features.Has(FeatureInt64) {
		t.Skip("matmul_texel and matmul_wide run on a CPU driver (the second with shaderInt64)")
	}
	s := dev.Stream()
	const m, n, k = 9, 16, 24
	r := rng(17)
	as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
	a, b := upload(t, dev, as), upload(t, dev, bs)
	want := scratch[float32](t, dev, m*n)
	require.Equal(t, "matmul_texel", dev.matmulKernel("", n, k, a.core, b.core))
	require.NoError(t, Matmul(s, a, b, want, m, n, k))

	limits := dev.info.Limits
	t.Cleanup(func() { dev.info.Limits = limits })
	dev.info.Limits.MaxTexelBufferElements = uint32(m*k*4/16 - 1) // A is one texel too long
	assert.Equal(t, "matmul_wide", dev.matmulKernel("", n, k, a.core, b.core))
	got := scratch[float32](t, dev, m*n)
	require.NoError(t, Matmul(s, a, b, got, m, n, k))
	assert.Equal(t, readAll(t, want), readAll(t, got), "the two kernels compute the same bits")
}
