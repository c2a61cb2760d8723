package blackbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// A graph captured with profiling gives, after each replay, every
// launch's kernel, groups and device time, in recorded order, with the
// launches inside the total; the same work captured without profiling
// gives the same results and no times (ErrGraphUnprofiled). Before any
// replay there are none, after Close neither; inside Profile a replay
// stays one entry.
func TestProfiledGraphTimesEachLaunch(t *testing.T) {
	dev := openDevice(t)
	spin := loadSpin(t, dev)
	const n = 1024
	ctx := testCtx(t)
	s := dev.NewStream()
	work := func(x, y *vkc.Buffer[float32]) func(*vkc.Stream) error {
		return func(s *vkc.Stream) error {
			if err := spin.Launch(s, [3]uint32{n / 64, 1, 1}, spinPush(n, 20000), y); err != nil {
				return err
			}
			if err := opAxpy(s, 2, x, y); err != nil {
				return err
			}
			return spin.Launch(s, [3]uint32{n / 128, 1, 1}, spinPush(n/2, 2000), y)
		}
	}
	x, y := upload(t, dev, filled(n, 1)), upload(t, dev, filled(n, 0))
	x2, y2 := upload(t, dev, filled(n, 1)), upload(t, dev, filled(n, 0))
	timed, err := s.CaptureWith(vkc.CaptureOptions{Profile: true}, work(x, y))
	require.NoError(t, err)
	plain, err := s.Capture(work(x2, y2))
	require.NoError(t, err)
	require.True(t, timed.Profiled())
	require.False(t, plain.Profiled())

	_, err = timed.LastProfile(ctx)
	require.ErrorIs(t, err, vkc.ErrProfileState, "before any replay")
	_, err = plain.LastProfile(ctx)
	require.ErrorIs(t, err, vkc.ErrGraphUnprofiled)

	for replay := range 3 {
		require.NoError(t, timed.Replay())
		require.NoError(t, plain.Replay())
		p, err := timed.LastProfile(ctx)
		require.NoError(t, err, "replay %d", replay)
		require.Len(t, p.Launches, 3)
		assert.Equal(t, "spin", p.Launches[0].Kernel)
		assert.Equal(t, [3]uint32{n / 64, 1, 1}, p.Launches[0].Groups)
		assert.True(t, strings.HasPrefix(p.Launches[1].Kernel, "ops/axpy"), "%s: ops's axpy kernel for the type", p.Launches[1].Kernel)
		assert.Equal(t, [3]uint32{n / 128, 1, 1}, p.Launches[2].Groups)
		var sum time.Duration
		for _, l := range p.Launches {
			assert.Positive(t, l.Device, "%s", l.Kernel)
			sum += l.Device
		}
		assert.LessOrEqual(t, sum, p.Total+time.Microsecond, "the launches fit in the total")
		if replay == 0 {
			t.Logf("\n%s", p)
		}
	}
	assert.Equal(t, read(t, s, y2), read(t, s, y), "profiling changes no result")

	p, err := s.Profile(func(*vkc.Stream) error { return timed.Replay() })
	require.NoError(t, err)
	require.Len(t, p.Launches, 1, "inside Profile a replay is one entry")
	p, err = timed.LastProfile(ctx)
	require.NoError(t, err)
	require.Len(t, p.Launches, 3, "and the graph's own times are still read after it")

	require.NoError(t, timed.Close())
	_, err = timed.LastProfile(ctx)
	require.ErrorIs(t, err, vkc.ErrClosed)
	require.NoError(t, plain.Close())

	var none *vkc.Graph
	_, err = none.LastProfile(ctx)
	require.Error(t, err, "a nil graph")
	assert.False(t, none.Profiled())
	_, err = plain.LastProfile(nil) //nolint:staticcheck // a nil context is the bad input under test
	require.Error(t, err, "a nil context")
}

// A profiled capture's window opens as a plain one does by hand too, and
// refuses as one does: a graph begun with BeginCaptureWith has its
// launches' times, and one whose recorded run failed has none to give.
func TestProfiledCaptureByHand(t *testing.T) {
	dev := openDevice(t)
	ctx := testCtx(t)
	const n = 256
	x, y := upload(t, dev, filled(n, 1)), upload(t, dev, filled(n, 0))
	s := dev.NewStream()
	require.NoError(t, s.PrepareCapture())
	require.NoError(t, opAxpy(s, 1, x, y))
	require.NoError(t, s.Sync(ctx))
	require.NoError(t, s.BeginCaptureWith(vkc.CaptureOptions{Profile: true}))
	require.NoError(t, opAxpy(s, 1, x, y))
	require.NoError(t, opAxpy(s, 1, x, y))
	g, err := s.EndCapture()
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	p, err := g.LastProfile(ctx)
	require.NoError(t, err)
	require.Len(t, p.Launches, 2)
	assert.Equal(t, filled(n, 3), read(t, s, y), "one axpy in the warmup, two in the replay")

	_, err = s.CaptureWith(vkc.CaptureOptions{Profile: true}, func(s *vkc.Stream) error {
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		_, err := y.ReadOn(ctx, s)
		return err
	})
	require.ErrorIs(t, err, vkc.ErrSyncInCapture, "a read inside the window dooms a profiled capture as any")
}

// Reading a profiled graph's times races its Close and the device's:
// each read completes or is refused with ErrClosed, and the device
// closes with no object left (the graph's query pools included) and the
// validation layer silent.
func TestGraphProfileRacesClose(t *testing.T) {
	for round := range 4 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		x, err := vkc.FromSlice(dev, filled(512, 1))
		require.NoError(t, err)
		y, err := vkc.FromSlice(dev, filled(512, 0))
		require.NoError(t, err)
		s := dev.NewStream()
		g, err := s.CaptureWith(vkc.CaptureOptions{Profile: true}, func(s *vkc.Stream) error {
			return opAxpy(s, 1, x, y)
		})
		require.NoError(t, err)
		require.NoError(t, g.Replay())
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					if err := g.Replay(); err != nil && !errors.Is(err, vkc.ErrClosed) {
						t.Errorf("round %d: Replay: %v", round, err)
					}
					if _, err := g.LastProfile(context.Background()); err != nil && !errors.Is(err, vkc.ErrClosed) {
						t.Errorf("round %d: LastProfile: %v", round, err)
					}
				}
			}()
		}
		if round%2 == 0 {
			assert.NoError(t, g.Close())
		}
		closeAndCheck(t, dev)
		wg.Wait()
		assert.NoError(t, g.Close())
	}
}
