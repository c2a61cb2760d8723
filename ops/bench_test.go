package ops

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// benchElems is 64 MiB of float32.
const benchElems = 64 << 20 / 4

// benchInput is a written 64 MiB float32 buffer on a device opened for a
// benchmark (no validation).
func benchInput(b *testing.B) (*vkc.Device, *vkc.Buffer[float32]) {
	dev := openTest(b)
	x, err := vkc.NewBuffer[float32](dev, benchElems)
	require.NoError(b, err)
	b.Cleanup(func() { _ = x.Close() })
	require.NoError(b, vkc.Fill(dev.Stream(), x, 1))
	return dev, x
}

// BenchmarkSum64MiB sums a contiguous 64 MiB float32 tensor into one
// element; its bytes per second compare with BenchmarkMemcpy64MiB's.
func BenchmarkSum64MiB(b *testing.B) { benchReduce(b, Sum[float32], benchElems) }

// BenchmarkMax64MiB is BenchmarkSum64MiB for Max.
func BenchmarkMax64MiB(b *testing.B) { benchReduce(b, Max[float32], 1) }

// benchReduce reduces a contiguous 64 MiB float32 tensor of ones into one
// element with fn (Sum or Max), which gives want.
func benchReduce(b *testing.B, fn func(*vkc.Stream, Tensor[float32], int, Tensor[float32]) error, want float32) {
	dev, x := benchInput(b)
	out := fresh[float32](b, dev, 1)
	s := dev.Stream()
	// The first call loads and compiles the kernels: not what is measured.
	require.NoError(b, fn(s, Of(x), 0, Of(out)))
	require.NoError(b, s.Sync(context.Background()))
	b.SetBytes(benchElems * 4)
	for b.Loop() {
		if err := fn(s, Of(x), 0, Of(out)); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	got, err := out.Read(context.Background())
	require.NoError(b, err)
	require.Equal(b, want, got[0])
}

// BenchmarkMemcpy64MiB copies 64 MiB from one buffer to another on the
// device: the bandwidth a read of every byte is measured against.
func BenchmarkMemcpy64MiB(b *testing.B) {
	dev, x := benchInput(b)
	y := fresh[float32](b, dev, benchElems)
	s := dev.Stream()
	require.NoError(b, vkc.Copy(s, x, y))
	require.NoError(b, s.Sync(context.Background()))
	b.SetBytes(benchElems * 4)
	for b.Loop() {
		if err := vkc.Copy(s, x, y); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostMemcpy64MiB is Go's copy of 64 MiB in host memory.
func BenchmarkHostMemcpy64MiB(b *testing.B) {
	x := make([]float32, benchElems)
	y := make([]float32, benchElems)
	b.SetBytes(benchElems * 4)
	for b.Loop() {
		copy(y, x)
	}
}

// BenchmarkAdd16MiB adds two contiguous 16 MiB float32 tensors: the
// element-wise kernels' contiguous path.
func BenchmarkAdd16MiB(b *testing.B) {
	dev := openTest(b)
	const n = 16 << 20 / 4
	x := fresh[float32](b, dev, n)
	require.NoError(b, vkc.Fill(dev.Stream(), x, 1))
	y := fresh[float32](b, dev, n)
	s := dev.Stream()
	require.NoError(b, Add(s, Of(x), Of(x), Of(y)))
	require.NoError(b, s.Sync(context.Background()))
	b.SetBytes(n * 4 * 3)
	for b.Loop() {
		if err := Add(s, Of(x), Of(x), Of(y)); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReduceOverMemcpy64MiB times Sum and Max of a contiguous 64 MiB
// float32 tensor (each first pass over contiguous rows forced in turn)
// and BenchmarkMemcpy64MiB's copy one after the other, iteration by
// iteration, and reports the reduction's bandwidth over the copy's
// (x-memcpy): on a machine shared with other work, a ratio of times taken
// moments apart drifts less than one of two separate runs.
func BenchmarkReduceOverMemcpy64MiB(b *testing.B) {
	for _, path := range []string{"", pathTexel, pathWide, pathVec4} {
		for _, op := range []struct {
			name string
			fn   func(*vkc.Stream, Tensor[float32], int, Tensor[float32]) error
		}{{"Sum", Sum[float32]}, {"Max", Max[float32]}} {
			name := path
			if name == "" {
				name = "default"
			}
			b.Run(name+"/"+op.name, func(b *testing.B) {
				sumPath = path
				defer func() { sumPath = "" }()
				benchOverMemcpy(b, func(s *vkc.Stream, x, out *vkc.Buffer[float32]) error { return op.fn(s, Of(x), 0, Of(out)) })
			})
		}
	}
}

// benchOverMemcpy runs fn (reading x, writing one element of out) and a
// copy of x, alternately, and reports fn's bandwidth over the copy's.
func benchOverMemcpy(b *testing.B, fn func(s *vkc.Stream, x, out *vkc.Buffer[float32]) error) {
	dev, x := benchInput(b)
	benchBytesOverMemcpy(b, dev, x, benchElems*4, fn)
}

// benchBytesOverMemcpy is benchOverMemcpy for an fn that reads bytes
// bytes (of x, or of operands of its own): the ratio is fn's bytes per
// second over the 64 MiB copy's.
func benchBytesOverMemcpy(b *testing.B, dev *vkc.Device, x *vkc.Buffer[float32], bytes int64, fn func(s *vkc.Stream, x, out *vkc.Buffer[float32]) error) {
	out := fresh[float32](b, dev, 1)
	y := fresh[float32](b, dev, benchElems)
	s := dev.Stream()
	timed := func(f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	run := func() error { return fn(s, x, out) }
	cp := func() error { return vkc.Copy(s, x, y) }
	timed(run)
	timed(cp)
	b.SetBytes(bytes)
	var tRun, tCopy time.Duration
	for b.Loop() {
		tRun += timed(run)
		b.StopTimer()
		tCopy += timed(cp)
		b.StartTimer()
	}
	b.ReportMetric(float64(bytes)*float64(tCopy)/(float64(benchElems*4)*float64(tRun)), "x-memcpy")
}

// BenchmarkMatmulGEMVOverMemcpy64MiB times each applicable variant of the
// matrix-vector products (64 MiB matrices) and of a long-K product with
// few outputs, alternating with the 64 MiB copy, and reports the bytes of
// A and B read per second over the copy's (x-memcpy).
func BenchmarkMatmulGEMVOverMemcpy64MiB(b *testing.B) {
	for _, sh := range []struct{ m, n, k int }{{1, 4096, 4096}, {4096, 1, 4096}, {3, 16, 100000}} {
		for v := range numVariants {
			probe := problem{elem: elemF32, m: sh.m, n: sh.n, k: sh.k}
			if v == variantGeneric && sh.k < 100000 || probe.applies(variantTexelPacked) && v == variantTexelPacked {
				continue // far slower than the others
			}
			b.Run(fmt.Sprintf("%dx%dx%d/%v", sh.m, sh.n, sh.k, v), func(b *testing.B) {
				dev, x := benchInput(b)
				a := fresh[float32](b, dev, sh.m*sh.k)
				bm := fresh[float32](b, dev, sh.k*sh.n)
				c := fresh[float32](b, dev, sh.m*sh.n)
				require.NoError(b, vkc.Fill(dev.Stream(), a, 1))
				require.NoError(b, vkc.Fill(dev.Stream(), bm, 1))
				p, err := planMatmul(dev.Stream(), Of(a, sh.m, sh.k), Of(bm, sh.k, sh.n), Of(c, sh.m, sh.n), MatmulOptions[float32]{})
				require.NoError(b, err)
				if !p.applies(v) {
					b.Skip("does not apply")
				}
				bytes := int64(4 * (sh.m*sh.k + sh.k*sh.n))
				benchBytesOverMemcpy(b, dev, x, bytes, func(s *vkc.Stream, _, _ *vkc.Buffer[float32]) error { return p.runVariant(s, v) })
			})
		}
	}
}

// BenchmarkMatmul times Matmul (the variant the tuner picks, chosen before
// the timing starts) on square, irregular and batched float32 products,
// and reports GFLOP/s and the variant.
func BenchmarkMatmul(b *testing.B) {
	for _, sh := range []struct{ batch, m, n, k int }{
		{1, 1024, 1024, 1024}, {1, 2048, 2048, 2048}, {1, 1000, 3000, 500}, {32, 128, 128, 64},
	} {
		b.Run(fmt.Sprintf("b%d_%dx%dx%d", sh.batch, sh.m, sh.n, sh.k), func(b *testing.B) {
			dev := openTest(b)
			s := dev.Stream()
			a := fresh[float32](b, dev, sh.batch*sh.m*sh.k)
			bm := fresh[float32](b, dev, sh.batch*sh.k*sh.n)
			c := fresh[float32](b, dev, sh.batch*sh.m*sh.n)
			require.NoError(b, vkc.Fill(s, a, 1))
			require.NoError(b, vkc.Fill(s, bm, 1))
			at, bt, ct := Of(a, sh.m, sh.k), Of(bm, sh.k, sh.n), Of(c, sh.m, sh.n)
			if sh.batch > 1 {
				at, bt, ct = Of(a, sh.batch, sh.m, sh.k), Of(bm, sh.batch, sh.k, sh.n), Of(c, sh.batch, sh.m, sh.n)
			}
			// The first call tunes and compiles: not what is measured.
			require.NoError(b, Matmul(s, at, bt, ct))
			require.NoError(b, s.Sync(context.Background()))
			p, err := planMatmul(s, at, bt, ct, MatmulOptions[float32]{})
			require.NoError(b, err)
			md, err := matmulDeviceOf(dev)
			require.NoError(b, err)
			v, _ := md.tunings.choice(p.shapeClass())
			start := time.Now()
			for b.Loop() {
				if err := Matmul(s, at, bt, ct); err != nil {
					b.Fatal(err)
				}
				if err := s.Sync(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			flops := 2 * float64(sh.batch*sh.m*sh.n*sh.k) * float64(b.N)
			b.ReportMetric(flops/time.Since(start).Seconds()/1e9, "GFLOP/s")
			b.Logf("variant %v", v)
			got, err := c.Read(context.Background())
			require.NoError(b, err)
			require.Equal(b, float32(sh.k), got[len(got)-1])
		})
	}
}

// BenchmarkMatmulFloat16Variants times each variant that applies to
// Float16 products (cooperative matrices among them, where the device
// has them) and reports GFLOP/s: what the tuner chooses between.
func BenchmarkMatmulFloat16Variants(b *testing.B) {
	for _, sh := range []struct{ m, n, k int }{{512, 512, 512}, {1024, 1024, 1024}} {
		for v := range numVariants {
			b.Run(fmt.Sprintf("%dx%dx%d/%v", sh.m, sh.n, sh.k, v), func(b *testing.B) {
				dev := openTest(b)
				s := dev.Stream()
				a := fresh[vkc.Float16](b, dev, sh.m*sh.k)
				bm := fresh[vkc.Float16](b, dev, sh.k*sh.n)
				c := fresh[vkc.Float16](b, dev, sh.m*sh.n)
				require.NoError(b, fill(a, vkc.Float16From(0.5)))
				require.NoError(b, fill(bm, vkc.Float16From(0.25)))
				p, err := planMatmul(s, Of(a, sh.m, sh.k), Of(bm, sh.k, sh.n), Of(c, sh.m, sh.n), MatmulOptions[vkc.Float16]{})
				require.NoError(b, err)
				if !p.applies(v) {
					b.Skip("does not apply")
				}
				require.NoError(b, p.runVariant(s, v)) // compiles: not what is measured
				require.NoError(b, s.Sync(context.Background()))
				start := time.Now()
				for b.Loop() {
					if err := p.runVariant(s, v); err != nil {
						b.Fatal(err)
					}
					if err := s.Sync(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(sh.m*sh.n*sh.k)*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
				got, err := c.Read(context.Background())
				require.NoError(b, err)
				require.Equal(b, vkc.Float16From(float32(sh.k)/8), got[len(got)-1])
			})
		}
	}
}

// BenchmarkAxpyReplay256 replays a captured graph of 100 Axpy launches on
// a contiguous 256-element float32 tensor and reports the time per launch
// (ns/launch): a short op's cost is its kernel's per-launch work, which
// the element-wise fast path cuts.
func BenchmarkAxpyReplay256(b *testing.B) {
	dev := openTest(b)
	const n, launches = 256, 100
	x := fresh[float32](b, dev, n)
	y := fresh[float32](b, dev, n)
	s := dev.Stream()
	require.NoError(b, vkc.Fill(s, x, 1))
	require.NoError(b, vkc.Fill(s, y, 0))
	g, err := s.Capture(func(s *vkc.Stream) error {
		for range launches {
			if err := Axpy(s, Const(1), Of(x), Of(y)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(b, err)
	b.Cleanup(func() { _ = g.Close() })
	require.NoError(b, g.Replay())
	require.NoError(b, s.Sync(context.Background()))
	replays := 0
	for b.Loop() {
		if err := g.Replay(); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		replays++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(replays*launches), "ns/launch")
	b.StopTimer()
	got, err := y.Read(context.Background())
	require.NoError(b, err)
	require.Equal(b, got[0], got[n-1], "the first and last elements")
	require.GreaterOrEqual(b, got[n-1], float32((replays+1)*launches), "every replay's launches")
}
