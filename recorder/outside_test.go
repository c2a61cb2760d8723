package recorder_test

import (
	"context"
	"errors"
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

// syncCall is one SubmitSync the recorder made, and how many submissions
// were pending on the queue when it did.
type syncCall struct {
	wait, signal, fence uint64
	own                 recorder.Fence
	pending             int
}

// outsideDev is a host device that is also a recorder.Outsider: an outside
// wait or signal is an empty submission that signals the recorder's fence
// in queue order, and every SubmitSync and fence wait is logged.
type outsideDev struct {
	*hostdev.Device
	mu     sync.Mutex
	pool   recorder.CommandPool
	syncs  []syncCall
	waited map[recorder.Fence]int
}

func (d *outsideDev) BufferHandle(m recorder.Memory) uint64 { return uint64(m) }

func (d *outsideDev) SubmitSync(wait, signal, fence uint64, f recorder.Fence) error {
	d.mu.Lock()
	d.syncs = append(d.syncs, syncCall{wait, signal, fence, f, d.Pending()})
	d.mu.Unlock()
	if f == 0 {
		return nil
	}
	cb, err := d.AllocateCommandBuffer(d.pool)
	if err != nil {
		return err
	}
	if err := d.Begin(cb, recorder.Eager); err != nil {
		return err
	}
	if err := d.End(cb); err != nil {
		return err
	}
	return d.Submit(cb, f)
}

func (d *outsideDev) WaitFence(f recorder.Fence, timeout time.Duration) (bool, error) {
	d.mu.Lock()
	d.waited[f]++
	d.mu.Unlock()
	return d.Device.WaitFence(f, timeout)
}

func (d *outsideDev) Close() error {
	d.DestroyCommandPool(d.pool)
	return d.Device.Close()
}

// newOutsideRig is a recorder on an outsideDev with unified memory (host
// writes go through the mapping), two slots, and two claims of n floats,
// never written.
func newOutsideRig(t *testing.T) (*recorder.Recorder, *outsideDev, alloc.Claim, alloc.Claim) {
	t.Helper()
	host := hostdev.New(hostdev.Options{Unified: true})
	pool, err := host.NewCommandPool()
	require.NoError(t, err)
	d := &outsideDev{Device: host, pool: pool, waited: map[recorder.Fence]int{}}
	r, err := recorder.New(d, recorder.Options{Slots: 2, PageSize: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		requireClean(t, host)
	})
	var claims [2]alloc.Claim
	for i := range claims {
		claims[i], err = r.Alloc(alloc.DeviceLocal, 4*n)
		require.NoError(t, err)
		r.Taint(claims[i:i+1], errFresh)
	}
	return r, d, claims[0], claims[1]
}

// A signal comes after the stream's work: the open batch is submitted
// before the signal, which carries the program's semaphore and fence.
func TestSignalOutsideSubmitsTheStreamsWorkFirst(t *testing.T) {
	r, d, src, dst := newOutsideRig(t)
	var st *recorder.Staging
	require.NoError(t, r.Write(0, src, &st, make([]byte, 4*n)))
	d.Pause()
	require.NoError(t, r.Copy(0, src, dst, 4*n))
	require.NoError(t, r.SignalOutside(0, 7, 8))
	d.Resume()
	require.Len(t, d.syncs, 1)
	assert.Equal(t, syncCall{signal: 7, fence: 8, pending: 1}, d.syncs[0], "the copy was pending when the signal was submitted")
	assert.Error(t, r.SignalOutside(0, 0, 0), "a signal of nothing")
}

// An outside write marks its claims written; an outside read of claims no
// work wrote says so; with a semaphore, the wait is a batch on the slot
// whose fence a host access from another stream waits for.
func TestWaitOutsideHoldsItsClaimsUntilTheSemaphore(t *testing.T) {
	r, d, read, written := newOutsideRig(t)
	require.NoError(t, r.WaitOutside(0, 0, nil, []alloc.Claim{written}))
	assert.NoError(t, r.Check([]alloc.Claim{written}))
	assert.Empty(t, d.syncs, "no semaphore, no submission")

	err := r.WaitOutside(0, 9, []alloc.Claim{read}, nil)
	assert.ErrorIs(t, err, errs.Unwritten, "what the program read was never written")
	require.Len(t, d.syncs, 1)
	wait := d.syncs[0]
	assert.Equal(t, uint64(9), wait.wait)
	require.NotZero(t, wait.own, "the wait signals a fence of the slot's")

	var st *recorder.Staging
	require.NoError(t, r.Write(1, read, &st, make([]byte, 4*n)), "a host write on another stream")
	assert.Positive(t, d.waited[wait.own], "the host write waited for the outside read")
	out := make([]byte, 4*n)
	require.NoError(t, r.Read(context.Background(), 1, read, out))
}

// A device that is not an Outsider shares nothing, and says so.
func TestOutsideCallsNeedAnOutsider(t *testing.T) {
	g := newRig(t, true, recorder.Options{})
	defer g.close()
	c := g.buf()
	_, _, err := g.r.BufferHandle(c)
	assert.ErrorIs(t, err, errs.NotShared)
	assert.ErrorIs(t, g.r.SignalOutside(0, 1, 0), errs.NotShared)
	assert.ErrorIs(t, g.r.WaitOutside(0, 1, nil, []alloc.Claim{c}), errs.NotShared)
	_, err = g.r.ImportEvent(0, 1)
	assert.ErrorIs(t, err, errs.NotShared)
	ev, err := g.r.Record(0, false)
	require.NoError(t, err)
	assert.ErrorIs(t, g.r.SignalEvent(ev, 1, 0), errs.NotShared)
	assert.Error(t, g.r.Check([]alloc.Claim{c}), "the refused declaration wrote nothing")
}

// An exported event's signal comes after the event's point: the event's
// open batch is submitted first, then the program's semaphore and fence
// are signaled; a signal of nothing is errs.NullHandle and submits nothing.
func TestSignalEventSubmitsThePointFirst(t *testing.T) {
	r, d, src, dst := newOutsideRig(t)
	var st *recorder.Staging
	require.NoError(t, r.Write(0, src, &st, make([]byte, 4*n)))
	require.NoError(t, r.Sync(context.Background(), 0))
	d.Pause()
	require.NoError(t, r.Copy(0, src, dst, 4*n))
	ev, err := r.Record(0, false)
	require.NoError(t, err)
	assert.ErrorIs(t, r.SignalEvent(ev, 0, 0), errs.NullHandle)
	assert.Empty(t, d.syncs, "a refused signal submits nothing")
	require.NoError(t, r.SignalEvent(ev, 7, 8))
	d.Resume()
	require.Len(t, d.syncs, 1)
	assert.Equal(t, syncCall{signal: 7, fence: 8, pending: 1}, d.syncs[0], "the copy was pending when the signal was submitted")
	require.NoError(t, r.SyncEvent(context.Background(), ev))
	require.NoError(t, ev.Close())
	assert.ErrorIs(t, r.SignalEvent(ev, 7, 0), errs.Closed)
	assert.Len(t, d.syncs, 1)
}

// An imported event is a submission on the importing slot that waits on
// the program's semaphore with a fence of the slot's: the host's Sync
// waits for that fence, Done reports it, and another slot may wait on it.
// A null semaphore is errs.NullHandle and submits nothing.
func TestImportEventIsASubmissionWaitingOnTheSemaphore(t *testing.T) {
	r, d, _, _ := newOutsideRig(t)
	_, err := r.ImportEvent(0, 0)
	assert.ErrorIs(t, err, errs.NullHandle)
	assert.Empty(t, d.syncs)
	ev, err := r.ImportEvent(0, 9)
	require.NoError(t, err)
	require.Len(t, d.syncs, 1)
	assert.Equal(t, uint64(9), d.syncs[0].wait)
	own := d.syncs[0].own
	require.NotZero(t, own, "the import carries a fence of the slot's")
	require.NoError(t, r.Wait(1, ev), "another slot waits on it")
	require.NoError(t, r.SyncEvent(context.Background(), ev))
	assert.Positive(t, d.waited[own], "the host's sync waited for the import's fence")
	done, err := r.EventDone(ev)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, ev.Close())
}

// An exported event whose work failed to submit signals nothing: the
// program's semaphore and fence stay unsignaled (it must not wait on
// them), and the export reports why, every time.
func TestSignalEventOfAFailedSubmissionSignalsNothing(t *testing.T) {
	r, d, src, dst := newOutsideRig(t)
	var st *recorder.Staging
	require.NoError(t, r.Write(0, src, &st, make([]byte, 4*n)))
	require.NoError(t, r.Sync(context.Background(), 0))
	require.NoError(t, r.Copy(0, src, dst, 4*n))
	ev, err := r.Record(0, false)
	require.NoError(t, err)
	cause := errors.New("queue full")
	d.FailNth(hostdev.Submit, 1, cause)
	assert.ErrorIs(t, r.SignalEvent(ev, 7, 8), cause)
	assert.ErrorIs(t, r.SignalEvent(ev, 7, 8), cause, "reported again")
	assert.Empty(t, d.syncs, "nothing was signaled")
}
