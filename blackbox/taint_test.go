package blackbox_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// leaveStaleBytes uploads n copies of v, waits, and closes the buffer, so a
// buffer of the same size made next very likely reuses memory holding v: a
// read that wrongly succeeds then shows v, not zeros.
func leaveStaleBytes(t *testing.T, dev *vkc.Device, s *vkc.Stream, n int, v float32) {
	t.Helper()
	old, err := vkc.FromSlice(dev, filled(n, v))
	require.NoError(t, err)
	require.NoError(t, s.Sync(testCtx(t)))
	require.NoError(t, old.Close())
}

// Promise (Graph.Replay, docs/guide/capture.md rule 5): "An output whose input
// holds unwritten bytes when the replay is enqueued reads as ErrUnwritten
// too, as the same launches done one by one would." tmp[:n] = 2*x[:n]
// (ScaleDyn) into a fresh tmp, then out = Sum(tmp) over all of tmp, whose
// tail no work wrote: eagerly, after the warmup, and after a replay, out
// reads ErrUnwritten, never a sum over stale bytes.
func TestStaticReadOfDynPrefixReadsUnwritten(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	const N = 1024
	x := upload(t, dev, filled(N, 1))
	n := newParam(t, dev, uint32(4))

	etmp := newBuffer[float32](t, dev, N)
	eout := newBuffer[float32](t, dev, 1)
	require.NoError(t, opScaleDyn(s, ops.Const(2), x, etmp, n))
	require.NoError(t, opSum(s, etmp, eout))
	requireUnwritten(t, s, eout, vkc.ErrNeverWritten, "eager: Sum over a buffer whose tail no work wrote")

	leaveStaleBytes(t, dev, s, N, 1000)
	tmp := newBuffer[float32](t, dev, N)
	out := newBuffer[float32](t, dev, 1)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.Const(2), x, tmp, n); err != nil {
			return err
		}
		return opSum(s, tmp, out)
	})
	require.NoError(t, err)
	defer g.Close()
	_, err = out.ReadOn(ctx, s)
	require.ErrorIs(t, err, vkc.ErrUnwritten, "after the warmup (executed eagerly)")
	require.NoError(t, g.Replay())
	got, err := out.ReadOn(ctx, s)
	require.ErrorIs(t, err, vkc.ErrUnwritten, "replay: out = %v read, but Sum read tmp's never-written tail", got)
}

// Promise (docs/guide/capture.md rule 5, Graph.Replay): as for a static read, but
// through a transfer: tmp[:n] = src[:n] (CopyDyn), dst = Copy(tmp) whole.
// dst must read ErrUnwritten after the replay, with and without another
// tainted input in the same graph.
func TestReplayedCopyOfDynPrefixReadsUnwritten(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	const N = 300
	src := upload(t, dev, filled(N, 5))
	other := newBuffer[float32](t, dev, 1) // never written: a tainted input
	otherOut := newBuffer[float32](t, dev, 1)
	n := newParam(t, dev, uint32(3))
	tmp := newBuffer[float32](t, dev, N)
	dst := newBuffer[float32](t, dev, N)
	for _, withTainted := range []bool{false, true} {
		g, err := s.Capture(func(s *vkc.Stream) error {
			if withTainted {
				if err := opScale(s, 1, other, otherOut); err != nil {
					return err
				}
			}
			if err := opCopyDyn(s, src, tmp, n); err != nil {
				return err
			}
			return vkc.Copy(s, tmp, dst)
		})
		require.NoError(t, err)
		require.NoError(t, g.Replay())
		got, err := dst.ReadOn(ctx, s)
		require.NoError(t, g.Close())
		require.ErrorIs(t, err, vkc.ErrUnwritten,
			"with a tainted input %v: dst = %v read, copied from tmp's never-written tail", withTainted, got)
	}
}

// Promise (docs/guide/capture.md "Changing a graph", the Param example; Graph.Replay "as
// the same launches done one by one would"): y[:n] = 2*x[:n] into a fresh
// y, then SumDyn over the same y[:n]. Every byte SumDyn reads was written,
// so total reads 2n, eagerly and replayed alike.
func TestDynChainOverWrittenPrefixReads(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const N = 1024
	x := upload(t, dev, filled(N, 1))
	n := newParam(t, dev, uint32(4))
	step := func(y, total *vkc.Buffer[float32]) func(s *vkc.Stream) error {
		return func(s *vkc.Stream) error {
			if err := opScaleDyn(s, ops.Const(2), x, y, n); err != nil {
				return err
			}
			return opSumDyn(s, y, total, n)
		}
	}

	ey, etotal := newBuffer[float32](t, dev, N), newBuffer[float32](t, dev, 1)
	require.NoError(t, step(ey, etotal)(s))
	assert.Equal(t, []float32{8}, read(t, s, etotal), "eager")

	y, total := newBuffer[float32](t, dev, N), newBuffer[float32](t, dev, 1)
	g, err := s.Capture(step(y, total))
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, []float32{8}, read(t, s, total), "after the warmup")
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{8}, read(t, s, total), "replayed")
	require.NoError(t, n.Set(6))
	require.NoError(t, g.Replay())
	assert.Equal(t, []float32{12}, read(t, s, total), "replayed with n = 6")
}

// Promise (docs/guide/capture.md rule 4 and the ErrUnwritten row): a capture
// doomed by a Sync inside it leaves what it would have written reading
// ErrUnwritten (unwrapping to ErrSyncInCapture); a replay of another graph
// that reads that buffer then leaves its output ErrUnwritten with the same
// cause, and a rewrite of the input makes the next replay good again.
func TestReplayAfterDoomedCaptureTaintsInput(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	const N = 256
	xs := ramp(N, 1, 0)
	x := upload(t, dev, xs)
	y := newBuffer[float32](t, dev, N)
	g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 3, x, y) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	require.Equal(t, float32(15), read(t, s, y)[5])

	_, err = s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, xs); err != nil {
			return err
		}
		return s.Sync(ctx)
	})
	require.ErrorIs(t, err, vkc.ErrSyncInCapture, "doomed capture")
	requireUnwritten(t, s, x, vkc.ErrSyncInCapture, "x after the doomed capture")

	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrSyncInCapture, "y after a replay over the tainted x")

	require.NoError(t, x.WriteOn(s, xs))
	require.NoError(t, g.Replay())
	require.Equal(t, float32(21), read(t, s, y)[7], "after x was rewritten")
}

// Promise (Graph.Replay, docs/guide/capture.md rule 5): a replay refused because
// another stream records a window on its slot (ErrStreamCapturing) leaves
// every output reading ErrUnwritten, unwrapping to ErrStreamCapturing,
// "until a replay writes it again (with a dynamic length, only the prefix
// that length covers is rewritten)". After a shorter successful replay the
// prefix reads and the bytes past it keep the refusal's taint; after a
// full-length replay everything reads.
func TestRefusedReplayTaintsUntilRewritten(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	nb := sameSlot(dev, s)
	const N, short = 256, 8
	x := upload(t, dev, filled(N, 1))
	y := newBuffer[float32](t, dev, N)
	n := newParam(t, dev, uint32(N))
	g, err := s.Capture(func(s *vkc.Stream) error { return opScaleDyn(s, ops.Const(2), x, y, n) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	require.Equal(t, filled(N, 2), read(t, s, y))

	// The neighbour records a window and seals its own graph: the refusal
	// stays on y after the window ends.
	other := newBuffer[float32](t, dev, 4)
	require.NoError(t, nb.PrepareCapture())
	require.NoError(t, nb.BeginCapture())
	require.NoError(t, vkc.Fill(nb, other, 1))
	require.ErrorIs(t, g.Replay(), vkc.ErrStreamCapturing, "replay while a neighbour records")
	ng, err := nb.EndCapture()
	require.NoError(t, err)
	defer ng.Close()
	requireUnwritten(t, s, y, vkc.ErrStreamCapturing, "y after the refused replay")

	// A successful replay of the first 8 elements rewrites only them.
	require.NoError(t, n.Set(short))
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrStreamCapturing, "y past the prefix the later replay rewrote")
	// The prefix reads, through ops that read only y[:n]: SumDyn, and
	// CopyDyn into a buffer that is written everywhere else.
	total := newBuffer[float32](t, dev, 1)
	require.NoError(t, opSumDyn(s, y, total, n))
	assert.Equal(t, []float32{2 * short}, read(t, s, total), "sum of the rewritten prefix")
	z := upload(t, dev, filled(N, -1))
	require.NoError(t, opCopyDyn(s, y, z, n))
	gotZ, err := z.ReadOn(ctx, s)
	require.NoError(t, err, "z after CopyDyn of y's rewritten prefix")
	assert.Equal(t, append(filled(short, 2), filled(N-short, -1)...), gotZ)

	// A full-length replay rewrites everything.
	require.NoError(t, n.Set(N))
	require.NoError(t, g.Replay())
	assert.Equal(t, filled(N, 2), read(t, s, y), "after a full-length replay")
}

// Promise (docs/guide/capture.md "Changing a graph": "the tail past n is left as it was";
// "Set refuses ... one beyond what the buffers of every live graph sized by
// it hold"; "A new buffer is unwritten"): a graph FillDyn + SumDyn over a
// fresh y replayed with a length that grows and shrinks.
func TestDynLengthShrinkGrowOnFreshOutput(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const N = 512
	y := newBuffer[float32](t, dev, N)
	v := newParam(t, dev, float32(1))
	n := newParam(t, dev, uint32(4))
	sum := newBuffer[float32](t, dev, 1)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opFillDyn(t, s, y, ops.ParamOf(v), n); err != nil {
			return err
		}
		return opSumDyn(s, y, sum, n)
	})
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrNeverWritten, "y after n=4: its tail was never written")
	assert.Equal(t, []float32{4}, read(t, s, sum), "sum after n=4 reads only written bytes")

	require.NoError(t, n.Set(N))
	require.NoError(t, v.Set(2))
	require.NoError(t, g.Replay())
	assert.Equal(t, filled(N, 2), read(t, s, y), "after n=N")

	require.NoError(t, n.Set(3))
	require.NoError(t, v.Set(5))
	require.NoError(t, g.Replay())
	assert.Equal(t, append(filled(3, 5), filled(N-3, 2)...), read(t, s, y), "after shrinking to 3")
	assert.Equal(t, []float32{15}, read(t, s, sum))
	assert.Error(t, n.Set(N+1), "Set beyond the graph's buffers")
}

// Promise (Param.Set: "It waits for pending work issued earlier that reads
// the param"; docs/ARCHITECTURE.md: a dynamic length "never makes
// unwritten bytes look written"): a Set racing an eager ScaleDyn on another goroutine. Whatever
// length the launch ran with, a read that succeeds holds only this
// iteration's values, never stale bytes of an earlier buffer.
func TestSetRacingDynLaunchNeverShowsStaleBytes(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	const N, iterations = 256, 2000
	x := newBuffer[float32](t, dev, N)
	n := newParam(t, dev, uint32(N))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = n.Set(1)
			_ = n.Set(N)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := 1; i <= iterations; i++ {
		require.NoError(t, x.WriteOn(s, filled(N, float32(i))))
		tmp, err := vkc.NewBuffer[float32](dev, N)
		require.NoError(t, err)
		require.NoError(t, opScaleDyn(s, ops.Const(1), x, tmp, n))
		got, err := tmp.ReadOn(ctx, s)
		require.NoError(t, tmp.Close())
		if errors.Is(err, vkc.ErrUnwritten) {
			continue // the launch ran with n = 1: tmp's tail is unwritten
		}
		require.NoError(t, err)
		require.Equal(t, filled(N, float32(i)), got, "iteration %d: a read that succeeds holds stale bytes", i)
	}
}

// Promise (Param.Set: "It waits for pending work issued earlier that reads
// the param"): an eager ScaleDyn issued with n = N, then n.Set(1) before any
// sync; the launch runs with N and writes all of tmp, on stream 0 and on
// another slot.
func TestSetWaitsForEarlierDynLaunch(t *testing.T) {
	dev := openDevice(t)
	for _, id := range []uint64{0, 1} {
		s := dev.StreamWithID(id)
		const N = 256
		x := upload(t, dev, filled(N, 7))
		n := newParam(t, dev, uint32(N))
		tmp := newBuffer[float32](t, dev, N)
		require.NoError(t, opScaleDyn(s, ops.Const(1), x, tmp, n))
		require.NoError(t, n.Set(1))
		assert.Equal(t, filled(N, 7), read(t, s, tmp), "stream %d", id)
	}
}

// Promise (docs/guide/buffers.md "Streams"): "A stream that reads or overwrites what
// another stream's queued work writes is ordered after that work." Every
// way to write a buffer on stream A, read at once on stream B (another
// slot, and a same-slot neighbour), sees A's work.
func TestCrossStreamReadsSeePendingWrites(t *testing.T) {
	dev := openDevice(t)
	const N = 300
	for _, ids := range [][2]uint64{{0, 1}, {1, 2}, {0, uint64(dev.Slots())}, {3, 5}} {
		a, b := dev.StreamWithID(ids[0]), dev.StreamWithID(ids[1])
		for round := 1; round <= 3; round++ {
			want := float32(round * 10)
			xs := filled(N, want)
			src := upload(t, dev, xs)
			check := func(name string, buf *vkc.Buffer[float32], w float32) {
				t.Helper()
				require.Equal(t, filled(N, w), read(t, b, buf), "streams %v %s round %d", ids, name, round)
			}
			w := newBuffer[float32](t, dev, N)
			require.NoError(t, w.WriteOn(a, xs))
			check("WriteOn", w, want)

			f := newBuffer[float32](t, dev, N)
			require.NoError(t, vkc.Fill(a, f, want+1))
			check("Fill", f, want+1)

			c := newBuffer[float32](t, dev, N)
			require.NoError(t, vkc.Copy(a, src, c))
			check("Copy", c, want)

			cd := newBuffer[float32](t, dev, N)
			require.NoError(t, opCopyDyn(a, src, cd, nil))
			check("CopyDyn", cd, want)

			y := newBuffer[float32](t, dev, N)
			require.NoError(t, opScale(a, 2, src, y))
			for range 20 {
				require.NoError(t, opAxpy(a, 1, src, y))
			}
			check("a chain", y, want*22)

			// A launch reading src, then a host write of src on the same
			// stream: the launch sees the old values.
			z := newBuffer[float32](t, dev, N)
			require.NoError(t, opScale(a, 1, src, z))
			require.NoError(t, src.WriteOn(a, make([]float32, N)))
			check("launch before a host write", z, want)

			out := newBuffer[float32](t, dev, N)
			require.NoError(t, src.WriteOn(a, xs))
			g, err := a.Capture(func(s *vkc.Stream) error { return opScale(s, 3, src, out) })
			require.NoError(t, err)
			require.NoError(t, src.WriteOn(a, xs))
			require.NoError(t, g.Replay())
			check("replay", out, want*3)
			require.NoError(t, g.Close())
			for _, bb := range []*vkc.Buffer[float32]{src, w, f, c, cd, y, z, out} {
				require.NoError(t, bb.Close())
			}
		}
	}
}

// Promise (docs/guide/buffers.md "Buffers": "A new buffer is unwritten: reading it fails
// with ErrUnwritten (cause ErrNeverWritten) until something writes it"; the
// ErrUnwritten row): a fresh buffer whose prefix FillDyn wrote fails every
// read, and every read through a copy or an op that reads the tail.
func TestDynPrefixTaintsEveryRead(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	s := dev.Stream()
	other := dev.NewStream()
	const N = 300
	n := newParam(t, dev, uint32(10))
	y := newBuffer[float32](t, dev, N)
	require.NoError(t, opFillDyn(t, s, y, ops.Const(1), n))
	through := func(op func(d *vkc.Buffer[float32]) error, d *vkc.Buffer[float32]) error {
		if err := op(d); err != nil {
			return err
		}
		_, err := d.ReadOn(ctx, s)
		return err
	}
	for name, readFn := range map[string]func() error{
		"Read":         func() error { _, err := y.Read(ctx); return err },
		"ReadOn other": func() error { _, err := y.ReadOn(ctx, other); return err },
		"ReadInto":     func() error { return y.ReadInto(ctx, s, make([]float32, N)) },
		"Copy": func() error {
			return through(func(d *vkc.Buffer[float32]) error { return vkc.Copy(s, y, d) }, newBuffer[float32](t, dev, N))
		},
		"Copy on another stream": func() error {
			return through(func(d *vkc.Buffer[float32]) error { return vkc.Copy(other, y, d) }, upload(t, dev, make([]float32, N)))
		},
		"Sum": func() error {
			return through(func(d *vkc.Buffer[float32]) error { return opSum(s, y, d) }, upload(t, dev, []float32{0}))
		},
		"Transpose": func() error {
			return through(func(d *vkc.Buffer[float32]) error { return opTranspose(s, y, d, 10, 30) }, upload(t, dev, make([]float32, N)))
		},
	} {
		err := readFn()
		assert.ErrorIs(t, err, vkc.ErrUnwritten, name)
		assert.ErrorIs(t, err, vkc.ErrNeverWritten, name)
	}
}

// Promise (docs/guide/buffers.md "Buffers" and "Operations", each …Dyn form "whose length
// is a Param"): MatmulDyn and SoftmaxDyn write only their first m rows, so a
// fresh output's other rows keep it unwritten; once m covers every row it
// reads, with the right values.
func TestMatmulSoftmaxDynRowsTaint(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const R, K, C = 8, 4, 4
	a := upload(t, dev, filled(R*K, 1))
	b := upload(t, dev, filled(K*C, 1))
	c := newBuffer[float32](t, dev, R*C)
	sm := newBuffer[float32](t, dev, R*C)
	m := newParam(t, dev, uint32(3))
	require.NoError(t, opMatmulDyn(s, a, b, c, m, C, K))
	require.NoError(t, opSoftmaxDyn(s, a, sm, m, K))
	requireUnwritten(t, s, c, vkc.ErrNeverWritten, "matmul after 3 of %d rows", R)
	requireUnwritten(t, s, sm, vkc.ErrNeverWritten, "softmax after 3 of %d rows", R)
	require.NoError(t, m.Set(R))
	require.NoError(t, opMatmulDyn(s, a, b, c, m, C, K))
	require.NoError(t, opSoftmaxDyn(s, a, sm, m, K))
	assert.Equal(t, filled(R*C, K), read(t, s, c))
	assert.Equal(t, filled(R*C, 0.25), read(t, s, sm))
}

// Promise (Graph.Replay: "An output whose input holds unwritten bytes when
// the replay is enqueued reads as ErrUnwritten too"; docs/guide/capture.md "Changing a
// graph": "the tail past n is left as it was"): a dynamic graph over a
// never-written input taints its outputs' prefix; once the input is
// written, a replay makes them read, with the tail as it was.
func TestDynamicGraphOverUnwrittenInput(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N, L = 100, 10
	in := newBuffer[float32](t, dev, N)
	x := upload(t, dev, filled(N, 1))
	y := upload(t, dev, filled(N, 9))
	z := upload(t, dev, filled(N, 8))
	n := newParam(t, dev, uint32(L))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.Const(2), in, y, n); err != nil {
			return err
		}
		return opAddDyn(s, y, x, z, n)
	})
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrNeverWritten, "y computed from an unwritten input")
	requireUnwritten(t, s, z, vkc.ErrNeverWritten, "z computed from an unwritten input")

	ins := ramp(N, 1, 0)
	require.NoError(t, in.WriteOn(s, ins))
	require.NoError(t, g.Replay())
	wantY, wantZ := filled(N, 9), filled(N, 8)
	for i := range L {
		wantY[i], wantZ[i] = 2*ins[i], 2*ins[i]+1
	}
	assert.Equal(t, wantY, read(t, s, y))
	assert.Equal(t, wantZ, read(t, s, z))
}
