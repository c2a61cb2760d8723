package blackbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// ReadAsync returns at once with the contents as of the call: work queued
// after it (on the same stream, and on another stream ordered by an event)
// runs behind the copy and does not show in what Wait returns, but in a
// later read. The buffer may be closed before Wait.
func TestReadAsyncSnapshotsAtTheCall(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(true), vkc.WithStreams(2))
	const n = 300
	x := upload(t, dev, ramp(n, 1, 1))
	y := upload(t, dev, filled(n, 2))
	s, other := dev.NewStream(), dev.NewStream()
	require.NoError(t, opAxpy(other, 3, x, y)) // another stream's pending writer
	pending, err := y.ReadAsync(s)
	require.NoError(t, err)
	require.NoError(t, vkc.Fill(s, y, 7)) // queued behind the copy
	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, other.Wait(ev))
	require.NoError(t, vkc.Fill(other, x, 9)) // ordered after the copy by the event
	ctx := testCtx(t)
	got, err := pending.Wait(ctx)
	require.NoError(t, err)
	want := seq(n, func(i int) float32 { return 2 + 3*float32(1+i) })
	require.Equal(t, want, got)
	_, err = pending.Wait(ctx)
	assert.ErrorIs(t, err, vkc.ErrReadTaken, "a second Wait")
	assert.NoError(t, pending.Close(), "Close after Wait")
	assert.Equal(t, filled(n, 7), read(t, s, y))
	assert.NoError(t, ev.Close())

	early, err := x.ReadAsync(other)
	require.NoError(t, err)
	require.NoError(t, x.Close())
	got, err = early.Wait(ctx)
	require.NoError(t, err, "the buffer closed before Wait")
	assert.Equal(t, filled(n, 9), got)
}

// Refusals: an unwritten buffer fails at once with ErrUnwritten; a read
// inside the stream's recording window fails with ErrSyncInCapture; a
// nil read and a nil ctx are errors; a read given up with Close is taken.
func TestReadAsyncRefusals(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	fresh := newBuffer[float32](t, dev, 64)
	_, err := fresh.ReadAsync(s)
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	require.ErrorIs(t, err, vkc.ErrNeverWritten)
	var nilRead *vkc.PendingRead[float32]
	_, err = nilRead.Wait(context.Background())
	assert.Error(t, err)
	assert.NoError(t, nilRead.Close())

	x := upload(t, dev, filled(64, 1))
	p, err := x.ReadAsync(s)
	require.NoError(t, err)
	var nilCtx context.Context
	_, err = p.Wait(nilCtx)
	assert.Error(t, err, "a nil ctx")
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	_, err = p.Wait(context.Background())
	assert.ErrorIs(t, err, vkc.ErrReadTaken, "Wait after Close")

	g, err := s.Capture(func(cs *vkc.Stream) error {
		_, err := x.ReadAsync(cs)
		return err
	})
	require.ErrorIs(t, err, vkc.ErrSyncInCapture)
	assert.Nil(t, g)
}

// Reads never waited for, waits, closes of reads and Device.Close race;
// every call either completes or fails with ErrClosed or ErrReadTaken, and
// the device's Close leaves no Vulkan object alive (checked by openDevice).
func TestReadAsyncCloseRaces(t *testing.T) {
	for round := range 4 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		x, err := vkc.FromSlice(dev, filled(512, float32(round)))
		require.NoError(t, err)
		var reads []*vkc.PendingRead[float32]
		for range 6 {
			p, err := x.ReadAsync(dev.NewStream())
			require.NoError(t, err)
			reads = append(reads, p)
		}
		var wg sync.WaitGroup
		for i, p := range reads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				switch i % 3 {
				case 0:
					var got []float32
					got, err = p.Wait(context.Background())
					if err == nil {
						assert.Equal(t, filled(512, float32(round)), got)
					}
				case 1:
					err = p.Close()
				default: // never waited
				}
				if err != nil && !errors.Is(err, vkc.ErrClosed) && !errors.Is(err, vkc.ErrReadTaken) {
					t.Errorf("read %d: %v", i, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, dev.Close())
		}()
		wg.Wait()
		assertClosedClean(t, dev)
	}
}

// After Device.Close, Wait is ErrClosed for every pending read: one whose
// copy completed before the Close, one never synced, one already waited
// for (not ErrReadTaken) and one closed; Close of each is a no-op.
func TestPendingReadWaitAfterDeviceCloseIsErrClosed(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	x, err := vkc.FromSlice(dev, filled(64, 3))
	require.NoError(t, err)
	s := dev.Stream()
	completed, err := x.ReadAsync(s)
	require.NoError(t, err)
	require.NoError(t, s.Sync(testCtx(t)))
	pending, err := x.ReadAsync(dev.NewStream())
	require.NoError(t, err)
	waited, err := x.ReadAsync(s)
	require.NoError(t, err)
	got, err := waited.Wait(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, filled(64, 3), got)
	closed, err := x.ReadAsync(s)
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	require.NoError(t, dev.Close())
	assertClosedClean(t, dev)
	for name, p := range map[string]*vkc.PendingRead[float32]{"completed": completed, "pending": pending, "waited": waited, "closed": closed} {
		got, err := p.Wait(context.Background())
		assert.ErrorIs(t, err, vkc.ErrClosed, "%s read", name)
		assert.NotErrorIs(t, err, vkc.ErrReadTaken, "%s read", name)
		assert.Nil(t, got, "%s read", name)
		assert.NoError(t, p.Close(), "%s read", name)
	}
}
