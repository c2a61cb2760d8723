package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// Device loss latches: the wait that sees it fails with errs.DeviceLost, the
// pending work's outputs are tainted, and every later call fails with
// errs.DeviceLost; Close still destroys everything.
func TestDeviceLoss(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		leftover := goroutines(t)
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		graph, err := g.capture(1, func() error { return g.copyK(1, x, y) })
		require.NoError(t, err)
		require.NoError(t, g.r.Sync(context.Background(), 1))
		g.dev.Pause()
		require.NoError(t, g.fill(0, x, 2))
		require.NoError(t, g.r.Flush(0))
		g.dev.Lose()
		ctx := context.Background()
		require.ErrorIs(t, g.r.Sync(ctx, 0), errs.DeviceLost)
		lost := func(what string, err error) {
			t.Helper()
			require.ErrorIs(t, err, errs.DeviceLost, what)
		}
		lost("sync", g.r.Sync(ctx, 1))
		_, err = g.read(0, x)
		lost("read", err)
		lost("launch", g.fill(0, y, 1))
		lost("write", g.write(1, y, nil, ramp(3)))
		lost("copy", g.r.Copy(0, x, y, 4*n))
		lost("flush", g.r.Flush(0))
		lost("replay", graph.Replay())
		lost("prepare", g.r.PrepareCapture(0))
		lost("begin", g.r.BeginCapture(0))
		_, err = g.r.Alloc(alloc.DeviceLocal, 64)
		lost("alloc", err)
		_, err = g.r.AllocOn(0, alloc.DeviceLocal, 64)
		lost("alloc on a stream", err)
		_, err = g.r.NewKernel(code, descs["fill"])
		lost("new kernel", err)
		require.NoError(t, graph.Close())
		require.NoError(t, g.r.Close(), "closing a lost device is not an error")
		require.NoError(t, g.r.Close())
		requireClean(t, g.dev)
		leftover()
	})
}

// Every call after Close fails with errs.Closed (releases do nothing), and
// Close is idempotent.
func TestUseAfterClose(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	graph, err := g.capture(0, func() error { return g.copyK(0, x, y) })
	require.NoError(t, err)
	k := g.k["fill"]
	g.close()
	ctx := context.Background()
	closed := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, errs.Closed, what)
	}
	closed("sync", g.r.Sync(ctx, 0))
	_, err = g.read(0, x)
	closed("read", err)
	closed("launch", g.fill(0, y, 1))
	closed("write", g.write(0, y, nil, ramp(3)))
	closed("copy", g.r.Copy(0, x, y, 4*n))
	closed("flush", g.r.Flush(0))
	closed("replay", graph.Replay())
	closed("prepare", g.r.PrepareCapture(0))
	closed("begin", g.r.BeginCapture(0))
	_, err = g.r.Alloc(alloc.DeviceLocal, 64)
	closed("alloc", err)
	_, err = g.r.AllocOn(0, alloc.DeviceLocal, 64)
	closed("alloc on a stream", err)
	_, err = g.r.NewKernel(code, descs["fill"])
	closed("new kernel", err)
	require.NoError(t, graph.Close())
	require.NoError(t, k.Release())
	require.NoError(t, g.r.Free(x))
	require.NoError(t, g.r.Drop(0, y))
	require.NoError(t, g.r.Quiesce(3))
	require.NoError(t, g.r.Close())
	requireClean(t, g.dev)
}

// Close racing calls on every slot: each call either completes before the
// close or fails with errs.Closed, never touches a destroyed object, and
// nothing is left alive.
func TestCloseRacesCalls(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		for round := 0; round < 8; round++ {
			leftover := goroutines(t)
			g := newRig(t, unified, recorder.Options{Slots: 2})
			bufs := make([]alloc.Claim, 8)
			for i := range bufs {
				bufs[i] = g.buf()
				require.NoError(t, g.write(0, bufs[i], nil, ramp(float32(i))))
			}
			graph, err := g.capture(1, func() error { return g.copyK(1, bufs[0], bufs[1]) })
			require.NoError(t, err)
			var wg sync.WaitGroup
			failures := make(chan error, 1024)
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					s := recorder.StreamID(w)
					for i := 0; i < 50; i++ {
						a, b := bufs[(2*w)%8], bufs[(2*w+1)%8]
						var err error
						switch i % 6 {
						case 0:
							err = g.fill(s, a, float32(i))
						case 1:
							err = g.axpy(s, 1, a, b)
						case 2:
							_, err = g.read(s, b)
							if errors.Is(err, errs.Unwritten) {
								err = nil
							}
						case 3:
							err = g.r.Sync(context.Background(), s)
						case 4:
							err = g.write(s, a, nil, ramp(1))
						case 5:
							if w == 1 {
								err = graph.Replay()
							} else {
								var k *recorder.Kernel
								if k, err = g.r.NewKernel(code, descs["fill"]); err == nil {
									err = k.Release()
								}
							}
						}
						if err != nil {
							failures <- fmt.Errorf("worker %d op %d: %w", w, i, err)
							return
						}
					}
				}(w)
			}
			require.NoError(t, g.r.Close())
			wg.Wait()
			close(failures)
			for err := range failures {
				require.ErrorIs(t, err, errs.Closed)
			}
			require.NoError(t, graph.Close())
			requireClean(t, g.dev)
			leftover()
		}
	})
}

// A New that fails closes the device it was given, leaving nothing alive.
func TestNewFails(t *testing.T) {
	leftover := goroutines(t)
	dev := hostdev.New(hostdev.Options{})
	cause := errors.New("no pools today")
	dev.FailNth(hostdev.NewCommandPool, 2, cause)
	_, err := recorder.New(dev, recorder.Options{Slots: 3})
	require.ErrorIs(t, err, cause)
	requireClean(t, dev)
	leftover()

	dev = hostdev.New(hostdev.Options{})
	_, err = recorder.New(dev, recorder.Options{PageSize: 1000})
	require.Error(t, err, "a page size the allocator cannot honour")
	requireClean(t, dev)

	dev = hostdev.New(hostdev.Options{})
	_, err = recorder.New(dev, recorder.Options{MemoryLimit: 1})
	require.ErrorIs(t, err, alloc.ErrInvalidConfig, "a memory limit no page fits")
	require.ErrorContains(t, err, "memory limit 1 below the alignment")
	requireClean(t, dev)
}

// The recorder describes itself and its device.
func TestAccessors(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 3, BatchSize: 7, PageSize: 1 << 20})
	require.Equal(t, recorder.Device(g.spy), g.r.Device())
	require.Equal(t, "hostdev", g.r.Info().Name)
	require.True(t, g.r.Info().UnifiedMemory)
	require.Equal(t, 3, g.r.Slots())
	require.Equal(t, 2, g.r.Slot(5))
	require.Equal(t, g.dev.Live(), g.r.Live())
	require.True(t, g.r.Diagnostics().Checking)
	x := g.buf()
	require.Equal(t, 1, g.r.Stats().LiveClaims)
	require.ErrorIs(t, g.r.Check([]alloc.Claim{x}), errFresh)
	require.NoError(t, g.fill(0, x, 1))
	require.NoError(t, g.r.Check([]alloc.Claim{x}))
	g.close()
}

// Arguments the recorder refuses before doing anything.
func TestBadArguments(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1})
	x, y := g.buf(), g.buf()
	bad := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
	}
	_, err := g.r.NewKernel(code, recorder.PipelineDesc{Name: "fill", Bindings: recorder.MaxBindings + 1})
	bad("too many bindings", err)
	_, err = g.r.NewKernel(code, recorder.PipelineDesc{Name: "fill", Bindings: 1, PushSize: 6})
	bad("push size not a multiple of 4", err)
	_, err = g.r.NewKernel(code, recorder.PipelineDesc{Name: "fill", Bindings: 1, PushSize: 8, Spec: []uint32{64, 1}, SpecIDs: []uint32{0}})
	bad("fewer specialization IDs than values", err)
	_, err = g.r.NewKernel(code, recorder.PipelineDesc{Name: "fill", Bindings: 1, PushSize: 8, Spec: []uint32{64, 1}, SpecIDs: []uint32{2, 2}})
	bad("a specialization ID twice", err)
	_, err = g.r.NewKernel(nil, descs["fill"])
	require.ErrorIs(t, err, errs.BadSPIRV)
	bad("binding count", g.launch(0, "fill", words(1, n)))
	bad("push size", g.launch(0, "fill", words(1), wr(x)))
	bad("write too long", g.r.Write(0, x, new(*recorder.Staging), make([]byte, 4*n+4)))
	bad("read too long", g.r.Read(context.Background(), 0, x, make([]byte, 4*n+4)))
	bad("copy too long", g.r.Copy(0, x, y, 4*n+4))
	bad("copy onto itself", g.r.Copy(0, x, x, 4))
	g.close()
}
