package blackbox_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
	"github.com/vkcompute/vkc/ops"
)

// viewAs makes vkc.ViewAs[U](b, byteOffset, n), closed at cleanup.
func viewAs[U, T vkc.Element](t testing.TB, b *vkc.Buffer[T], byteOffset, n int) *vkc.Buffer[U] {
	t.Helper()
	v, err := vkc.ViewAs[U](b, byteOffset, n)
	require.NoError(t, err, "ViewAs(%d, %d)", byteOffset, n)
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// A graph captured over views bound through stand-ins replays with the
// inputs written between replays, and an input view never written taints
// exactly the output view's range on every replay until it is written.
func TestReplaysThroughStandInsFollowInputsAndTaint(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	in := newBuffer[float32](t, dev, 64)
	ys := ramp(64, 1, 500)
	out := upload(t, dev, ys)
	x, y := view(t, in, 1, 10), view(t, out, 21, 10) // neither aligned on any device
	g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrUnwritten, "an input view never written taints the output view")
	got, err := view(t, out, 0, 21).ReadOn(ctx, s)
	require.NoError(t, err, "the elements before the output view stay written")
	require.Equal(t, ys[:21], got)
	got, err = view(t, out, 31, 33).ReadOn(ctx, s)
	require.NoError(t, err, "the elements after the output view stay written")
	require.Equal(t, ys[31:], got)
	for round := range 3 {
		xs := ramp(10, float32(round+1), float32(round))
		require.NoError(t, x.WriteOn(s, xs))
		require.NoError(t, g.Replay())
		for i := range 10 {
			ys[21+i] = 2 * xs[i]
		}
		require.Equal(t, ys, read(t, s, out), "replay %d after writing the input view", round)
	}
	_, err = in.ReadOn(ctx, s)
	require.ErrorIs(t, err, vkc.ErrUnwritten, "the input buffer beyond its view is still unwritten")
}

// A graph keeps what it recorded: closing every view and buffer it used
// leaves it replaying, a write recorded through a view included, and
// once the graph closes the memory is back where it began.
func TestGraphOverViewsOutlivesThemAndMemoryReturns(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	warmOps(t, dev)
	base := dev.MemoryStats()
	src, err := vkc.NewBuffer[float32](dev, 40)
	require.NoError(t, err)
	dst, err := vkc.NewBuffer[float32](dev, 40)
	require.NoError(t, err)
	x, err := src.View(3, 9)
	require.NoError(t, err)
	y, err := dst.View(5, 9)
	require.NoError(t, err)
	yy, err := y.View(1, 4) // a view of a view, bound through a stand-in
	require.NoError(t, err)
	probe, err := vkc.FromSlice(dev, filled(4, 0))
	require.NoError(t, err)
	xs := ramp(9, 1, 1)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, xs); err != nil {
			return err
		}
		if err := opScale(s, 3, x, y); err != nil {
			return err
		}
		return opScale(s, 2, yy, probe)
	})
	require.NoError(t, err)
	for _, b := range []*vkc.Buffer[float32]{yy, y, x, dst, src} {
		require.NoError(t, b.Close())
	}
	for range 2 {
		require.NoError(t, g.Replay())
		want := []float32{2 * 3 * xs[1], 2 * 3 * xs[2], 2 * 3 * xs[3], 2 * 3 * xs[4]}
		require.Equal(t, want, read(t, s, probe), "a replay after its views and buffers closed")
	}
	require.NoError(t, probe.Close())
	require.NoError(t, g.Close())
	require.NoError(t, s.Sync(testCtx(t)))
	after := dev.MemoryStats()
	assert.Equal(t, base.Used, after.Used, "Used back to its baseline")
	assert.Equal(t, base.LiveClaims, after.LiveClaims, "no claim left behind")
	assert.Zero(t, after.Guarded, "nothing guarded once the graph closed")
}

// The stand-ins a capture window allocates are parked by the warmup, so
// the recorded run finds them and needs no new page, even when they are
// large and many: a window of launches over big unaligned views captures.
func TestStandInsInACaptureNeedNoNewPage(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const n = 1 << 20 // 4 MiB a view
	xs := seq(n+8, func(i int) float32 { return float32(i % 97) })
	b := upload(t, dev, xs)
	c := upload(t, dev, filled(n+8, 0))
	var views []*vkc.Buffer[float32]
	for i := range 4 {
		views = append(views, view(t, b, 1+i, n), view(t, c, 3+i, n))
	}
	fn := func(s *vkc.Stream) error {
		for i := 0; i < len(views); i += 2 {
			if err := opScale(s, float32(i+1), views[i], views[i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	g, err := s.Capture(fn)
	require.NoError(t, err, "a window of stand-ins captures")
	defer g.Close()
	require.NoError(t, g.Replay())
	want := make([]float32, n+8)
	for i := 0; i < len(views); i += 2 {
		off := 3 + i/2
		for j := range n {
			want[off+j] = float32(i+1) * xs[1+i/2+j]
		}
	}
	require.Equal(t, want, read(t, s, c))
}

// ViewAs carves a float32 allocation into narrow and wide tensors at byte
// offsets a storage buffer cannot bind, and the typed ops on them give
// what the same ops on whole buffers give.
func TestTypedOpsOnViewAsAtOddByteOffsets(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	feats := dev.Info().Features
	t.Run("float16", func(t *testing.T) {
		if feats&vkc.FeatureFloat16 == 0 || feats&vkc.FeatureStorage16 == 0 {
			t.Skip("no 16-bit floats here")
		}
		b := upload(t, dev, filled(16, 0))
		hs := []vkc.Float16{vkc.Float16From(1), vkc.Float16From(2), vkc.Float16From(-3), vkc.Float16From(0.5), vkc.Float16From(4)}
		x := viewAs[vkc.Float16](t, b, 2, 5)    // halfword 1
		y := viewAs[vkc.Float16](t, b, 14, 5)   // halfword 7
		z := viewAs[vkc.Float16](t, b, 34, 5)   // halfword 17
		sum := viewAs[vkc.Float16](t, b, 62, 1) // the last halfword
		require.NoError(t, x.Write(hs))
		require.NoError(t, y.Write(hs))
		require.NoError(t, opAdd(s, x, y, z))
		got, err := z.Read(ctx)
		require.NoError(t, err)
		for i, h := range got {
			assert.Equal(t, 2*hs[i].Float32(), h.Float32(), "AddOf element %d", i)
		}
		require.NoError(t, opSum(s, z, sum))
		gs, err := sum.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, float32(2*(1+2-3+0.5+4)), gs[0].Float32(), "SumOf a view at an odd halfword")
		require.NoError(t, opDot(t, s, x, y, sum))
		gs, err = sum.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, float32(1+4+9+0.25+16), gs[0].Float32(), "DotOf views at odd halfwords")
		// The halfwords around the views were never touched: they hold 0.
		all, err := vkc.ViewAs[uint16](b, 0, 32)
		require.NoError(t, err)
		defer all.Close()
		words, err := all.Read(ctx)
		require.NoError(t, err)
		for i, w := range words {
			inView := (i >= 1 && i < 6) || (i >= 7 && i < 12) || (i >= 17 && i < 22) || i == 31
			if !inView {
				assert.Zero(t, w, "halfword %d outside every view", i)
			}
		}
	})
	t.Run("float64", func(t *testing.T) {
		if feats&vkc.FeatureFloat64 == 0 {
			t.Skip("no 64-bit floats here")
		}
		b := upload(t, dev, filled(32, 0))
		x := viewAs[float64](t, b, 8, 3)  // byte 8: not 16-aligned
		y := viewAs[float64](t, b, 40, 3) // byte 40
		out := viewAs[float64](t, b, 120, 1)
		require.NoError(t, x.Write([]float64{1.5, -2, math.Pi}))
		require.NoError(t, y.Write([]float64{2, 4, 1}))
		require.NoError(t, opAxpyOf(s, 2, x, y))
		got, err := y.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, []float64{5, 0, 1 + 2*math.Pi}, got)
		require.NoError(t, opDot(t, s, x, y, out))
		gd, err := out.Read(ctx)
		require.NoError(t, err)
		assert.InDelta(t, 1.5*5+math.Pi*(1+2*math.Pi), gd[0], 1e-9, "DotOf float64 views")
		_, err = vkc.ViewAs[float64](b, 4, 1)
		require.ErrorIs(t, err, vkc.ErrOutOfRange, "a float64 view at byte 4")
	})
}

// Reductions over views at every offset, long enough for several passes,
// give the host's sums; the dynamic forms give the same with no length
// param, and with one refuse a view they cannot bind, changing nothing.
func TestReductionsOverUnalignedViews(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const total = 1200
	xs := seq(total, func(i int) float32 { return float32(i%13) - 6 })
	b := upload(t, dev, xs)
	outs := upload(t, dev, filled(8, -1))
	for _, off := range []int{1, 2, 3, 5} {
		for _, m := range []int{1, 255, 257, 1000} {
			x := view(t, b, off, m)
			y := view(t, b, total-m-off, m)
			out := view(t, outs, 1+off%3, 1)
			var sum, dot float64
			for i := range m {
				sum += float64(xs[off+i])
				dot += float64(xs[off+i]) * float64(xs[total-m-off+i])
			}
			require.NoError(t, opSum(s, x, out))
			assert.InDelta(t, sum, float64(readAll(t, out)[0]), 1e-3, "Sum of view (%d, %d)", off, m)
			require.NoError(t, opDot(t, s, x, y, out))
			assert.InDelta(t, dot, float64(readAll(t, out)[0]), 1e-2, "Dot of views (%d, %d)", off, m)
			require.NoError(t, opSumDyn(s, x, out, nil))
			assert.InDelta(t, sum, float64(readAll(t, out)[0]), 1e-3, "SumDyn, no length, of view (%d, %d)", off, m)
		}
	}
	n := newParam(t, dev, uint32(3))
	before := readAll(t, outs)
	err := opSumDyn(s, view(t, b, 1, 50), view(t, outs, 4, 1), n)
	require.Error(t, err, "SumDyn with a length param over a view it cannot bind")
	require.Equal(t, before, readAll(t, outs), "the refused reduction changed nothing")
	require.NoError(t, opSumDyn(s, view(t, b, 4, 50), view(t, outs, 4, 1), n), "an aligned view with a length param")
	assert.Equal(t, xs[4]+xs[5]+xs[6], readAll(t, outs)[4])

	rows := upload(t, dev, ramp(3*5+2, 0.25, -1))
	src, dst := view(t, rows, 1, 15), view(t, outs, 0, 1)
	_ = dst
	res := upload(t, dev, filled(17, 0))
	sm := view(t, res, 2, 15)
	require.NoError(t, opSoftmax(s, src, sm, 3, 5))
	got := readAll(t, res)
	host := ramp(3*5+2, 0.25, -1)[1:16]
	for r := range 3 {
		var mx, z float64 = math.Inf(-1), 0
		for c := range 5 {
			mx = math.Max(mx, float64(host[r*5+c]))
		}
		for c := range 5 {
			z += math.Exp(float64(host[r*5+c]) - mx)
		}
		for c := range 5 {
			assert.InDelta(t, math.Exp(float64(host[r*5+c])-mx)/z, float64(got[2+r*5+c]), 1e-5, "softmax row %d col %d", r, c)
		}
	}
	assert.Equal(t, []float32{0, 0}, got[:2], "softmax left the elements before its view")
}

// Matmul, Transpose and Convert on views bound through stand-ins give the
// host's results, and refuse any overlap of their output with an input.
func TestShapedOpsOnUnalignedViews(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	mem := upload(t, dev, filled(64, 0))
	a, bm, c := view(t, mem, 1, 6), view(t, mem, 9, 6), view(t, mem, 17, 4)
	require.NoError(t, a.Write([]float32{1, 2, 3, 4, 5, 6}))   // 2x3
	require.NoError(t, bm.Write([]float32{1, 0, 0, 1, 2, -1})) // 3x2
	require.NoError(t, opMatmul(s, a, bm, c, 2, 2, 3))
	assert.Equal(t, []float32{7, -1, 16, -1}, readAll(t, c), "Matmul of unaligned views")
	tr := view(t, mem, 23, 6)
	require.NoError(t, opTranspose(s, a, tr, 2, 3))
	assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, readAll(t, tr), "Transpose into an unaligned view")
	before := readAll(t, mem)
	require.Error(t, opMatmul(s, a, bm, view(t, mem, 5, 4), 2, 2, 3), "Matmul's output overlaps a in part")
	require.Error(t, opTranspose(s, a, view(t, mem, 3, 6), 2, 3), "Transpose's output overlaps its source")
	ints := viewAs[int32](t, mem, 4*2, 6) // the same bytes as elements 2..7
	require.Error(t, opConvert(s, a, ints), "Convert into bytes overlapping its source")
	require.Equal(t, before, readAll(t, mem), "refused ops change nothing")

	out := upload(t, dev, make([]int32, 9))
	require.NoError(t, opConvert(s, a, view(t, out, 3, 6)))
	assert.Equal(t, []int32{0, 0, 0, 1, 2, 3, 4, 5, 6}, readAll(t, out), "Convert into an unaligned view")
	if feats := dev.Info().Features; feats&vkc.FeatureStorage16 != 0 {
		hb := upload(t, dev, make([]vkc.Float16, 9))
		h := view(t, hb, 1, 6)
		require.NoError(t, opConvert(s, a, h))
		got := readAll(t, hb)
		for i, v := range got {
			want := float32(0)
			if i >= 1 && i < 7 {
				want = float32(i)
			}
			assert.Equal(t, want, v.Float32(), "halfword %d after Convert into a view at halfword 1", i)
		}
	}
}

// A user kernel may take two views bound through stand-ins when they are
// disjoint; two that overlap, one written, are refused, and the refusal
// changes nothing, the unwritten state included.
func TestUserKernelWithTwoStandIns(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	k := loadAffine(t, dev)
	xs := ramp(32, 1, 0)
	b := upload(t, dev, xs)
	x, y := view(t, b, 1, 7), view(t, b, 9, 7)
	require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 7), x, y))
	want := append([]float32(nil), xs...)
	for i := range 7 {
		want[9+i] = 2*xs[1+i] + 1
	}
	require.Equal(t, want, readAll(t, b), "two disjoint stand-ins")
	for _, r := range [][2]int{{4, 7}, {1, 7}, {7, 2}} {
		err := k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 7), x, view(t, b, r[0], r[1]))
		require.Error(t, err, "the written view (%d, %d) overlaps a stand-in", r[0], r[1])
	}
	require.Equal(t, want, readAll(t, b), "the refusals changed nothing")

	fresh := newBuffer[float32](t, dev, 32)
	require.NoError(t, view(t, fresh, 0, 5).Write(ramp(5, 1, 0)))
	err := k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 3), view(t, fresh, 1, 3), view(t, fresh, 2, 3))
	require.Error(t, err)
	requireUnwritten(t, s, view(t, fresh, 5, 27), vkc.ErrUnwritten, "a refused launch wrote nothing")
	got, err := view(t, fresh, 0, 5).Read(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, ramp(5, 1, 0), got)
}

// LaunchIndirect with GroupsFrom takes its counts from a view at an
// offset a storage buffer cannot bind, and binds unaligned views.
func TestGroupsFromAnUnalignedView(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	k := loadAffine(t, dev)
	counts := upload(t, dev, []uint32{9, 9, 1, 1, 1, 9})
	cv := view(t, counts, 1, 4) // counts at element 1 of the view: 1, 1, 1
	xs := ramp(300, 1, 0)
	b := upload(t, dev, xs)
	out := upload(t, dev, filled(300, 0))
	x, y := view(t, b, 3, 260), view(t, out, 5, 260)
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsFrom(cv, 1, [3]uint32{}), affinePush(1, 1, 260), x, y))
	got := readAll(t, out)
	local := 0
	for i := range 260 {
		if got[5+i] != 0 {
			local = i + 1
			require.Equal(t, xs[3+i]+1, got[5+i], "element %d of the one group", i)
		}
	}
	require.Positive(t, local, "one group ran")
	require.Less(t, local, 260, "only one group ran, not as many as the whole counts buffer would give")
	for i := 5 + local; i < 300; i++ {
		require.Zero(t, got[i], "element %d past the group", i)
	}
	require.Zero(t, got[0]+got[1]+got[2]+got[3]+got[4], "elements before the view")
}

// A read of a view is ordered against work on another stream by the bytes:
// ReadAsync issued before another stream writes an overlapping view reads
// what was there, and a read on a second stream after a write on the first
// to an overlapping view sees the write.
func TestReadsOfViewsAcrossStreamsFollowTheBytes(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s1, s2 := dev.StreamWithID(1), dev.StreamWithID(2)
	xs := ramp(40, 1, 0)
	b := upload(t, dev, xs)
	v := view(t, b, 3, 10)
	p, err := v.ReadAsync(s1)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, vkc.Fill(s2, view(t, b, 5, 4), 7))
	got, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, xs[3:13], got, "the pending read saw what was there when it was issued")
	require.NoError(t, opAxpy(s1, 1, upload(t, dev, xs[9:12]), view(t, b, 9, 3)))
	p2, err := view(t, b, 8, 6).ReadAsync(s2)
	require.NoError(t, err)
	defer p2.Close()
	got, err = p2.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, []float32{7, 18, 20, 22, 12}, got[:5], "a read on s2 after s1's write sees it")
	require.Equal(t, xs[13], got[5])
}

// Close of the buffer, of the view and of the device racing a pending
// read of a view, and reads through views of views, under collector
// pressure: every call completes or fails with ErrClosed, and the memory
// and objects go back (checked at cleanup).
func TestPendingViewReadsRaceCloseUnderGCPressure(t *testing.T) {
	gcpressure.Start(t)
	rounds := gcpressure.Scaled(12, 200)
	for round := range rounds {
		dev := openDevice(t)
		s := dev.Stream()
		b, err := vkc.FromSlice(dev, ramp(300, 1, 0))
		require.NoError(t, err)
		v, err := b.View(1+round%5, 100)
		require.NoError(t, err)
		w, err := vkc.ViewAs[uint32](v, 4*(round%3), 20)
		require.NoError(t, err)
		p, err := w.ReadAsync(s)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		wg.Go(func() { errs <- b.Close() })
		wg.Go(func() { errs <- v.Close() })
		wg.Go(func() {
			got, err := p.Wait(testCtx(t))
			if err == nil && len(got) != 20 {
				err = errors.New("a short read")
			}
			errs <- err
		})
		wg.Go(func() { errs <- vkc.Fill(s, w, uint32(round)) })
		if round%3 == 0 {
			wg.Go(func() { errs <- dev.Close() })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				require.ErrorIs(t, err, vkc.ErrClosed, "round %d", round)
			}
		}
		require.NoError(t, p.Close())
		require.NoError(t, w.Close())
		if round%3 != 0 {
			assert.Zero(t, dev.MemoryStats().LiveClaims, "round %d: the last view's Close freed the memory", round)
		}
	}
}

// VulkanBuffer of a view and of every element width is exactly the bytes
// the buffer holds: Range is Len() times the element size (not 4 bytes
// an element, which would reach into the neighbours of a narrow buffer or
// view and stop halfway through a wide one), and a view's Offset is its
// first byte.
func TestVulkanBufferOfViewsIsExactlyTheirBytes(t *testing.T) {
	dev := openDevice(t)
	b := newBuffer[float32](t, dev, 16)
	vb, err := b.VulkanBuffer()
	require.NoError(t, err)
	require.Equal(t, uint64(64), vb.Range)
	for _, c := range []struct {
		name        string
		get         func() (vkc.VulkanBuffer, error)
		off, length uint64
	}{
		{"View(2, 5)", func() (vkc.VulkanBuffer, error) { return view(t, b, 2, 5).VulkanBuffer() }, 8, 20},
		{"ViewAs[uint16](2, 3)", func() (vkc.VulkanBuffer, error) { return viewAs[uint16](t, b, 2, 3).VulkanBuffer() }, 2, 6},
		{"ViewAs[int8](5, 3)", func() (vkc.VulkanBuffer, error) { return viewAs[int8](t, b, 5, 3).VulkanBuffer() }, 5, 3},
		{"ViewAs[uint64](8, 2)", func() (vkc.VulkanBuffer, error) { return viewAs[uint64](t, b, 8, 2).VulkanBuffer() }, 8, 16},
	} {
		got, err := c.get()
		require.NoError(t, err, c.name)
		assert.Equal(t, vb.Buffer, got.Buffer, c.name)
		assert.Equal(t, vb.Offset+c.off, got.Offset, "%s: offset", c.name)
		assert.Equal(t, c.length, got.Range, "%s: range", c.name)
	}
	if dev.Info().Features&vkc.FeatureFloat64 != 0 {
		wide, err := newBuffer[float64](t, dev, 3).VulkanBuffer()
		require.NoError(t, err)
		assert.Equal(t, uint64(24), wide.Range, "a buffer of three float64")
	}
	narrow, err := newBuffer[uint16](t, dev, 3).VulkanBuffer()
	require.NoError(t, err)
	assert.Equal(t, uint64(6), narrow.Range, "a buffer of three uint16")
}

// WrittenOutside and ReadOutside on a view declare exactly its range: the
// rest of a new buffer stays unwritten.
func TestOutsideDeclarationsOnViewsAreRangeExact(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	b := newBuffer[float32](t, dev, 32)
	v := view(t, b, 3, 7)
	err := v.ReadOutside(s, 0)
	require.ErrorIs(t, err, vkc.ErrUnwritten, "an outside read of a view never written")
	require.NoError(t, v.WrittenOutside(s, 0))
	_, err = v.ReadOn(testCtx(t), s)
	require.NoError(t, err, "the declared view reads")
	require.NoError(t, v.ReadOutside(s, 0))
	requireUnwritten(t, s, view(t, b, 0, 3), vkc.ErrUnwritten, "before the declared view")
	requireUnwritten(t, s, view(t, b, 10, 22), vkc.ErrUnwritten, "after the declared view")
}

// Every path through a stand-in under synchronization validation: copies
// in and back around kernels, chains of launches on overlapping views,
// two streams, narrow fills, conversions, reductions, indirect counts,
// reads and a captured graph replayed; the layer stays silent (checked at
// cleanup), the results are the host's, and once the streams are idle
// the stand-ins are gone from MemoryStats.
func TestStandInsUnderSyncValidation(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s1, s2 := dev.StreamWithID(1), dev.StreamWithID(2)
	ctx := testCtx(t)
	k := loadAffine(t, dev)
	xs := ramp(200, 1, 0)
	b := upload(t, dev, xs)
	c := upload(t, dev, filled(200, 0))
	warmOps(t, dev)
	base := dev.MemoryStats()
	x, y, z := view(t, b, 1, 50), view(t, b, 101, 50), view(t, c, 3, 50)
	chain := func(s *vkc.Stream) error {
		for _, step := range []func() error{
			func() error { return opScale(s, 2, x, z) },
			func() error { return opAxpy(s, 1, z, y) },
			func() error { return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(1, 1, 50), y, z) },
			func() error { return opAxpy(s, 1, x, z) },
			func() error { return opSum(s, z, view(t, c, 61, 1)) },
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}
	host := func(xs, cs []float32) ([]float32, []float32) {
		xs, cs = append([]float32(nil), xs...), append([]float32(nil), cs...)
		var sum float32
		for i := range 50 {
			cs[3+i] = 2 * xs[1+i]
			xs[101+i] += cs[3+i]
			cs[3+i] = xs[101+i] + 1
			cs[3+i] += xs[1+i]
			sum += cs[3+i]
		}
		cs[61] = sum
		return xs, cs
	}
	require.NoError(t, chain(s1))
	wantB, wantC := host(xs, filled(200, 0))
	require.Equal(t, wantB, read(t, s2, b), "s2 reads what s1 wrote through stand-ins")
	require.Equal(t, wantC, read(t, s2, c))

	w := view(t, c, 70, 9)
	require.NoError(t, vkc.Fill(s2, viewAs[uint16](t, w, 2, 5), 0x3c00))
	hb := viewAs[vkc.Float16](t, c, 4*80+2, 7)
	require.NoError(t, opConvert(s1, view(t, b, 5, 7), hb))
	p, err := view(t, c, 69, 20).ReadAsync(s2)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	got, err := hb.ReadOn(ctx, s2)
	require.NoError(t, err)
	for i, h := range got {
		assert.Equal(t, wantB[5+i], h.Float32(), "Convert into a Float16 view at an odd halfword, element %d", i)
	}

	g, err := s1.Capture(chain)
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.NoError(t, g.Replay())
	wantB, wantC2 := host(wantB, wantC) // Capture's warmup runs the chain once
	for range 2 {
		wantB, wantC2 = host(wantB, wantC2)
	}
	gotB := read(t, s1, b)
	require.Equal(t, wantB, gotB, "the warmup and two replays")
	gotC := read(t, s1, c)
	for i := range 50 {
		require.Equal(t, wantC2[3+i], gotC[3+i], "c[%d] after two replays", 3+i)
	}
	require.InDelta(t, float64(wantC2[61]), float64(gotC[61]), 1e-3*math.Abs(float64(wantC2[61])))
	require.NoError(t, g.Close())
	require.NoError(t, s1.Sync(ctx))
	require.NoError(t, s2.Sync(ctx))
	assert.Equal(t, base.LiveClaims, dev.MemoryStats().LiveClaims, "no stand-in left behind")
	assert.Equal(t, base.Used, dev.MemoryStats().Used, "Used back at its baseline")
}

// A stand-in that needs a new page inside a recording with no warmup is
// refused with ErrAllocInCapture and dooms the window, as any allocation
// does; the view and its buffer are left as they were, the stream runs
// eager work after it, and the memory goes back.
func TestAStandInNeedingAPageInARecordingIsRefused(t *testing.T) {
	const page = 64 << 10
	dev := openDevice(t, vkc.WithPageSize(page))
	s := dev.Stream()
	ctx := testCtx(t)
	const n = page / 4 / 2 // half a page a view: two stand-ins need a page
	// Scale's first use makes what ops keeps per device; the buffers it
	// ran on stay open, so that their page has no room for both stand-ins.
	wx, wy := upload(t, dev, ramp(4, 1, 0)), newBuffer[float32](t, dev, 4)
	require.NoError(t, opScale(s, 2, wx, wy))
	require.NoError(t, s.Sync(ctx))
	xs := ramp(2*n+2, 1, 0)
	b := upload(t, dev, xs)
	x, y := view(t, b, 1, n), view(t, b, n+1, n)
	base := dev.MemoryStats()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, s.BeginCapture())
	err := opScale(s, 2, x, y)
	require.ErrorIs(t, err, vkc.ErrAllocInCapture, "stand-ins with no room in any page")
	_, err = s.EndCapture()
	require.Error(t, err, "the window is doomed")
	require.Equal(t, xs, read(t, s, b), "the refused launch changed nothing")
	require.NoError(t, opScale(s, 2, x, y), "eager, the stand-ins get their page")
	want := append([]float32(nil), xs...)
	for i := range n {
		want[n+1+i] = 2 * xs[1+i]
	}
	require.Equal(t, want, read(t, s, b))
	require.NoError(t, s.Sync(ctx))
	assert.Equal(t, base.Used, dev.MemoryStats().Used, "the stand-ins went back")
	assert.Equal(t, base.LiveClaims, dev.MemoryStats().LiveClaims)
}

// A launch skipped because its GroupsFrom counts were never written
// leaves its outputs unwritten, through stand-ins too: exactly the output
// view's range, not its neighbours.
func TestSkippedIndirectLaunchTaintsExactlyTheViewsThroughStandIns(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	k := loadAffine(t, dev)
	counts := newBuffer[uint32](t, dev, 8)
	ys := ramp(40, 1, 0)
	out := upload(t, dev, ys)
	x, y := view(t, upload(t, dev, filled(40, 1)), 3, 9), view(t, out, 5, 9)
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsFrom(view(t, counts, 1, 5), 1, [3]uint32{}), affinePush(1, 1, 9), x, y))
	requireUnwritten(t, s, y, vkc.ErrUnwritten, "the skipped launch's output view")
	got, err := view(t, out, 0, 5).ReadOn(testCtx(t), s)
	require.NoError(t, err)
	require.Equal(t, ys[:5], got, "before the output view")
	got, err = view(t, out, 14, 26).ReadOn(testCtx(t), s)
	require.NoError(t, err)
	require.Equal(t, ys[14:], got, "after the output view")
}

// Launches sized by GroupsOf take views bound through stand-ins (every
// buffer they write counts as written whole), and Softmax runs in place on
// an unaligned view.
func TestGroupsOfAndInPlaceSoftmaxOnUnalignedViews(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	k := loadAffine(t, dev)
	xs := ramp(64, 0.5, 0)
	b := upload(t, dev, xs)
	out := upload(t, dev, filled(64, 0))
	n := newParam(t, dev, uint32(20))
	x, y := view(t, b, 1, 20), view(t, out, 3, 20)
	require.NoError(t, k.LaunchIndirect(s, vkc.GroupsOf(n, 64), affinePush(2, 0, 20), x, y))
	got := readAll(t, out)
	for i := range 20 {
		require.Equal(t, 2*xs[1+i], got[3+i], "element %d", i)
	}
	v := view(t, b, 5, 12)
	err := opSoftmax(s, v, v, 3, 4)
	if err != nil {
		t.Logf("Softmax in place refused: %v", err)
		require.Equal(t, xs, readAll(t, b), "a refused Softmax changed nothing")
		return
	}
	got = readAll(t, b)
	for r := range 3 {
		var z float64
		for c := range 4 {
			z += math.Exp(float64(xs[5+r*4+c]))
		}
		for c := range 4 {
			assert.InDelta(t, math.Exp(float64(xs[5+r*4+c]))/z, float64(got[5+r*4+c]), 1e-5, "row %d col %d", r, c)
		}
	}
	require.Equal(t, xs[:5], got[:5])
	require.Equal(t, xs[17:], got[17:])
}

// ViewAs's alignment is measured from the start of the buffer's memory,
// not from the view it is taken of; a closed view refuses views while a
// view of it still works; a closed device refuses views; a view used on
// another device's stream is refused. None of it changes the memory.
func TestViewInputMeasuredFromTheMemory(t *testing.T) {
	dev := openDevice(t)
	other := openDevice(t)
	ctx := testCtx(t)
	b := upload(t, dev, []uint32{0x11112222, 0x33334444, 0x55556666, 0x77778888})
	before := dev.MemoryStats()
	h := viewAs[uint16](t, b, 2, 6) // halfwords 1..6
	_, err := vkc.ViewAs[uint32](h, 0, 1)
	require.ErrorIs(t, err, vkc.ErrOutOfRange, "byte 0 of the view is byte 2 of the memory")
	w := viewAs[uint32](t, h, 2, 2) // bytes 4..12 of the memory
	got, err := w.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint32{0x33334444, 0x55556666}, got)
	_, err = vkc.ViewAs[uint32](h, 2, 3)
	require.ErrorIs(t, err, vkc.ErrOutOfRange, "past the view's last byte, though inside the buffer")
	_, err = h.View(3, 4)
	require.ErrorIs(t, err, vkc.ErrOutOfRange, "past the view's last element, though inside the buffer")

	require.NoError(t, h.Close())
	_, err = h.View(0, 1)
	require.ErrorIs(t, err, vkc.ErrClosed, "a closed view")
	_, err = vkc.ViewAs[uint32](h, 2, 1)
	require.ErrorIs(t, err, vkc.ErrClosed)
	got, err = w.Read(ctx)
	require.NoError(t, err, "a view of a closed view")
	require.Equal(t, []uint32{0x33334444, 0x55556666}, got)

	s := other.Stream()
	require.Error(t, vkc.Fill(s, w, 1), "a view used on another device's stream")
	got, err = w.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint32{0x33334444, 0x55556666}, got, "the refused Fill changed nothing")
	require.Equal(t, before.Used, dev.MemoryStats().Used, "views allocate nothing")

	c := upload(t, other, ramp(8, 1, 0))
	require.NoError(t, other.Close())
	_, err = c.View(0, 1)
	require.ErrorIs(t, err, vkc.ErrClosed, "a view of a buffer of a closed device")
	_, err = vkc.ViewAs[uint32](c, 0, 1)
	require.ErrorIs(t, err, vkc.ErrClosed)
}

// Close of the buffer, of the views and of the device racing every kind
// of call on unaligned views, under collector pressure: launches through
// stand-ins, a user kernel, reductions, conversions, copies, reads, new
// views, and a graph replaying. Each call completes or fails with
// ErrClosed; nothing leaks and the layer stays silent (checked at cleanup).
func TestEveryCallOnViewsRacesClose(t *testing.T) {
	gcpressure.Start(t)
	rounds := gcpressure.Scaled(8, 100)
	for round := range rounds {
		dev := openDevice(t)
		warmOps(t, dev)
		claims := dev.MemoryStats().LiveClaims
		k := loadAffine(t, dev)
		b, err := vkc.FromSlice(dev, ramp(512, 1, 0))
		require.NoError(t, err)
		var views []*vkc.Buffer[float32]
		for i := range 6 {
			v, err := b.View(1+i*80+round%3, 64)
			require.NoError(t, err)
			views = append(views, v)
		}
		gs := dev.StreamWithID(7)
		g, err := gs.Capture(func(s *vkc.Stream) error { return opScale(s, 0.5, views[4], views[5]) })
		require.NoError(t, err)
		calls := []func(s *vkc.Stream) error{
			func(s *vkc.Stream) error { return opAxpy(s, 1, views[0], views[1]) },
			func(s *vkc.Stream) error {
				return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(1, 0, 64), views[1], views[2])
			},
			func(s *vkc.Stream) error {
				o, err := views[3].View(0, 1)
				if err != nil {
					return err
				}
				defer o.Close()
				return opSum(s, views[2], o)
			},
			func(s *vkc.Stream) error {
				u, err := vkc.ViewAs[int32](views[0], 4, 8)
				if err != nil {
					return err
				}
				defer u.Close()
				return opConvert(s, views[3], views[0]) // same type: a copy
			},
			func(s *vkc.Stream) error { return vkc.Copy(s, views[2], views[3]) },
			func(s *vkc.Stream) error {
				p, err := views[1].ReadAsync(s)
				if err != nil {
					return err
				}
				defer p.Close()
				_, err = p.Wait(testCtx(t))
				return err
			},
			func(*vkc.Stream) error { return g.Replay() },
		}
		errs := make(chan error, 64)
		var wg sync.WaitGroup
		for i, call := range calls {
			wg.Go(func() {
				s := dev.StreamWithID(uint64(i))
				for range 4 {
					if err := call(s); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Go(func() { errs <- b.Close() })
		wg.Go(func() { errs <- views[round%len(views)].Close() })
		switch round % 3 {
		case 0:
			wg.Go(func() { errs <- dev.Close() })
		case 1:
			wg.Go(func() { errs <- g.Close() })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, vkc.ErrClosed) {
				t.Errorf("round %d: %v", round, err)
			}
		}
		require.NoError(t, g.Close())
		for _, v := range views {
			require.NoError(t, v.Close())
		}
		if round%3 != 0 {
			require.NoError(t, gs.Sync(testCtx(t)))
			assert.Equal(t, claims, dev.MemoryStats().LiveClaims, "round %d: everything closed, nothing left but what ops keeps per device", round)
		}
	}
}

// A view and its buffer closed inside the recording that used them: the
// memory is guarded for the graph, which replays from it, and goes back
// when the graph closes.
func TestViewClosedInsideTheRecordingIsGuardedForTheGraph(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	warmOps(t, dev)
	base := dev.MemoryStats()
	xs := ramp(40, 1, 1)
	bx, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	x, err := bx.View(3, 9)
	require.NoError(t, err)
	out, err := vkc.NewBuffer[float32](dev, 12)
	require.NoError(t, err)
	y, err := out.View(1, 9)
	require.NoError(t, err)
	warmAndBegin(t, s, func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
	require.NoError(t, opScale(s, 2, x, y))
	require.NoError(t, x.Close())
	require.NoError(t, bx.Close()) // the last hold: freed inside the recording
	g, err := s.EndCapture()
	require.NoError(t, err)
	assert.NotZero(t, dev.MemoryStats().Guarded, "the recording's input is guarded")
	require.NoError(t, y.Close())
	require.NoError(t, vkc.Fill(s, out, 0))
	require.NoError(t, g.Replay())
	got, err := out.ReadOn(ctx, s)
	require.NoError(t, err)
	want := make([]float32, 12)
	for i := range 9 {
		want[1+i] = 2 * xs[3+i]
	}
	require.Equal(t, want, got, "the replay read the guarded input")
	require.NoError(t, g.Close())
	require.NoError(t, out.Close())
	require.NoError(t, s.Sync(ctx))
	after := dev.MemoryStats()
	assert.Zero(t, after.Guarded)
	assert.Equal(t, base.Used, after.Used)
	assert.Equal(t, base.LiveClaims, after.LiveClaims)
}

// A buffer whose elements end inside its last 32-bit word, written piece
// by piece through views (host writes, Fill, Copy), reads whole:
// the padding past its last element never makes it look unwritten.
func TestNarrowBufferWrittenThroughViewsReadsWhole(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	for _, cut := range []int{1, 3, 4, 6} {
		for way := range 4 {
			b := newBuffer[uint8](t, dev, 7)
			head, tail := view(t, b, 0, cut), view(t, b, cut, 7-cut)
			require.NoError(t, head.Write(make([]uint8, cut)))
			var err error
			switch way {
			case 0:
				err = tail.Write([]uint8{9, 9, 9, 9, 9, 9, 9}[:7-cut])
			case 1:
				err = vkc.Fill(s, tail, 9)
			case 2:
				// Convert (package ops) writes no 8-bit elements: refused,
				// it leaves the tail to a write on the stream.
				src := upload(t, dev, []uint32{9, 9, 9, 9, 9, 9, 9}[:7-cut])
				require.ErrorIs(t, opConvert(s, src, tail), vkc.ErrUnsupported, "Convert into uint8")
				err = tail.WriteOn(s, []uint8{9, 9, 9, 9, 9, 9, 9}[:7-cut])
			case 3:
				src := upload(t, dev, []uint8{9, 9, 9, 9, 9, 9, 9}[:7-cut])
				err = vkc.Copy(s, src, tail)
			}
			require.NoError(t, err, "cut %d way %d", cut, way)
			want := make([]uint8, 7)
			for i := cut; i < 7; i++ {
				want[i] = 9
			}
			got, err := b.ReadOn(ctx, s)
			require.NoError(t, err, "cut %d way %d", cut, way)
			require.Equal(t, want, got, "cut %d way %d", cut, way)
			p, err := b.ReadAsync(s)
			require.NoError(t, err, "ReadAsync, cut %d way %d", cut, way)
			got, err = p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, want, got)
			wide, err := vkc.ViewAs[uint16](b, 4, 1)
			require.NoError(t, err)
			gw, err := wide.Read(ctx)
			require.NoError(t, err)
			require.Equal(t, uint16(want[4])|uint16(want[5])<<8, gw[0])
			require.NoError(t, wide.Close())
		}
	}
}

// A dynamic op sized by a length param writes exactly the prefix of an
// aligned view it was given, eagerly and in replays as the length grows:
// the bytes past the prefix, and those before the view, stay unwritten.
func TestDynamicPrefixOfAViewIsExactlyWhatBecomesWritten(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := testCtx(t)
	b := newBuffer[float32](t, dev, 64)
	y := view(t, b, 16, 20) // aligned on lavapipe
	n := newParam(t, dev, uint32(5))
	require.NoError(t, opFillDyn(t, s, y, ops.Const(3), n))
	got, err := view(t, b, 16, 5).ReadOn(ctx, s)
	require.NoError(t, err)
	require.Equal(t, filled(5, 3), got)
	requireUnwritten(t, s, view(t, b, 21, 1), vkc.ErrUnwritten, "past the prefix")
	requireUnwritten(t, s, view(t, b, 15, 1), vkc.ErrUnwritten, "before the view")

	x := upload(t, dev, ramp(20, 1, 1))
	g, err := s.Capture(func(s *vkc.Stream) error { return opCopyDyn(s, x, y, n) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, n.Set(9))
	require.NoError(t, g.Replay())
	got, err = view(t, b, 16, 9).ReadOn(ctx, s)
	require.NoError(t, err)
	require.Equal(t, ramp(9, 1, 1), got, "the replay wrote the longer prefix")
	requireUnwritten(t, s, view(t, b, 25, 11), vkc.ErrUnwritten, "past the replay's prefix")
	requireUnwritten(t, s, view(t, b, 0, 16), vkc.ErrUnwritten, "before the view")
	requireUnwritten(t, s, view(t, b, 36, 28), vkc.ErrUnwritten, "after the view")
}

// A replay whose graph reads a view through a stand-in is ordered after
// another stream's pending write of an overlapping view, and another
// stream's later write of an overlapping view is ordered after the
// replay that reads it: the copy into the stand-in counts as the graph's
// read of the view.
func TestReplayThroughStandInsIsOrderedAgainstOtherStreams(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s1, s2 := dev.StreamWithID(1), dev.StreamWithID(2)
	b := upload(t, dev, ramp(40, 1, 0))
	out := upload(t, dev, filled(40, 0))
	x, y := view(t, b, 3, 10), view(t, out, 5, 10)
	g, err := s1.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
	require.NoError(t, err)
	defer g.Close()
	for round := range 3 {
		v := float32(10 * (round + 1))
		require.NoError(t, vkc.Fill(s2, view(t, b, 1, 20), v)) // pending on s2
		require.NoError(t, g.Replay())
		require.NoError(t, vkc.Fill(s2, view(t, b, 0, 40), -1)) // after the replay read x
		got := read(t, s1, out)
		require.Equal(t, filled(10, 2*v), got[5:15], "round %d: the replay read s2's write", round)
	}
}

// The stand-ins a warmup allocated are there for the recorded run, whatever
// order their sizes come in: two views through stand-ins large enough for
// pages of their own, the smaller first, capture with no ErrAllocInCapture
// (the recorded run's smaller stand-in must not take the larger one's page).
func TestStandInsOfDedicatedSizeCaptureInAnyOrder(t *testing.T) {
	const page = 64 << 10 // stand-ins from 32 KiB get pages of their own
	for _, sizes := range [][]int{{10000, 12000}, {12000, 10000}, {9000, 11000, 13000}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			dev := openDevice(t, vkc.WithPageSize(page))
			s := dev.Stream()
			var xs, ys []*vkc.Buffer[float32]
			for _, n := range sizes {
				xs = append(xs, view(t, upload(t, dev, ramp(n+1, 1, 0)), 1, n))
				ys = append(ys, view(t, upload(t, dev, filled(n+1, 0)), 1, n))
			}
			g, err := s.Capture(func(s *vkc.Stream) error {
				for i := range xs {
					if err := opScale(s, 2, xs[i], ys[i]); err != nil {
						return err
					}
				}
				return nil
			})
			require.NoError(t, err, "%+v", dev.MemoryStats())
			defer g.Close()
			for i := range ys {
				require.NoError(t, vkc.Fill(s, ys[i], 0))
			}
			require.NoError(t, g.Replay())
			for i, n := range sizes {
				require.Equal(t, ramp(n, 2, 2), read(t, s, ys[i]), "view %d", i)
			}
		})
	}
}

// Copy between views of buffers of two devices moves exactly the views'
// bytes, narrow elements at odd offsets included, and a partly unwritten
// source view leaves exactly the destination view unwritten.
func TestCopyBetweenDevicesOfViews(t *testing.T) {
	a, b := openDevice(t), openDevice(t)
	s := a.Stream()
	src := upload(t, a, []uint16{1, 2, 3, 4, 5, 6, 7, 8, 9})
	dstHost := []uint16{10, 20, 30, 40, 50, 60, 70, 80, 90}
	dst := upload(t, b, dstHost)
	require.NoError(t, vkc.Copy(s, view(t, src, 3, 5), view(t, dst, 1, 5)))
	want := append([]uint16(nil), dstHost...)
	copy(want[1:], []uint16{4, 5, 6, 7, 8})
	require.Equal(t, want, readAll(t, dst))

	fresh := newBuffer[float32](t, a, 16)
	require.NoError(t, view(t, fresh, 0, 4).Write(ramp(4, 1, 0)))
	out := upload(t, b, filled(16, 1))
	require.NoError(t, vkc.Copy(s, view(t, fresh, 2, 5), view(t, out, 7, 5)))
	requireUnwritten(t, b.Stream(), view(t, out, 7, 5), vkc.ErrUnwritten, "the destination view")
	got, err := view(t, out, 0, 7).Read(testCtx(t))
	require.NoError(t, err, "before the destination view")
	require.Equal(t, filled(7, 1), got)
	got, err = view(t, out, 12, 4).Read(testCtx(t))
	require.NoError(t, err, "after the destination view")
	require.Equal(t, filled(4, 1), got)
}
