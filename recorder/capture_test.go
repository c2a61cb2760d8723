package recorder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// capture runs fn as the public package's Capture does: prepare, warmup,
// sync, begin, record, end; a failing fn aborts the window.
func (g *rig) capture(s recorder.StreamID, fn func() error) (*recorder.Graph, error) {
	if err := g.r.PrepareCapture(s); err != nil {
		return nil, err
	}
	if err := fn(); err != nil {
		return nil, errors.Join(err, g.r.AbortCapture(s))
	}
	if err := g.r.Sync(context.Background(), s); err != nil {
		return nil, errors.Join(err, g.r.AbortCapture(s))
	}
	if err := g.r.BeginCapture(s); err != nil {
		return nil, err
	}
	if err := fn(); err != nil {
		return nil, errors.Join(err, g.r.AbortCapture(s))
	}
	return g.r.EndCapture(s)
}

// A graph replays its recorded work; a host write inside the window is
// recorded as a copy from the buffer's persistent staging, which every
// eager write keeps fresh, so feeding a graph is a plain write.
// Consecutive replays queue without a host wait.
func TestCaptureReplay(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 2})
		x, c, y, z := g.buf(), g.buf(), g.buf(), g.buf()
		var sx *recorder.Staging
		require.NoError(t, g.fill(0, c, 2))
		fn := func() error {
			if err := g.write(0, x, &sx, ramp(1)); err != nil {
				return err
			}
			if err := g.add(0, x, c, y); err != nil {
				return err
			}
			return g.copyK(0, y, z)
		}
		graph, err := g.capture(0, fn)
		require.NoError(t, err)
		require.NotNil(t, sx, "a write in a window gives the buffer persistent staging")
		require.Equal(t, 1, g.r.LiveStaging())
		require.Equal(t, recorder.StreamID(0), graph.Owner())
		require.ElementsMatch(t, []alloc.Claim{x, y, z}, graph.Writes())
		g.mustRead(0, z, addf(ramp(1), splat(2)), "the warmup executed")

		require.NoError(t, g.fill(0, z, 0))
		require.NoError(t, g.write(0, x, &sx, ramp(100)))
		require.NoError(t, g.r.Sync(context.Background(), 0))
		g.dev.Pause()
		require.NoError(t, graph.Replay())
		require.NoError(t, graph.Replay())
		require.Equal(t, 2, g.dev.Pending(), "consecutive replays need no host wait")
		g.dev.Resume()
		g.mustRead(0, x, ramp(100))
		g.mustRead(0, z, addf(ramp(100), splat(2)))

		// The graph keeps the staging after the buffer lets it go.
		g.r.ReleaseStaging(sx)
		require.Equal(t, 1, g.r.LiveStaging())
		require.NoError(t, graph.Replay())
		g.mustRead(1, z, addf(ramp(100), splat(2)))
		require.NoError(t, graph.Close())
		require.Equal(t, 0, g.r.LiveStaging())
		require.NoError(t, g.r.Quiesce(3))
		require.NoError(t, g.r.Free(x))
		g.close()
	})
}

// The buffer's reference outlives the graph's: closing the graph first
// leaves the staging to the buffer, whose eager writes still go through it.
func TestStagingOutlivesGraph(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y := g.buf(), g.buf()
		var sx *recorder.Staging
		graph, err := g.capture(0, func() error {
			if err := g.write(0, x, &sx, ramp(1)); err != nil {
				return err
			}
			return g.copyK(0, x, y)
		})
		require.NoError(t, err)
		require.NoError(t, graph.Replay())
		require.NoError(t, graph.Close())
		require.Equal(t, 1, g.r.LiveStaging())
		require.NoError(t, g.write(0, x, &sx, ramp(7)))
		g.mustRead(0, x, ramp(7))
		g.mustRead(0, y, ramp(1))
		g.r.ReleaseStaging(sx)
		g.r.ReleaseStaging(nil)
		require.Equal(t, 0, g.r.LiveStaging())
		g.close()
	})
}

// A replay that does not enqueue writes nothing: every output reads as
// unwritten with the cause, until a replay that enqueues.
func TestReplayAllOrNone(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, y, z := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		graph, err := g.capture(0, func() error {
			if err := g.copyK(0, x, y); err != nil {
				return err
			}
			return g.fill(0, z, 9)
		})
		require.NoError(t, err)
		cause := errors.New("submit refused")
		g.dev.FailNth(hostdev.Submit, 1, cause)
		require.ErrorIs(t, graph.Replay(), cause)
		g.requireUnwritten(0, y, cause)
		g.requireUnwritten(0, z, cause)
		g.mustRead(0, x, ramp(1))
		g.dev.FailNth(hostdev.NewFence, 1, cause)
		require.NoError(t, graph.Replay(), "a replay batch is recycled: no new fence")
		g.mustRead(0, y, ramp(1))
		g.mustRead(0, z, splat(9))
		require.NoError(t, graph.Close())
		g.dev.Heal(hostdev.NewFence)
		g.close()
	})
}

// A replay settles the ledger as the same launches done eagerly would:
// outputs of steps that (transitively) read bytes unwritten at replay time
// inherit the failure, every other output is written.
func TestReplayTaintPropagation(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newRig(t, unified, recorder.Options{Slots: 1})
		x, w, y, z, v, acc := g.buf(), g.buf(), g.buf(), g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.write(0, w, nil, ramp(10)))
		require.NoError(t, g.fill(0, acc, 0))
		fn := func() error {
			for _, err := range []error{
				g.copyK(0, x, y),     // y <- x
				g.fill(0, z, 5),      // z: no input
				g.add(0, y, w, v),    // v <- y + w: reads y, so x transitively
				g.axpy(0, 1, z, acc), // acc += z: acc is an input too
			} {
				if err != nil {
					return err
				}
			}
			return nil
		}
		graph, err := g.capture(0, fn)
		require.NoError(t, err)

		badX := errors.New("x lost")
		g.r.Taint([]alloc.Claim{x}, badX)
		require.NoError(t, graph.Replay())
		g.requireUnwritten(0, y, badX)
		g.requireUnwritten(0, v, badX)
		g.mustRead(0, z, splat(5))
		g.mustRead(0, acc, splat(10), "warmup, recording (not run) and this replay: 5+5")

		require.NoError(t, g.write(0, x, nil, ramp(2)))
		badW := errors.New("w lost")
		badAcc := errors.New("acc lost")
		g.r.Taint([]alloc.Claim{w}, badW)
		g.r.Taint([]alloc.Claim{acc}, badAcc)
		require.NoError(t, graph.Replay())
		g.mustRead(0, y, ramp(2))
		g.requireUnwritten(0, v, badW)
		g.requireUnwritten(0, acc, badAcc)

		// The same launches done eagerly leave the same ledger.
		g.r.Taint([]alloc.Claim{x}, badX)
		require.NoError(t, g.write(0, w, nil, ramp(10)))
		require.NoError(t, fn())
		g.requireUnwritten(0, y, badX)
		g.requireUnwritten(0, v, badX)
		g.requireUnwritten(0, acc, badAcc)

		require.NoError(t, g.write(0, x, nil, ramp(3)))
		require.NoError(t, g.fill(0, acc, 1))
		require.NoError(t, graph.Replay())
		g.mustRead(0, v, addf(ramp(3), ramp(10)))
		g.mustRead(0, acc, splat(6))
		require.NoError(t, graph.Close())
		g.close()
	})
}

// A kernel a graph recorded stays alive after its owner releases it, and
// is destroyed when the last graph holding it closes.
func TestKernelLivesWithGraph(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1})
	pipes := func() int64 { return g.dev.Live()["pipeline"] }
	base := pipes()
	k, err := g.r.NewKernel(code, descs["copy"])
	require.NoError(t, err)
	require.Equal(t, descs["copy"].Name, k.Desc().Name)
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(4)))
	launch := func() error {
		l := recorder.Launch{Args: []capture.Binding{rd(x), wr(y)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}
		return g.r.Launch(0, k, &l)
	}
	g1, err := g.capture(0, launch)
	require.NoError(t, err)
	g2, err := g.capture(0, launch)
	require.NoError(t, err)
	require.NoError(t, k.Release())
	require.Equal(t, base+1, pipes(), "two graphs hold the kernel")
	require.ErrorIs(t, launch(), errs.Closed)
	require.NoError(t, g.fill(0, y, 0))
	require.NoError(t, g1.Replay())
	g.mustRead(0, y, ramp(4))
	require.NoError(t, g1.Close())
	require.Equal(t, base+1, pipes())
	require.NoError(t, g.fill(0, y, 0))
	require.NoError(t, g2.Replay())
	g.mustRead(0, y, ramp(4))
	require.NoError(t, g2.Close())
	require.Equal(t, base, pipes(), "the last graph's close destroys it")

	// Released inside the window: the window's hold keeps it until the
	// window is refused.
	k, err = g.r.NewKernel(code, descs["copy"])
	require.NoError(t, err)
	require.NoError(t, g.r.PrepareCapture(0))
	require.NoError(t, g.r.BeginCapture(0))
	require.NoError(t, launch())
	require.NoError(t, k.Release())
	require.Equal(t, base+1, pipes())
	require.NoError(t, g.r.AbortCapture(0))
	require.Equal(t, base, pipes())
	g.requireUnwritten(0, y, errs.CaptureState)
	g.close()
}

// Every call a capture window refuses, and what each refusal leaves.
func TestCaptureRefusals(t *testing.T) {
	ctx := context.Background()
	// Slots 4: streams 0 and 4 share slot 0; stream 1 is on slot 1.
	const owner, neighbour, other = 0, 4, 1

	t.Run("neighbour", func(t *testing.T) {
		g := newRig(t, true, recorder.Options{Slots: 4})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(owner, x, nil, ramp(1)))
		refused := func(what string, err error) {
			t.Helper()
			require.ErrorIs(t, err, errs.StreamCapturing, what)
		}
		for _, recording := range []bool{false, true} {
			require.NoError(t, g.r.PrepareCapture(owner))
			if recording {
				require.NoError(t, g.r.BeginCapture(owner))
			}
			err := g.r.PrepareCapture(neighbour)
			refused("prepare", err)
			require.ErrorIs(t, err, errs.CaptureState)
			refused("begin", g.r.BeginCapture(neighbour))
			refused("abort", g.r.AbortCapture(neighbour))
			refused("launch", g.copyK(neighbour, x, y))
			refused("write", g.write(neighbour, y, nil, ramp(2)))
			refused("copy", g.r.Copy(neighbour, x, y, 4*n))
			_, err = g.read(neighbour, x)
			refused("read", err)
			refused("sync", g.r.Sync(ctx, neighbour))
			refused("flush", g.r.Flush(neighbour))
			if !recording {
				_, err = g.r.EndCapture(neighbour)
				refused("end", err)
			}
			// The other slot runs as usual.
			require.NoError(t, g.copyK(other, x, y))
			g.mustRead(other, y, ramp(1))
			if recording {
				graph, err := g.r.EndCapture(owner)
				require.NoError(t, err)
				require.NoError(t, graph.Close())
			} else {
				require.NoError(t, g.r.AbortCapture(owner))
			}
		}
		// A refused call that was to write leaves its output unwritten.
		require.NoError(t, g.r.PrepareCapture(owner))
		refused("launch", g.copyK(neighbour, x, y))
		require.NoError(t, g.r.AbortCapture(owner))
		g.requireUnwritten(neighbour, y, errs.StreamCapturing)
		g.close()
	})

	t.Run("end by a neighbour", func(t *testing.T) {
		g := newRig(t, true, recorder.Options{Slots: 4})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(owner, x, nil, ramp(1)))
		require.NoError(t, g.r.PrepareCapture(owner))
		require.NoError(t, g.r.BeginCapture(owner))
		require.NoError(t, g.copyK(owner, x, y))
		_, err := g.r.EndCapture(neighbour)
		require.ErrorIs(t, err, errs.CaptureState, "a neighbour's end closes the window, seals nothing")
		g.requireUnwritten(owner, y, errs.CaptureState)
		require.NoError(t, g.r.PrepareCapture(neighbour), "the slot is free again")
		require.NoError(t, g.r.AbortCapture(neighbour))
		g.close()
	})

	t.Run("lifecycle misuse", func(t *testing.T) {
		g := newRig(t, false, recorder.Options{Slots: 4})
		require.ErrorIs(t, g.r.BeginCapture(owner), errs.CaptureState)
		_, err := g.r.EndCapture(owner)
		require.ErrorIs(t, err, errs.CaptureState)
		require.ErrorIs(t, g.r.AbortCapture(owner), errs.CaptureState)
		require.NoError(t, g.r.PrepareCapture(owner))
		require.ErrorIs(t, g.r.PrepareCapture(owner), errs.CaptureState)
		_, err = g.r.EndCapture(owner)
		require.ErrorIs(t, err, errs.CaptureState, "ending a prepared window seals nothing")
		require.NoError(t, g.r.PrepareCapture(owner), "and leaves the slot idle")
		require.NoError(t, g.r.BeginCapture(owner))
		require.ErrorIs(t, g.r.BeginCapture(owner), errs.CaptureState)
		require.NoError(t, g.r.Flush(owner), "a flush inside the window has nothing to submit")
		graph, err := g.r.EndCapture(owner)
		require.NoError(t, err, "an empty recording seals")
		require.NoError(t, graph.Replay())
		require.NoError(t, graph.Close())
		g.close()
	})

	for _, wait := range []string{"read", "sync"} {
		t.Run("owner "+wait+" in the window", func(t *testing.T) {
			both(t, func(t *testing.T, unified bool) {
				g := newRig(t, unified, recorder.Options{Slots: 4})
				x, y := g.buf(), g.buf()
				require.NoError(t, g.write(owner, x, nil, ramp(1)))
				require.NoError(t, g.write(owner, y, nil, ramp(5)))
				require.NoError(t, g.r.PrepareCapture(owner))
				require.NoError(t, g.r.BeginCapture(owner))
				require.NoError(t, g.copyK(owner, x, y))
				var err error
				if wait == "read" {
					_, err = g.read(owner, x)
				} else {
					err = g.r.Sync(ctx, owner)
				}
				require.ErrorIs(t, err, errs.SyncInCapture)
				_, err = g.r.EndCapture(owner)
				require.ErrorIs(t, err, errs.SyncInCapture, "the window is doomed")
				g.requireUnwritten(owner, y, errs.SyncInCapture)
				g.mustRead(owner, x, ramp(1))
				g.close()
			})
		})
	}

	t.Run("replay on a recording slot", func(t *testing.T) {
		g := newRig(t, true, recorder.Options{Slots: 4})
		x, y, z := g.buf(), g.buf(), g.buf()
		require.NoError(t, g.write(owner, x, nil, ramp(1)))
		graph, err := g.capture(owner, func() error { return g.copyK(owner, x, y) })
		require.NoError(t, err)
		require.NoError(t, g.r.PrepareCapture(neighbour))
		require.NoError(t, g.r.BeginCapture(neighbour))
		require.NoError(t, g.copyK(neighbour, x, z))
		require.ErrorIs(t, graph.Replay(), errs.StreamCapturing)
		g2, err := g.r.EndCapture(neighbour)
		require.NoError(t, err)
		g.requireUnwritten(owner, y, errs.StreamCapturing)
		require.NoError(t, graph.Replay())
		require.NoError(t, g2.Replay())
		g.mustRead(owner, y, ramp(1))
		g.mustRead(owner, z, ramp(1))
		require.NoError(t, graph.Close())
		require.NoError(t, g2.Close())
		g.close()
	})

	t.Run("abort while recording", func(t *testing.T) {
		g := newRig(t, false, recorder.Options{Slots: 4})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(owner, x, nil, ramp(1)))
		require.NoError(t, g.write(owner, y, nil, ramp(2)))
		require.NoError(t, g.r.PrepareCapture(owner))
		require.NoError(t, g.r.BeginCapture(owner))
		require.NoError(t, g.copyK(owner, x, y))
		require.NoError(t, g.r.AbortCapture(owner))
		g.requireUnwritten(owner, y, errs.CaptureState)
		g.mustRead(owner, x, ramp(1))
		g.close()
	})

	t.Run("buffer allocation the warmup did not prepare", func(t *testing.T) {
		both(t, func(t *testing.T, unified bool) {
			g := newRig(t, unified, recorder.Options{Slots: 4, PageSize: 64 << 10})
			x, y := g.buf(), g.buf()
			require.NoError(t, g.write(owner, x, nil, ramp(1)))
			require.NoError(t, g.r.PrepareCapture(owner))
			require.NoError(t, g.r.BeginCapture(owner))
			require.NoError(t, g.copyK(owner, x, y))
			// Allocating is not refused, room in a page or not (another
			// goroutine's buffer is as welcome as ever)...
			small, err := g.r.Alloc(alloc.DeviceLocal, 4*n)
			require.NoError(t, err, "room in a page")
			big, err := g.r.Alloc(alloc.DeviceLocal, 64<<10)
			require.NoError(t, err, "a new page")
			// ...but the window refuses to record work on either.
			for _, c := range []alloc.Claim{small, big} {
				err = g.launch(owner, "copy", words(n), rd(x), wr(c))
				require.ErrorIs(t, err, errs.AllocInCapture)
			}
			// Another slot's stream works on them, and allocations may grow.
			require.NoError(t, g.copyK(other, x, small))
			tmp, err := g.r.AllocOn(other, alloc.DeviceLocal, 64<<10)
			require.NoError(t, err)
			require.NoError(t, g.r.Drop(other, tmp))
			_, err = g.r.EndCapture(owner)
			require.ErrorIs(t, err, errs.AllocInCapture, "the refused work doomed the window")
			g.requireUnwritten(owner, y, errs.AllocInCapture)
			g.mustRead(other, small, ramp(1))
			// The window over, the buffers are like any other.
			require.NoError(t, g.r.PrepareCapture(owner))
			require.NoError(t, g.copyK(owner, x, big))
			require.NoError(t, g.r.BeginCapture(owner))
			require.NoError(t, g.copyK(owner, x, big))
			graph, err := g.r.EndCapture(owner)
			require.NoError(t, err)
			require.NoError(t, graph.Close())
			require.NoError(t, g.r.Quiesce(^uint64(0)))
			require.NoError(t, g.r.Free(small))
			require.NoError(t, g.r.Free(big))

			// The owner's own temporary needing a page dooms it too.
			require.NoError(t, g.r.PrepareCapture(owner))
			require.NoError(t, g.r.BeginCapture(owner))
			require.NoError(t, g.copyK(owner, x, y))
			_, err = g.r.AllocOn(owner, alloc.DeviceLocal, 64<<10)
			require.ErrorIs(t, err, errs.AllocInCapture)
			_, err = g.r.EndCapture(owner)
			require.ErrorIs(t, err, errs.AllocInCapture)
			g.close()
		})
	})
}

// The warmup grows the pools to the working set: a window whose function
// allocates, uses and frees temporaries — one above the dedicated-page
// threshold, as stream temporaries (AllocOn + Drop) and as buffers
// (Alloc + Free) — records without errs.AllocInCapture, because the warmup's
// frees are parked until Begin and the pages that empty are kept.
func TestWarmupKeepsWhatTheRecordingNeeds(t *testing.T) {
	for _, buffers := range []bool{false, true} {
		name := "temporaries"
		if buffers {
			name = "buffers"
		}
		t.Run(name, func(t *testing.T) {
			both(t, func(t *testing.T, unified bool) {
				const page = 256 << 10
				g := newRig(t, unified, recorder.Options{Slots: 2, PageSize: page})
				x, res := g.buf(), g.buf()
				require.NoError(t, g.write(0, x, nil, ramp(1)))
				temp := func(size uint64) (alloc.Claim, error) {
					if buffers {
						return g.r.Alloc(alloc.DeviceLocal, size)
					}
					return g.r.AllocOn(0, alloc.DeviceLocal, size)
				}
				release := func(c alloc.Claim) error {
					if buffers {
						if err := g.r.Quiesce(1); err != nil {
							return err
						}
						return g.r.Free(c)
					}
					return g.r.Drop(0, c)
				}
				fn := func() error {
					big, err := temp(page) // dedicated: above half a page
					if err != nil {
						return err
					}
					mid, err := temp(page / 4)
					if err != nil {
						return err
					}
					if err := g.copyK(0, x, big); err != nil {
						return err
					}
					if err := g.add(0, big, x, mid); err != nil {
						return err
					}
					if err := g.copyK(0, mid, res); err != nil {
						return err
					}
					if err := release(big); err != nil {
						return err
					}
					return release(mid)
				}
				pages := g.r.Stats().Pages
				graph, err := g.capture(0, fn)
				require.NoError(t, err)
				g.mustRead(0, res, addf(ramp(1), ramp(1)))
				require.NoError(t, g.fill(0, res, 0))
				require.NoError(t, g.write(0, x, nil, ramp(5)))
				require.NoError(t, graph.Replay())
				g.mustRead(0, res, addf(ramp(5), ramp(5)))
				require.NoError(t, graph.Close())
				require.Equal(t, 0, g.r.Stats().LiveClaims-2-g.r.LiveStaging(), "only x and res left")
				require.LessOrEqual(t, g.r.Stats().Pages, pages+2, "the window's pages are released (up to KeepEmpty)")
				g.close()
			})
		})
	}
}

// A replay whose step reads a tainted input that a later step of the same
// graph rewrites: the output of the first step keeps the input's cause,
// as the same launches done eagerly would leave it.
func TestReplayKeepsCauseOfRewrittenInput(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 1})
	d, e := g.buf(), g.buf()
	require.NoError(t, g.fill(0, d, 1))
	require.NoError(t, g.fill(0, e, 2))
	graph, err := g.capture(0, func() error {
		if err := g.axpy(0, 1, e, d); err != nil {
			return err
		}
		return g.fill(0, e, 5)
	})
	require.NoError(t, err)
	bad := errors.New("e lost")
	g.r.Taint([]alloc.Claim{e}, bad)
	require.NoError(t, graph.Replay())
	g.requireUnwritten(0, d, bad)
	g.mustRead(0, e, splat(5))
	require.NoError(t, graph.Close())
	g.close()
}

// A buffer a graph reads keeps its memory when it is freed, and with it
// what the ledger knows of its bytes: freed while never written (inside
// the recording or after the graph sealed), the graph's outputs read as
// unwritten; freed after it was written, the replay still reads its bytes.
func TestFreedGraphInputKeepsItsLedger(t *testing.T) {
	for _, when := range []string{"inside the recording", "after sealing"} {
		t.Run(when, func(t *testing.T) {
			g := newRig(t, true, recorder.Options{Slots: 1})
			x, d, w, e := g.buf(), g.buf(), g.buf(), g.buf()
			require.NoError(t, g.write(0, w, nil, ramp(3)))
			require.NoError(t, g.r.PrepareCapture(0))
			require.NoError(t, g.r.BeginCapture(0))
			require.NoError(t, g.copyK(0, x, d))
			require.NoError(t, g.copyK(0, w, e))
			free := func(c alloc.Claim) {
				require.NoError(t, g.r.Quiesce(1))
				require.NoError(t, g.r.Free(c))
			}
			if when == "inside the recording" {
				free(x)
				free(w)
			}
			graph, err := g.r.EndCapture(0)
			require.NoError(t, err)
			if when == "after sealing" {
				free(x)
				free(w)
			}
			require.NoError(t, graph.Replay())
			g.requireUnwritten(0, d, errFresh)
			g.mustRead(0, e, ramp(3))
			require.NoError(t, graph.Close())
			g.close()
		})
	}
}

// Replay-time taint through a cycle of copies: each output keeps the cause
// of what it was computed from, although every claim that carried a
// failure is rewritten by the same replay.
func TestReplayTaintThroughACycle(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 1})
	p, q, r := g.buf(), g.buf(), g.buf()
	for _, c := range []alloc.Claim{p, q, r} {
		require.NoError(t, g.fill(0, c, 1))
	}
	graph, err := g.capture(0, func() error {
		if err := g.copyK(0, q, r); err != nil {
			return err
		}
		if err := g.copyK(0, p, q); err != nil {
			return err
		}
		return g.copyK(0, r, p)
	})
	require.NoError(t, err)
	badP, badQ := errors.New("p lost"), errors.New("q lost")
	g.r.Taint([]alloc.Claim{p}, badP)
	g.r.Taint([]alloc.Claim{q}, badQ)
	require.NoError(t, graph.Replay())
	g.requireUnwritten(0, r, badQ)
	g.requireUnwritten(0, q, badP)
	g.requireUnwritten(0, p, badQ)
	require.NoError(t, graph.Close())
	g.close()
}

// A claim a live graph guards keeps its taint when it is freed, whichever
// path frees it: here Free parks it (a warmup touched it) and the aborted
// window releases it through the drop queue. The graph still reads its
// bytes, so its replay's outputs inherit the taint until the graph closes.
func TestParkedGuardedClaimKeepsItsTaint(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 1})
	defer g.close()
	a, x, y := g.buf(), g.buf(), g.buf()
	require.NoError(t, g.write(0, a, nil, ramp(1)))
	graph, err := g.capture(0, func() error { return g.add(0, x, a, y) })
	require.NoError(t, err)

	cause := errors.New("test: x lost its bytes")
	require.NoError(t, g.r.PrepareCapture(0))
	require.NoError(t, g.fill(0, x, 1)) // the warmup touches x
	g.r.Taint([]alloc.Claim{x}, cause)
	require.NoError(t, g.r.Free(x)) // parked: the warmup used it
	require.NoError(t, g.r.AbortCapture(0))
	require.NoError(t, g.r.Sync(context.Background(), 0)) // the drop queue lets x go

	require.NoError(t, graph.Replay())
	g.requireUnwritten(0, y, cause)
	require.NoError(t, graph.Close())
	require.NoError(t, g.r.Free(a))
	require.NoError(t, g.r.Free(y))
}

// The recorded run gets back the warmup's own temporaries whatever the
// order of their sizes: two above the dedicated-page threshold, the
// smaller first, as stream temporaries and as buffers. Freed at Begin and
// allocated again, good fit gave the smaller request the larger one's
// kept page, and the larger then needed a new page (errs.AllocInCapture).
func TestRecordingGetsTheWarmupsTemporariesInAnyOrder(t *testing.T) {
	for _, buffers := range []bool{false, true} {
		t.Run(map[bool]string{false: "temporaries", true: "buffers"}[buffers], func(t *testing.T) {
			both(t, func(t *testing.T, unified bool) {
				const page = 256 << 10
				g := newRig(t, unified, recorder.Options{Slots: 2, PageSize: page})
				x, res := g.buf(), g.buf()
				require.NoError(t, g.write(0, x, nil, ramp(1)))
				for range 2 { // fill the shared page: the temporaries get pages of their own
					_, err := g.r.Alloc(alloc.DeviceLocal, 120000)
					require.NoError(t, err)
				}
				temp := func(size uint64) (alloc.Claim, error) {
					if buffers {
						return g.r.Alloc(alloc.DeviceLocal, size)
					}
					return g.r.AllocOn(0, alloc.DeviceLocal, size)
				}
				release := func(c alloc.Claim) error {
					if buffers {
						if err := g.r.Quiesce(1); err != nil {
							return err
						}
						return g.r.Free(c)
					}
					return g.r.Drop(0, c)
				}
				fn := func() error {
					small, err := temp(150000) // not at a bucket boundary: good fit looks above its own bucket
					if err != nil {
						return err
					}
					large, err := temp(200000)
					if err != nil {
						return err
					}
					if err := g.copyK(0, x, small); err != nil {
						return err
					}
					if err := g.add(0, small, x, large); err != nil {
						return err
					}
					if err := g.copyK(0, large, res); err != nil {
						return err
					}
					if err := release(small); err != nil {
						return err
					}
					return release(large)
				}
				graph, err := g.capture(0, fn)
				require.NoError(t, err)
				require.NoError(t, g.fill(0, res, 0))
				require.NoError(t, g.write(0, x, nil, ramp(5)))
				require.NoError(t, graph.Replay())
				g.mustRead(0, res, addf(ramp(5), ramp(5)))
				require.NoError(t, graph.Close())
				g.close()
			})
		})
	}
}
