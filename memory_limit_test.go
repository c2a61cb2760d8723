package vkc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// The budget of these tests: four pages of 64 KiB.
const (
	limitPage   = 64 << 10
	memoryLimit = 4 * limitPage
	pieceElems  = (16 << 10) / elemSize // 16 KiB buffers
)

// fillBudget makes 16 KiB buffers until the limit refuses one, and
// returns them with the refusal.
func fillBudget(t *testing.T, dev *Device) ([]*Buffer[float32], error) {
	t.Helper()
	var bufs []*Buffer[float32]
	for {
		b, err := NewBuffer[float32](dev, pieceElems)
		if err != nil {
			return bufs, err
		}
		bufs = append(bufs, b)
		require.LessOrEqual(t, dev.MemoryStats().Reserved, uint64(memoryLimit))
		require.Less(t, len(bufs), 64, "the limit never refused")
	}
}

// A device filled to its limit refuses the next buffer with
// ErrOutOfMemory saying why, keeps every buffer intact and every
// stream usable, and serves again once buffers are closed.
func TestMemoryLimitFillToRefusalAndBack(t *testing.T) {
	dev := openTest(t, WithPageSize(limitPage), WithMemoryLimit(memoryLimit))
	s := dev.Stream()
	xData := ramp(256, 1)
	x, err := FromSlice(dev, xData)
	require.NoError(t, err)
	require.NoError(t, s.Sync(context.Background()))

	bufs, err := fillBudget(t, dev)
	require.ErrorIs(t, err, ErrOutOfMemory)
	st := dev.MemoryStats()
	t.Logf("full: %d buffers of 16 KiB; %+v; refusal: %v", len(bufs), st, err)
	assert.Equal(t, uint64(memoryLimit), st.Limit)
	for _, want := range []string{fmt.Sprintf("limit %d", memoryLimit), fmt.Sprintf("reserved %d", st.Reserved),
		fmt.Sprintf("used %d", st.Used), fmt.Sprintf("largest free range %d", st.LargestFree)} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = NewBuffer[float32](dev, limitPage/elemSize)
	require.ErrorIs(t, err, ErrOutOfMemory, "a page-sized buffer too")

	// Streams still run at a full budget: the buffers are device memory
	// the launches need nothing more for.
	for i, b := range bufs {
		require.NoError(t, Fill(s, b, float32(i)))
	}
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, xData, readAll(t, x), "a live buffer is intact")
	for i, b := range bufs {
		got := readAll(t, b)
		require.Equal(t, float32(i), got[0])
		require.Equal(t, float32(i), got[pieceElems-1])
	}

	for _, b := range bufs[len(bufs)/2:] {
		b.Close()
	}
	bufs = bufs[:len(bufs)/2]
	big, err := NewBuffer[float32](dev, memoryLimit/4/elemSize)
	require.NoError(t, err, "half the budget freed serves a quarter of it")
	t.Logf("after closing half and a quarter-budget buffer: %+v", dev.MemoryStats())
	big.Close()
	released, err := dev.Trim()
	require.NoError(t, err)
	after := dev.MemoryStats()
	t.Logf("Trim released %d bytes: %+v", released, after)
	assert.Positive(t, released)
	for _, b := range bufs {
		b.Close()
	}
	x.Close()
	released, err = dev.Trim()
	require.NoError(t, err)
	assert.Zero(t, dev.MemoryStats().Reserved, "every page released (%d bytes)", released)
}

// allocationSites are the driver calls through which the library gets
// memory, each reached by a call on a stream that has not run yet.
var allocationSites = []struct {
	name string
	call faultCall
}{
	{"page", callAllocate},
	{"page mapping", callMap},
	{"descriptor pool", callDescriptorPool},
	{"command buffer", callCommandBuffer},
	{"fence", callFence},
}

// Every allocation site made to run out of memory on lavapipe: once, the
// reclaim and retry absorb it; persistently, the call fails with
// ErrOutOfMemory and the driver's error in its chain, no Vulkan
// object is left behind, untouched buffers stay intact, and once the
// fault clears the same call works.
func TestOutOfMemoryAtEveryAllocationSiteOnTheDevice(t *testing.T) {
	for _, site := range allocationSites {
		for _, persistent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/persistent=%v", site.name, persistent), func(t *testing.T) {
				dev, fd := openFaulty(t, WithPageSize(pageSize))
				keepData := ramp(pageElems, 1)
				keep, err := FromSlice(dev, keepData)
				require.NoError(t, err)
				warm, err := NewBuffer[float32](dev, pageElems) // builds the kernel, which is kept
				require.NoError(t, err)
				require.NoError(t, Scale(dev.Stream(), 1, keep, warm))
				require.NoError(t, dev.Stream().Sync(context.Background()))
				warm.Close()
				_, err = dev.Trim()
				require.NoError(t, err)
				live := dev.LiveObjects()
				cause := injected(site.name, errors.Join(errs.OutOfMemory, errOOMResult))
				fails := 1
				if persistent {
					fails = -1
				}
				fd.set(site.call, faultRule{fail: fails, err: cause})
				// A new stream's first launch into a new buffer needs a
				// page (mapped on a unified device), a batch with its
				// fence and command buffer, and a descriptor pool.
				s := dev.NewStream()
				out, err := NewBuffer[float32](dev, pageElems)
				if err == nil {
					err = Scale(s, 1, keep, out)
				}
				fd.heal(site.call)
				if !persistent {
					require.NoError(t, err, "one out-of-memory is absorbed by the retry")
					require.Positive(t, fd.injectedCount(site.call))
					got, err := out.ReadOn(context.Background(), s)
					require.NoError(t, err)
					assert.Equal(t, keepData, got)
					out.Close()
					return
				}
				require.ErrorIs(t, err, ErrOutOfMemory)
				require.ErrorIs(t, err, cause, "the driver's error stays in the chain")
				require.ErrorIs(t, err, errOOMResult)
				require.Equal(t, 2, fd.injectedCount(site.call), "tried, reclaimed, retried once")
				if out != nil {
					_, rerr := out.ReadOn(context.Background(), s)
					require.ErrorIs(t, rerr, ErrUnwritten, "what the refused launch was to write is unwritten")
					out.Close()
				}
				_, err = dev.Trim()
				require.NoError(t, err)
				now := dev.LiveObjects()
				for kind, n := range now {
					assert.LessOrEqual(t, n, live[kind]+spareAfter(site.call, kind), "%s objects left behind", kind)
				}
				assert.Equal(t, keepData, readAll(t, keep), "an untouched buffer is intact")
				again, err := FromSlice(dev, ramp(pageElems, 9))
				require.NoError(t, err, "cleared, allocation works")
				require.NoError(t, Scale(s, 1, keep, again))
				got, err := again.ReadOn(context.Background(), s)
				require.NoError(t, err)
				assert.Equal(t, keepData, got)
				again.Close()
				keep.Close()
			})
		}
	}
}

// errOOMResult stands for the VkResult a driver returns, kept in the chain.
var errOOMResult = errors.New("VK_ERROR_OUT_OF_DEVICE_MEMORY")

// spareAfter is how many objects of kind a refusal at call may leave for
// reuse rather than leak: a descriptor pool refused after the stream's
// eager batch was made leaves that batch (its command buffer and fence)
// open for the stream's next launch; Close frees it (openTest checks).
func spareAfter(call faultCall, kind string) int64 {
	if call == callDescriptorPool && (kind == "command_buffer" || kind == "fence" || kind == "command-buffer") {
		return 1
	}
	return 0
}

// A capture whose recorded run allocates what its warmup allocated and
// closed is served whatever the memory pages hold; one whose recorded run
// allocates anything else fails with ErrAllocInCapture, the same way
// whether a page had room or not.
func TestCaptureAllocationRuleDoesNotDependOnPages(t *testing.T) {
	for _, full := range []bool{false, true} {
		for _, prepared := range []bool{true, false} {
			t.Run(fmt.Sprintf("full=%v/prepared=%v", full, prepared), func(t *testing.T) {
				dev := openTest(t, WithPageSize(limitPage))
				s := dev.NewStream()
				x, err := FromSlice(dev, ramp(256, 1))
				require.NoError(t, err)
				y, err := NewBuffer[float32](dev, 256)
				require.NoError(t, err)
				var filler []*Buffer[float32]
				if full {
					for dev.MemoryStats().LargestFree >= 4<<10 {
						b, err := NewBuffer[float32](dev, 1<<10)
						require.NoError(t, err)
						filler = append(filler, b)
					}
				} else {
					require.GreaterOrEqual(t, dev.MemoryStats().LargestFree, uint64(8<<10), "a page has room")
				}
				runs := 0
				g, err := s.Capture(func(s *Stream) error {
					runs++
					n := 256
					if runs == 2 && !prepared {
						n = 512 // the recorded run asks for what the warmup did not
					}
					tmp, err := NewBuffer[float32](dev, n)
					if err != nil {
						return err
					}
					defer tmp.Close()
					if err := Fill(s, tmp, 3); err != nil {
						return err
					}
					return Mul(s, tmp, x, y) // y = 3x; only a 256-element tmp gets here
				})
				if prepared {
					require.NoError(t, err)
					require.NoError(t, g.Replay())
					want := ramp(256, 1)
					for i := range want {
						want[i] *= 3
					}
					assert.Equal(t, want, readAll(t, y))
					require.NoError(t, g.Close())
				} else {
					require.ErrorIs(t, err, ErrAllocInCapture)
					require.Nil(t, g)
				}
				for _, b := range filler {
					b.Close()
				}
			})
		}
	}
}

// Inside a capture window the driver's out-of-memory dooms the window with
// that cause: at the graph's command buffer Capture fails and the stream
// can capture again; at a recorded launch's descriptor pool the capture
// fails and what it recorded reads as unwritten, by that cause.
func TestOutOfMemoryInsideCaptureDoomsTheWindow(t *testing.T) {
	for _, site := range []struct {
		name string
		call faultCall
	}{
		{"graph command buffer", callCommandBuffer},
		{"descriptor pool", callDescriptorPool},
	} {
		t.Run(site.name, func(t *testing.T) {
			dev, fd := openFaulty(t)
			x, err := FromSlice(dev, ramp(256, 1))
			require.NoError(t, err)
			y, err := NewBuffer[float32](dev, 256)
			require.NoError(t, err)
			require.NoError(t, Scale(dev.Stream(), 1, x, y)) // the kernel exists
			require.NoError(t, dev.Stream().Sync(context.Background()))
			s := dev.NewStream() // a slot with no descriptor pool yet
			cause := injected(site.name, errs.OutOfMemory)
			runs := 0
			g, err := s.Capture(func(s *Stream) error {
				runs++
				if runs == 1 {
					// The warmup launches nothing, so the recorded run
					// needs the slot's first descriptor pool.
					fd.set(site.call, faultRule{fail: -1, err: cause})
					return nil
				}
				return Scale(s, 2, x, y)
			})
			fd.heal(site.call)
			require.ErrorIs(t, err, ErrOutOfMemory)
			require.ErrorIs(t, err, cause)
			require.Nil(t, g)
			t.Logf("%s: %v", site.name, err)
			g, err = s.Capture(func(s *Stream) error { return Scale(s, 3, x, y) })
			require.NoError(t, err, "the stream captures again once memory is back")
			require.NoError(t, g.Replay())
			want := ramp(256, 1)
			for i := range want {
				want[i] *= 3
			}
			assert.Equal(t, want, readAll(t, y))
			require.NoError(t, g.Close())
		})
	}
}

func TestTrimOnANilOrClosedDevice(t *testing.T) {
	var none *Device
	released, err := none.Trim()
	require.Error(t, err)
	assert.Zero(t, released)

	dev, err := Open(WithValidation(true), WithMemoryLimit(memoryLimit))
	require.NoError(t, err)
	assert.Equal(t, uint64(memoryLimit), dev.MemoryStats().Limit)
	require.NoError(t, dev.Close())
	released, err = dev.Trim()
	require.ErrorIs(t, err, ErrClosed)
	assert.Zero(t, released)
}

// Under a limit and collector pressure, streams filling and emptying the
// budget race Trim and then the device's Close: every refusal is the
// out-of-memory one (or ErrClosed once the device closes), every result
// read is right, the limit holds, and nothing is left alive.
func TestMemoryLimitUnderPressureRacesTrimAndClose(t *testing.T) {
	churn := gcpressure.Start(t)
	defer churn.Stop()
	dev, err := Open(WithValidation(true), WithPageSize(limitPage), WithMemoryLimit(memoryLimit))
	require.NoError(t, err)
	ok := func(err error) bool {
		return err == nil || errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrClosed)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	var refusals atomic.Int64
	for w := range 3 {
		s := dev.NewStream()
		wg.Go(func() {
			var held []*Buffer[float32] // up to 8 each: together past the limit
			defer func() {
				for _, b := range held {
					_ = b.Close()
				}
			}()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				want := float32(w*1000 + i)
				b, err := NewBuffer[float32](dev, pieceElems)
				if err != nil || len(held) == 8 {
					if errors.Is(err, ErrOutOfMemory) {
						refusals.Add(1)
					} else if !ok(err) {
						errs <- err
					}
					for _, h := range held {
						_ = h.Close()
					}
					held = held[:0]
					if err != nil {
						continue
					}
				}
				held = append(held, b)
				err = Fill(s, b, want)
				if err == nil {
					var got []float32
					got, err = b.ReadOn(context.Background(), s)
					if err == nil && (got[0] != want || got[pieceElems-1] != want) {
						err = fmt.Errorf("read %g, want %g", got[0], want)
					}
				}
				if !ok(err) && !errors.Is(err, ErrUnwritten) {
					errs <- err
				}
				if st := dev.MemoryStats(); st.Reserved > memoryLimit {
					errs <- fmt.Errorf("reserved %d past the limit", st.Reserved)
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := dev.Trim(); !ok(err) {
				errs <- err
			}
		}
	})
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, dev.Close())
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d requests refused at the limit", refusals.Load())
	closeAndCheck(t, dev)
}

// A limit below the device's buffer alignment fits no page: Open refuses
// it and says why, rather than open a device every allocation fails on.
func TestOpenRefusesAMemoryLimitBelowTheAlignment(t *testing.T) {
	dev, err := Open(WithValidation(true), WithMemoryLimit(1))
	if err == nil {
		_ = dev.Close()
	}
	require.ErrorContains(t, err, "memory limit 1 below the alignment")
}
