package recorder_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// The limit's rig: pages of 4 KiB, a budget of four of them.
const (
	memPage  = 4 << 10
	memLimit = 4 * memPage
	memPiece = 1 << 10
)

func newLimitRig(t *testing.T, unified bool) *rig {
	return newRig(t, unified, recorder.Options{Slots: 2, PageSize: memPage, MemoryLimit: memLimit})
}

// fillTo allocates pieces of device-local memory until the limit refuses
// one, checking the refusal, and returns them.
func fillTo(t *testing.T, g *rig) []alloc.Claim {
	t.Helper()
	var claims []alloc.Claim
	for {
		c, err := g.r.Alloc(alloc.DeviceLocal, memPiece)
		if err != nil {
			require.ErrorIs(t, err, errs.OutOfMemory)
			require.ErrorIs(t, err, alloc.ErrOverLimit)
			return claims
		}
		claims = append(claims, c)
		require.LessOrEqual(t, g.r.Stats().Reserved, uint64(memLimit))
	}
}

// Filled to its limit, the device refuses the next buffer with an error
// that says why, keeps every live buffer and stream usable, and serves
// again once memory is freed.
func TestMemoryLimitFillsToRefusalAndBack(t *testing.T) {
	both(t, func(t *testing.T, unified bool) {
		g := newLimitRig(t, unified)
		x := g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.Quiesce(^uint64(0)))
		claims := fillTo(t, g)
		st := g.r.Stats()
		assert.Equal(t, uint64(memLimit), st.Limit)
		assert.LessOrEqual(t, st.Reserved, uint64(memLimit))
		assert.Greater(t, st.Reserved+memPiece, uint64(memLimit)-memPage, "the budget is nearly all used")

		_, err := g.r.Alloc(alloc.DeviceLocal, 3*memPiece)
		require.ErrorIs(t, err, errs.OutOfMemory)
		for _, want := range []string{"3072 bytes of device-local", fmt.Sprintf("limit %d", memLimit),
			fmt.Sprintf("reserved %d", st.Reserved), fmt.Sprintf("used %d", st.Used), fmt.Sprintf("largest free range %d", st.LargestFree)} {
			assert.Contains(t, err.Error(), want)
		}
		y := claims[0]
		if !unified {
			// A read needs readback memory, which the limit counts too:
			// at a full budget it is refused like any page.
			_, err := g.read(0, x)
			require.ErrorIs(t, err, errs.OutOfMemory)
			// Freeing a page's worth makes room for it.
			last := claims[len(claims)-1].Page
			for len(claims) > 0 && claims[len(claims)-1].Page == last {
				require.NoError(t, g.r.Free(claims[len(claims)-1]))
				claims = claims[:len(claims)-1]
			}
		}
		g.mustRead(0, x, ramp(1), "a live buffer survives the refusal")
		require.NoError(t, g.copyK(1, x, y))
		got, err := g.read(1, y)
		require.NoError(t, err)
		require.Equal(t, ramp(1), got[:n], "streams work at a full budget")

		for _, c := range claims[1:] {
			require.NoError(t, g.r.Free(c))
		}
		big, err := g.r.Alloc(alloc.DeviceLocal, memLimit/4)
		require.NoError(t, err, "freed memory serves a large buffer")
		require.NoError(t, g.r.Free(big))
		require.NoError(t, g.r.Free(y))
		require.NoError(t, g.r.Free(x))
		require.NoError(t, g.r.Validate())
		g.close()
	})
}

// Half a full budget freed in pieces, whole pages emptied: the cache keeps
// one. A buffer of a quarter of the budget fits beside it; one of half the
// budget needs pages of its own and fits only once the cached page goes.
func TestMemoryLimitReleasesCachedPagesForALargeBuffer(t *testing.T) {
	for _, size := range []uint64{memLimit / 4, memLimit / 2} {
		g := newLimitRig(t, false)
		claims := fillTo(t, g)
		for _, c := range claims[len(claims)/2:] {
			require.NoError(t, g.r.Free(c))
		}
		st := g.r.Stats()
		require.Equal(t, uint64(memLimit/2), st.Used)
		require.Equal(t, uint64(memLimit/2+memPage), st.Reserved, "the cache holds a page")
		big, err := g.r.Alloc(alloc.DeviceLocal, size)
		require.NoError(t, err, "a buffer of %d bytes", size)
		require.LessOrEqual(t, g.r.Stats().Reserved, uint64(memLimit))
		require.NoError(t, g.r.Free(big))
		for _, c := range claims[:len(claims)/2] {
			require.NoError(t, g.r.Free(c))
		}
		g.close()
	}
}

// Temporaries an eager stream dropped are the stream's pending work's
// until its fence signals; a request past the limit reclaims them (the
// open batch submitted, its fence waited for) before it gives up.
func TestMemoryLimitReclaimsDroppedTemporaries(t *testing.T) {
	g := newLimitRig(t, true)
	x := g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	// Three budgets' worth of temporaries, each dropped while the batch
	// that uses it is still open.
	for i := 0; i < 3*memLimit/memPiece; i++ {
		tmp, err := g.r.AllocOn(0, alloc.DeviceLocal, memPiece)
		require.NoError(t, err, "temporary %d: the drops were not reclaimed", i)
		require.NoError(t, g.copyK(0, x, tmp))
		require.NoError(t, g.r.Drop(0, tmp))
		require.LessOrEqual(t, g.r.Stats().Reserved, uint64(memLimit))
	}
	g.mustRead(0, x, ramp(1))
	require.NoError(t, g.r.Free(x))
	g.close()
}

// Trim releases every empty page and nothing a buffer, a graph or pending
// work holds.
func TestTrimReleasesOnlyFreePages(t *testing.T) {
	g := newLimitRig(t, true)
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	require.NoError(t, g.r.PrepareCapture(0))
	require.NoError(t, g.copyK(0, x, y))
	require.NoError(t, g.r.BeginCapture(0))
	require.NoError(t, g.copyK(0, x, y))
	released, err := g.r.Trim()
	require.NoError(t, err)
	assert.Zero(t, released, "a recording window holds the empty pages")
	graph, err := g.r.EndCapture(0)
	require.NoError(t, err)

	claims := fillTo(t, g)
	for _, c := range claims {
		require.NoError(t, g.r.Free(c))
	}
	require.NoError(t, g.r.Free(y)) // guarded by the graph
	before := g.r.Stats()
	released, err = g.r.Trim()
	require.NoError(t, err)
	after := g.r.Stats()
	assert.Equal(t, before.Reserved-after.Reserved, released)
	assert.Positive(t, released)
	assert.Equal(t, before.Used, after.Used)
	assert.Equal(t, before.Guarded, after.Guarded)
	assert.Equal(t, uint64(4*n), after.Guarded)
	require.NoError(t, graph.Replay())
	g.mustRead(0, x, ramp(1))
	released, err = g.r.Trim()
	require.NoError(t, err)
	assert.Zero(t, released, "nothing more is free")
	require.NoError(t, graph.Close())
	require.NoError(t, g.r.Free(x))
	released, err = g.r.Trim()
	require.NoError(t, err)
	assert.Equal(t, uint64(0), g.r.Stats().Reserved, "every page released once nothing holds one (released %d)", released)
	g.close()
	_, err = g.r.Trim()
	require.ErrorIs(t, err, errs.Closed)
}

// oomCause is a driver's out-of-memory as a test injects it.
func oomCause(call string) error {
	return fmt.Errorf("%s: VK_ERROR_OUT_OF_DEVICE_MEMORY (injected): %w", call, errs.OutOfMemory)
}

// allocSite is one place the recorder asks the driver for memory, and a
// call on a fresh rig that reaches it.
type allocSite struct {
	call    hostdev.Call
	name    string
	objects string // the kind of object the call makes, as Live counts them
	// reach makes the call that allocates; written names the buffer it
	// was to write, if any (zero: none).
	reach func(g *rig, x alloc.Claim) (written alloc.Claim, err error)
}

var allocSites = []allocSite{
	{hostdev.AllocateMemory, "page", "memory", func(g *rig, _ alloc.Claim) (alloc.Claim, error) {
		_, err := g.r.Alloc(alloc.DeviceLocal, 64<<10)
		return alloc.Claim{}, err
	}},
	{hostdev.MapMemory, "staging page", "memory", func(g *rig, _ alloc.Claim) (alloc.Claim, error) {
		_, err := g.r.AllocOn(1, alloc.Upload, 64<<10)
		return alloc.Claim{}, err
	}},
	{hostdev.NewDescriptorPool, "descriptor pool", "descriptor-pool", func(g *rig, x alloc.Claim) (alloc.Claim, error) {
		y := g.buf()
		return y, g.copyK(1, x, y)
	}},
	{hostdev.AllocateCommandBuffer, "command buffer", "command-buffer", func(g *rig, x alloc.Claim) (alloc.Claim, error) {
		y := g.buf()
		return y, g.copyK(1, x, y)
	}},
	{hostdev.NewFence, "fence", "fence", func(g *rig, x alloc.Claim) (alloc.Claim, error) {
		y := g.buf()
		return y, g.copyK(1, x, y)
	}},
}

// Every site where the recorder allocates from the driver, made to run
// out of memory: once, the reclaim and retry absorb it; every time, the
// call fails with ErrOutOfMemory and the driver's error in its
// chain, leaves no object behind, and every other buffer intact; healed,
// the same call works.
func TestOutOfMemoryAtEveryAllocationSite(t *testing.T) {
	for _, site := range allocSites {
		for _, persistent := range []bool{false, true} {
			name := site.name + "/once"
			if persistent {
				name = site.name + "/always"
			}
			t.Run(name, func(t *testing.T) {
				g := newRig(t, true, recorder.Options{Slots: 2, PageSize: 64 << 10})
				x := g.buf()
				require.NoError(t, g.write(0, x, nil, ramp(1)))
				require.NoError(t, g.r.Quiesce(^uint64(0)))
				_, err := g.r.Trim()
				require.NoError(t, err)
				live := g.r.Live()
				stats := g.r.Stats()
				cause := oomCause(site.name)
				if persistent {
					g.dev.FailFrom(site.call, 0, cause)
				} else {
					g.dev.FailNth(site.call, 1, cause)
				}
				written, err := site.reach(g, x)
				if !persistent {
					require.NoError(t, err, "one out-of-memory is absorbed by the retry")
					if written.Size != 0 {
						g.mustRead(1, written, ramp(1))
					}
					g.mustRead(0, x, ramp(1))
					g.close()
					return
				}
				require.ErrorIs(t, err, errs.OutOfMemory)
				require.ErrorIs(t, err, cause, "the driver's error stays in the chain")
				g.dev.Heal(site.call)
				// A launch's eager batch may stay open for the next launch
				// when its descriptor pool is refused: only the kind the
				// refused call makes must be as it was (Close checks that
				// every object goes).
				assert.Equal(t, live[site.objects], g.r.Live()[site.objects], "a refused allocation leaves no object behind")
				if written.Size != 0 {
					g.requireUnwritten(1, written, cause)
				} else {
					assert.Equal(t, stats.LiveClaims, g.r.Stats().LiveClaims)
				}
				g.mustRead(0, x, ramp(1), "an untouched buffer is intact")
				again, err := site.reach(g, x)
				require.NoError(t, err, "healed, the same call works")
				if again.Size != 0 {
					g.mustRead(1, again, ramp(1))
				}
				require.NoError(t, g.r.Validate())
				g.close()
			})
		}
	}
}

// A launch's descriptor pool refused on a device without unified memory,
// right after a write whose staging the open eager batch drops: the
// reclaim the retry runs leaves the batch the launch records into open,
// waiting only for work already submitted, and the launch then completes
// and reads back right.
func TestOutOfMemoryAtDescriptorPoolKeepsTheOpenBatch(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2, PageSize: 64 << 10})
	x, y := g.buf(), g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	g.dev.FailNth(hostdev.NewDescriptorPool, 1, oomCause("descriptor pool"))
	require.NoError(t, g.copyK(0, x, y), "one out-of-memory is absorbed by the retry")
	g.mustRead(0, y, ramp(1))
	g.mustRead(0, x, ramp(1))
	require.NoError(t, g.r.Validate())
	g.close()
}

// Inside a capture window the driver's out-of-memory dooms the window
// with that cause: at BeginCapture's command buffer the window goes back
// to idle; at a recorded launch's descriptor pool the window ends without
// a graph and what it recorded reads as unwritten, by that cause.
func TestOutOfMemoryInsideACaptureWindow(t *testing.T) {
	t.Run("graph command buffer", func(t *testing.T) {
		g := newRig(t, true, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.PrepareCapture(0))
		require.NoError(t, g.copyK(0, x, y))
		require.NoError(t, g.r.Quiesce(^uint64(0)))
		live := g.r.Live()
		cause := oomCause("command buffer")
		g.dev.FailFrom(hostdev.AllocateCommandBuffer, 0, cause)
		err := g.r.BeginCapture(0)
		g.dev.Heal(hostdev.AllocateCommandBuffer)
		require.ErrorIs(t, err, errs.OutOfMemory)
		require.ErrorIs(t, err, cause)
		assert.Equal(t, live, g.r.Live())
		g.mustRead(0, y, ramp(1), "the warmup's work stands; the window is idle again")
		g.close()
	})
	t.Run("descriptor pool", func(t *testing.T) {
		g := newRig(t, true, recorder.Options{Slots: 2})
		x, y := g.buf(), g.buf()
		require.NoError(t, g.write(0, x, nil, ramp(1)))
		require.NoError(t, g.r.PrepareCapture(1))
		require.NoError(t, g.r.BeginCapture(1))
		cause := oomCause("descriptor pool")
		g.dev.FailFrom(hostdev.NewDescriptorPool, 0, cause)
		err := g.copyK(1, x, y)
		g.dev.Heal(hostdev.NewDescriptorPool)
		require.ErrorIs(t, err, cause)
		_, err = g.r.EndCapture(1)
		require.ErrorIs(t, err, cause, "the window is doomed by the driver's error")
		g.requireUnwritten(1, y, cause)
		g.mustRead(0, x, ramp(1))
		g.close()
	})
}

// The allocation rule inside a capture window does not depend on what the
// pages hold: a recorded run that allocates what the warmup allocated (and
// freed) is served, and one that allocates anything else is refused, with
// a page that has room and with every page full alike.
func TestCaptureAllocationRuleIsDeterministic(t *testing.T) {
	for _, full := range []bool{false, true} {
		for _, prepared := range []bool{true, false} {
			t.Run(fmt.Sprintf("pages full %v, warmup prepared %v", full, prepared), func(t *testing.T) {
				g := newRig(t, true, recorder.Options{Slots: 2, PageSize: 64 << 10})
				x, y := g.buf(), g.buf()
				require.NoError(t, g.write(0, x, nil, ramp(1)))
				var filler []alloc.Claim
				if full {
					for g.r.Stats().LargestFree >= 4*n {
						c, err := g.r.Alloc(alloc.DeviceLocal, 4*n)
						require.NoError(t, err)
						filler = append(filler, c)
					}
				}
				size := uint64(4 * n)
				if !prepared {
					size = 8 * n
				}
				run := func(size uint64) error {
					tmp, err := g.r.Alloc(alloc.DeviceLocal, size)
					if err != nil {
						return err
					}
					if err := g.copyK(0, x, tmp); err != nil {
						return err
					}
					if err := g.r.Quiesce(^uint64(0)); err != nil {
						return err
					}
					return g.r.Free(tmp)
				}
				require.NoError(t, g.r.PrepareCapture(0))
				require.NoError(t, run(4*n))
				require.NoError(t, g.r.BeginCapture(0))
				err := run(size)
				graph, endErr := g.r.EndCapture(0)
				if prepared {
					require.NoError(t, err)
					require.NoError(t, endErr)
					require.NoError(t, graph.Replay())
					require.NoError(t, graph.Close())
				} else {
					require.ErrorIs(t, err, errs.AllocInCapture)
					require.ErrorIs(t, endErr, errs.AllocInCapture)
					assert.True(t, errors.Is(endErr, errs.AllocInCapture))
				}
				g.mustRead(0, x, ramp(1))
				for _, c := range append(filler, x, y) {
					require.NoError(t, g.r.Free(c))
				}
				require.NoError(t, g.r.Validate())
				g.close()
			})
		}
	}
}

// Under a limit, streams allocating, launching and dropping temporaries
// race Trim, buffer allocations that reclaim, and finally Close: no call
// panics or deadlocks, the limit holds, and every refusal is the
// out-of-memory one.
func TestMemoryPressureRacesTrimAndClose(t *testing.T) {
	g := newRig(t, true, recorder.Options{Slots: 3, PageSize: memPage, MemoryLimit: memLimit})
	x := g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	done := make(chan struct{})
	failures := make(chan error, 16)
	var wg sync.WaitGroup
	for s := recorder.StreamID(0); s < 3; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				tmp, err := g.r.AllocOn(s, alloc.DeviceLocal, memPiece)
				if err != nil {
					if !errors.Is(err, errs.OutOfMemory) && !errors.Is(err, errs.Closed) {
						failures <- err
					}
					continue
				}
				_ = g.copyK(s, x, tmp)
				_ = g.r.Drop(s, tmp)
				if i%7 == 0 {
					buf, err := g.r.Alloc(alloc.DeviceLocal, 2*memPiece)
					if err == nil {
						_ = g.r.Quiesce(^uint64(0))
						_ = g.r.Free(buf)
					} else if !errors.Is(err, errs.OutOfMemory) && !errors.Is(err, errs.Closed) {
						failures <- err
					}
				}
				if st := g.r.Stats(); st.Reserved > memLimit {
					failures <- fmt.Errorf("reserved %d past the limit", st.Reserved)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := g.r.Trim(); err != nil && !errors.Is(err, errs.Closed) {
				failures <- err
			}
			runtime.GC()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, g.r.Close()) // racing every call above
	close(done)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	requireClean(t, g.dev)
}
