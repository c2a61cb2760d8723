package blackbox_test

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// loadSpin loads the spin kernel, whose cost is linear in a pushed loop
// count, closed at cleanup.
func loadSpin(t testing.TB, dev *vkc.Device) *vkc.Kernel {
	t.Helper()
	code, err := os.ReadFile("../testdata/spin.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "spin", SPIRV: code})
	require.NoError(t, err, "LoadKernel(spin)")
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func spinPush(n, count uint32) []byte {
	p := make([]byte, 8)
	binary.LittleEndian.PutUint32(p[0:], n)
	binary.LittleEndian.PutUint32(p[4:], count)
	return p
}

// rSquared is the coefficient of determination of the least-squares line
// through (xs, ys).
func rSquared(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy, syy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
		syy += ys[i] * ys[i]
	}
	cov := sxy - sx*sy/n
	return cov * cov / ((sxx - sx*sx/n) * (syy - sy*sy/n))
}

// The device time between two timed events around a kernel whose cost is
// linear in a pushed loop count is linear in the count (r² ≥ 0.99 over 8
// counts) and never above the host's time for the same work, which also
// includes the submit and the wait. A correlation, not a time assertion:
// no figure is expected of the device. Each count takes the least of its
// runs (five a sweep), so another process's burst on the machine does not
// bend the line.
func TestDeviceTimeIsLinearInTheWork(t *testing.T) {
	dev := openDevice(t)
	spin := loadSpin(t, dev)
	const n = 4096
	y := upload(t, dev, filled(n, 0))
	s := dev.NewStream()
	ctx := testCtx(t)
	counts := make([]float64, 8)
	for c := range counts {
		counts[c] = float64((c + 1) * 1000)
	}
	// On lavapipe the device is the host's CPU: another process's burst
	// lengthens a launch's device time as much as its host time, which can
	// only bend the line, and a burst of some seconds (the other test
	// packages running beside this one) can cover every round of a sweep.
	// So a sweep that is not linear is measured again, up to six sweeps,
	// each count keeping its least time over every sweep so far; every
	// launch of every sweep must still fit in its host time.
	const sweeps, rounds = 6, 5
	var r2 float64
	best := make([]time.Duration, len(counts))
	for sweep := 0; sweep < sweeps; sweep++ {
		for range rounds {
			// Every round times every count, so a burst of another process
			// on the machine hits one round, not one count.
			for c := range counts {
				count := uint32(counts[c])
				require.NoError(t, s.Sync(ctx))
				t0 := time.Now()
				start, err := s.RecordTimed()
				require.NoError(t, err)
				require.NoError(t, spin.Launch(s, [3]uint32{n / 64, 1, 1}, spinPush(n, count), y))
				end, err := s.RecordTimed()
				require.NoError(t, err)
				require.NoError(t, end.Sync(ctx))
				host := time.Since(t0)
				device, err := end.Since(start)
				require.NoError(t, err)
				assert.Positive(t, device, "count %d", count)
				assert.LessOrEqual(t, device, host, "count %d: the device's time is within the host's", count)
				if best[c] == 0 || device < best[c] {
					best[c] = device
				}
				require.NoError(t, start.Close())
				require.NoError(t, end.Close())
			}
		}
		times := make([]float64, len(best))
		for c, d := range best {
			times[c] = float64(d)
			t.Logf("sweep %d, count %5.0f: device %v", sweep, counts[c], d)
		}
		r2 = rSquared(counts, times)
		t.Logf("sweep %d: r² = %.5f", sweep, r2)
		if r2 >= 0.99 {
			break
		}
	}
	assert.GreaterOrEqual(t, r2, 0.99, "device time linear in the loop count")
}

// Profile times each launch a function queues, names its kernel and
// groups, and its total covers them; nested profiles, and profiles around
// a capture window, are refused and leave the slot usable.
func TestProfileTimesEachLaunch(t *testing.T) {
	dev := openDevice(t)
	spin := loadSpin(t, dev)
	const n = 1024
	x := upload(t, dev, filled(n, 1))
	y := upload(t, dev, filled(n, 0))
	s := dev.NewStream()
	p, err := s.Profile(func(s *vkc.Stream) error {
		if err := spin.Launch(s, [3]uint32{n / 64, 1, 1}, spinPush(n, 20000), y); err != nil {
			return err
		}
		if err := opAxpy(s, 2, x, y); err != nil {
			return err
		}
		_, err := s.Profile(func(*vkc.Stream) error { return nil })
		assert.ErrorIs(t, err, vkc.ErrProfileState, "a nested profile")
		return nil
	})
	require.NoError(t, err)
	require.Len(t, p.Launches, 2)
	assert.Equal(t, "spin", p.Launches[0].Kernel)
	assert.Equal(t, [3]uint32{n / 64, 1, 1}, p.Launches[0].Groups)
	assert.True(t, strings.HasPrefix(p.Launches[1].Kernel, "ops/axpy"), "%s: ops's axpy kernel for the type", p.Launches[1].Kernel)
	var sum time.Duration
	for _, l := range p.Launches {
		assert.Positive(t, l.Device, "%s", l.Kernel)
		sum += l.Device
	}
	assert.LessOrEqual(t, sum, p.Total+time.Microsecond, "the launches fit in the total")
	assert.Greater(t, p.Launches[0].Device, p.Launches[1].Device, "20000 steps per element cost more than one axpy")
	t.Logf("\n%s", p)

	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)
	defer g.Close()
	p, err = s.Profile(func(*vkc.Stream) error { return g.Replay() })
	require.NoError(t, err)
	require.Len(t, p.Launches, 1)
	assert.Equal(t, "replay of 1 launches", p.Launches[0].Kernel)
	assert.Positive(t, p.Launches[0].Device)

	require.NoError(t, s.PrepareCapture())
	_, err = s.Profile(func(*vkc.Stream) error { return nil })
	assert.ErrorIs(t, err, vkc.ErrProfileState, "a profile around a capture window")
	require.NoError(t, s.AbortCapture())
	got := read(t, s, y)
	assert.Len(t, got, n)
}

// Two timed events around a replay time the graph on the device: the
// graph itself writes no timestamp (captured without profiling), the
// events' batches carry them, before and after the replay on the queue.
func TestTimedEventsAroundAReplay(t *testing.T) {
	dev := openDevice(t)
	spin := loadSpin(t, dev)
	const n = 1024
	y := upload(t, dev, filled(n, 0))
	s := dev.NewStream()
	g, err := s.Capture(func(s *vkc.Stream) error {
		return spin.Launch(s, [3]uint32{n / 64, 1, 1}, spinPush(n, 5000), y)
	})
	require.NoError(t, err)
	defer g.Close()
	start, err := s.RecordTimed()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	end, err := s.RecordTimed()
	require.NoError(t, err)
	d, err := end.Since(start)
	require.NoError(t, err)
	assert.Positive(t, d)
	require.NoError(t, start.Close())
	require.NoError(t, end.Close())
}

// Profile.Total is at least the sum of its launches' times, with no
// slack: the launches run one after another on the queue, and a copy, a
// host write and another stream's work between two of them count in the
// total only.
func TestProfileTotalIsAtLeastTheSumOfItsLaunches(t *testing.T) {
	dev := openDevice(t, vkc.WithStreams(2))
	spin := loadSpin(t, dev)
	const n = 256
	x := upload(t, dev, filled(n, 1))
	y := upload(t, dev, filled(n, 0))
	z := upload(t, dev, filled(n, 0))
	s, other := dev.NewStream(), dev.NewStream()
	p, err := s.Profile(func(s *vkc.Stream) error {
		for i := range 6 {
			if err := spin.Launch(s, [3]uint32{n / 64, 1, 1}, spinPush(n, uint32(100+500*i)), y); err != nil {
				return err
			}
			if err := vkc.Copy(s, y, z); err != nil { // a transfer between two launches
				return err
			}
			if err := x.WriteOn(s, filled(n, float32(i))); err != nil { // a host write
				return err
			}
			if err := spin.Launch(other, [3]uint32{n / 64, 1, 1}, spinPush(n, 300), z); err != nil { // not profiled
				return err
			}
			if err := opAxpy(s, 2, x, y); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, p.Launches, 12, "the profiled stream's launches only")
	var sum time.Duration
	for _, l := range p.Launches {
		require.GreaterOrEqual(t, l.Device, time.Duration(0), "%s", l.Kernel)
		require.LessOrEqual(t, l.Device, p.Total, "%s fits in the total", l.Kernel)
		sum += l.Device
	}
	require.LessOrEqual(t, sum, p.Total, "the sum of the launches' times (%v) is at most the total", sum)
	require.NoError(t, other.Sync(testCtx(t)))
}
