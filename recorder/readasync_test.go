package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// A pending read returns before the device ran anything; a Wait whose
// context ends leaves it pending and a later Wait gets the bytes; its
// readback claim goes back exactly once, whether it is waited for,
// closed while the copy may still run, or never waited for (the
// recorder's Close), so no claim outlives the reads.
func TestPendingReadsGiveTheirClaimBackOnce(t *testing.T) {
	g := newRig(t, false, recorder.Options{Slots: 2})
	x := g.buf()
	require.NoError(t, g.write(0, x, nil, ramp(1)))
	require.NoError(t, g.r.Sync(context.Background(), 0))
	base := g.r.Stats().LiveClaims

	g.dev.Pause()
	p, err := g.r.ReadAsync(0, x, 4*n)
	require.NoError(t, err, "returns with the device paused")
	require.NoError(t, g.fill(0, x, 9)) // queued behind the copy
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	out := make([]byte, 4*n)
	require.ErrorIs(t, p.Wait(ctx, out), context.DeadlineExceeded)
	g.dev.Resume()
	require.NoError(t, p.Wait(context.Background(), out), "waited again after the context ended")
	require.Equal(t, ramp(1), floatsOf(out), "the bytes at the call, not the later fill")
	require.ErrorIs(t, p.Wait(context.Background(), out), errs.ReadTaken)
	require.NoError(t, g.r.Sync(context.Background(), 0))
	require.Equal(t, base, g.r.Stats().LiveClaims, "the claim went back at Wait")

	g.dev.Pause()
	closed, err := g.r.ReadAsync(1, x, 4*n)
	require.NoError(t, err)
	require.NoError(t, closed.Close(), "closed while the copy may still run")
	require.NoError(t, closed.Close())
	require.Equal(t, base+1, g.r.Stats().LiveClaims, "held by the pending copy")
	g.dev.Resume()
	require.NoError(t, g.r.Sync(context.Background(), 1))
	require.Equal(t, base, g.r.Stats().LiveClaims, "back with the copy's batch")

	_, err = g.r.ReadAsync(0, x, 4*n) // never waited for: the recorder's Close takes it
	require.NoError(t, err)
	g.close()
}
