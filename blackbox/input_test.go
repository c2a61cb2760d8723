package blackbox_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// staleBuffer is a fresh, never-written buffer of n floats that very likely
// sits where a buffer holding v just was.
func staleBuffer(t *testing.T, dev *vkc.Device, n int, v float32) *vkc.Buffer[float32] {
	t.Helper()
	leaveStaleBytes(t, dev, dev.Stream(), n, v)
	return newBuffer[float32](t, dev, n)
}

// closeTo reports whether got is within tol (relative) of want; NaN and
// infinities must match exactly.
func closeTo(got float32, want float64, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(float64(got))
	}
	if math.IsInf(want, 0) {
		return float64(got) == want
	}
	return math.Abs(float64(got)-want) <= tol*(1+math.Abs(want))
}

// ---- user kernels -----------------------------------------------------------

// Promise (KernelSpec: "Describing more access than the module uses
// (read-write for a read-only buffer) is allowed"; docs/GUIDE.md "Writing
// kernels": "a description that does not match ... [is an error] at load
// or launch"): copyro's read-only input described WriteOnly drops the read.
// LoadKernel or Launch must refuse it; if neither does, the launch must
// still check its input, so an output computed from a never-written input
// reads ErrUnwritten and the input stays unwritten.
func TestKernelReadOnlyBindingDescribedWriteOnly(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "copyro", SPIRV: module(t, "copyro"),
		Bindings: []vkc.Access{vkc.WriteOnly, vkc.WriteOnly}, PushSize: 4})
	if err != nil {
		return // refused at load: the promise holds
	}
	defer k.Close()
	const n = 64
	x := staleBuffer(t, dev, n, 42)
	y := newBuffer[float32](t, dev, n)
	if err := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push(n), x, y); err != nil {
		return // refused at launch: the promise holds
	}
	got, err := y.Read(testCtx(t))
	assert.ErrorIs(t, err, vkc.ErrUnwritten, "y computed from a never-written x read %v", got)
	got, err = x.Read(testCtx(t))
	assert.ErrorIs(t, err, vkc.ErrUnwritten, "the never-written x, only read by the kernel, read %v", got)
}

// Promise (as TestKernelReadOnlyBindingDescribedWriteOnly): accum reads and
// writes y (y[i] += x[i]); described {ReadOnly, WriteOnly}, the read of y
// is dropped. Refused at load or launch, or y, never written, still reads
// ErrUnwritten.
func TestKernelReadWriteBindingDescribedWriteOnly(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "accum", SPIRV: module(t, "accum"),
		Bindings: []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, PushSize: 4})
	if err != nil {
		return // refused at load: the promise holds
	}
	defer k.Close()
	const n = 64
	y := staleBuffer(t, dev, n, 1000)
	x := upload(t, dev, make([]float32, n))
	if err := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push(n), x, y); err != nil {
		return // refused at launch: the promise holds
	}
	got, err := y.Read(testCtx(t))
	assert.ErrorIs(t, err, vkc.ErrUnwritten, "y += x over a never-written y read %v", got)
}

// Promise (KernelSpec.Bindings takes ReadOnly, WriteOnly or ReadWrite; a
// description that does not match is an error at load): an Access outside
// those three is refused by LoadKernel.
func TestKernelInvalidAccessValue(t *testing.T) {
	dev := openDevice(t)
	for _, a := range []vkc.Access{0, 4, 255} {
		k, err := dev.LoadKernel(vkc.KernelSpec{Name: "copyro", SPIRV: module(t, "copyro"),
			Bindings: []vkc.Access{a, vkc.WriteOnly}, PushSize: 4})
		if assert.Error(t, err, "LoadKernel accepted Access(%d) for binding 0", uint8(a)) {
			continue
		}
		assert.NoError(t, k.Close())
	}
}

// Promise (LoadKernel binds storage texel buffers in the format they
// declare; a buffer of another element type is an error at Launch, "never
// a crash at launch"): imgonly (an r32f storage texel buffer only) writes
// 1.0 to each texel of a float32 buffer; imgbuf (a storage buffer and an
// r32f storage texel buffer) refuses an int32 buffer for its texels.
func TestKernelStorageTexelBinding(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "imgonly", SPIRV: module(t, "imgonly")})
	require.NoError(t, err)
	defer k.Close()
	img := newBuffer[float32](t, dev, 64)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, img))
	got, err := img.Read(testCtx(t))
	require.NoError(t, err)
	for i, v := range got {
		require.Equal(t, float32(1), v, "texel %d", i)
	}
	k2, err := dev.LoadKernel(vkc.KernelSpec{Name: "imgbuf", SPIRV: module(t, "imgbuf")})
	require.NoError(t, err)
	defer k2.Close()
	x := upload(t, dev, ramp(64, 1, 1))
	ints := newBuffer[int32](t, dev, 64)
	err = k2.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push(64), x, ints)
	assert.ErrorContains(t, err, "viewed as R32_SFLOAT, which takes float32 elements; given int32")
}

// Promise (LoadKernel: "a workgroup size above the device's limits [is an
// error] here, never a crash at launch"): twoentry's main has LocalSize
// 4096, declared before a second entry point with LocalSize 64.
func TestKernelSecondEntryPointHidesLocalSize(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "twoentry", SPIRV: module(t, "twoentry")})
	if err == nil {
		defer k.Close()
	}
	require.Error(t, err, "LoadKernel accepted main with LocalSize 4096 (limit %v)", dev.Info().Limits.MaxComputeWorkGroupSize)
}

// Promise (as TestKernelSecondEntryPointHidesLocalSize): lsid declares a
// 4096-wide workgroup with LocalSizeId instead of LocalSize.
func TestKernelLocalSizeIdAboveTheLimit(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "lsid", SPIRV: module(t, "lsid")})
	if err == nil {
		defer k.Close()
	}
	require.Error(t, err, "LoadKernel accepted a 4096-wide workgroup (LocalSizeId; limit %v)", dev.Info().Limits.MaxComputeWorkGroupSize)
}

// Promise (KernelSpec.LocalSize: a size asked along an axis the module
// does not make specializable is refused; only the workgroup's constants
// are set): specc makes no axis specializable and has an unrelated
// constant_id 0 (K = 3). A request of 128 along x is refused; asking the
// module's own [64 1 1] loads, and leaves K alone: y = 3x.
func TestKernelLocalSizeRequestLeavesOtherSpecConstants(t *testing.T) {
	dev := openDevice(t)
	_, err := dev.LoadKernel(vkc.KernelSpec{Name: "specc", SPIRV: module(t, "specc"), LocalSize: [3]uint32{128, 1, 1}})
	require.ErrorContains(t, err, "asks 128 along x, which the module fixes at 64")
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "specc", SPIRV: module(t, "specc"), LocalSize: [3]uint32{64, 1, 1}})
	require.NoError(t, err)
	defer k.Close()
	assert.Equal(t, [3]uint32{64, 1, 1}, k.Spec().LocalSize, "Spec().LocalSize: the module's")
	const n = 64
	x := upload(t, dev, ramp(n, 1, 1))
	y := newBuffer[float32](t, dev, n)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push(n), x, y))
	got, err := y.Read(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, ramp(n, 3, 3), got, "a LocalSize request changed constant_id 0 (K)")
}

// Promise (docs/GUIDE.md "Writing kernels": what Launch cannot satisfy is an
// error at load, never a driver crash): arrblk has an array of two storage
// buffers at one binding (Launch binds one buffer per binding); bigshared
// uses 256 KiB of shared memory, above maxComputeSharedMemorySize.
func TestKernelUnsatisfiableModules(t *testing.T) {
	for _, name := range []string{"arrblk", "bigshared"} {
		t.Run(name, func(t *testing.T) {
			dev := openDevice(t)
			k, err := dev.LoadKernel(vkc.KernelSpec{Name: name, SPIRV: module(t, name)})
			if err == nil {
				defer k.Close()
			}
			require.Error(t, err, "LoadKernel accepted %s (shared memory limit %d)", name, dev.Info().Limits.MaxComputeSharedMemorySize)
		})
	}
}

// Promise (docs/guide/errors.md: "No exported function panics on bad input ...
// negative or overflowing sizes ... mismatched lengths are errors"; docs/GUIDE.md
// "Writing kernels": a buffer of the wrong element type is an error at
// launch): Launch and LaunchIndirect with bad group counts, push sizes,
// argument counts, element types, params and receivers are refused and
// run nothing.
func TestLaunchBadArguments(t *testing.T) {
	dev := openDevice(t)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "copyro", SPIRV: module(t, "copyro")})
	require.NoError(t, err)
	defer k.Close()
	s := dev.Stream()
	x := upload(t, dev, ramp(64, 1, 0))
	y := upload(t, dev, make([]float32, 64))
	xi := upload(t, dev, make([]int32, 64))
	lim := dev.Info().Limits.MaxComputeWorkGroupCount
	var nilBuf *vkc.Buffer[float32]
	p := newParam(t, dev, uint32(64))
	var nilParam *vkc.Param[uint32]
	one := [3]uint32{1, 1, 1}
	for name, call := range map[string]func() error{
		"groups 0":         func() error { return k.Launch(s, [3]uint32{0, 1, 1}, push(64), x, y) },
		"groups z 0":       func() error { return k.Launch(s, [3]uint32{1, 1, 0}, push(64), x, y) },
		"groups x limit+1": func() error { return k.Launch(s, [3]uint32{lim[0] + 1, 1, 1}, push(64), x, y) },
		"groups max": func() error {
			return k.Launch(s, [3]uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}, push(64), x, y)
		},
		"push nil":            func() error { return k.Launch(s, one, nil, x, y) },
		"push 3 bytes":        func() error { return k.Launch(s, one, []byte{1, 2, 3}, x, y) },
		"push 8 bytes":        func() error { return k.Launch(s, one, push(64, 0), x, y) },
		"one argument":        func() error { return k.Launch(s, one, push(64), x) },
		"three arguments":     func() error { return k.Launch(s, one, push(64), x, y, y) },
		"nil argument":        func() error { return k.Launch(s, one, push(64), x, nil) },
		"typed nil argument":  func() error { return k.Launch(s, one, push(64), x, nilBuf) },
		"zero buffer":         func() error { return k.Launch(s, one, push(64), x, &vkc.Buffer[float32]{}) },
		"int32 for float":     func() error { return k.Launch(s, one, push(64), xi, y) },
		"nil param argument":  func() error { return k.Launch(s, one, push(64), x, nilParam) },
		"nil stream":          func() error { return k.Launch(nil, one, push(64), x, y) },
		"zero stream":         func() error { return k.Launch(&vkc.Stream{}, one, push(64), x, y) },
		"indirect per 0":      func() error { return k.LaunchIndirect(s, vkc.GroupsOf(p, 0), push(64), x, y) },
		"indirect nil length": func() error { return k.LaunchIndirect(s, vkc.GroupsOf(nil, 64), push(64), x, y) },
		"indirect zero":       func() error { return k.LaunchIndirect(s, vkc.Groups{}, push(64), x, y) },
		"nil kernel":          func() error { var nk *vkc.Kernel; return nk.Launch(s, one, push(64), x, y) },
		"zero kernel": func() error {
			return (&vkc.Kernel{}).LaunchIndirect(s, vkc.GroupsOf(p, 1), push(64), x, y)
		},
	} {
		noPanic(t, name, func() { assert.Error(t, call(), name) })
	}
	require.Equal(t, make([]float32, 64), read(t, s, y), "a refused launch wrote y")

	// A huge perGroup: ceil(64 / (2^32-1)) = 1 group.
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsOf(p, math.MaxUint32), push(64), x, y))
	require.Equal(t, ramp(64, 1, 0), read(t, s, y))
	// perGroup 1 with n = 64: 64 groups.
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsOf(p, 1), push(64), x, y))
	// A length that GroupsOf(p, 1) cannot cover in x groups: Set refuses it.
	assert.Error(t, p.Set(lim[0]+1), "Set(%d) for a param driving GroupsOf(p, 1) (x limit %d)", lim[0]+1, lim[0])
	require.NoError(t, s.Sync(testCtx(t)))
}

// ---- built-in ops: sizes, shapes, aliasing, non-finite values ------------------

// Promise (docs/GUIDE.md "The ops": the built-in ops and their …Dyn forms, any
// size): every element-wise op, Sum, Dot and their dynamic forms against a
// float64 reference on sizes around the group and pass boundaries.
func TestBuiltinOpsOnAwkwardSizes(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	for _, n := range []int{1, 2, 7, 63, 64, 65, 255, 256, 257, 511, 513, 65535, 65537, 65536 + 255} {
		xs := seq(n, func(i int) float32 { return float32((i*7919)%1000)/250 - 2 })
		ys := seq(n, func(i int) float32 { return float32((i*104729)%997)/300 + 0.25 })
		x, y := upload(t, dev, xs), upload(t, dev, ys)
		z := newBuffer[float32](t, dev, n)
		out := newBuffer[float32](t, dev, 1)
		check := func(op string, want func(i int) float64) {
			t.Helper()
			got := read(t, s, z)
			for i := range got {
				if w := want(i); !closeTo(got[i], w, 1e-6) {
					require.Failf(t, "wrong result", "n=%d %s[%d] = %v, want %v", n, op, i, got[i], w)
				}
			}
		}
		for _, c := range []struct {
			name string
			op   func(s *vkc.Stream, x, y, z *vkc.Buffer[float32]) error
			f    func(a, b float64) float64
		}{
			{"Add", opAdd[float32], func(a, b float64) float64 { return a + b }},
			{"Sub", opSub[float32], func(a, b float64) float64 { return a - b }},
			{"Mul", opMul[float32], func(a, b float64) float64 { return a * b }},
			{"Div", opDiv[float32], func(a, b float64) float64 { return a / b }},
		} {
			require.NoError(t, c.op(s, x, y, z))
			check(c.name, func(i int) float64 { return c.f(float64(xs[i]), float64(ys[i])) })
		}
		require.NoError(t, vkc.Copy(s, y, z))
		require.NoError(t, opAxpy(s, 1.5, x, z))
		check("Axpy", func(i int) float64 { return 1.5*float64(xs[i]) + float64(ys[i]) })
		require.NoError(t, opScale(s, -3, x, z))
		check("Scale", func(i int) float64 { return -3 * float64(xs[i]) })

		var sum, dot, sumAbs, dotAbs float64
		for i := range xs {
			sum += float64(xs[i])
			sumAbs += math.Abs(float64(xs[i]))
			dot += float64(xs[i]) * float64(ys[i])
			dotAbs += math.Abs(float64(xs[i]) * float64(ys[i]))
		}
		require.NoError(t, opSum(s, x, out))
		assert.InDelta(t, sum, float64(read(t, s, out)[0]), 1e-5*sumAbs+1e-6, "n=%d Sum", n)
		require.NoError(t, opDot(t, s, x, y, out))
		assert.InDelta(t, dot, float64(read(t, s, out)[0]), 1e-5*dotAbs+1e-6, "n=%d Dot", n)

		m := max(n-1, 1)
		p := newParam(t, dev, uint32(m))
		require.NoError(t, opSumDyn(s, x, out, p))
		var sumM, absM float64
		for i := range m {
			sumM += float64(xs[i])
			absM += math.Abs(float64(xs[i]))
		}
		assert.InDelta(t, sumM, float64(read(t, s, out)[0]), 1e-5*absM+1e-6, "n=%d SumDyn(%d)", n, m)
		require.NoError(t, vkc.Fill(s, z, 9))
		require.NoError(t, opAddDyn(s, x, y, z, p))
		check("AddDyn", func(i int) float64 {
			if i < m {
				return float64(xs[i]) + float64(ys[i])
			}
			return 9
		})
		for _, c := range []func() error{p.Close, z.Close, out.Close, x.Close, y.Close} {
			require.NoError(t, c())
		}
	}
}

// Promise (docs/GUIDE.md "The ops": "Matmul (any M, N, K), Transpose"):
// against a float64 reference on shapes with 1s and odd sizes around the
// tile boundaries.
func TestMatmulTransposeOnAwkwardShapes(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	for _, sh := range [][3]int{{1, 1, 1}, {1, 257, 1}, {257, 1, 1}, {1, 1, 257}, {3, 65, 17}, {65, 63, 5}, {17, 129, 33}} {
		m, n, k := sh[0], sh[1], sh[2]
		as := seq(m*k, func(i int) float32 { return float32(i%13)/7 - 1 })
		bs := seq(k*n, func(i int) float32 { return float32(i%11)/5 - 1 })
		a, b := upload(t, dev, as), upload(t, dev, bs)
		c := newBuffer[float32](t, dev, m*n)
		require.NoError(t, opMatmul(s, a, b, c, m, n, k), "Matmul %v", sh)
		got := read(t, s, c)
		for i := range m {
			for j := range n {
				var w, wa float64
				for l := range k {
					w += float64(as[i*k+l]) * float64(bs[l*n+j])
					wa += math.Abs(float64(as[i*k+l]) * float64(bs[l*n+j]))
				}
				require.InDelta(t, w, float64(got[i*n+j]), 1e-5*wa+1e-6, "Matmul %v C[%d][%d]", sh, i, j)
			}
		}
		tr := newBuffer[float32](t, dev, m*k)
		require.NoError(t, opTranspose(s, a, tr, m, k))
		gt := read(t, s, tr)
		for i := range m {
			for l := range k {
				require.Equal(t, as[i*k+l], gt[l*m+i], "Transpose %dx%d [%d][%d]", m, k, l, i)
			}
		}
		for _, cl := range []func() error{a.Close, b.Close, c.Close, tr.Close} {
			require.NoError(t, cl())
		}
	}
}

// Promise (docs/GUIDE.md "The ops": "Softmax (row-wise)"): against a float64
// reference on one-column, one-row and odd shapes, and more rows than one
// dimension of groups holds.
func TestSoftmaxOnAwkwardShapes(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	for _, sh := range [][2]int{{1, 1}, {1, 257}, {3, 255}, {2, 256}, {5, 1000}, {65537, 1}} {
		rows, cols := sh[0], sh[1]
		xs := seq(rows*cols, func(i int) float32 { return float32(i%17)/3 - 2 })
		x := upload(t, dev, xs)
		y := newBuffer[float32](t, dev, rows*cols)
		require.NoError(t, opSoftmax(s, x, y, rows, cols), "Softmax %v", sh)
		got := read(t, s, y)
		for r := range rows {
			mx := math.Inf(-1)
			for c := range cols {
				mx = math.Max(mx, float64(xs[r*cols+c]))
			}
			var sum float64
			for c := range cols {
				sum += math.Exp(float64(xs[r*cols+c]) - mx)
			}
			for c := range cols {
				w := math.Exp(float64(xs[r*cols+c])-mx) / sum
				require.InDelta(t, w, float64(got[r*cols+c]), 1e-5, "Softmax %v [%d][%d]", sh, r, c)
			}
		}
		require.NoError(t, x.Close())
		require.NoError(t, y.Close())
	}
}

// Promise (docs/GUIDE.md "The ops": any size): Fill, Sum, FillDyn and SumDyn
// over 65535*256+1 elements, more groups than one dimension holds.
func TestFillSumPastTheGroupLimit(t *testing.T) {
	dev := openDevice(t)
	n := int(dev.Info().Limits.MaxComputeWorkGroupCount[0])*256 + 1
	if uint64(n)*4 > uint64(dev.Info().Limits.MaxStorageBufferRange) || n > 1<<25 {
		t.Skipf("the device's group-count limit needs %d elements, more than one storage buffer (or this test) holds", n)
	}
	s := dev.Stream()
	b := newBuffer[float32](t, dev, n)
	out := newBuffer[float32](t, dev, 1)
	require.NoError(t, vkc.Fill(s, b, 1))
	require.NoError(t, opSum(s, b, out))
	assert.Equal(t, []float32{float32(n)}, read(t, s, out), "Sum of %d ones", n)
	all := read(t, s, b)
	assert.Equal(t, float32(1), all[0])
	assert.Equal(t, float32(1), all[n-1], "the last element, past the x group limit")
	p := newParam(t, dev, uint32(n))
	require.NoError(t, opFillDyn(t, s, b, ops.Const(2), p))
	require.NoError(t, opSumDyn(s, b, out, p))
	assert.Equal(t, []float32{float32(2 * n)}, read(t, s, out), "SumDyn of %d twos", n)
}

// Promise (docs/GUIDE.md "The ops" and "Errors": mismatched or aliased buffers
// an op cannot take are errors): aliasing an element-wise op allows works
// in place; aliasing Copy, Sum, Transpose and Matmul forbid is refused and
// leaves the buffers as they were.
func TestAliasing(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	xs := seq(300, func(i int) float32 { return float32(i%9) - 4 })
	scaled := func(a float32) []float32 { return seq(300, func(i int) float32 { return a * xs[i] }) }

	x := upload(t, dev, xs)
	require.NoError(t, opAxpy(s, 2, x, x))
	assert.Equal(t, scaled(3), read(t, s, x), "Axpy(2, x, x)")
	x = upload(t, dev, xs)
	require.NoError(t, opAdd(s, x, x, x))
	assert.Equal(t, scaled(2), read(t, s, x), "Add(x, x, x)")
	x = upload(t, dev, xs)
	require.NoError(t, opScale(s, -1, x, x))
	assert.Equal(t, scaled(-1), read(t, s, x), "Scale(-1, x, x)")

	x = upload(t, dev, xs)
	require.NoError(t, opSoftmax(s, x, x, 3, 100))
	got := read(t, s, x)
	for r := range 3 {
		var sum float64
		for c := range 100 {
			sum += float64(got[r*100+c])
		}
		assert.InDelta(t, 1, sum, 1e-5, "Softmax in place, row %d", r)
	}

	one := upload(t, dev, []float32{3})
	require.ErrorIs(t, opSum(s, one, one), vkc.ErrOverlap, "Sum(x, x) of one element: a reduction's output may not be its input")
	assert.Equal(t, []float32{3}, read(t, s, one), "a refused Sum changed its buffer")
	if err := opDot(t, s, one, one, one); err == nil { // refusing is fine too
		assert.Equal(t, []float32{9}, read(t, s, one), "Dot(x, x, x) of one element")
	}

	a := upload(t, dev, xs)
	for name, err := range map[string]error{
		"Copy(a, a)":         vkc.Copy(s, a, a),
		"CopyDyn(a, a)":      opCopyDyn(s, a, a, nil),
		"Transpose(a, a)":    opTranspose(s, a, a, 3, 100),
		"Matmul(a, b, a)":    opMatmul(s, a, upload(t, dev, make([]float32, 300)), a, 1, 300, 1),
		"Matmul(a, a, a)":    opMatmul(s, a, a, a, 1, 1, 300),
		"MatmulDyn(a, b, a)": opMatmulDyn(s, a, upload(t, dev, make([]float32, 300)), a, nil, 300, 1),
	} {
		assert.Error(t, err, name)
	}
	assert.Equal(t, xs, read(t, s, a), "a refused op changed its buffer")
}

// Promise (Div: "IEEE: x/0 is ±Inf or NaN"): Div of zeros, infinities and
// NaN matches Go's float64 division, signs included; Sum propagates Inf and
// NaN; Softmax of huge values does not overflow.
func TestDivByZeroAndNonFiniteValues(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	xs := []float32{1, -1, 0, inf, -inf, nan, 5, 0}
	ys := []float32{0, 0, 0, 0, 2, 1, inf, float32(math.Copysign(0, -1))}
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	z := newBuffer[float32](t, dev, len(xs))
	require.NoError(t, opDiv(s, x, y, z))
	got := read(t, s, z)
	for i := range xs {
		w := float64(xs[i]) / float64(ys[i])
		assert.True(t, closeTo(got[i], w, 0), "Div %v/%v = %v, want %v", xs[i], ys[i], got[i], w)
		if w == 0 {
			assert.Equal(t, math.Signbit(w), math.Signbit(float64(got[i])), "the sign of %v/%v", xs[i], ys[i])
		}
	}
	out := newBuffer[float32](t, dev, 1)
	require.NoError(t, opSum(s, upload(t, dev, []float32{1, inf, 2}), out))
	assert.True(t, math.IsInf(float64(read(t, s, out)[0]), 1), "Sum with +Inf")
	require.NoError(t, opSum(s, upload(t, dev, []float32{1, nan, 2}), out))
	assert.True(t, math.IsNaN(float64(read(t, s, out)[0])), "Sum with NaN")
	smo := newBuffer[float32](t, dev, 6)
	require.NoError(t, opSoftmax(s, upload(t, dev, []float32{1e30, 0, -1e30, 88, 89, 90}), smo, 2, 3))
	g := read(t, s, smo)
	assert.Equal(t, []float32{1, 0, 0}, g[:3], "Softmax of a row with 1e30")
	assert.InDelta(t, 1, float64(g[3]+g[4]+g[5]), 1e-6, "Softmax of 88, 89, 90: %v", g[3:])
}

// Promise (docs/guide/errors.md: negative or overflowing sizes, buffers of
// another device, mismatched lengths are errors; Param.Set refuses 0; a
// length above the buffers is refused): the dynamic ops with bad lengths,
// values and params.
func TestDynOpsBadInputs(t *testing.T) {
	dev := openDevice(t)
	other := openDevice(t)
	s := dev.Stream()
	x := upload(t, dev, ramp(100, 1, 0))
	y := upload(t, dev, make([]float32, 100))
	out := upload(t, dev, []float32{0})
	pOther := newParam(t, other, uint32(10))
	fOther := newParam(t, other, float32(2))
	big := newParam(t, dev, uint32(101))
	zero, err := vkc.NewParam(dev, uint32(0))
	if err == nil {
		defer zero.Close()
	}
	closed, err := vkc.NewParam(dev, uint32(5))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	wide := newParam(t, dev, float64(2))
	for name, call := range map[string]func() error{
		"ScaleDyn n > len":              func() error { return opScaleDyn(s, ops.Const(2), x, y, big) },
		"ScaleDyn n = 0":                func() error { return opScaleDyn(s, ops.Const(2), x, y, zero) },
		"ScaleDyn closed n":             func() error { return opScaleDyn(s, ops.Const(2), x, y, closed) },
		"ScaleDyn n of another device":  func() error { return opScaleDyn(s, ops.Const(2), x, y, pOther) },
		"ScaleDyn a of another device":  func() error { return opScaleDyn(s, ops.ParamOf(fOther), x, y, nil) },
		"ScaleDyn float64 a of float32": func() error { return opScaleDyn(s, ops.ParamOf(wide), x, y, nil) },
		"ScaleDyn nil *Param a":         func() error { var p *vkc.Param[float32]; return opScaleDyn(s, ops.ParamOf(p), x, y, nil) },
		"SumDyn n > len":                func() error { return opSumDyn(s, x, out, big) },
		"DotDyn n > len":                func() error { return opDotDyn(t, s, x, y, out, big) },
		"SoftmaxDyn cols 0":             func() error { return opSoftmaxDyn(s, x, y, nil, 0) },
		"SoftmaxDyn cols -1":            func() error { return opSoftmaxDyn(s, x, y, nil, -1) },
		"SoftmaxDyn cols 3":             func() error { return opSoftmaxDyn(s, x, y, nil, 3) },
		"SoftmaxDyn rows > len":         func() error { return opSoftmaxDyn(s, x, y, big, 1) },
		"MatmulDyn k 0":                 func() error { return opMatmulDyn(s, x, y, out, nil, 1, 0) },
		"MatmulDyn n -1":                func() error { return opMatmulDyn(s, x, y, out, nil, -1, 100) },
		"MatmulDyn n huge":              func() error { return opMatmulDyn(s, x, y, out, nil, math.MaxInt, 100) },
		"MatmulDyn n*k overflow":        func() error { return opMatmulDyn(s, x, y, out, nil, math.MaxInt/50+1, 100) },
		"FillDyn n of another device":   func() error { return opFillDyn(t, s, y, ops.Const(1), pOther) },
		"AxpyDyn lengths differ":        func() error { return opAxpyDyn(s, ops.Const(1), x, out, nil) },
		"CopyDyn lengths differ":        func() error { return opCopyDyn(s, x, out, nil) },
		"Matmul negative sizes":         func() error { return opMatmul(s, x, y, out, -1, -1, -100) },
		"Softmax rows*cols overflows":   func() error { return opSoftmax(s, x, y, math.MaxInt/2+1, 2) },
		"Transpose rows*cols overflows": func() error { return opTranspose(s, x, y, math.MaxInt/2+1, 2) },
		"Softmax rows*cols wraps to 0":  func() error { return opSoftmax(s, x, y, 1<<62, 4) },
		"ScaleDyn zero-value param":     func() error { return opScaleDyn(s, ops.Const(2), x, y, &vkc.Param[uint32]{}) },
		"SumDyn stream of another device": func() error {
			return opSumDyn(other.Stream(), x, out, nil)
		},
	} {
		noPanic(t, name, func() { assert.Error(t, call(), name) })
	}
	assert.Equal(t, make([]float32, 100), read(t, s, y), "a refused op wrote y")
}

// Promise (docs/guide/errors.md: buffers of another device are errors; Device.
// Close closes only that device): every op, launch and transfer mixing
// objects of two devices is refused, and closing one device leaves the
// other working. Copy is the exception: it copies between devices
// (copy_between_devices_test.go).
func TestCrossDeviceArgumentsRefused(t *testing.T) {
	da := openDevice(t)
	db := openDevice(t)
	sa, sb := da.NewStream(), db.NewStream()
	const N = 64
	xa, ya := upload(t, da, ramp(N, 1, 0)), upload(t, da, ramp(N, 1, 0))
	xb, yb := upload(t, db, ramp(N, 1, 0)), upload(t, db, ramp(N, 1, 0))
	oa, ob := upload(t, da, []float32{0}), upload(t, db, []float32{0})
	na, nb := newParam(t, da, uint32(N)), newParam(t, db, uint32(N))
	pa := newParam(t, da, float32(2))
	ka, kb := loadAffine(t, da), loadAffine(t, db)
	ma := upload(t, da, ramp(N, 1, 0))
	pc := affinePush(1, 0, N)
	noPanic(t, "cross-device calls", func() {
		for name, err := range map[string]error{
			"Fill":                       vkc.Fill(sb, xa, 1),
			"Axpy":                       opAxpy(sb, 1, xa, yb),
			"Scale":                      opScale(sa, 1, xb, ya),
			"Add":                        opAdd(sa, xa, ya, yb),
			"Sum":                        opSum(sa, xa, ob),
			"Dot":                        opDot(t, sb, xb, yb, oa),
			"Matmul":                     opMatmul(sb, xb, yb, ma, 8, 8, 8),
			"Transpose":                  opTranspose(sa, xa, yb, 8, 8),
			"Softmax":                    opSoftmax(sa, xa, yb, 8, 8),
			"WriteOn":                    xa.WriteOn(sb, ramp(N, 0, 0)),
			"ReadInto":                   xa.ReadInto(testCtx(t), sb, make([]float32, N)),
			"Launch of A's kernel on B":  ka.Launch(sb, one3(), pc, xb, yb),
			"Launch with A's buffer":     kb.Launch(sb, one3(), pc, xa, yb),
			"Launch with A's param":      kb.Launch(sb, one3(), pc, pa, yb),
			"LaunchIndirect of A's n":    kb.LaunchIndirect(sb, vkc.GroupsOf(na, 64), pc, xb, yb),
			"LaunchIndirect of A's kern": ka.LaunchIndirect(sb, vkc.GroupsOf(nb, 64), pc, xb, yb),
			"FillDyn value of A":         opFillDyn[float32](t, sb, xb, ops.ParamOf(pa), nb),
			"FillDyn length of A":        opFillDyn(t, sb, xb, ops.Const(1), na),
			"AxpyDyn":                    opAxpyDyn(sb, ops.ParamOf(pa), xb, yb, nil),
			"ScaleDyn buffer of A":       opScaleDyn(sb, ops.Const(1), xa, yb, nb),
			"CopyDyn":                    opCopyDyn(sb, xa, yb, nil),
			"AddDyn":                     opAddDyn(sb, xb, yb, ya, nb),
			"SumDyn":                     opSumDyn(sb, xb, ob, na),
			"SumDyn buffer of A":         opSumDyn(sb, xa, ob, nil),
			"DotDyn":                     opDotDyn(t, sb, xb, yb, oa, nil),
			"SoftmaxDyn":                 opSoftmaxDyn(sb, xb, yb, na, 8),
			"MatmulDyn":                  opMatmulDyn(sb, xb, yb, ma, nb, 8, 8),
		} {
			assert.Error(t, err, name)
		}
	})
	require.NoError(t, sa.Sync(testCtx(t)))
	require.NoError(t, sb.Sync(testCtx(t)))
	assert.Equal(t, ramp(N, 1, 0), read(t, sb, yb), "a refused call wrote B's y")
	require.NoError(t, da.Close())
	require.NoError(t, opScale(sb, 2, xb, yb))
	assert.Equal(t, ramp(N, 2, 0), read(t, sb, yb), "device B after A closed")
}

func one3() [3]uint32 { return [3]uint32{1, 1, 1} }

// ---- Open options -------------------------------------------------------------

// Promise (docs/guide/errors.md: no exported function panics on bad input;
// WithStreams: "at most 64; Open refuses more"; a page larger than its
// memory heap is refused, ErrOutOfMemory): Open with zero, negative
// and huge option values returns an error or a device that works with no
// validation message; where it cannot make a buffer, the error is
// ErrOutOfMemory.
func TestOpenOptionsExtremeValues(t *testing.T) {
	cases := map[string]struct {
		opts    []vkc.Option
		refused bool // Open must fail
	}{
		"streams -1":        {opts: []vkc.Option{vkc.WithStreams(-1)}},
		"streams 0":         {opts: []vkc.Option{vkc.WithStreams(0)}},
		"streams 1":         {opts: []vkc.Option{vkc.WithStreams(1)}},
		"streams 65":        {opts: []vkc.Option{vkc.WithStreams(65)}, refused: true},
		"streams MaxInt":    {opts: []vkc.Option{vkc.WithStreams(math.MaxInt)}, refused: true},
		"batch -1":          {opts: []vkc.Option{vkc.WithBatchSize(-1)}},
		"batch 1":           {opts: []vkc.Option{vkc.WithBatchSize(1)}},
		"batch MaxInt":      {opts: []vkc.Option{vkc.WithBatchSize(math.MaxInt)}},
		"page 1":            {opts: []vkc.Option{vkc.WithPageSize(1)}},
		"page 3":            {opts: []vkc.Option{vkc.WithPageSize(3)}},
		"page 4096":         {opts: []vkc.Option{vkc.WithPageSize(4096)}},
		"page MaxUint64":    {opts: []vkc.Option{vkc.WithPageSize(math.MaxUint64)}},
		"page 1<<62":        {opts: []vkc.Option{vkc.WithPageSize(1 << 62)}},
		"page 2 GiB+64 MiB": {opts: []vkc.Option{vkc.WithPageSize(2<<30 + 64<<20)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var dev *vkc.Device
			var err error
			noPanic(t, "Open", func() {
				dev, err = vkc.Open(append([]vkc.Option{vkc.WithValidation(true)}, c.opts...)...)
			})
			if c.refused {
				if err == nil {
					closeAndCheck(t, dev)
				}
				require.Error(t, err, "Open")
				return
			}
			if err != nil {
				return // refusing an option value is fine
			}
			defer closeAndCheck(t, dev)
			s := dev.NewStream()
			b, err := vkc.NewBuffer[float32](dev, 100)
			if err != nil {
				require.ErrorIs(t, err, vkc.ErrOutOfMemory, "NewBuffer")
				return
			}
			defer b.Close()
			for i := range 5 {
				require.NoError(t, vkc.Fill(s, b, float32(i)))
			}
			assert.Equal(t, filled(100, 4), read(t, s, b))
		})
	}
}

// Promise (WithStreams: "the number of slots (default 4, at most 64; Open
// refuses more) ... Logical streams share slots by id % n"): Open refuses
// 65 and 100 slots; with 64, streams 0 and 64 share a slot (a window on
// one refuses the other) and stream 63 does not.
func TestWithStreamsAtMost64(t *testing.T) {
	for _, n := range []int{65, 100} {
		dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(n))
		if err == nil {
			closeAndCheck(t, dev)
		}
		assert.Error(t, err, "WithStreams(%d)", n)
	}
	dev := openDevice(t, vkc.WithStreams(64))
	require.Equal(t, 64, dev.Slots())
	s0, s63, s64 := dev.StreamWithID(0), dev.StreamWithID(63), dev.StreamWithID(64)
	b := upload(t, dev, make([]float32, 16))
	require.NoError(t, s0.PrepareCapture())
	require.NoError(t, s0.BeginCapture())
	assert.ErrorIs(t, vkc.Fill(s64, b, 1), vkc.ErrStreamCapturing, "stream 64 shares stream 0's slot")
	assert.NoError(t, vkc.Fill(s63, b, 2), "stream 63 is on another slot")
	require.NoError(t, s0.AbortCapture())
	assert.Equal(t, filled(16, 2), read(t, s63, b))
	require.NoError(t, vkc.Fill(s64, b, 3), "stream 64 after the window closed")
	assert.Equal(t, filled(16, 3), read(t, s64, b))
}

// Promise (WithPresentation: surface "is called once with the new
// VkInstance ... and returns the window's VkSurfaceKHR"; "Open fails with a
// clear error where no device has one"; NewSwapchain: ErrNoPresentation on
// a device opened without it): failing, null, nil and panicking surface
// functions, and an instance extension that does not exist.
func TestPresentationSurfaceFunction(t *testing.T) {
	sentinel := errors.New("blackbox: no window")
	calls := 0
	dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithPresentation(nil, func(uintptr) (uint64, error) {
		calls++
		return 0, sentinel
	}))
	if err == nil {
		closeAndCheck(t, dev)
	}
	assert.ErrorIs(t, err, sentinel, "Open with a failing surface function")
	assert.Equal(t, 1, calls, "surface function calls")

	dev, err = vkc.Open(vkc.WithValidation(true), vkc.WithPresentation(nil, func(uintptr) (uint64, error) { return 0, nil }))
	if err == nil {
		closeAndCheck(t, dev)
	}
	assert.Error(t, err, "Open with a null surface")

	dev, err = vkc.Open(vkc.WithValidation(true), vkc.WithPresentation(nil, nil))
	if err == nil {
		_, err := dev.NewSwapchain(vkc.SwapchainConfig{Width: 4, Height: 4})
		assert.Error(t, err, "NewSwapchain on a device opened with no surface function")
		closeAndCheck(t, dev)
	}

	dev, err = vkc.Open(vkc.WithValidation(true), vkc.WithPresentation([]string{"VK_blackbox_no_such_extension"},
		func(uintptr) (uint64, error) { return 0, sentinel }))
	if err == nil {
		closeAndCheck(t, dev)
	}
	assert.Error(t, err, "Open with an instance extension that does not exist")

	var rec any
	func() {
		defer func() { rec = recover() }()
		dev, err = vkc.Open(vkc.WithValidation(true), vkc.WithPresentation(nil, func(uintptr) (uint64, error) {
			panic("blackbox surface panic")
		}))
	}()
	if rec == nil {
		if err == nil {
			closeAndCheck(t, dev)
		}
		assert.Error(t, err, "Open whose surface function panicked returned a device")
	} else {
		assert.Equal(t, "blackbox surface panic", rec, "the surface function's own panic re-raised")
	}

	// The process is fine after all that.
	plain := openDevice(t)
	_, err = plain.NewSwapchain(vkc.SwapchainConfig{Width: 4, Height: 4})
	assert.ErrorIs(t, err, vkc.ErrNoPresentation)
	slotWorks(t, plain, plain.Stream())
}

// panickingHandler is a slog.Handler whose Handle panics.
type panickingHandler struct{}

func (panickingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (panickingHandler) Handle(_ context.Context, r slog.Record) error {
	panic("blackbox logger panic: " + r.Message)
}
func (h panickingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panickingHandler) WithGroup(string) slog.Handler      { return h }

const loggerChildEnv = "VKC_BLACKBOX_LOGGER_CHILD"

// Promise (WithLogger: "a panic in its handler cannot unwind through the
// driver: it is recovered and printed to standard error"): Open with a
// logger that panics and an instance extension that does not exist, which
// makes the loader report an error through the logger from inside
// vkCreateInstance. Open returns an error without panicking, the panic is
// printed to standard error, and the process opens and uses a device
// afterwards. Run in a child process (the test binary again), so that a
// panic that did unwind through the loader cannot wedge this one.
func TestPanickingLoggerIsRecovered(t *testing.T) {
	if os.Getenv(loggerChildEnv) == "1" {
		panickingLoggerChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPanickingLoggerIsRecovered$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), loggerChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestPanickingLoggerIsRecovered", "the child's test ran")
	assert.Contains(t, string(out), "blackbox logger panic", "the logger's panic, printed to standard error")
}

func panickingLoggerChild(t *testing.T) {
	var rec any
	func() {
		defer func() { rec = recover() }()
		dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithLogger(slog.New(panickingHandler{})),
			vkc.WithPresentation([]string{"VK_blackbox_no_such_extension"}, func(uintptr) (uint64, error) {
				return 0, errors.New("no window")
			}))
		if err == nil {
			closeAndCheck(t, dev)
		}
		assert.Error(t, err, "Open with an instance extension that does not exist")
	}()
	require.Nil(t, rec, "the logger's panic unwound out of Open")
	dev := openDevice(t)
	x := upload(t, dev, ramp(64, 1, 0))
	require.NoError(t, opScale(dev.Stream(), 2, x, x))
	assert.Equal(t, ramp(64, 2, 0), read(t, dev.Stream(), x), "a device opened after the logger panicked")
}

// ---- the documented examples ------------------------------------------------------

// Promise (README "Quick start" and docs/guide/capture.md "Changing a graph
// without re-capturing it"): the examples as written. y[:n] = a*x[:n],
// total = sum of y[:n]; a.Set(10); n.Set(2); g.Replay() gives the same graph other values, "the
// tail past n is left as it was", and Set refuses 0 and lengths beyond the
// buffers.
func TestReadmeExamples(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	x := upload(t, dev, []float32{1, 2, 3, 4, 5, 6})
	y := upload(t, dev, filled(6, -1))
	total := upload(t, dev, []float32{0})
	a := newParam(t, dev, float32(1))
	n := newParam(t, dev, uint32(6))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.ParamOf(a), x, y, n); err != nil {
			return err
		}
		return opSumDyn(s, y, total, n)
	})
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, a.Set(10))
	require.NoError(t, n.Set(2))
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{30}, read(t, s, total))
	assert.Equal(t, []float32{10, 20, 3, 4, 5, 6}, read(t, s, y), "the tail as the warmup left it")
	assert.Error(t, n.Set(0), "n.Set(0)")
	assert.Error(t, n.Set(7), "n.Set(7) for buffers of 6")
	assert.Error(t, n.Set(math.MaxUint32), "n.Set(MaxUint32)")

	xb := upload(t, dev, []float32{1, 2})
	yb := upload(t, dev, []float32{3, 4})
	st := dev.Stream()
	require.NoError(t, opAxpy(st, 2, xb, yb))
	out, err := yb.ReadOn(testCtx(t), st)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 8}, out, "Quick start")
}
