package blackbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// filledBuffer is a buffer of n copies of v, failing the test on error.
func filledBuffer(t *testing.T, dev *vkc.Device, n int, v float32) *vkc.Buffer[float32] {
	t.Helper()
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = v
	}
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	return b
}

// A dynamic op writes only a prefix of a fresh buffer; a later static op
// reads all of it. Eagerly that op is skipped (its input holds bytes no
// work wrote), so its output reads ErrUnwritten; a replay of the same two
// launches runs both on the device and must report the same, not count
// the result of the stale tail as written. With a tainted input elsewhere
// in the graph too, so the replay's step walk runs either way.
func TestDynamicReplayReadsPastAPrefixAsUnwritten(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := context.Background()
	const size = 300
	x := filledBuffer(t, dev, size, 1)
	n, err := vkc.NewParam(dev, uint32(4))
	require.NoError(t, err)
	// Memory the fresh buffers may reuse holds data: what a lie would read.
	junk := filledBuffer(t, dev, size, 1000)
	require.NoError(t, s.Sync(ctx))
	require.NoError(t, junk.Close())

	never, err := vkc.NewBuffer[float32](dev, 1) // never written: a tainted input
	require.NoError(t, err)
	neverOut, err := vkc.NewBuffer[float32](dev, 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		op   func(s *vkc.Stream, tmp, out *vkc.Buffer[float32]) error
	}{
		{"kernel reads the whole buffer", func(s *vkc.Stream, tmp, out *vkc.Buffer[float32]) error {
			if err := opScaleDyn(s, ops.Const(2), x, tmp, n); err != nil {
				return err
			}
			return opSum(s, tmp, out)
		}},
		{"copy reads the whole buffer", func(s *vkc.Stream, tmp, out *vkc.Buffer[float32]) error {
			if err := opCopyDyn(s, x, tmp, n); err != nil {
				return err
			}
			return vkc.Copy(s, tmp, out)
		}},
	} {
		for _, tainted := range []bool{false, true} {
			tmp, err := vkc.NewBuffer[float32](dev, size)
			require.NoError(t, err)
			outLen := 1
			if tc.name == "copy reads the whole buffer" {
				outLen = size
			}
			out, err := vkc.NewBuffer[float32](dev, outLen)
			require.NoError(t, err)
			run := func(s *vkc.Stream) error {
				if tainted {
					if err := opScale(s, 1, never, neverOut); err != nil {
						return err
					}
				}
				return tc.op(s, tmp, out)
			}
			require.NoError(t, run(s))
			_, err = out.ReadOn(ctx, s)
			require.ErrorIs(t, err, vkc.ErrUnwritten, "%s, eagerly", tc.name)

			g, err := s.Capture(run)
			require.NoError(t, err)
			require.NoError(t, g.Replay())
			got, err := out.ReadOn(ctx, s)
			assert.ErrorIs(t, err, vkc.ErrUnwritten, "%s (tainted input %v): replay read %v", tc.name, tainted, got)
			assert.ErrorIs(t, err, vkc.ErrNeverWritten, tc.name)
			_, err = tmp.ReadOn(ctx, s)
			assert.ErrorIs(t, err, vkc.ErrNeverWritten, "tmp's tail")
			require.NoError(t, g.Close())
			require.NoError(t, tmp.Close())
			require.NoError(t, out.Close())
		}
	}
}

// A dynamic op reads exactly the prefix an earlier dynamic op wrote: every
// byte it reads was written, so eagerly and in a replay the result reads
// back, equal to a host reference; a length that reaches past what was
// written makes both report ErrUnwritten.
func TestDynamicChainOverAWrittenPrefix(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := context.Background()
	const rows, cols = 6, 5
	x := filledBuffer(t, dev, rows*cols, 1)
	elems, err := vkc.NewParam(dev, uint32(2*cols))
	require.NoError(t, err)
	nrows, err := vkc.NewParam(dev, uint32(2))
	require.NoError(t, err)
	tmp, err := vkc.NewBuffer[float32](dev, rows*cols)
	require.NoError(t, err)
	sum, err := vkc.NewBuffer[float32](dev, 1)
	require.NoError(t, err)
	soft, err := vkc.NewBuffer[float32](dev, rows*cols)
	require.NoError(t, err)
	chain := func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.Const(2), x, tmp, elems); err != nil {
			return err
		}
		if err := opSumDyn(s, tmp, sum, elems); err != nil {
			return err
		}
		return opSoftmaxDyn(s, tmp, soft, nrows, cols)
	}
	check := func(how string) {
		got, err := sum.ReadOn(ctx, s)
		require.NoError(t, err, how)
		assert.Equal(t, []float32{2 * 2 * cols}, got, how)
		// Softmax wrote its first two rows (all from written bytes); the
		// rest of soft was never written.
		_, err = soft.ReadOn(ctx, s)
		assert.ErrorIs(t, err, vkc.ErrNeverWritten, how)
	}
	require.NoError(t, chain(s))
	check("eagerly")
	g, err := s.Capture(chain)
	require.NoError(t, err)
	defer g.Close()
	check("after the capture's warmup")
	require.NoError(t, g.Replay())
	check("replayed")

	// Three rows of softmax over a prefix of two rows' elements reads an
	// unwritten row: eagerly and replayed alike.
	require.NoError(t, nrows.Set(3))
	fresh, err := vkc.NewBuffer[float32](dev, rows*cols)
	require.NoError(t, err)
	require.NoError(t, opSoftmaxDyn(s, fresh, soft, nrows, cols))
	_, err = soft.ReadOn(ctx, s)
	assert.ErrorIs(t, err, vkc.ErrNeverWritten, "eager softmax over unwritten rows")
	require.NoError(t, g.Replay())
	_, err = soft.ReadOn(ctx, s)
	assert.ErrorIs(t, err, vkc.ErrNeverWritten, "replayed softmax over a row past the written prefix")
	got, err := sum.ReadOn(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []float32{2 * 2 * cols}, got)
}

// Set racing dynamic launches on another goroutine: whichever length a
// launch runs with, the ledger must mark written exactly what it wrote, so
// a read that succeeds holds only this round's values, never the bytes of
// an earlier buffer in the same memory.
func TestParamSetRacingDynamicLaunches(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := context.Background()
	const size = 256
	x, err := vkc.NewBuffer[float32](dev, size)
	require.NoError(t, err)
	n, err := vkc.NewParam(dev, uint32(size))
	require.NoError(t, err)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			assert.NoError(t, n.Set(1))
			assert.NoError(t, n.Set(size))
		}
	}()
	xs := make([]float32, size)
	full, partial := 0, 0
	for round := 1; round <= 300 && !t.Failed(); round++ {
		for j := range xs {
			xs[j] = float32(round)
		}
		require.NoError(t, x.WriteOn(s, xs))
		tmp, err := vkc.NewBuffer[float32](dev, size)
		require.NoError(t, err)
		require.NoError(t, opScaleDyn(s, ops.Const(1), x, tmp, n))
		got, err := tmp.ReadOn(ctx, s)
		if errors.Is(err, vkc.ErrUnwritten) {
			partial++
		} else {
			require.NoError(t, err)
			full++
			for j, v := range got {
				if v != float32(round) {
					t.Errorf("round %d: tmp[%d] = %v read without error, want %d", round, j, v, round)
					break
				}
			}
		}
		require.NoError(t, tmp.Close())
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the setting goroutine did not stop")
	}
	t.Logf("%d rounds read whole, %d read a prefix only", full, partial)
}

// A length set inside the window that recorded work sized by it is held to
// that work's buffers, as it is once the graph is sealed: no replay runs
// past them. A launch or replay that finds its length larger than its
// buffers (a Set that slipped in before it recorded) is refused and taints
// what it would write.
func TestParamSetInsideWindowIsHeldToItsWork(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	ctx := context.Background()
	x := filledBuffer(t, dev, 64, 1)
	y, err := vkc.NewBuffer[float32](dev, 64)
	require.NoError(t, err)
	big := filledBuffer(t, dev, 256, 1)
	n, err := vkc.NewParam(dev, uint32(8))
	require.NoError(t, err)
	var setErr error
	recorded := 0
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.Const(2), x, y, n); err != nil {
			return err
		}
		if recorded++; recorded == 2 { // the recorded run, after the warmup
			setErr = n.Set(256)
		}
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	require.Error(t, setErr, "Set inside the window above what its recorded launch's buffers hold")
	assert.Contains(t, setErr.Error(), "above 64")
	assert.Equal(t, uint32(8), n.Value(), "a refused Set leaves the value")
	require.NoError(t, g.Replay())
	require.NoError(t, n.Set(64))
	require.NoError(t, g.Replay())
	ys, err := y.ReadOn(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, float32(2), ys[63])
	// Work sized by the same length over larger buffers takes larger
	// values once the graph is gone.
	require.NoError(t, g.Close())
	require.NoError(t, n.Set(256))
	require.NoError(t, opScaleDyn(s, ops.Const(3), big, big, n))
	bs, err := big.ReadOn(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, float32(3), bs[255])
}
