package recorder_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// unboundLengthLaunch is a launch sized by a length (other) it does not bind.
func unboundLengthLaunch(d *dynRig, src, dst, other alloc.Claim) error {
	l := recorder.Launch{
		Args:     []capture.Binding{{Claim: src}, {Claim: dst, Write: true}, {Claim: d.length}},
		Indirect: d.indirect,
		Limits:   []recorder.Limit{{Param: other, Max: 3}},
	}
	return d.r.Launch(0, d.k, &l)
}

// newUnboundRig is a dynRig (its own length 4) with src written, dst, and
// a second length, other (2), for launches to be sized by without binding.
func newUnboundRig(t *testing.T) (d *dynRig, src, dst, other alloc.Claim) {
	d = newDynRig(t, true)
	src, dst = d.buf(), d.buf()
	require.NoError(t, d.write(0, src, nil, ramp(1)))
	other, err := d.r.Alloc(alloc.Upload, 4)
	require.NoError(t, err)
	require.NoError(t, d.r.SetHost([]alloc.Claim{other}, [][]byte{words(2)}))
	d.set(4)
	return d, src, dst, other
}

// A length that sizes a recorded launch without being one of its bindings
// (group counts derived from it) stays out of reuse while the graph lives:
// the graph reads its value at every replay, and a new length placed in
// the same memory would otherwise be held to the old graph's limit.
func TestUnboundLimitLengthIsGuarded(t *testing.T) {
	d, src, dst, other := newUnboundRig(t)
	defer d.close()
	g, err := d.capture(0, func() error { return unboundLengthLaunch(d, src, dst, other) })
	require.NoError(t, err)
	require.NoError(t, d.r.Free(other))
	again, err := d.r.Alloc(alloc.Upload, 4)
	require.NoError(t, err)
	require.NotEqual(t, other, again, "the graph's length was reused while the graph lives")
	_, limited := d.r.LengthLimit(again)
	require.False(t, limited, "a new length inherited the graph's limit")
	require.NoError(t, g.Replay(), "the graph still reads its length's value")
	require.NoError(t, g.Close())
	require.NoError(t, d.r.Free(again))
}

// A length that sizes a recorded launch without being bound, freed inside
// the recording window after the launch (a Param closed mid-capture), is
// held back like memory the window touched: the window seals (the recorded
// work is valid and ran nowhere yet) and the graph replays.
func TestUnboundLimitLengthFreedInsideTheWindowSeals(t *testing.T) {
	d, src, dst, other := newUnboundRig(t)
	defer d.close()
	require.NoError(t, d.r.PrepareCapture(0))
	require.NoError(t, unboundLengthLaunch(d, src, dst, other))
	require.NoError(t, d.r.BeginCapture(0))
	require.NoError(t, unboundLengthLaunch(d, src, dst, other))
	require.NoError(t, d.r.Free(other)) // the length closed inside the window
	g, err := d.r.EndCapture(0)
	require.NoError(t, err, "a window whose unbound limit length was freed fails to seal")
	require.NoError(t, g.Replay())
	require.NoError(t, g.Close())
}

// The same length freed inside the window and a new length allocated
// before the window ends: the new one does not get the freed one's memory,
// so it does not inherit the graph's limit.
func TestUnboundLimitLengthFreedInsideTheWindowIsNotReused(t *testing.T) {
	d, src, dst, other := newUnboundRig(t)
	defer d.close()
	require.NoError(t, d.r.PrepareCapture(0))
	require.NoError(t, unboundLengthLaunch(d, src, dst, other))
	require.NoError(t, d.r.BeginCapture(0))
	require.NoError(t, unboundLengthLaunch(d, src, dst, other))
	require.NoError(t, d.r.Free(other))
	again, err := d.r.Alloc(alloc.Upload, 4)
	require.NoError(t, err)
	g, err := d.r.EndCapture(0)
	if err == nil {
		defer g.Close()
	}
	require.NoError(t, err)
	_, limited := d.r.LengthLimit(again)
	require.False(t, limited, "a length claimed inside the window inherited the graph's limit (same claim: %v)", again == other)
	require.NoError(t, d.r.Free(again))
}

// SetLength takes every slot's lock: racing launches on every slot, a
// capture/replay/close loop, kernel loads and releases and reads with
// short contexts, it must neither deadlock (a lock-order cycle shows up as
// the hang below, with every goroutine's stack) nor fail a call.
func TestSetLengthRacesEveryKindOfCall(t *testing.T) {
	d := newDynRig(t, true)
	defer d.close()
	src, dst, dst3 := d.buf(), d.buf(), d.buf()
	dsts := map[recorder.StreamID]alloc.Claim{2: d.buf(), 3: d.buf()}
	require.NoError(t, d.write(0, src, nil, ramp(1)))
	done := make(chan struct{})
	failures := make(chan error, 16)
	var wg sync.WaitGroup
	run := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := f(i); err != nil {
					failures <- err
					return
				}
			}
		}()
	}
	run(func(i int) error {
		v := uint32(1 + i%4)
		err := d.r.SetLength([]alloc.Claim{d.length, d.indirect}, [][]byte{words(v), words(1, 1, 1)}, v)
		var over *recorder.LengthLimitError
		if errors.As(err, &over) {
			return nil
		}
		return err
	})
	for s := recorder.StreamID(2); s < 4; s++ {
		dst2 := dsts[s]
		run(func(i int) error {
			err := d.copyN(s, src, dst2, n)
			if err != nil && !errors.Is(err, errs.StreamCapturing) {
				var over *recorder.LengthLimitError
				if !errors.As(err, &over) {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			out := make([]byte, dst2.Size)
			_ = d.r.Read(ctx, s, dst2, out)
			return nil
		})
	}
	run(func(i int) error {
		g, err := d.capture(1, func() error { return d.copyN(1, src, dst, n) })
		if err != nil {
			return nil
		}
		_ = g.Replay()
		return g.Close()
	})
	run(func(i int) error {
		k, err := d.r.NewKernel(code, recorder.PipelineDesc{Name: "copy_dyn", Bindings: 3, Writes: 2})
		if err != nil {
			return err
		}
		l := recorder.Launch{Args: []capture.Binding{{Claim: src}, {Claim: dst3, Write: true, Extent: capture.Extent{Param: d.length, Scale: 4}}, {Claim: d.length}},
			Indirect: d.indirect, Limits: []recorder.Limit{{Param: d.length, Max: n}}}
		_ = d.r.Launch(recorder.StreamID(4+i%4), k, &l)
		return k.Release()
	})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("hang:\n%s", buf[:runtime.Stack(buf, true)])
	}
	close(failures)
	for err := range failures {
		t.Error(err)
	}
}

// A host read on stream 0 that gives up (its context ends) while stream
// 1's pending work writes the buffer leaves that work in flight: a later
// read waits for it and sees its bytes.
func TestCancelledReadOfAnotherSlotLeavesWorkInFlight(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 2})
	defer g.close()
	src, dst := g.buf(), g.buf()
	require.NoError(t, g.write(1, src, nil, ramp(7)))
	require.NoError(t, g.r.Sync(context.Background(), 1))
	g.dev.Pause()
	require.NoError(t, g.launch(1, "copy", words(n), rd(src), wr(dst)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	out := make([]byte, dst.Size)
	err := g.r.Read(ctx, 0, dst, out)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	g.dev.Resume()
	got, err := g.read(0, dst)
	require.NoError(t, err)
	require.Equal(t, ramp(7), got)
}
