package blackbox_test

import (
	"sync"
	"testing"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// The tests here drive vkc through work that reads and writes buffers, and
// most of them care about the work's effect on buffers (ordering, taint,
// lifetimes, capture) rather than about which op computes it. These
// adapters give the ops package's calls the short shapes the tests use:
// whole buffers as vectors, matrices given by their extents, and a length
// param making axis 0 dynamic (nil: the whole buffer).

// vec is b as a vector, dynamic over its first n elements when n is not nil.
func vec[T vkc.Element](b *vkc.Buffer[T], n *vkc.Param[uint32]) ops.Tensor[T] {
	t := ops.Of(b)
	if n != nil {
		t = t.Dynamic(n)
	}
	return t
}

// mat is b as a rows x cols row-major matrix.
func mat[T vkc.Element](b *vkc.Buffer[T], rows, cols int) ops.Tensor[T] {
	return ops.Of(b, rows, cols)
}

// dynMat is b as a row-major matrix of cols columns and as many rows as it
// holds, axis 0 sized by rows when the work runs.
func dynMat[T vkc.Element](b *vkc.Buffer[T], rows *vkc.Param[uint32], cols int) ops.Tensor[T] {
	if b == nil || cols <= 0 {
		return ops.Of(b, 0, cols)
	}
	t := ops.Of(b, b.Len()/cols, cols)
	if rows != nil {
		t = t.Dynamic(rows)
	}
	return t
}

// scratches holds the scratch buffers the adapters below make, one per
// test, operand and use, so that the warmup and the capture of
// Stream.Capture (and every call of a loop) use the same memory.
var scratches sync.Map

// scratchKey names one scratch buffer.
type scratchKey struct {
	t    testing.TB
	of   any
	kind string
}

// scratch is the scratch buffer of n elements that kind keeps for the
// operand of (on dev) in test t, made at the first call and closed at t's
// cleanup.
func scratch[T vkc.Element](t testing.TB, dev *vkc.Device, of any, kind string, n int) (*vkc.Buffer[T], error) {
	key := scratchKey{t, of, kind}
	if b, ok := scratches.Load(key); ok {
		return b.(*vkc.Buffer[T]), nil
	}
	b, err := vkc.NewBuffer[T](dev, n)
	if err != nil {
		return nil, err
	}
	if prev, loaded := scratches.LoadOrStore(key, b); loaded {
		_ = b.Close()
		return prev.(*vkc.Buffer[T]), nil
	}
	t.Cleanup(func() {
		scratches.Delete(key)
		_ = b.Close()
	})
	return b, nil
}

// opAdd, opSub, opMul and opDiv are z = x op y over whole buffers, and
// their Dyn forms over the first n elements.
func opAdd[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T]) error {
	return ops.Add(s, vec(x, nil), vec(y, nil), vec(z, nil))
}

func opSub[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T]) error {
	return ops.Sub(s, vec(x, nil), vec(y, nil), vec(z, nil))
}

func opMul[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T]) error {
	return ops.Mul(s, vec(x, nil), vec(y, nil), vec(z, nil))
}

func opDiv[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T]) error {
	return ops.Div(s, vec(x, nil), vec(y, nil), vec(z, nil))
}

func opAddDyn[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Add(s, vec(x, n), vec(y, n), vec(z, n))
}

func opMulDyn[T vkc.Element](s *vkc.Stream, x, y, z *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Mul(s, vec(x, n), vec(y, n), vec(z, n))
}

// opAxpy is y = a*x + y over whole buffers.
func opAxpy[T vkc.Element](s *vkc.Stream, a float32, x, y *vkc.Buffer[T]) error {
	return ops.Axpy(s, ops.Const(float64(a)), vec(x, nil), vec(y, nil))
}

// opAxpyOf is opAxpy with a float64 factor.
func opAxpyOf[T vkc.Element](s *vkc.Stream, a float64, x, y *vkc.Buffer[T]) error {
	return ops.Axpy(s, ops.Const(a), vec(x, nil), vec(y, nil))
}

// opAxpyDyn is y = a*x + y over the first n elements.
func opAxpyDyn[T vkc.Element](s *vkc.Stream, a ops.Scalar, x, y *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Axpy(s, a, vec(x, n), vec(y, n))
}

// opScale is y = a*x over whole buffers.
func opScale[T vkc.Element](s *vkc.Stream, a float32, x, y *vkc.Buffer[T]) error {
	return ops.Scale(s, ops.Const(float64(a)), vec(x, nil), vec(y, nil))
}

// opScaleOf is opScale with a float64 factor.
func opScaleOf[T vkc.Element](s *vkc.Stream, a float64, x, y *vkc.Buffer[T]) error {
	return ops.Scale(s, ops.Const(a), vec(x, nil), vec(y, nil))
}

// opScaleDyn is y = a*x over the first n elements.
func opScaleDyn[T vkc.Element](s *vkc.Stream, a ops.Scalar, x, y *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Scale(s, a, vec(x, n), vec(y, n))
}

// opSum writes the sum of all of x into out, a one-element buffer.
func opSum[T vkc.Element](s *vkc.Stream, x, out *vkc.Buffer[T]) error {
	return ops.Sum(s, vec(x, nil), 0, vec(out, nil))
}

// opSumDyn writes the sum of x's first n elements into out: ops.Sum
// along the dynamic axis 0 reads only the param's rows.
func opSumDyn[T vkc.Element](s *vkc.Stream, x, out *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Sum(s, vec(x, n), 0, vec(out, nil))
}

// opDot writes the dot product of x and y into out, a one-element buffer:
// an element-wise product into a scratch buffer, then its sum.
func opDot[T vkc.Element](t testing.TB, s *vkc.Stream, x, y, out *vkc.Buffer[T]) error {
	return opDotDyn(t, s, x, y, out, nil)
}

// opDotDyn is opDot over the first n elements.
func opDotDyn[T vkc.Element](t testing.TB, s *vkc.Stream, x, y, out *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	if x == nil {
		return ops.Mul(s, vec(x, n), vec(y, n), vec(out, nil))
	}
	prod, err := scratch[T](t, x.Device(), x, "dot", x.Len())
	if err != nil {
		return err
	}
	if err := ops.Mul(s, vec(x, n), vec(y, n), vec(prod, n)); err != nil {
		return err
	}
	return opSumDyn(s, prod, out, n)
}

// opSoftmax is the row-wise softmax of a rows x cols matrix.
func opSoftmax[T vkc.Element](s *vkc.Stream, src, dst *vkc.Buffer[T], rows, cols int) error {
	return ops.Softmax(s, mat(src, rows, cols), -1, mat(dst, rows, cols))
}

// opSoftmaxDyn is opSoftmax over the first rows rows, the buffers holding
// len/cols rows.
func opSoftmaxDyn[T vkc.Element](s *vkc.Stream, src, dst *vkc.Buffer[T], rows *vkc.Param[uint32], cols int) error {
	return ops.Softmax(s, dynMat(src, rows, cols), -1, dynMat(dst, rows, cols))
}

// opMatmul is C[m x n] = A[m x k] · B[k x n], row-major, its kernel
// chosen by Matmul's fixed rule: these tests are about what the product
// does to memory, and timing every candidate kernel of each shape (which
// compiles them all) on every test's new device would outlast the suite.
func opMatmul[T vkc.Float](s *vkc.Stream, a, b, c *vkc.Buffer[T], m, n, k int) error {
	return ops.Matmul(s, mat(a, m, k), mat(b, k, n), mat(c, m, n), ops.MatmulOptions[T]{Heuristic: true})
}

// opMatmulDyn is opMatmul over the first m rows of A and C, the buffers
// holding len/k and len/n rows.
func opMatmulDyn[T vkc.Float](s *vkc.Stream, a, b, c *vkc.Buffer[T], m *vkc.Param[uint32], n, k int) error {
	return ops.Matmul(s, dynMat(a, m, k), mat(b, k, n), dynMat(c, m, n), ops.MatmulOptions[T]{Heuristic: true})
}

// opTranspose writes dst[cols x rows] = src[rows x cols]ᵀ.
func opTranspose[T vkc.Element](s *vkc.Stream, src, dst *vkc.Buffer[T], rows, cols int) error {
	return ops.Transpose(s, mat(src, rows, cols).T(), mat(dst, cols, rows))
}

// opConvert converts src's elements into dst's type, whole buffers.
func opConvert[S, D vkc.Element](s *vkc.Stream, src *vkc.Buffer[S], dst *vkc.Buffer[D]) error {
	return ops.Convert(s, vec(src, nil), vec(dst, nil))
}

// opCopyDyn copies src's first n elements into dst with a kernel (a
// dynamic Transpose); a nil n copies all of it.
func opCopyDyn[T vkc.Element](s *vkc.Stream, src, dst *vkc.Buffer[T], n *vkc.Param[uint32]) error {
	return ops.Transpose(s, vec(src, n), vec(dst, n))
}

// opFillDyn sets buf's first n elements to v, read when the work runs: v
// times a scratch buffer of ones.
func opFillDyn[T vkc.Element](t testing.TB, s *vkc.Stream, buf *vkc.Buffer[T], v ops.Scalar, n *vkc.Param[uint32]) error {
	if buf == nil {
		return ops.Scale(s, v, vec(buf, n), vec(buf, n))
	}
	ones, err := scratch[T](t, buf.Device(), buf, "fill", buf.Len())
	if err != nil {
		return err
	}
	if err := vkc.Fill(s, ones, 1); err != nil {
		return err
	}
	return ops.Scale(s, v, vec(ones, n), vec(buf, n))
}

// warmOps runs the ops the tests use once on dev, over buffers it then
// closes, and waits: package ops makes small per-device objects at its
// first use (stand-in params, the reductions' scratch) that live as long
// as the device, so a test that compares memory before and after its
// work takes its baseline after this.
func warmOps(t testing.TB, dev *vkc.Device) {
	t.Helper()
	x, err := vkc.FromSlice(dev, make([]float32, 64))
	if err != nil {
		t.Fatalf("warmOps: %v", err)
	}
	y, err := vkc.FromSlice(dev, make([]float32, 64))
	if err != nil {
		t.Fatalf("warmOps: %v", err)
	}
	one, err := vkc.NewBuffer[float32](dev, 1)
	if err != nil {
		t.Fatalf("warmOps: %v", err)
	}
	s := dev.Stream()
	for _, err := range []error{
		opScale(s, 2, x, y), opAxpy(s, 1, x, y), opAdd(s, x, y, y), opSum(s, y, one),
		opConvert(s, x, y), s.Sync(testCtx(t)), x.Close(), y.Close(), one.Close(),
	} {
		if err != nil {
			t.Fatalf("warmOps: %v", err)
		}
	}
}
