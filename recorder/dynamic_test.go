package recorder_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// dynRig adds to a rig the dynamic copy (copy_dyn: dst[i] = src[i] for
// i < n, n read from a device value) and host-visible claims for a length
// and its indirect group counts.
type dynRig struct {
	*rig
	k        *recorder.Kernel
	length   alloc.Claim // the uint32 n
	indirect alloc.Claim // group counts for n
}

func newDynRig(t *testing.T, unified bool) *dynRig {
	g := newRig(t, unified, recorder.Options{})
	k, err := g.r.NewKernel(code, recorder.PipelineDesc{Name: "copy_dyn", Bindings: 3, Writes: 2})
	require.NoError(t, err)
	d := &dynRig{rig: g, k: k}
	d.length, err = g.r.Alloc(alloc.Upload, 4)
	require.NoError(t, err)
	d.indirect, err = g.r.Alloc(alloc.Upload, 12)
	require.NoError(t, err)
	d.set(n)
	return d
}

// set makes the length n: the value and one group of 256 (n <= 16 here).
func (d *dynRig) set(v uint32) {
	d.t.Helper()
	require.NoError(d.t, d.r.SetHost([]alloc.Claim{d.length, d.indirect}, [][]byte{words(v), words(1, 1, 1)}))
}

// copyN records dst[:n] = src[:n], the extent of dst being n elements.
func (d *dynRig) copyN(s recorder.StreamID, src, dst alloc.Claim, limit uint32) error {
	l := recorder.Launch{
		Args: []capture.Binding{{Claim: src}, {Claim: dst, Write: true, Extent: capture.Extent{Param: d.length, Scale: 4}},
			{Claim: d.length}},
		Indirect: d.indirect,
		Limits:   []recorder.Limit{{Param: d.length, Max: limit}},
	}
	return d.r.Launch(s, d.k, &l)
}

// A launch sized by a device length, eager and replayed: it writes the
// prefix the length covers when it runs, the ledger marks exactly that
// prefix written, and a graph bounds the length by its buffers.
func TestDynamicLengthLaunches(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		{
			d := newDynRig(t, unified)
			defer d.close()
			src, dst := d.buf(), d.buf()
			require.NoError(t, d.write(0, src, nil, ramp(1)))

			d.set(4)
			require.NoError(t, d.copyN(0, src, dst, n))
			d.requireUnwritten(0, dst, errFresh) // elements 4.. were never written

			_, limited := d.r.LengthLimit(d.length)
			require.False(t, limited, "no graph bounds the length yet")
			d.set(n)
			require.NoError(t, d.r.PrepareCapture(0))
			require.NoError(t, d.copyN(0, src, dst, n))
			require.NoError(t, d.r.BeginCapture(0))
			d.set(n - 2) // what the recorded launch's buffers hold
			require.NoError(t, d.copyN(0, src, dst, n-2))
			g, err := d.r.EndCapture(0)
			require.NoError(t, err)
			max, limited := d.r.LengthLimit(d.length)
			require.True(t, limited)
			require.Equal(t, uint32(n-2), max, "the graph's limit")

			require.NoError(t, d.write(0, src, nil, ramp(100)))
			d.set(7)
			require.NoError(t, g.Replay())
			want := ramp(1)
			copy(want[:7], ramp(100)[:7])
			d.mustRead(0, dst, want, "the first 7 elements replayed, the rest as the warmup left them")

			require.NoError(t, g.Close())
			_, limited = d.r.LengthLimit(d.length)
			require.False(t, limited, "the limit goes with the graph")
		}
	})
}

// SetHost waits for pending work that reads what it writes, so work issued
// before it sees the old value: with the queue held, a set after a launch
// reading the length blocks until the launch ran.
func TestSetHostWaitsForPendingReaders(t *testing.T) {
	d := newDynRig(t, true)
	defer d.close()
	src, dst := d.buf(), d.buf()
	require.NoError(t, d.write(0, src, nil, ramp(1)))
	require.NoError(t, d.r.Sync(context.Background(), 0))
	d.set(3)
	d.dev.Pause()
	require.NoError(t, d.copyN(1, src, dst, n))
	require.NoError(t, d.r.Flush(1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.set(n)
	}()
	select {
	case <-done:
		t.Fatal("SetHost changed the length under a pending launch that reads it")
	default:
	}
	d.dev.Resume()
	<-done
	got, err := d.read(1, dst)
	require.ErrorIs(t, err, errs.Unwritten, "the launch ran with n = 3: elements 3.. are unwritten, got %v", got)
	require.ErrorContains(t, d.r.SetHost([]alloc.Claim{d.length}, nil), "1 claims with 0 values")
	require.ErrorContains(t, d.r.SetHost([]alloc.Claim{d.length}, [][]byte{make([]byte, 8)}), "not mapped host memory of that size")
}

// A graph whose launches name a length with different limits bounds it by
// the smallest, each length by its own; several graphs by the smallest of
// theirs, until the one that holds it closes.
func TestLengthLimitIsTheSmallestPerLength(t *testing.T) {
	d := newDynRig(t, true)
	defer d.close()
	src, dst := d.buf(), d.buf()
	require.NoError(t, d.write(0, src, nil, ramp(1)))
	other, err := d.r.Alloc(alloc.Upload, 4) // a second length the launches name
	require.NoError(t, err)
	require.NoError(t, d.r.SetHost([]alloc.Claim{other}, [][]byte{words(1)}))
	d.set(4)
	launch := func(limits ...recorder.Limit) error {
		l := recorder.Launch{
			Args: []capture.Binding{{Claim: src}, {Claim: dst, Write: true, Extent: capture.Extent{Param: d.length, Scale: 4}},
				{Claim: d.length}},
			Indirect: d.indirect,
			Limits:   limits,
		}
		return d.r.Launch(0, d.k, &l)
	}
	record := func(limits ...[]recorder.Limit) *recorder.Graph {
		g, err := d.capture(0, func() error {
			for _, l := range limits {
				if err := launch(l...); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err)
		return g
	}
	g1 := record([]recorder.Limit{{Param: d.length, Max: n}, {Param: other, Max: 9}},
		[]recorder.Limit{{Param: d.length, Max: n - 3}}, []recorder.Limit{{Param: d.length, Max: n - 1}, {Param: other, Max: 7}})
	g2 := record([]recorder.Limit{{Param: d.length, Max: n - 2}})
	limit := func(p alloc.Claim) uint32 {
		max, limited := d.r.LengthLimit(p)
		require.True(t, limited)
		return max
	}
	require.Equal(t, uint32(n-3), limit(d.length))
	require.Equal(t, uint32(7), limit(other))
	require.NoError(t, g1.Close())
	require.Equal(t, uint32(n-2), limit(d.length), "g2's limit is what is left")
	_, limited := d.r.LengthLimit(other)
	require.False(t, limited, "no graph left names the other length")
	require.NoError(t, g2.Close())
	require.NoError(t, d.r.Free(other))
}

// SetLength holds a length to the buffers of every live graph and of every
// window recording now that recorded work sized by it, and leaves the value
// when it refuses; a launch or replay that finds its length above its
// buffers (set past the check, as SetHost can) is refused and taints what
// it would have written.
func TestLengthAboveItsBuffersIsRefusedEverywhere(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		d := newDynRig(t, unified)
		defer d.close()
		src, dst := d.buf(), d.buf()
		require.NoError(t, d.write(0, src, nil, ramp(1)))
		require.NoError(t, d.write(0, dst, nil, ramp(500)))
		setLength := func(v uint32) error {
			return d.r.SetLength([]alloc.Claim{d.length, d.indirect}, [][]byte{words(v), words(1, 1, 1)}, v)
		}
		d.set(4)
		require.NoError(t, d.r.PrepareCapture(0))
		require.NoError(t, d.copyN(0, src, dst, n-2))
		require.NoError(t, setLength(n), "the warmup is eager: no limit yet")
		d.set(4)
		require.NoError(t, d.r.BeginCapture(0))
		require.NoError(t, d.copyN(0, src, dst, n-2))
		var over *recorder.LengthLimitError
		require.ErrorAs(t, setLength(n-1), &over, "the recording window's launch holds the length")
		require.Equal(t, recorder.LengthLimitError{Length: n - 1, Max: n - 2}, *over)
		g, err := d.r.EndCapture(0)
		require.NoError(t, err)
		require.ErrorAs(t, setLength(n-1), &over, "the graph holds it")
		require.NoError(t, setLength(n-2))
		require.NoError(t, g.Replay())
		want := ramp(500)
		copy(want[:n-2], ramp(1))
		d.mustRead(0, dst, want)

		d.set(n) // past the check
		require.ErrorAs(t, g.Replay(), &over)
		d.requireUnwritten(0, dst, over)
		require.NoError(t, d.write(0, dst, nil, ramp(1)))
		require.ErrorAs(t, d.copyN(1, src, dst, n-2), &over, "an eager launch")
		d.requireUnwritten(0, dst, over)
		require.NoError(t, g.Close())
		require.NoError(t, setLength(n), "no graph left")
	})
}
