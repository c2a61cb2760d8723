package blackbox_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// view makes b.View(offset, n), closed at cleanup.
func view[T vkc.Element](t testing.TB, b *vkc.Buffer[T], offset, n int) *vkc.Buffer[T] {
	t.Helper()
	v, err := b.View(offset, n)
	require.NoError(t, err, "View(%d, %d)", offset, n)
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// A view reads and writes exactly its elements of the buffer, at every
// offset (aligned for a storage buffer or not) and length.
func TestViewReadsAndWritesItsElements(t *testing.T) {
	dev := openDevice(t)
	const n = 40
	for _, off := range []int{0, 1, 3, 4, 7, 16, 39} {
		for _, m := range []int{1, 2, 5, n - off} {
			if off+m > n {
				continue
			}
			host := ramp(n, 1, 0)
			b := upload(t, dev, host)
			v := view(t, b, off, m)
			require.Equal(t, m, v.Len())
			require.Equal(t, host[off:off+m], readAll(t, v), "view (%d, %d)", off, m)
			put := ramp(m, 1, 1000)
			require.NoError(t, v.Write(put))
			copy(host[off:], put)
			require.Equal(t, host, readAll(t, b), "the buffer after a write through view (%d, %d)", off, m)
		}
	}
}

// A write through a view makes exactly its range written: the rest of a
// new buffer still reads as unwritten, through the buffer and through
// views of it, and a view inside the written range reads.
func TestViewWriteMakesExactlyItsRangeWritten(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	b := newBuffer[float32](t, dev, 32)
	require.NoError(t, view(t, b, 5, 9).Write(ramp(9, 1, 1)))
	_, err := b.Read(ctx)
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	for _, r := range [][2]int{{5, 9}, {5, 1}, {13, 1}, {7, 3}} {
		got, err := view(t, b, r[0], r[1]).Read(ctx)
		require.NoError(t, err, "view %v inside the written range", r)
		require.Equal(t, ramp(9, 1, 1)[r[0]-5:r[0]-5+r[1]], got)
	}
	for _, r := range [][2]int{{4, 1}, {14, 1}, {0, 6}, {13, 2}, {20, 12}} {
		_, err := view(t, b, r[0], r[1]).Read(ctx)
		require.ErrorIs(t, err, vkc.ErrUnwritten, "view %v reaches past the written range", r)
	}
}

// Ops, user kernels, copies and Fill on views at every offset give what
// they give on whole buffers, and leave the rest of the buffer untouched.
func TestOpsOnViewsMatchAReference(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	k := loadAffine(t, dev)
	const n = 64
	for _, off := range []int{0, 1, 2, 3, 4, 5, 8, 13} {
		for _, m := range []int{1, 3, 4, 7, 17} {
			xs, ys := ramp(n, 1, 1), ramp(n, 1, 100)
			bx, by := upload(t, dev, xs), upload(t, dev, ys)
			x, y := view(t, bx, off, m), view(t, by, n-off-m, m)
			require.NoError(t, opAxpy(s, 2, x, y))
			for i := range m {
				ys[n-off-m+i] += 2 * xs[off+i]
			}
			require.Equal(t, ys, readAll(t, by), "Axpy on views (%d, %d)", off, m)

			require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, affinePush(3, 1, uint32(m)), y, x))
			for i := range m {
				xs[off+i] = 3*ys[n-off-m+i] + 1
			}
			require.Equal(t, xs, readAll(t, bx), "the user kernel on views (%d, %d)", off, m)

			require.NoError(t, vkc.Fill(s, x, -1))
			for i := range m {
				xs[off+i] = -1
			}
			require.Equal(t, xs, readAll(t, bx), "Fill of view (%d, %d)", off, m)

			require.NoError(t, vkc.Copy(s, y, x))
			copy(xs[off:off+m], ys[n-off-m:])
			require.Equal(t, xs, readAll(t, bx), "Copy between views (%d, %d)", off, m)
			sum := upload(t, dev, []float32{0})
			require.NoError(t, opSum(s, x, sum))
			var want float64
			for _, v := range xs[off : off+m] {
				want += float64(v)
			}
			require.InDelta(t, want, float64(readAll(t, sum)[0]), 1e-3*math.Abs(want)+1e-3, "Sum of view (%d, %d)", off, m)
		}
	}
}

// Views of 8- and 16-bit elements at odd offsets: Fill and Convert touch
// exactly the view's bytes, although the kernels work on 32-bit words.
func TestNarrowViewsTouchOnlyTheirBytes(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	host := make([]int8, 23)
	for i := range host {
		host[i] = int8(i)
	}
	b := upload(t, dev, host)
	for _, r := range [][2]int{{1, 1}, {3, 5}, {6, 2}, {0, 23}, {22, 1}, {5, 17}} {
		require.NoError(t, vkc.Fill(s, view(t, b, r[0], r[1]), int8(-r[0]-1)))
		for i := range r[1] {
			host[r[0]+i] = int8(-r[0] - 1)
		}
		require.Equal(t, host, readAll(t, b), "Fill of int8 view %v", r)
	}
	hs := make([]vkc.Float16, 9)
	for i := range hs {
		hs[i] = vkc.Float16From(float32(i))
	}
	h := upload(t, dev, hs)
	src := upload(t, dev, []float32{-1.5, 2.25, 7})
	require.NoError(t, opConvert(s, src, view(t, h, 3, 3)))
	for i, v := range []float32{-1.5, 2.25, 7} {
		hs[3+i] = vkc.Float16From(v)
	}
	require.Equal(t, hs, readAll(t, h))
}

// ViewAs reads a buffer's bytes as another element type.
func TestViewAsReinterpretsTheBytes(t *testing.T) {
	dev := openDevice(t)
	xs := []float32{1, -2.5, float32(math.Pi), 0, 65504}
	b := upload(t, dev, xs)
	bits, err := vkc.ViewAs[uint32](b, 4, 3)
	require.NoError(t, err)
	defer bits.Close()
	want := []uint32{math.Float32bits(xs[1]), math.Float32bits(xs[2]), math.Float32bits(xs[3])}
	require.Equal(t, want, readAll(t, bits))
	halves, err := vkc.ViewAs[uint16](b, 2, 4)
	require.NoError(t, err)
	defer halves.Close()
	got := readAll(t, halves)
	require.Equal(t, uint16(math.Float32bits(xs[0])>>16), got[0])
	require.Equal(t, uint16(math.Float32bits(xs[1])), got[1])
	require.NoError(t, vkc.Fill(dev.Stream(), bits, 0x3f800000))
	require.Equal(t, []float32{1, 1, 1, 1, 65504}, readAll(t, b))
}

// Bad views are refused and change nothing.
func TestViewBadInput(t *testing.T) {
	dev := openDevice(t)
	b := upload(t, dev, ramp(10, 1, 0))
	before := dev.MemoryStats()
	for _, r := range [][2]int{{-1, 2}, {0, 0}, {0, -1}, {0, 11}, {10, 1}, {9, 2}, {math.MaxInt, 1}, {1, math.MaxInt}, {math.MinInt, 3}} {
		v, err := b.View(r[0], r[1])
		require.ErrorIs(t, err, vkc.ErrOutOfRange, "View%v", r)
		require.Nil(t, v)
	}
	for _, r := range [][2]int{{2, 1}, {1, 1}, {-4, 1}, {0, 11}, {40, 1}, {36, 2}, {math.MaxInt - 3, 1}, {0, math.MaxInt / 2}} {
		v, err := vkc.ViewAs[float32](b, r[0], r[1])
		require.ErrorIs(t, err, vkc.ErrOutOfRange, "ViewAs%v", r)
		require.Nil(t, v)
	}
	_, err := vkc.ViewAs[float64](b, 4, 1) // inside, but not at a multiple of 8
	require.ErrorIs(t, err, vkc.ErrOutOfRange)
	var nilBuf *vkc.Buffer[float32]
	_, err = nilBuf.View(0, 1)
	require.Error(t, err)
	_, err = vkc.ViewAs[uint32](nilBuf, 0, 1)
	require.Error(t, err)
	_, err = (&vkc.Buffer[float32]{}).View(0, 1)
	require.Error(t, err)
	require.Equal(t, before, dev.MemoryStats(), "a refused view allocates nothing")

	c := upload(t, dev, ramp(4, 1, 0))
	require.NoError(t, c.Close())
	_, err = c.View(0, 1)
	require.ErrorIs(t, err, vkc.ErrClosed)
	_, err = vkc.ViewAs[uint32](c, 0, 1)
	require.ErrorIs(t, err, vkc.ErrClosed)

	narrow := openDevice(t, vkc.WithoutFeatures(vkc.FeatureFloat16|vkc.FeatureStorage16))
	w := upload(t, narrow, ramp(4, 1, 0))
	_, err = vkc.ViewAs[vkc.Float16](w, 0, 2)
	require.ErrorIs(t, err, vkc.ErrUnsupported)
}

// Two buffers of one op that share memory must be the same range or
// disjoint; an op that cannot run in place refuses any overlap.
func TestOverlappingViewsRefusedWhereTheOpCannotHonourThem(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	xs := ramp(16, 1, 0)
	b := upload(t, dev, xs)
	lo, hi, mid := view(t, b, 0, 8), view(t, b, 8, 8), view(t, b, 4, 8)
	require.ErrorIs(t, opAdd(s, lo, hi, mid), vkc.ErrOverlap, "the output overlaps both inputs in part")
	require.ErrorIs(t, opAxpy(s, 1, lo, mid), vkc.ErrOverlap, "y overlaps x in part")
	require.ErrorIs(t, vkc.Copy(s, lo, mid), vkc.ErrOverlap, "a copy between overlapping ranges")
	require.ErrorIs(t, opConvert(s, lo, mid), vkc.ErrOverlap, "a conversion between overlapping ranges")
	for _, n := range []int{16, 9} { // one pass and several: the rule does not depend on the length
		long := upload(t, dev, ramp(1<<n, 0, 1))
		require.ErrorIs(t, opSum(s, long, view(t, long, 3, 1)), vkc.ErrOverlap, "Sum into an element of its input (%d elements)", 1<<n)
		require.ErrorIs(t, opSum(s, long, view(t, long, 0, 1)), vkc.ErrOverlap, "Sum into the first element of its input (%d elements)", 1<<n)
	}
	one := view(t, b, 5, 1)
	require.ErrorIs(t, opSum(s, one, one), vkc.ErrOverlap, "a one-element sum into itself")
	require.Equal(t, xs, readAll(t, b), "refused ops change nothing")
	out := upload(t, dev, filled(8, 0))
	require.NoError(t, opAdd(s, lo, mid, out), "inputs may overlap each other")
	sums := make([]float32, 8)
	for i := range sums {
		sums[i] = xs[i] + xs[4+i]
	}
	require.Equal(t, sums, readAll(t, out))
	require.NoError(t, opAxpy(s, 1, lo, lo), "in place on the same range")
	want := slices.Clone(xs)
	for i := range 8 {
		want[i] = 2 * xs[i]
	}
	require.Equal(t, want, readAll(t, b))
}

// A buffer's memory lives while any view of it is open: Close of the
// buffer leaves its views working, and the memory goes with the last.
func TestViewsKeepTheirBufferMemory(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	src := upload(t, dev, ramp(4, 1, 5))
	warmOps(t, dev)
	before := dev.MemoryStats().Used
	b, err := vkc.FromSlice(dev, ramp(1024, 1, 0))
	require.NoError(t, err)
	used := dev.MemoryStats().Used
	require.Greater(t, used, before)
	v, err := b.View(3, 10)
	require.NoError(t, err)
	w, err := v.View(2, 4) // a view of a view
	require.NoError(t, err)
	require.Equal(t, used, dev.MemoryStats().Used, "a view allocates nothing")
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	_, err = b.Read(testCtx(t))
	require.ErrorIs(t, err, vkc.ErrClosed)
	require.Equal(t, used, dev.MemoryStats().Used, "open views hold the memory")
	require.NoError(t, opScale(s, 2, src, w))
	require.Equal(t, []float32{3, 4, 10, 12, 14, 16, 9, 10, 11, 12}, readAll(t, v))
	require.NoError(t, v.Close())
	require.Equal(t, used, dev.MemoryStats().Used)
	require.Equal(t, []float32{10, 12, 14, 16}, readAll(t, w))
	require.NoError(t, w.Close())
	assert.Equal(t, before, dev.MemoryStats().Used, "the last view's Close frees the memory")
	_, err = w.Read(testCtx(t))
	require.ErrorIs(t, err, vkc.ErrClosed)
}

// The dynamic forms take views: with a length param a view bound as it is
// gets exactly its prefix written; a view bound through a copy is refused
// there, and the constant-length dynamic forms take it.
func TestDynamicOpsOnViews(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	xs, ys := ramp(64, 1, 0), ramp(64, 1, 100)
	bx, by := upload(t, dev, xs), upload(t, dev, ys)
	x, y := view(t, bx, 16, 20), view(t, by, 32, 20) // aligned on lavapipe
	n := newParam(t, dev, uint32(5))
	a := newParam(t, dev, float32(3))
	require.NoError(t, opAxpyDyn(s, ops.ParamOf(a), x, y, n))
	for i := range 5 {
		ys[32+i] += 3 * xs[16+i]
	}
	require.Equal(t, ys, readAll(t, by), "AxpyDyn of 5 on aligned views")

	g, err := s.Capture(func(s *vkc.Stream) error { return opScaleDyn(s, ops.ParamOf(a), x, y, n) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, n.Set(7))
	require.NoError(t, g.Replay())
	for i := range 7 {
		ys[32+i] = 3 * xs[16+i]
	}
	require.Equal(t, ys, readAll(t, by), "a replayed ScaleDyn on views, its length set after capture")

	odd := view(t, by, 33, 20)
	err = opAxpyDyn(s, ops.ParamOf(a), x, odd, n)
	require.ErrorIs(t, err, vkc.ErrUnsupported)
	require.ErrorContains(t, err, "length param")
	require.Equal(t, ys, readAll(t, by), "the refused launch changed nothing")
	require.NoError(t, opAxpyDyn(s, ops.ParamOf(a), x, odd, nil), "no length param: the view goes through a copy")
	for i := range 20 {
		ys[33+i] += 3 * xs[16+i]
	}
	require.Equal(t, ys, readAll(t, by))
}

// Close of a buffer, its views and the device racing ops on the views:
// every call completes or fails with ErrClosed, nothing leaks (the device
// checks at cleanup), and the memory goes back.
func TestViewsRaceClose(t *testing.T) {
	for round := range 20 {
		dev := openDevice(t)
		b := upload(t, dev, ramp(256, 1, 0))
		var views []*vkc.Buffer[float32]
		for i := range 4 {
			v, err := b.View(i*50+round%3, 40)
			require.NoError(t, err)
			views = append(views, v)
		}
		done := make(chan error, 8)
		for i, v := range views {
			go func() {
				s := dev.StreamWithID(uint64(i))
				for range 10 {
					err := opScale(s, 2, views[(i+1)%len(views)], v)
					if err == nil {
						_, err = v.ReadOn(testCtx(t), s)
					}
					if err == nil {
						var w *vkc.Buffer[float32]
						if w, err = v.View(1, 3); err == nil {
							err = vkc.Fill(s, w, 1)
							_ = w.Close()
						}
					}
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		go func() { done <- b.Close() }()
		go func() {
			if round%2 == 0 {
				done <- views[0].Close()
			} else {
				done <- dev.Close()
			}
		}()
		for range len(views) + 2 {
			if err := <-done; err != nil {
				require.ErrorIs(t, err, vkc.ErrClosed, "round %d", round)
			}
		}
	}
}

// ReadAsync reads a view's elements, and every element type's whole
// bytes (a float64 buffer's eight per element, a Float16 one's two).
func TestReadAsyncOfViewsAndEveryWidth(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	f := upload(t, dev, ramp(20, 1, 0))
	p, err := view(t, f, 3, 5).ReadAsync(s)
	require.NoError(t, err)
	got, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, ramp(5, 1, 3), got)

	d := upload(t, dev, []float64{1.5, -2, math.Pi})
	pd, err := d.ReadAsync(s)
	require.NoError(t, err)
	gd, err := pd.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, []float64{1.5, -2, math.Pi}, gd)

	hs := []vkc.Float16{vkc.Float16From(1), vkc.Float16From(-3), vkc.Float16From(0.5)}
	h := upload(t, dev, hs)
	ph, err := view(t, h, 1, 2).ReadAsync(s)
	require.NoError(t, err)
	gh, err := ph.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, hs[1:], gh)
}
