package ops

import (
	"context"
	"testing"

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
func BenchmarkSum64MiB(b *testing.B) {
	dev, x := benchInput(b)
	out := fresh[float32](b, dev, 1)
	s := dev.Stream()
	// The first call loads and compiles the kernels: not what is measured.
	require.NoError(b, Sum(s, Of(x), 0, Of(out)))
	require.NoError(b, s.Sync(context.Background()))
	b.SetBytes(benchElems * 4)
	for b.Loop() {
		if err := Sum(s, Of(x), 0, Of(out)); err != nil {
			b.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	got, err := out.Read(context.Background())
	require.NoError(b, err)
	require.Equal(b, float32(benchElems), got[0])
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
