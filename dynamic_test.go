package vkc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// devices opens the devices the dynamic-graph tests run on: lavapipe
// through Vulkan, and the host device (both unified and staged), each
// closed and leak-checked at cleanup.
func devices(t *testing.T) map[string]func(t *testing.T) *Device {
	host := func(unified bool) func(t *testing.T) *Device {
		return func(t *testing.T) *Device {
			return openTest(t, withRecorderDevice(func() (recorder.Device, error) {
				return hostdev.New(hostdev.Options{Unified: unified}), nil
			}))
		}
	}
	return map[string]func(t *testing.T) *Device{
		"vulkan":        func(t *testing.T) *Device { return openTest(t) },
		"hostdev":       host(true),
		"hostdev-stage": host(false),
	}
}

// A captured step of three launches sized by one length param and scaled
// by one scalar param, replayed 1,000 times with a new random scalar and
// length each time: after every replay each output holds the float64
// reference on its first n elements and exactly what it held before past
// them.
func TestDynamicGraphThousandReplays(t *testing.T) {
	for name, open := range devices(t) {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			s := dev.NewStream()
			const max = 300
			r := rand.New(rand.NewPCG(1, 2))
			xs := make([]float32, max)
			for i := range xs {
				xs[i] = float32(r.IntN(2000)-1000) / 64
			}
			x := capBuffer(t, dev, xs)
			y, z, w := capBuffer(t, dev, capRamp(max, -1, 0)), capBuffer(t, dev, capRamp(max, -2, 0)), capBuffer(t, dev, capRamp(max, -3, 0))
			a, err := NewParam(dev, float32(1))
			require.NoError(t, err)
			n, err := NewParam(dev, uint32(max))
			require.NoError(t, err)

			g, err := s.Capture(func(s *Stream) error {
				if err := ScaleDyn(s, a, x, y, n); err != nil { // y = a*x
					return err
				}
				if err := AddDyn(s, y, x, z, n); err != nil { // z = y + x
					return err
				}
				return MulDyn(s, z, y, w, n) // w = z * y
			})
			require.NoError(t, err)

			ys, zs, ws := make([]float32, max), make([]float32, max), make([]float32, max)
			step := func(av float32, nv int) {
				for i := 0; i < nv; i++ {
					ys[i] = float32(float64(av) * float64(xs[i]))
					zs[i] = float32(float64(ys[i]) + float64(xs[i]))
					ws[i] = float32(float64(zs[i]) * float64(ys[i]))
				}
			}
			step(1, max) // Capture's warmup ran the step with a = 1 over everything
			for replay := 0; replay < 1000; replay++ {
				av := float32(r.IntN(64)-32) / 8
				nv := 1 + r.IntN(max)
				require.NoError(t, a.Set(av))
				require.NoError(t, n.Set(uint32(nv)))
				require.NoError(t, g.Replay())
				step(av, nv)
				for _, out := range []struct {
					name string
					buf  *Buffer[float32]
					want []float32
				}{{"y", y, ys}, {"z", z, zs}, {"w", w, ws}} {
					got := capReadOn(t, s, out.buf)
					for i := range got {
						if bitsOf(got[i]) != bitsOf(out.want[i]) {
							require.Failf(t, "wrong element", "replay %d (a=%v, n=%d): %s[%d] = %v, want %v", replay, av, nv, out.name, i, got[i], out.want[i])
						}
					}
				}
			}
			require.NoError(t, g.Close())
			require.NoError(t, a.Close())
			require.NoError(t, n.Close())
		})
	}
}

// The dynamic reductions, softmax and matmul against float64 references at
// lengths that need one, two and three reduction passes, each replayed with
// changing lengths.
func TestDynamicReductionsSoftmaxMatmul(t *testing.T) {
	for name, open := range devices(t) {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			s := dev.NewStream()
			const max = 70000 // three passes of 256
			xs, ys := make([]float32, max), make([]float32, max)
			for i := range xs {
				xs[i] = float32(i%7) - 3
				ys[i] = float32(i%5) - 2
			}
			x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
			sum, dot := capBuffer(t, dev, []float32{0}), capBuffer(t, dev, []float32{0})
			n, err := NewParam(dev, uint32(max))
			require.NoError(t, err)
			const rows, cols = 40, 300
			src := capBuffer(t, dev, xs[:rows*cols])
			dst := capBuffer(t, dev, capRamp(rows*cols, 0, 0))
			r, err := NewParam(dev, uint32(rows))
			require.NoError(t, err)
			const mm, mn, mk = 70, 20, 9
			am, bm := capBuffer(t, dev, xs[:mm*mk]), capBuffer(t, dev, ys[:mk*mn])
			cm := capBuffer(t, dev, capRamp(mm*mn, 0, 0))
			m, err := NewParam(dev, uint32(mm))
			require.NoError(t, err)

			g, err := s.Capture(func(s *Stream) error {
				if err := SumDyn(s, x, sum, n); err != nil {
					return err
				}
				if err := DotDyn(s, x, y, dot, n); err != nil {
					return err
				}
				if err := SoftmaxDyn(s, src, dst, r, cols); err != nil {
					return err
				}
				return MatmulDyn(s, am, bm, cm, m, mn, mk)
			})
			require.NoError(t, err)
			dsts, cms := capRamp(rows*cols, 0, 0), capRamp(mm*mn, 0, 0)
			for _, lens := range [][3]int{{max, rows, mm}, {1, 1, 1}, {256, 7, 64}, {257, 39, 65}, {65536, 2, 3}, {65537, 40, 70}, {1000, 20, 33}} {
				require.NoError(t, n.Set(uint32(lens[0])))
				require.NoError(t, r.Set(uint32(lens[1])))
				require.NoError(t, m.Set(uint32(lens[2])))
				require.NoError(t, g.Replay())
				var wantSum, wantDot float64
				for i := 0; i < lens[0]; i++ {
					wantSum += float64(xs[i])
					wantDot += float64(xs[i]) * float64(ys[i])
				}
				assert.InDelta(t, wantSum, capReadOn(t, s, sum)[0], 1e-3, "sum of %d", lens[0])
				assert.InDelta(t, wantDot, capReadOn(t, s, dot)[0], 1e-3, "dot of %d", lens[0])
				for row := 0; row < lens[1]; row++ {
					mx := math.Inf(-1)
					for c := 0; c < cols; c++ {
						mx = math.Max(mx, float64(xs[row*cols+c]))
					}
					var total float64
					for c := 0; c < cols; c++ {
						total += math.Exp(float64(xs[row*cols+c]) - mx)
					}
					for c := 0; c < cols; c++ {
						dsts[row*cols+c] = float32(math.Exp(float64(xs[row*cols+c])-mx) / total)
					}
				}
				got := capReadOn(t, s, dst)
				for i := range got {
					require.InDelta(t, dsts[i], got[i], 1e-6, "softmax element %d with %d rows", i, lens[1])
				}
				for row := 0; row < lens[2]; row++ {
					for c := 0; c < mn; c++ {
						var acc float64
						for k := 0; k < mk; k++ {
							acc += float64(xs[row*mk+k]) * float64(ys[k*mn+c])
						}
						cms[row*mn+c] = float32(acc)
					}
				}
				got = capReadOn(t, s, cm)
				for i := range got {
					require.InDelta(t, cms[i], got[i], 1e-4, "matmul element %d with %d rows", i, lens[2])
				}
			}
			require.NoError(t, g.Close())
		})
	}
}

// A dynamic length marks written only the prefix it covers: the tail of a
// buffer no work wrote still reads as unwritten, eagerly and after a
// replay; once a length covers it, it reads.
func TestDynamicLengthWritesOnlyItsPrefix(t *testing.T) {
	for name, open := range devices(t) {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			s := dev.NewStream()
			x := capBuffer(t, dev, capRamp(64, 1, 1))
			y, err := NewBuffer[float32](dev, 64)
			require.NoError(t, err)
			n, err := NewParam(dev, uint32(10))
			require.NoError(t, err)
			require.NoError(t, CopyDyn(s, x, y, n))
			_, err = y.ReadOn(context.Background(), s)
			require.ErrorIs(t, err, ErrUnwritten, "elements 10..63 were never written")
			require.ErrorIs(t, err, ErrNeverWritten)

			g, err := s.Capture(func(s *Stream) error { return CopyDyn(s, x, y, n) })
			require.NoError(t, err)
			require.NoError(t, n.Set(20))
			require.NoError(t, g.Replay())
			_, err = y.ReadOn(context.Background(), s)
			require.ErrorIs(t, err, ErrNeverWritten, "elements 20..63 still unwritten")
			require.NoError(t, n.Set(64))
			require.NoError(t, g.Replay())
			assert.Equal(t, capRamp(64, 1, 1), capReadOn(t, s, y))
			require.NoError(t, g.Close())
		})
	}
}

// Bad input to dynamic graphs: each a clear error, nothing else changed.
func TestDynamicBadInput(t *testing.T) {
	dev := openTest(t)
	other := openTest(t)
	s := dev.NewStream()
	sentinel := newSentinel(t, dev)
	x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 0))
	big := capBuffer(t, dev, capRamp(32, 0, 0))
	n, err := NewParam(dev, uint32(16))
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return AxpyDyn(s, Const[float32](2), x, y, n) })
	require.NoError(t, err)

	err = n.Set(17)
	require.ErrorContains(t, err, "above 16", "a length above what the graph's buffers hold")
	assert.Equal(t, uint32(16), n.Value(), "a refused Set changes nothing")
	require.ErrorContains(t, n.Set(0), "length 0")
	require.NoError(t, AxpyDyn(s, Const[float32](1), big, big, nil), "a static length is always fine")
	require.ErrorContains(t, AxpyDyn(s, Const[float32](1), x, big, n), "buffer of 32 elements, want 16")

	foreign, err := NewParam(other, float32(3))
	require.NoError(t, err)
	require.ErrorContains(t, AxpyDyn(s, foreign, x, y, n), "another device", "a param of another device")
	require.ErrorContains(t, AxpyDyn(s, nil, x, y, n), "scalar 0 is nil")

	require.NoError(t, n.Set(8))
	require.NoError(t, g.Replay())
	require.NoError(t, n.Close())
	require.ErrorIs(t, n.Set(4), ErrClosed, "Set after Close")
	require.NoError(t, y.WriteOn(s, capRamp(16, 0, 0)))
	require.NoError(t, g.Replay(), "the graph keeps the closed param's memory and last value")
	want := capRamp(16, 0, 0)
	for i := 0; i < 8; i++ {
		want[i] = 2 * float32(i+1)
	}
	assert.Equal(t, want, capReadOn(t, s, y))
	require.NoError(t, g.Close())
	sentinel.check(t, "dynamic bad input")
}

// A Param binds to a user kernel like a buffer, of its own element type;
// the wrong type is refused. A user kernel launched with group counts from
// a length param does more work as the length grows, with no re-capture.
func TestDynamicUserKernel(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	k, err := dev.LoadKernel(KernelSpec{Name: "affine", SPIRV: testSPIRV(t, "affine")})
	require.NoError(t, err)
	const total = 1024
	x := capBuffer(t, dev, capRamp(total, 1, 1))
	y := capBuffer(t, dev, capRamp(total, 0, 0))
	n, err := NewParam(dev, uint32(64))
	require.NoError(t, err)
	wrong, err := NewParam(dev, uint32(3))
	require.NoError(t, err)
	require.ErrorContains(t, k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, total), wrong, y), "holds float in the module, given uint32")

	g, err := s.Capture(func(s *Stream) error {
		return k.LaunchIndirect(s, GroupsOf(n, 64), affinePush(2, 1, total), x, y)
	})
	require.NoError(t, err)
	for _, covered := range []int{64, 128, 1024, 200} {
		require.NoError(t, y.WriteOn(s, capRamp(total, 0, 0)))
		require.NoError(t, n.Set(uint32(covered)))
		require.NoError(t, g.Replay())
		got := capReadOn(t, s, y)
		groups := (covered + 63) / 64
		for i := range got {
			want := float32(0)
			if i < groups*64 {
				want = 2*float32(i+1) + 1
			}
			require.Equal(t, want, got[i], "element %d with %d groups", i, groups)
		}
	}
	require.ErrorContains(t, n.Set(1<<31), "above", "more groups than the device allows, or than the graph's limit")
	require.NoError(t, g.Close())
}

// FillDyn and the four elementwise Dyn forms, eagerly and then replayed
// with a new scalar and a longer length: the first n elements hold the
// host result, the rest keep the value a Fill gave them before.
func TestDynamicFillAndElementwise(t *testing.T) {
	type op struct {
		run func(s *Stream, x, y, z *Buffer[float32], v *Param[float32], n *Param[uint32]) error
		ref func(x, y, v float32) float32
	}
	ops := map[string]op{
		"FillDyn": {func(s *Stream, _, _, z *Buffer[float32], v *Param[float32], n *Param[uint32]) error {
			return FillDyn(s, z, Value[float32](v), n)
		}, func(_, _, v float32) float32 { return v }},
		"AddDyn": {func(s *Stream, x, y, z *Buffer[float32], _ *Param[float32], n *Param[uint32]) error {
			return AddDyn(s, x, y, z, n)
		}, func(x, y, _ float32) float32 { return x + y }},
		"SubDyn": {func(s *Stream, x, y, z *Buffer[float32], _ *Param[float32], n *Param[uint32]) error {
			return SubDyn(s, x, y, z, n)
		}, func(x, y, _ float32) float32 { return x - y }},
		"MulDyn": {func(s *Stream, x, y, z *Buffer[float32], _ *Param[float32], n *Param[uint32]) error {
			return MulDyn(s, x, y, z, n)
		}, func(x, y, _ float32) float32 { return x * y }},
		"DivDyn": {func(s *Stream, x, y, z *Buffer[float32], _ *Param[float32], n *Param[uint32]) error {
			return DivDyn(s, x, y, z, n)
		}, func(x, y, _ float32) float32 { return x / y }},
	}
	const size, untouched = 64, float32(-7)
	xs, ys := capRamp(size, 1, 1), capRamp(size, 0.5, 0.25)
	want := func(o op, v float32, n int) []float32 {
		out := make([]float32, size)
		for i := range out {
			out[i] = untouched
			if i < n {
				out[i] = o.ref(xs[i], ys[i], v)
			}
		}
		return out
	}
	for name, open := range devices(t) {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			for opName, o := range ops {
				s := dev.NewStream()
				x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
				z, err := NewBuffer[float32](dev, size)
				require.NoError(t, err)
				require.NoError(t, Fill(s, z, untouched))
				v, err := NewParam(dev, float32(3))
				require.NoError(t, err)
				n, err := NewParam(dev, uint32(10))
				require.NoError(t, err)

				require.NoError(t, o.run(s, x, y, z, v, n), opName)
				assert.Equal(t, want(o, 3, 10), capReadOn(t, s, z), "%s eagerly", opName)

				g, err := s.Capture(func(s *Stream) error { return o.run(s, x, y, z, v, n) })
				require.NoError(t, err, opName)
				require.NoError(t, v.Set(-2))
				require.NoError(t, n.Set(37))
				require.NoError(t, g.Replay(), opName)
				assert.Equal(t, want(o, -2, 37), capReadOn(t, s, z), "%s replayed", opName)
				require.NoError(t, g.Close())
				for _, c := range []interface{ Close() error }{x, y, z, v, n} {
					require.NoError(t, c.Close())
				}
			}
		})
	}
}

// A length param used after Close: LaunchIndirect and the Dyn ops return
// ErrClosed and allocate nothing (no view of the closed param is made
// again). And launches racing each other and the param's Close on two
// goroutines: each returns nil or ErrClosed, and nothing is left behind.
func TestDynamicClosedAndRacingLengthParam(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	k, err := dev.LoadKernel(KernelSpec{Name: "affine", SPIRV: testSPIRV(t, "affine")})
	require.NoError(t, err)
	const total = 256
	x := capBuffer(t, dev, capRamp(total, 1, 1))
	y := capBuffer(t, dev, capRamp(total, 0, 0))
	n, err := NewParam(dev, uint32(64))
	require.NoError(t, err)
	require.NoError(t, n.Close())
	before := dev.MemoryStats().LiveClaims + 1 // the sum's buffer
	require.ErrorIs(t, k.LaunchIndirect(s, GroupsOf(n, 64), affinePush(2, 1, total), x, y), ErrClosed)
	require.ErrorIs(t, AddDyn(s, x, x, y, n), ErrClosed)
	sum, err := NewBuffer[float32](dev, 1)
	require.NoError(t, err)
	require.ErrorIs(t, SumDyn(s, x, sum, n), ErrClosed)
	assert.Equal(t, before, dev.MemoryStats().LiveClaims, "a closed param's call made a buffer")

	for round := range 20 {
		n, err := NewParam(dev, uint32(64))
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := dev.NewStream()
				for range 4 {
					if err := k.LaunchIndirect(s, GroupsOf(n, uint32(32<<i)), affinePush(2, 1, total), x, y); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[2] = n.Close()
		}()
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("round %d, goroutine %d: %v", round, i, err)
			}
		}
		assert.Equal(t, before, dev.MemoryStats().LiveClaims, "round %d: a view outlived its param", round)
	}
}

// The device values of a dynamic reduction's passes are ceil(n/div), div
// the product of the earlier passes' spans, while each pass's own groups
// write ceil(count/span) partials of the count before it: the two agree
// only because ceil(ceil(n/a)/b) = ceil(n/(a*b)) for every n and spans, mixed
// as a Float16 sum mixes them (256, then the wide 16384). Checked here
// against passes computed one at a time, for random and edge lengths.
func TestPartialCountsOfMixedSpansCompose(t *testing.T) {
	r := rng(97)
	spans := []uint64{256, 16384, 64, 8, 1}
	lengths := []uint32{1, 2, 255, 256, 257, 16383, 16384, 16385, 1<<22 + 1, 1<<32 - 1}
	for range 2000 {
		lengths = append(lengths, uint32(r.Uint64()>>uint(r.IntN(32)+32)))
	}
	for _, n := range lengths {
		n = max(n, 1)
		for range 4 {
			count, div := uint64(n), uint64(1)
			for pass := 0; pass < 4; pass++ {
				require.Equal(t, count, divide(n, div), "n=%d after spans dividing %d", n, div)
				span := spans[r.IntN(len(spans))]
				count = (count + span - 1) / span
				div *= span
			}
		}
	}
	require.Equal(t, uint64(5), divide(70000, 16384))
	require.Equal(t, uint64(70000), divide(70000, 0), "a div of 0 is the length itself")
}
