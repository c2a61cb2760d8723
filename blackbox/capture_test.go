package blackbox_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// axpyRef is y = a*x + y in Go.
func axpyRef(a float32, x, y []float32) []float32 {
	out := make([]float32, len(y))
	for i := range y {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// slotWorks checks a launch and a read on s succeed: no window holds its slot.
func slotWorks(t *testing.T, dev *vkc.Device, s *vkc.Stream) {
	t.Helper()
	b := upload(t, dev, make([]float32, 4))
	require.NoError(t, vkc.Fill(s, b, 3), "a launch on stream %d", s.ID())
	require.Equal(t, filled(4, 3), read(t, s, b))
}

// Promise (docs/guide/capture.md rule 1: "A panic in your function aborts the
// window and is re-raised"): a panic in the warmup or in the recorded run
// reaches the caller with its own value, the slot is free, and the stream
// captures again. runtime.Goexit in either run aborts the window too.
func TestCapturePanicAndGoexitAbortTheWindow(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	nb := sameSlot(dev, s)
	const N = 64
	x := upload(t, dev, ramp(N, 1, 0))
	y := upload(t, dev, ramp(N, 1, 0))
	type panicValue struct{ s string }
	for _, when := range []int{1, 2} {
		t.Run(fmt.Sprintf("panic in run %d", when), func(t *testing.T) {
			calls := 0
			pv := &panicValue{fmt.Sprint("boom", when)}
			var got any
			func() {
				defer func() { got = recover() }()
				_, _ = s.Capture(func(s *vkc.Stream) error {
					calls++
					if err := opScale(s, 2, x, y); err != nil {
						return err
					}
					if calls == when {
						panic(pv)
					}
					return nil
				})
			}()
			require.Same(t, pv, got, "the panic value re-raised")
			slotWorks(t, dev, nb)
			g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
			require.NoError(t, err, "capture after the panic")
			require.NoError(t, g.Replay())
			read(t, s, y)
			require.NoError(t, g.Close())
		})
		t.Run(fmt.Sprintf("Goexit in run %d", when), func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				calls := 0
				_, _ = s.Capture(func(s *vkc.Stream) error {
					calls++
					if err := vkc.Fill(s, y, 4); err != nil {
						return err
					}
					if calls == when {
						runtime.Goexit()
					}
					return nil
				})
			}()
			<-done
			require.ErrorIs(t, s.AbortCapture(), vkc.ErrCaptureState, "after Goexit no window is left to abort")
			slotWorks(t, dev, nb)
			g, err := s.Capture(func(s *vkc.Stream) error { return vkc.Fill(s, y, 6) })
			require.NoError(t, err, "capture after Goexit")
			require.NoError(t, g.Close())
		})
	}
}

// Promise (docs/guide/errors.md: ErrClosed for use of a closed device; Close is
// safe while other goroutines use the object): fn closes the device in the
// warmup or in the recorded run; Capture returns ErrClosed, and nothing
// leaks.
func TestCaptureWhoseFunctionClosesTheDevice(t *testing.T) {
	for _, when := range []int{1, 2} {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		s := dev.NewStream()
		x := upload(t, dev, ramp(64, 1, 0))
		y := upload(t, dev, ramp(64, 1, 0))
		calls := 0
		var g *vkc.Graph
		noPanic(t, "Capture", func() {
			g, err = s.Capture(func(s *vkc.Stream) error {
				calls++
				if err := opScale(s, 2, x, y); err != nil {
					return err
				}
				if calls == when {
					assert.NoError(t, dev.Close(), "Device.Close inside fn")
				}
				return nil
			})
		})
		assert.ErrorIs(t, err, vkc.ErrClosed, "run %d: Capture whose fn closed the device", when)
		assert.Nil(t, g)
		noPanic(t, "Close", func() { _ = g.Close(); _ = dev.Close() })
		assertClosedClean(t, dev)
	}
}

// Promise (Device.Close "closes every graph, kernel and buffer still open,
// waits for the device and destroys it"): Device.Close with a window
// prepared, recording, or doomed; EndCapture afterwards is ErrClosed.
func TestDeviceCloseWithAnOpenWindow(t *testing.T) {
	for _, stage := range []string{"prepared", "recording", "doomed"} {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		s := dev.NewStream()
		x := upload(t, dev, ramp(64, 1, 0))
		y := upload(t, dev, ramp(64, 1, 0))
		o := upload(t, dev, []float32{0})
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, opScale(s, 2, x, y))
		if stage != "prepared" {
			require.NoError(t, s.Sync(testCtx(t)))
			require.NoError(t, s.BeginCapture())
			require.NoError(t, opScale(s, 2, x, y))
			require.NoError(t, opSum(s, y, o))
			if stage == "doomed" {
				require.ErrorIs(t, s.Sync(testCtx(t)), vkc.ErrSyncInCapture)
			}
		}
		noPanic(t, "Close", func() { assert.NoError(t, dev.Close(), stage) })
		_, err = s.EndCapture()
		assert.ErrorIs(t, err, vkc.ErrClosed, "%s: EndCapture after Close", stage)
		assertClosedClean(t, dev)
	}
}

// Promise (docs/guide/capture.md rule 2: "Closing one early is safe — the graph
// keeps its memory until it closes — but the graph still writes there"):
// fn closes its output (and, in the recorded run, its kernel) right after
// the launch that writes it. The graph seals, replays, and never writes
// buffers made after it.
func TestCloseInsideTheRecordedRun(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 256
	x := upload(t, dev, ramp(N, 1, 0))
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t)})
	require.NoError(t, err)
	calls := 0
	g, err := s.Capture(func(s *vkc.Stream) error {
		calls++
		y, err := vkc.NewBuffer[float32](dev, N)
		if err != nil {
			return err
		}
		if err := k.Launch(s, [3]uint32{N / 64, 1, 1}, affinePush(2, 1, N), x, y); err != nil {
			return err
		}
		if calls == 2 {
			if err := k.Close(); err != nil {
				return err
			}
		}
		return y.Close()
	})
	require.NoError(t, err, "a capture closing its kernel and output inside the window")
	defer g.Close()
	var fresh []*vkc.Buffer[float32]
	for range 6 {
		fresh = append(fresh, upload(t, dev, filled(N, 42)))
	}
	for range 3 {
		require.NoError(t, g.Replay())
	}
	require.NoError(t, s.Sync(testCtx(t)))
	for i, b := range fresh {
		require.Equal(t, filled(N, 42), read(t, s, b), "fresh buffer %d overwritten by the graph", i)
	}
}

// Promise (Param.Set: "changes the value that launches and replays issued
// from now on read ... It allocates nothing"; docs/guide/capture.md rule 2):
// Set and Graph.Close inside the recorded run of a window; the replay reads
// the value set, and keeps reading the param's last value once it closes.
func TestSetAndGraphCloseInsideAWindow(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 64
	x := upload(t, dev, ramp(N, 1, 1))
	y := upload(t, dev, make([]float32, N))
	z := upload(t, dev, make([]float32, N))
	a, err := vkc.NewParam(dev, float32(2))
	require.NoError(t, err)
	g1, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 5, x, z) })
	require.NoError(t, err)
	require.NoError(t, g1.Replay())
	calls := 0
	g, err := s.Capture(func(s *vkc.Stream) error {
		calls++
		if err := opScaleDyn(s, ops.ParamOf(a), x, y, nil); err != nil {
			return err
		}
		if calls == 2 {
			if err := a.Set(3); err != nil {
				return fmt.Errorf("Set inside the window: %w", err)
			}
			if err := g1.Close(); err != nil {
				return fmt.Errorf("Graph.Close inside the window: %w", err)
			}
		}
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	assert.Equal(t, ramp(N, 3, 3), read(t, s, y), "replay after Set(3) inside the window")
	require.NoError(t, a.Close())
	require.NoError(t, y.WriteOn(s, make([]float32, N)))
	require.NoError(t, g.Replay())
	assert.Equal(t, ramp(N, 3, 3), read(t, s, y), "replay after the param closed: its last value")
}

// Promise (Graph.Replay: "consecutive replays need no host wait and run in
// order"; docs/guide/buffers.md: "Work on one stream runs in order"): replays from eight
// goroutines at once each run every launch once, so y = G*R*K * x exactly.
func TestConcurrentReplaysFromManyGoroutines(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const N, K, G, R = 256, 4, 8, 10
	xs := seq(N, func(i int) float32 { return float32(i % 3) })
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	g, err := s.Capture(axpyChain(K, x, y))
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, y.WriteOn(s, make([]float32, N)))
	var wg sync.WaitGroup
	for range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range R {
				assert.NoError(t, g.Replay())
			}
		}()
	}
	wg.Wait()
	want := seq(N, func(i int) float32 { return float32(G*R*K) * xs[i] })
	assert.Equal(t, want, read(t, s, y))
}

// Promise (Graph.Replay: it "enqueues the recorded work once, after the
// capturing stream's pending work"): replays interleaved with eager work
// on the same buffers and stream run in the order of the calls.
func TestReplaysInterleavedWithEagerWork(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const N = 300
	xs := seq(N, func(i int) float32 { return float32(i%5) - 2 })
	ys := seq(N, func(i int) float32 { return float32(i % 7) })
	x := upload(t, dev, xs)
	y := upload(t, dev, ys)
	z := newBuffer[float32](t, dev, N)
	// The graph: y = 2x + y; z = y * x.
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opAxpy(s, 2, x, y); err != nil {
			return err
		}
		return opMul(s, y, x, z)
	})
	require.NoError(t, err)
	defer g.Close()
	rx := append([]float32(nil), xs...)
	ry := axpyRef(2, xs, ys) // the warmup ran once
	rz := make([]float32, N)
	replay := func() {
		require.NoError(t, g.Replay())
		ry = axpyRef(2, rx, ry)
		for i := range rz {
			rz[i] = ry[i] * rx[i]
		}
	}
	for round := range 5 {
		replay()
		require.NoError(t, opScale(s, 0.5, x, x))
		for i := range rx {
			rx[i] *= 0.5
		}
		require.NoError(t, opSub(s, y, z, y))
		for i := range ry {
			ry[i] -= rz[i]
		}
		replay()
		replay()
		if round%2 == 0 {
			requireNear(t, ry, read(t, s, y), 1e-3, "y round", round)
		}
	}
	requireNear(t, ry, read(t, s, y), 1e-3, "y")
	requireNear(t, rz, read(t, s, z), 1e-3, "z")
	requireNear(t, rx, read(t, s, x), 1e-3, "x")
}

// Promise (docs/guide/buffers.md "Streams": "A stream that reads or overwrites what
// another stream's queued work writes is ordered after that work"; capture
// rule 3): a graph's input rewritten before a replay by a host write on
// another stream, eager work on another stream, and another graph on a
// third slot; every replay sees the latest bytes.
func TestReplaySeesInputRewrittenElsewhere(t *testing.T) {
	dev := openDevice(t, vkc.WithStreams(4))
	s, s2, s3 := dev.StreamWithID(0), dev.StreamWithID(1), dev.StreamWithID(2)
	const N = 200
	in := upload(t, dev, make([]float32, N))
	out := newBuffer[float32](t, dev, N)
	g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 3, in, out) })
	require.NoError(t, err)
	defer g.Close()
	g3, err := s3.Capture(func(s *vkc.Stream) error { return vkc.Fill(s, in, 7) })
	require.NoError(t, err)
	defer g3.Close()
	check := func(v float32, what string, round int) {
		t.Helper()
		require.NoError(t, g.Replay())
		require.Equal(t, filled(N, 3*v), read(t, s, out), "round %d: %s", round, what)
	}
	for round := range 3 {
		require.NoError(t, in.WriteOn(s2, filled(N, 2)))
		check(2, "host write on another stream", round)
		require.NoError(t, vkc.Fill(s2, in, 5))
		check(5, "eager Fill on another stream", round)
		require.NoError(t, g3.Replay())
		check(7, "another graph on a third slot", round)
		require.NoError(t, in.WriteOn(s, filled(N, 11)))
		check(11, "host write on the graph's stream", round)
	}
}

// Promise (docs/guide/capture.md rule 3: "every later WriteOn refreshes that
// staging"): a graph that recorded a host write, fed by Write and by
// WriteOn from another stream; each replay copies the latest bytes.
func TestRecordedHostWriteFedFromAnotherStream(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	s2 := dev.NewStream()
	const N = 128
	in := newBuffer[float32](t, dev, N)
	out := newBuffer[float32](t, dev, N)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := in.WriteOn(s, ramp(N, 1, 0)); err != nil {
			return err
		}
		return opScale(s, 2, in, out)
	})
	require.NoError(t, err)
	defer g.Close()
	for round := range 4 {
		v := ramp(N, float32(round), 1)
		if round%2 == 0 {
			require.NoError(t, in.WriteOn(s2, v))
		} else {
			require.NoError(t, in.Write(v))
		}
		require.NoError(t, g.Replay())
		require.Equal(t, ramp(N, 2*float32(round), 2), read(t, s, out), "round %d", round)
		require.Equal(t, v, read(t, s2, in), "round %d: in read on the other stream", round)
	}
}

// Promise (Graph: "Replay resubmits every recorded launch, or none"; Close
// idempotent; ErrClosed after Close): a graph that recorded nothing seals,
// replays and closes, by Capture and step by step.
func TestEmptyGraph(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	g, err := s.Capture(func(*vkc.Stream) error { return nil })
	require.NoError(t, err)
	for range 20 {
		require.NoError(t, g.Replay())
	}
	require.NoError(t, s.Sync(testCtx(t)))
	require.NoError(t, g.Close())
	require.NoError(t, g.Close())
	require.ErrorIs(t, g.Replay(), vkc.ErrClosed)
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, s.BeginCapture())
	g2, err := s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g2.Replay())
	require.NoError(t, g2.Close())
}

// Promise (Graph: "Replay resubmits every recorded launch"): a graph of
// 2000 dependent launches replays them all, every time.
func TestLargeGraphReplaysEveryLaunch(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N, K = 64, 2000
	xs := seq(N, func(i int) float32 { return float32(i % 4) })
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	g, err := s.Capture(axpyChain(K, x, y))
	require.NoError(t, err)
	defer g.Close()
	for range 3 {
		require.NoError(t, g.Replay())
	}
	// The warmup ran once and each of the three replays once.
	assert.Equal(t, seq(N, func(i int) float32 { return float32(4*K) * xs[i] }), read(t, s, y))
}

// Promise (Param.Set: it refuses any value above what "the buffers of every
// live graph, and of launches a capture window recording now recorded,
// sized by it hold"): a Set inside the recorded run, after a launch the
// param sizes, cannot seal a graph whose replay runs past its buffers.
func TestSetInsideWindowKeepsTheLengthLimit(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 64
	y := upload(t, dev, make([]float32, N))
	var neighbours []*vkc.Buffer[float32]
	for range 8 {
		neighbours = append(neighbours, upload(t, dev, filled(N, -1)))
	}
	x := upload(t, dev, filled(N, 1))
	n := newParam(t, dev, uint32(8))
	run := 0
	var setErr error
	g, err := s.Capture(func(s *vkc.Stream) error {
		run++
		if err := opScaleDyn(s, ops.Const(2), x, y, n); err != nil {
			return err
		}
		if run == 2 {
			setErr = n.Set(4 * N)
		}
		return nil
	})
	if err == nil {
		defer g.Close()
	}
	require.True(t, err != nil || setErr != nil,
		"Set(%d) accepted inside the window for a launch over %d elements, and the graph sealed", 4*N, N)
	assert.LessOrEqual(t, n.Value(), uint32(N), "the param's value")
	if g != nil {
		require.NoError(t, g.Replay())
	}
	require.NoError(t, s.Sync(testCtx(t)))
	for i, nb := range neighbours {
		require.Equal(t, filled(N, -1), read(t, s, nb), "neighbour %d", i)
	}
}

// Promise (ErrCaptureState: "a capture call in the wrong state. Nothing
// changed"): a nested Capture on the same stream inside fn is refused with
// ErrCaptureState and changes nothing; the outer graph seals and replays
// only its own work.
func TestNestedCaptureOnTheSameStream(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 32
	xs := ramp(N, 1, 0)
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	var inner []error
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		gi, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
		if gi != nil {
			_ = gi.Close()
		}
		inner = append(inner, err)
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	require.Len(t, inner, 2)
	for i, e := range inner {
		assert.ErrorIs(t, e, vkc.ErrCaptureState, "inner capture in run %d", i+1)
	}
	require.NoError(t, y.WriteOn(s, make([]float32, N)))
	require.NoError(t, g.Replay())
	assert.Equal(t, xs, read(t, s, y), "one replay of the outer graph")
}

// Promise (docs/guide/capture.md rule 6: "streams on other slots run normally"):
// a Capture on another slot inside fn opens a second window; both graphs
// seal and replay their own work only.
func TestNestedCaptureOnAnotherSlot(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	s2 := dev.NewStream()
	const N = 32
	xs := ramp(N, 1, 1)
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	z := upload(t, dev, make([]float32, N))
	var inners []*vkc.Graph
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		gi, err := s2.Capture(func(s2 *vkc.Stream) error { return opAxpy(s2, 2, x, z) })
		if err != nil {
			return err
		}
		inners = append(inners, gi)
		return nil
	})
	require.NoError(t, err)
	defer g.Close()
	defer func() {
		for _, gi := range inners {
			assert.NoError(t, gi.Close())
		}
	}()
	require.Len(t, inners, 2, "the inner capture ran in both runs")
	require.NoError(t, y.WriteOn(s, make([]float32, N)))
	require.NoError(t, z.WriteOn(s2, make([]float32, N)))
	require.NoError(t, g.Replay())
	require.NoError(t, inners[1].Replay())
	assert.Equal(t, xs, read(t, s, y))
	assert.Equal(t, ramp(N, 2, 2), read(t, s2, z))
}

// Promise (docs/guide/errors.md: no exported function panics, Close and calls
// are safe from many goroutines; ErrCaptureState for a capture call in the
// wrong state): two goroutines Capture on the same stream at once; each
// call seals a graph or fails with ErrCaptureState, every graph replays,
// and the stream captures normally afterwards.
func TestCaptureOnOneStreamFromTwoGoroutines(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 32
	xs := seq(N, func(i int) float32 { return float32(i%4 + 1) })
	x := upload(t, dev, xs)
	ya := upload(t, dev, make([]float32, N))
	yb := upload(t, dev, make([]float32, N))
	var mu sync.Mutex
	var graphs []*vkc.Graph
	var wg sync.WaitGroup
	for gi, y := range []*vkc.Buffer[float32]{ya, yb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, float32(gi+1), x, y) })
				mu.Lock()
				if err == nil {
					graphs = append(graphs, g)
				} else {
					assert.ErrorIs(t, err, vkc.ErrCaptureState, "goroutine %d", gi)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.NotEmpty(t, graphs)
	require.NoError(t, s.Sync(testCtx(t)))
	y := upload(t, dev, make([]float32, N))
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)
	require.NoError(t, y.WriteOn(s, make([]float32, N)))
	require.NoError(t, g.Replay())
	assert.Equal(t, xs, read(t, s, y), "a graph captured after the contest")
	require.NoError(t, g.Close())
	for _, gg := range graphs {
		require.NoError(t, gg.Replay())
	}
	read(t, s, ya)
	read(t, s, yb)
	for _, gg := range graphs {
		require.NoError(t, gg.Close())
	}
}

// Promise (docs/guide/capture.md "The contract": Capture fails with fn's error; stream
// rule 6 and the ErrUnwritten row): an error from fn in the recorded run
// fails Capture with it; what the window recorded, a host write included,
// reads ErrUnwritten; inputs it only read stay readable; the slot is free.
func TestErrorInTheRecordedRunLeavesNothingWritten(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 32
	xs := ramp(N, 1, 0)
	x := upload(t, dev, xs)
	in := upload(t, dev, make([]float32, N))
	out := upload(t, dev, make([]float32, N))
	boom := errors.New("boom")
	run := 0
	g, err := s.Capture(func(s *vkc.Stream) error {
		run++
		if err := in.WriteOn(s, xs); err != nil {
			return err
		}
		if err := opAdd(s, x, in, out); err != nil {
			return err
		}
		if run == 2 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Nil(t, g)
	for name, b := range map[string]*vkc.Buffer[float32]{"the recorded host write's buffer": in, "the recorded output": out} {
		_, err := b.ReadOn(testCtx(t), s)
		assert.ErrorIs(t, err, vkc.ErrUnwritten, name)
	}
	assert.Equal(t, xs, read(t, s, x), "x, only read")
	nb := sameSlot(dev, s)
	require.NoError(t, vkc.Fill(nb, out, 3))
	assert.Equal(t, filled(N, 3), read(t, nb, out))
}

// Promise (Graph.Replay: a replay that does not enqueue leaves its outputs
// ErrUnwritten "until a replay writes it again"; docs/guide/capture.md rule 6):
// fn replays another graph of its own stream. Whether the replay inside
// the recording is refused or recorded, the outer graph replays what it
// recorded, and once the inner graph replays again its output is good.
func TestReplayInsideItsOwnStreamsWindow(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 32
	xs := ramp(N, 1, 0)
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	z := upload(t, dev, make([]float32, N))
	g1, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
	require.NoError(t, err)
	defer g1.Close()
	var inner []error
	g2, err := s.Capture(func(s *vkc.Stream) error {
		inner = append(inner, g1.Replay())
		return opScale(s, 3, y, z)
	})
	require.NoError(t, err, "fn ignores the inner replay's error")
	defer g2.Close()
	require.Len(t, inner, 2)
	require.NoError(t, inner[0], "the inner replay in the warmup")
	if inner[1] != nil {
		// Refused: y waits for a replay that writes it again.
		_, err := y.ReadOn(testCtx(t), s)
		require.ErrorIs(t, err, vkc.ErrUnwritten, "y after the inner replay was refused with %v", inner[1])
	}
	require.NoError(t, g1.Replay())
	assert.Equal(t, ramp(N, 2, 0), read(t, s, y))
	require.NoError(t, g2.Replay())
	assert.Equal(t, ramp(N, 6, 0), read(t, s, z))
}

// Promise (docs/guide/errors.md table and the sentinels' doc comments): each
// capture error through the public API, with its sentinel.
func TestCaptureErrorsMatchTheirSentinels(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	nb := sameSlot(dev, s)
	x := upload(t, dev, make([]float32, 16))
	_, err := s.EndCapture()
	assert.ErrorIs(t, err, vkc.ErrCaptureState, "EndCapture with no window")
	assert.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState, "BeginCapture with no window")
	assert.ErrorIs(t, s.AbortCapture(), vkc.ErrCaptureState, "AbortCapture with no window")

	require.NoError(t, s.PrepareCapture())
	assert.ErrorIs(t, vkc.Fill(nb, x, 1), vkc.ErrStreamCapturing, "a neighbour's launch while the window is prepared")
	require.NoError(t, s.BeginCapture())
	assert.ErrorIs(t, vkc.Fill(nb, x, 1), vkc.ErrStreamCapturing, "a neighbour's launch while the window records")
	require.NoError(t, vkc.Fill(s, x, 2))
	_, err = x.ReadOn(testCtx(t), s)
	assert.ErrorIs(t, err, vkc.ErrSyncInCapture, "a read inside the window")
	g, err := s.EndCapture()
	assert.ErrorIs(t, err, vkc.ErrSyncInCapture, "the end of a doomed window")
	assert.Nil(t, g)
	requireUnwritten(t, s, x, vkc.ErrSyncInCapture, "the output of a doomed window")
}

// Promise (ErrCaptureState, vkc.go and the error table of docs/guide/errors.md: "Nothing
// changed, except for EndCapture, which always closes a window that is
// open: an EndCapture of a window prepared but not begun aborts it, and one
// from a stream of the same slot that does not own a recording window ends
// that window without a graph (its outputs read as ErrUnwritten)").
func TestCaptureStateErrors(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	nb := sameSlot(dev, s)
	const N = 16
	xs := ramp(N, 1, 1)
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
	// sealsAfter finishes a window left recording and checks the graph it
	// seals replays exactly the recorded step: the misuse changed nothing.
	sealsAfter := func(t *testing.T) {
		t.Helper()
		require.NoError(t, step(s))
		g, err := s.EndCapture()
		require.NoError(t, err, "the window is intact")
		before := read(t, s, y)
		require.NoError(t, g.Replay())
		require.Equal(t, axpyRef(1, xs, before), read(t, s, y))
		require.NoError(t, g.Close())
	}
	begin := func(t *testing.T) {
		t.Helper()
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, step(s)) // the warmup executes
		require.NoError(t, s.Sync(testCtx(t)))
		require.NoError(t, s.BeginCapture())
	}

	t.Run("idle: nothing changes", func(t *testing.T) {
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, s.AbortCapture(), vkc.ErrCaptureState)
		g, err := s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		g, err = nb.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		slotWorks(t, dev, s)
		slotWorks(t, dev, nb)
	})

	t.Run("prepared: other wrong calls change nothing", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		require.ErrorIs(t, s.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.AbortCapture(), vkc.ErrCaptureState)
		require.NoError(t, step(s))
		require.NoError(t, s.Sync(testCtx(t)))
		require.NoError(t, s.BeginCapture(), "still prepared for its owner")
		sealsAfter(t)
	})

	t.Run("recording: other wrong calls change nothing", func(t *testing.T) {
		begin(t)
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, s.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.PrepareCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.BeginCapture(), vkc.ErrCaptureState)
		require.ErrorIs(t, nb.AbortCapture(), vkc.ErrCaptureState)
		sealsAfter(t)
		slotWorks(t, dev, nb)
	})

	t.Run("EndCapture of a prepared window aborts it", func(t *testing.T) {
		require.NoError(t, s.PrepareCapture())
		g, err := s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		require.ErrorIs(t, s.BeginCapture(), vkc.ErrCaptureState, "the window is gone")
		slotWorks(t, dev, nb)
		require.NoError(t, s.PrepareCapture(), "the stream prepares again")
		require.NoError(t, s.AbortCapture())
	})

	t.Run("a non-owner's EndCapture ends a recording window with no graph", func(t *testing.T) {
		begin(t)
		require.NoError(t, step(s))
		g, err := nb.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState)
		require.Nil(t, g)
		requireUnwritten(t, s, y, vkc.ErrCaptureState, "the output the ended window recorded")
		g, err = s.EndCapture()
		require.ErrorIs(t, err, vkc.ErrCaptureState, "the owner's window is gone")
		require.Nil(t, g)
		slotWorks(t, dev, s)
		slotWorks(t, dev, nb)
		require.NoError(t, y.WriteOn(s, make([]float32, N)))
		g, err = s.Capture(step)
		require.NoError(t, err, "the owner captures again")
		require.NoError(t, y.WriteOn(s, make([]float32, N)))
		require.NoError(t, g.Replay())
		require.Equal(t, xs, read(t, s, y))
		require.NoError(t, g.Close())
	})
}

// Promise (docs/guide/capture.md rule 5 and "Read outputs after the replay"): a
// graph of reductions replayed while another stream runs eager reductions
// over the same device memory pools; neither clobbers the other's
// temporaries.
func TestGraphReductionsBesideEagerReductions(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	s2 := dev.NewStream()
	const N = 3000
	xs := seq(N, func(i int) float32 { return float32(i%7) - 3 })
	x := upload(t, dev, xs)
	x2 := upload(t, dev, filled(N, 1))
	out := upload(t, dev, []float32{0})
	dot := upload(t, dev, []float32{0})
	out2 := upload(t, dev, []float32{0})
	var want, wantDot float64
	for _, v := range xs {
		want += float64(v)
		wantDot += float64(v) * float64(v)
	}
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opSum(s, x, out); err != nil {
			return err
		}
		return opDot(t, s, x, x, dot)
	})
	require.NoError(t, err)
	defer g.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 {
			if !assert.NoError(t, opSum(s2, x2, out2)) {
				return
			}
			v, err := out2.ReadOn(testCtx(t), s2)
			if !assert.NoError(t, err) || !assert.Equal(t, []float32{N}, v, "eager sum %d", i) {
				return
			}
		}
	}()
	for i := range 30 {
		require.NoError(t, vkc.Fill(s, out, -99))
		require.NoError(t, g.Replay())
		v, d := read(t, s, out), read(t, s, dot)
		require.InDelta(t, want, float64(v[0]), 1e-2, "replay %d: sum", i)
		require.InDelta(t, wantDot, float64(d[0]), 1, "replay %d: dot", i)
	}
	wg.Wait()
}

// Promise (docs/guide/capture.md "Changing a graph": "a replayed graph changes behaviour
// with Set and no re-capture"; Set refuses 0 and lengths beyond the
// buffers): a dynamic reduction whose length crosses the 256-element pass
// boundaries between replays matches Go.
func TestDynamicReductionAcrossPassBoundaries(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 4000
	xs := seq(N, func(i int) float32 { return float32(i%11) - 5 })
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	total := upload(t, dev, []float32{0})
	a := newParam(t, dev, float32(2))
	n := newParam(t, dev, uint32(N))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opScaleDyn(s, ops.ParamOf(a), x, y, n); err != nil {
			return err
		}
		return opSumDyn(s, y, total, n)
	})
	require.NoError(t, err)
	defer g.Close()
	for _, nv := range []uint32{1, 255, 256, 257, 511, 512, 513, 1000, 65, 3999, 4000, 2} {
		require.NoError(t, n.Set(nv))
		av := float32(nv%3 + 1)
		require.NoError(t, a.Set(av))
		require.NoError(t, g.Replay())
		var want float64
		for i := range int(nv) {
			want += float64(av * xs[i])
		}
		require.InDelta(t, want, float64(read(t, s, total)[0]), 1e-2, "n=%d a=%v", nv, av)
	}
	assert.Error(t, n.Set(N+1), "Set(N+1) with a live graph sized N")
	assert.Error(t, n.Set(0), "Set(0)")
}

// Promise (docs/guide/capture.md rules 1 to 5; MemoryStats and LiveStaging):
// after every kind of window (sealed, failed, panicked, doomed by a read,
// aborted, ended by a neighbour), and once every graph and buffer closed,
// no staging, claim or guard is left.
func TestNoLeakAfterEveryWindowOutcome(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	nb := sameSlot(dev, s)
	warmOps(t, dev)
	base := dev.MemoryStats()
	baseStaging := dev.LiveStaging()
	const N = 600
	xs := ramp(N, 1, 0)
	in, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	out, err := vkc.FromSlice(dev, make([]float32, N))
	require.NoError(t, err)
	tot, err := vkc.FromSlice(dev, []float32{0})
	require.NoError(t, err)
	step := func(s *vkc.Stream) error {
		if err := in.WriteOn(s, xs); err != nil {
			return err
		}
		tmp, err := vkc.NewBuffer[float32](dev, N)
		if err != nil {
			return err
		}
		defer tmp.Close()
		if err := opScale(s, 2, in, tmp); err != nil {
			return err
		}
		if err := opAdd(s, tmp, in, out); err != nil {
			return err
		}
		return opSum(s, out, tot)
	}
	failing := func(fail func() error) func(s *vkc.Stream) error {
		run := 0
		return func(s *vkc.Stream) error {
			run++
			if err := step(s); err != nil {
				return err
			}
			if run == 2 {
				return fail()
			}
			return nil
		}
	}
	warmAndBegin := func() {
		require.NoError(t, s.PrepareCapture())
		require.NoError(t, step(s))
		require.NoError(t, s.Sync(testCtx(t)))
		require.NoError(t, s.BeginCapture())
		require.NoError(t, step(s))
	}
	var graphs []*vkc.Graph
	g, err := s.Capture(step)
	require.NoError(t, err, "sealed")
	graphs = append(graphs, g)
	boom := errors.New("boom")
	_, err = s.Capture(failing(func() error { return boom }))
	require.ErrorIs(t, err, boom, "failed")
	require.PanicsWithValue(t, "boom", func() {
		_, _ = s.Capture(failing(func() error { panic("boom") }))
	}, "panicked")
	warmAndBegin()
	_, err = out.ReadOn(testCtx(t), s)
	require.ErrorIs(t, err, vkc.ErrSyncInCapture)
	_, err = s.EndCapture()
	require.ErrorIs(t, err, vkc.ErrSyncInCapture, "doomed by a read")
	warmAndBegin()
	require.NoError(t, s.AbortCapture(), "aborted")
	warmAndBegin()
	_, err = nb.EndCapture()
	require.ErrorIs(t, err, vkc.ErrCaptureState, "ended by a neighbour")
	g, err = s.Capture(step)
	require.NoError(t, err)
	graphs = append(graphs, g)
	for _, g := range graphs {
		require.NoError(t, g.Replay())
	}
	read(t, s, tot)
	require.NoError(t, in.Close())
	for _, g := range graphs {
		require.NoError(t, g.Replay())
	}
	read(t, s, tot)
	for _, g := range graphs {
		require.NoError(t, g.Close())
	}
	require.NoError(t, out.Close())
	require.NoError(t, tot.Close())
	require.NoError(t, s.Sync(testCtx(t)))
	st := dev.MemoryStats()
	assert.LessOrEqual(t, st.LiveClaims, base.LiveClaims, "live claims")
	assert.Zero(t, st.Guarded, "guarded bytes")
	assert.Equal(t, baseStaging, dev.LiveStaging(), "live staging")
}

// Promise (docs/guide/buffers.md "Streams": a stream that reads or overwrites what another
// stream's queued work writes is ordered after that work): replays on one
// stream and eager work on another over the same buffers, no Sync between;
// every read on either stream sees the latest issued write.
func TestReplaysBesideAnotherStreamOnTheSameBuffers(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	s2 := dev.NewStream()
	const N = 500
	xs := seq(N, func(i int) float32 { return float32(i%9) + 1 })
	x := upload(t, dev, xs)
	y := upload(t, dev, make([]float32, N))
	z := upload(t, dev, make([]float32, N))
	// The graph: y = y + x; z = y * x.
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		return opMul(s, y, x, z)
	})
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, vkc.Fill(s2, y, 0))
	ry, rz := make([]float32, N), make([]float32, N)
	replay := func() {
		require.NoError(t, g.Replay())
		for i := range ry {
			ry[i] += xs[i]
			rz[i] = ry[i] * xs[i]
		}
	}
	for round := range 12 {
		replay()
		switch round % 4 {
		case 0:
			requireNear(t, rz, read(t, s2, z), 1e-6, "round", round, "z on s2")
		case 1:
			require.NoError(t, vkc.Fill(s2, y, 2))
			for i := range ry {
				ry[i] = 2
			}
		case 2:
			require.NoError(t, opScale(s2, 3, y, y))
			for i := range ry {
				ry[i] *= 3
			}
		case 3:
			requireNear(t, ry, read(t, s2, y), 1e-6, "round", round, "y on s2")
		}
	}
	replay()
	requireNear(t, ry, read(t, s, y), 1e-6, "final y on s")
	requireNear(t, rz, read(t, s2, z), 1e-6, "final z on s2")
}
