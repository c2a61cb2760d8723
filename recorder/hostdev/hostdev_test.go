package hostdev_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

var code = []byte{1, 2, 3, 4}

var fillDesc = recorder.PipelineDesc{Name: "fill", Bindings: 1, Writes: 1, PushSize: 8}
var copyDesc = recorder.PipelineDesc{Name: "copy", Bindings: 2, Writes: 2, PushSize: 4}

func words(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, w := range v {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// bench is a device with one command pool, a page and the fill and copy
// kernels, for recording commands by hand.
type bench struct {
	t    *testing.T
	d    *hostdev.Device
	pool recorder.CommandPool
	mem  recorder.Memory
	fill recorder.Pipeline
	cp   recorder.Pipeline
	dp   recorder.DescriptorPool
}

func newBench(t *testing.T, o hostdev.Options) *bench {
	d := hostdev.New(o)
	b := &bench{t: t, d: d}
	var err error
	b.pool, err = d.NewCommandPool()
	require.NoError(t, err)
	b.mem, err = d.AllocateMemory(alloc.DeviceLocal, 4096)
	require.NoError(t, err)
	b.fill, err = d.NewPipeline(code, fillDesc)
	require.NoError(t, err)
	b.cp, err = d.NewPipeline(code, copyDesc)
	require.NoError(t, err)
	b.dp, err = d.NewDescriptorPool(16)
	require.NoError(t, err)
	return b
}

// set makes a set of pipeline p over the given (offset, size) ranges of the page.
func (b *bench) set(p recorder.Pipeline, ranges ...[2]uint64) recorder.DescriptorSet {
	s, err := b.d.AllocateSet(b.dp, p)
	require.NoError(b.t, err)
	var r []recorder.BufferRange
	for _, x := range ranges {
		r = append(r, recorder.BufferRange{Memory: b.mem, Offset: x[0], Size: x[1]})
	}
	require.NoError(b.t, b.d.UpdateSet(s, r))
	return s
}

// record begins a command buffer, lets fn record into it and ends it.
func (b *bench) record(usage recorder.Recording, fn func(cb recorder.CommandBuffer)) recorder.CommandBuffer {
	cb, err := b.d.AllocateCommandBuffer(b.pool)
	require.NoError(b.t, err)
	require.NoError(b.t, b.d.Begin(cb, usage))
	fn(cb)
	require.NoError(b.t, b.d.End(cb))
	return cb
}

// run submits cb and waits for it.
func (b *bench) run(cb recorder.CommandBuffer) {
	f, err := b.d.NewFence()
	require.NoError(b.t, err)
	require.NoError(b.t, b.d.Submit(cb, f))
	ok, err := b.d.WaitFence(f, -1)
	require.NoError(b.t, err)
	require.True(b.t, ok)
	b.d.DestroyFence(f)
}

func (b *bench) fillCmd(cb recorder.CommandBuffer, s recorder.DescriptorSet, v uint32, barrier bool) {
	b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.fill, Set: s, Groups: [3]uint32{1, 1, 1}, Push: words(v, 4), Barrier: barrier})
}

// misuse runs fn and requires the checker to report one more error, whose
// message contains what.
func (b *bench) misuse(what string, fn func()) {
	b.t.Helper()
	before := b.d.Diagnostics().Errors
	fn()
	d := b.d.Diagnostics()
	require.Greater(b.t, d.Errors, before, "%s not reported", what)
	fresh := d.Recent[max(0, len(d.Recent)-int(d.Errors-before)):]
	for _, msg := range fresh {
		if strings.Contains(msg, what) {
			return
		}
	}
	b.t.Fatalf("want %q, got %v", what, fresh)
}

// clean requires no diagnostic so far.
func (b *bench) clean() {
	b.t.Helper()
	d := b.d.Diagnostics()
	require.True(b.t, d.Checking)
	require.Zero(b.t, d.Errors, "%v", d.Recent)
}

// closeAll frees what newBench made and closes the device.
func (b *bench) closeAll() {
	b.d.DestroyCommandPool(b.pool) // with its buffers, which bind the sets and pipelines
	b.d.DestroyDescriptorPool(b.dp)
	b.d.DestroyPipeline(b.fill)
	b.d.DestroyPipeline(b.cp)
	b.d.FreeMemory(b.mem)
	require.NoError(b.t, b.d.Close())
	require.NoError(b.t, b.d.Close(), "Close is idempotent")
	require.Empty(b.t, b.d.Live())
}

func TestExecutesInOrder(t *testing.T) {
	b := newBench(t, hostdev.Options{Unified: true})
	bytes, err := b.d.MapMemory(b.mem)
	require.NoError(t, err)
	s1 := b.set(b.fill, [2]uint64{0, 16})
	s2 := b.set(b.cp, [2]uint64{0, 16}, [2]uint64{64, 16})
	cb := b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
		b.fillCmd(cb, s1, 7, false)
		b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.cp, Set: s2, Groups: [3]uint32{1, 1, 1}, Push: words(4), Barrier: true})
		b.d.CmdBarrier(cb, recorder.BarrierBetween)
		b.d.CmdCopy(cb, b.mem, 64, b.mem, 128, 16)
		b.d.CmdBarrier(cb, recorder.BarrierToHost)
	})
	b.run(cb)
	require.NoError(t, b.d.InvalidateMemory(b.mem, 128, 16))
	for i := 0; i < 4; i++ {
		require.Equal(t, uint32(7), binary.LittleEndian.Uint32(bytes[128+4*i:]))
	}
	b.clean()
	b.d.FreeCommandBuffer(b.pool, cb)
	require.Equal(t, "hostdev", b.d.Info().Name)
	b.closeAll()
	b.clean()
}

// Every kind of misuse the checker claims to report.
func TestChecker(t *testing.T) {
	t.Run("stale handle", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		m, err := b.d.AllocateMemory(alloc.Upload, 64)
		require.NoError(t, err)
		b.d.FreeMemory(m)
		b.misuse("stale", func() { b.d.FreeMemory(m) })
		b.misuse("stale", func() { _, err = b.d.MapMemory(m) })
		require.Error(t, err)
		b.misuse("stale", func() { b.d.DestroyPipeline(recorder.Pipeline(m)) })
		b.misuse("stale", func() { require.Error(t, b.d.Begin(recorder.CommandBuffer(b.mem), recorder.Eager)) })
		b.closeAll()
	})
	t.Run("hazard without a barrier", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		s := b.set(b.fill, [2]uint64{0, 16})
		cp := b.set(b.cp, [2]uint64{0, 16}, [2]uint64{32, 16})
		ok := b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
			b.fillCmd(cb, s, 1, false)
			b.fillCmd(cb, s, 2, true)
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.cp, Set: cp, Groups: [3]uint32{1, 1, 1}, Push: words(4), Barrier: true})
		})
		b.run(ok)
		b.clean()
		b.misuse("hazard: a write", func() {
			b.run(b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
				b.fillCmd(cb, s, 1, false)
				b.fillCmd(cb, s, 2, false)
			}))
		})
		b.misuse("hazard: a read", func() {
			b.run(b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
				b.d.CmdBarrier(cb, recorder.BarrierBetween)
				b.fillCmd(cb, s, 1, false)
				b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.cp, Set: cp, Groups: [3]uint32{1, 1, 1}, Push: words(4)})
			}))
		})
		b.misuse("hazard: a write", func() {
			b.run(b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
				b.d.CmdBarrier(cb, recorder.BarrierBetween)
				b.fillCmd(cb, s, 1, false)
				b.d.CmdCopy(cb, b.mem, 64, b.mem, 0, 16)
			}))
		})
		b.closeAll()
	})
	t.Run("update or free of a bound set", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		s := b.set(b.fill, [2]uint64{0, 16})
		cb := b.record(recorder.Replayable, func(cb recorder.CommandBuffer) { b.fillCmd(cb, s, 1, false) })
		b.misuse("UpdateSet: set bound", func() {
			b.d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Size: 16}})
		})
		b.misuse("FreeSet: set still bound", func() { b.d.FreeSet(b.dp, s) })
		b.misuse("DestroyPipeline", func() { b.d.DestroyPipeline(b.fill) })
		b.d.FreeCommandBuffer(b.pool, cb)
		b.fill, _ = b.d.NewPipeline(code, fillDesc)
		s = b.set(b.fill, [2]uint64{0, 16})
		b.misuse("past its page", func() { b.d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Offset: 4090, Size: 16}}) })
		b.closeAll()
	})
	t.Run("pending memory, buffers and fences", func(t *testing.T) {
		b := newBench(t, hostdev.Options{Unified: true})
		_, err := b.d.MapMemory(b.mem)
		require.NoError(t, err)
		s := b.set(b.fill, [2]uint64{0, 16})
		cb := b.record(recorder.Eager, func(cb recorder.CommandBuffer) { b.fillCmd(cb, s, 1, false) })
		f, _ := b.d.NewFence()
		b.d.Pause()
		require.NoError(t, b.d.Submit(cb, f))
		require.Equal(t, 1, b.d.Pending())
		b.misuse("FlushMemory: host access", func() { require.NoError(t, b.d.FlushMemory(b.mem, 0, 4)) })
		b.misuse("InvalidateMemory: host access", func() { require.NoError(t, b.d.InvalidateMemory(b.mem, 8, 4)) })
		b.misuse("FreeMemory: memory used", func() { b.d.FreeMemory(b.mem) })
		b.misuse("Reset: buffer is pending", func() { require.NoError(t, b.d.Reset(cb)) })
		b.misuse("Begin: buffer is recording or pending", func() { require.NoError(t, b.d.Begin(cb, recorder.Eager)) })
		b.misuse("ResetFence: fence is pending", func() { require.NoError(t, b.d.ResetFence(f)) })
		b.misuse("DestroyFence", func() { b.d.DestroyFence(f) })
		b.misuse("FreeCommandBuffer: buffer is pending", func() { b.d.FreeCommandBuffer(b.pool, cb) })
		b.d.Resume()
		require.NoError(t, b.d.WaitIdle())
		b.mem, _ = b.d.AllocateMemory(alloc.DeviceLocal, 4096)
		b.closeAll()
	})
	t.Run("submit without Replayable", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		s := b.set(b.fill, [2]uint64{0, 16})
		eager := b.record(recorder.Eager, func(cb recorder.CommandBuffer) { b.fillCmd(cb, s, 1, false) })
		graph := b.record(recorder.Replayable, func(cb recorder.CommandBuffer) {})
		fences := make([]recorder.Fence, 4)
		for i := range fences {
			fences[i], _ = b.d.NewFence()
		}
		b.d.Pause()
		require.NoError(t, b.d.Submit(graph, fences[0]))
		require.NoError(t, b.d.Submit(graph, fences[1]))
		b.clean()
		require.NoError(t, b.d.Submit(eager, fences[2]))
		b.misuse("pending again without Replayable", func() { require.NoError(t, b.d.Submit(eager, fences[3])) })
		b.misuse("fence is signaled or pending", func() { require.NoError(t, b.d.Submit(graph, fences[3])) })
		b.d.Resume()
		require.NoError(t, b.d.WaitIdle())
		for _, f := range fences {
			b.d.DestroyFence(f)
		}
		b.closeAll()
	})
	t.Run("recording state", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		s := b.set(b.fill, [2]uint64{0, 16})
		cb, _ := b.d.AllocateCommandBuffer(b.pool)
		b.misuse("CmdDispatch: buffer is not recording", func() { b.fillCmd(cb, s, 1, false) })
		b.misuse("CmdBarrier: buffer is not recording", func() { b.d.CmdBarrier(cb, recorder.BarrierToHost) })
		b.misuse("CmdCopy: buffer is not recording", func() { b.d.CmdCopy(cb, b.mem, 0, b.mem, 64, 4) })
		b.misuse("End: buffer is not recording", func() { require.NoError(t, b.d.End(cb)) })
		require.NoError(t, b.d.Reset(cb))
		f, _ := b.d.NewFence()
		b.misuse("Submit: buffer is not executable", func() { require.NoError(t, b.d.Submit(cb, f)) })
		b.misuse("WaitFence: fence was never submitted", func() { _, _ = b.d.WaitFence(f, -1) })
		require.NoError(t, b.d.Begin(cb, recorder.Eager))
		b.misuse("Begin: buffer is recording", func() { require.NoError(t, b.d.Begin(cb, recorder.Eager)) })
		other := b.set(b.cp, [2]uint64{0, 16}, [2]uint64{64, 16})
		b.misuse("set allocated for pipeline", func() {
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.fill, Set: other, Groups: [3]uint32{1, 1, 1}, Push: words(1, 1)})
		})
		b.misuse("push constants", func() {
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.fill, Set: s, Groups: [3]uint32{1, 1, 1}, Push: words(1)})
		})
		b.misuse("group counts", func() {
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.fill, Set: s, Groups: [3]uint32{70000, 1, 1}, Push: words(1, 1)})
		})
		empty, _ := b.d.AllocateSet(b.dp, b.fill)
		b.misuse("set names 0 ranges", func() {
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: b.fill, Set: empty, Groups: [3]uint32{1, 1, 1}, Push: words(1, 1)})
		})
		b.misuse("past a page", func() { b.d.CmdCopy(cb, b.mem, 4090, b.mem, 0, 16) })
		b.misuse("overlapping", func() { b.d.CmdCopy(cb, b.mem, 0, b.mem, 8, 16) })
		require.NoError(t, b.d.End(cb))
		b.d.DestroyFence(f)
		b.closeAll()
	})
	t.Run("host access", func(t *testing.T) {
		b := newBench(t, hostdev.Options{})
		b.misuse("not host-visible", func() { _, _ = b.d.MapMemory(b.mem) })
		b.misuse("not mapped", func() { require.NoError(t, b.d.FlushMemory(b.mem, 0, 4)) })
		up, err := b.d.AllocateMemory(alloc.Upload, 64)
		require.NoError(t, err)
		_, err = b.d.MapMemory(up)
		require.NoError(t, err)
		b.misuse("past the page", func() { require.NoError(t, b.d.InvalidateMemory(up, 60, 8)) })
		b.d.FreeMemory(up)
		b.closeAll()
	})
	t.Run("leak at Close", func(t *testing.T) {
		d := hostdev.New(hostdev.Options{})
		_, err := d.AllocateMemory(alloc.DeviceLocal, 64)
		require.NoError(t, err)
		require.NoError(t, d.Close())
		diag := d.Diagnostics()
		require.EqualValues(t, 1, diag.Errors)
		require.Contains(t, diag.Recent[0], "1 memory objects still alive")
		require.Equal(t, map[string]int64{"memory": 1}, d.Live())
	})
}

// Calls that the device refuses outright, without a diagnostic.
func TestRefusals(t *testing.T) {
	d := hostdev.New(hostdev.Options{Kernels: map[string]hostdev.Kernel{}})
	_, err := d.NewPipeline(nil, fillDesc)
	require.ErrorIs(t, err, errs.BadSPIRV)
	_, err = d.NewPipeline(code, fillDesc)
	require.Error(t, err, "no kernel of that name registered")
	_, err = d.AllocateMemory(alloc.DeviceLocal, 0)
	require.ErrorIs(t, err, errs.OutOfMemory)
	require.NoError(t, d.Close())
	_, err = d.NewFence()
	require.ErrorIs(t, err, errs.Closed)
	require.Zero(t, d.Diagnostics().Errors)
}

// invoke makes one call of kind c on a fresh bench and returns its error.
func invoke(b *bench, c hostdev.Call) error {
	d := b.d
	switch c {
	case hostdev.AllocateMemory:
		m, err := d.AllocateMemory(alloc.Upload, 64)
		if err == nil {
			d.FreeMemory(m)
		}
		return err
	case hostdev.MapMemory:
		_, err := d.MapMemory(b.mem)
		return err
	case hostdev.FlushMemory:
		return d.FlushMemory(b.mem, 0, 4)
	case hostdev.InvalidateMemory:
		return d.InvalidateMemory(b.mem, 0, 4)
	case hostdev.NewPipeline:
		p, err := d.NewPipeline(code, fillDesc)
		if err == nil {
			d.DestroyPipeline(p)
		}
		return err
	case hostdev.NewDescriptorPool:
		p, err := d.NewDescriptorPool(1)
		if err == nil {
			d.DestroyDescriptorPool(p)
		}
		return err
	case hostdev.AllocateSet:
		s, err := d.AllocateSet(b.dp, b.fill)
		if err == nil {
			d.FreeSet(b.dp, s)
		}
		return err
	case hostdev.UpdateSet:
		s, err := d.AllocateSet(b.dp, b.fill)
		if err != nil {
			return err
		}
		defer d.FreeSet(b.dp, s)
		return d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Offset: 0, Size: 64}})
	case hostdev.NewCommandPool:
		p, err := d.NewCommandPool()
		if err == nil {
			d.DestroyCommandPool(p)
		}
		return err
	case hostdev.AllocateCommandBuffer:
		cb, err := d.AllocateCommandBuffer(b.pool)
		if err == nil {
			d.FreeCommandBuffer(b.pool, cb)
		}
		return err
	case hostdev.Begin, hostdev.End, hostdev.Reset:
		cb, err := d.AllocateCommandBuffer(b.pool)
		if err != nil {
			return err
		}
		defer d.FreeCommandBuffer(b.pool, cb)
		switch c {
		case hostdev.Begin:
			return d.Begin(cb, recorder.Eager)
		case hostdev.End:
			_ = d.Begin(cb, recorder.Eager)
			return d.End(cb)
		}
		return d.Reset(cb)
	case hostdev.NewFence:
		f, err := d.NewFence()
		if err == nil {
			d.DestroyFence(f)
		}
		return err
	case hostdev.Submit, hostdev.WaitFence, hostdev.ResetFence:
		cb, err := d.AllocateCommandBuffer(b.pool)
		if err != nil {
			return err
		}
		defer d.FreeCommandBuffer(b.pool, cb)
		if err := d.Begin(cb, recorder.Eager); err != nil {
			return err
		}
		if err := d.End(cb); err != nil {
			return err
		}
		f, err := d.NewFence()
		if err != nil {
			return err
		}
		defer d.DestroyFence(f)
		defer func() { _ = d.WaitIdle() }()
		if err := d.Submit(cb, f); c == hostdev.Submit || err != nil {
			return err
		}
		if _, err := d.WaitFence(f, -1); c == hostdev.WaitFence || err != nil {
			return err
		}
		return d.ResetFence(f)
	case hostdev.WaitIdle:
		return d.WaitIdle()
	case hostdev.NewTimestamps, hostdev.ReadTimestamps:
		q, err := d.NewTimestamps(1)
		if c == hostdev.NewTimestamps || err != nil {
			if err == nil {
				d.DestroyTimestamps(q)
			}
			return err
		}
		defer d.DestroyTimestamps(q)
		cb, err := d.AllocateCommandBuffer(b.pool)
		if err != nil {
			return err
		}
		defer d.FreeCommandBuffer(b.pool, cb)
		_ = d.Begin(cb, recorder.Eager)
		d.CmdTimestamp(cb, q, 0)
		_ = d.End(cb)
		f, err := d.NewFence()
		if err != nil {
			return err
		}
		defer d.DestroyFence(f)
		if err := d.Submit(cb, f); err != nil {
			return err
		}
		_ = d.WaitIdle()
		var ticks [1]uint64
		return d.ReadTimestamps(q, 0, ticks[:])
	}
	panic("unknown call " + c.String())
}

// Faults fire at exactly the occurrence asked for, once for FailNth and
// from then on until Heal for FailFrom; Count counts every call.
func TestFaults(t *testing.T) {
	cause := errors.New("boom")
	for _, c := range hostdev.Calls() {
		t.Run(c.String(), func(t *testing.T) {
			b := newBench(t, hostdev.Options{Unified: true})
			_, err := b.d.MapMemory(b.mem)
			require.NoError(t, err)
			start := b.d.Count(c)
			b.d.FailNth(c, 3, cause)
			var got []bool
			for i := 0; i < 5; i++ {
				got = append(got, invoke(b, c) != nil)
			}
			require.Equal(t, []bool{false, false, true, false, false}, got, "FailNth(3)")
			require.Equal(t, start+5, b.d.Count(c))

			b.d.FailFrom(c, 2, nil)
			got = got[:0]
			for i := 0; i < 4; i++ {
				err := invoke(b, c)
				if err != nil {
					require.ErrorIs(t, err, hostdev.ErrInjected)
				}
				got = append(got, err != nil)
			}
			require.Equal(t, []bool{false, false, true, true}, got, "FailFrom(2)")
			b.d.Heal(c)
			require.NoError(t, invoke(b, c))

			b.d.FailNth(c, 1, cause)
			err = invoke(b, c)
			require.ErrorIs(t, err, cause)
			require.Contains(t, err.Error(), c.String())
			b.clean()
			b.closeAll()
		})
	}
	require.Equal(t, "Call(200)", hostdev.Call(200).String())
}

// Pause keeps submissions pending, Resume runs them, WaitIdle drains a
// paused queue (a device waits for its work), and a timed wait reports a
// fence that has not signaled.
func TestPauseResume(t *testing.T) {
	b := newBench(t, hostdev.Options{})
	s := b.set(b.fill, [2]uint64{0, 16})
	cb := b.record(recorder.Replayable, func(cb recorder.CommandBuffer) {
		b.fillCmd(cb, s, 1, false)
		b.d.CmdBarrier(cb, recorder.BarrierToHost) // orders one submission after the other
	})
	f1, _ := b.d.NewFence()
	f2, _ := b.d.NewFence()
	b.d.Pause()
	require.NoError(t, b.d.Submit(cb, f1))
	ok, err := b.d.WaitFence(f1, time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "paused: the fence cannot signal")
	require.Equal(t, 1, b.d.Pending())
	b.d.Resume()
	ok, err = b.d.WaitFence(f1, -1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.d.ResetFence(f1))
	b.d.Pause()
	require.NoError(t, b.d.Submit(cb, f1))
	require.NoError(t, b.d.Submit(cb, f2))
	require.NoError(t, b.d.WaitIdle())
	require.Equal(t, 0, b.d.Pending())
	b.clean()
	b.d.DestroyFence(f1)
	b.d.DestroyFence(f2)
	b.closeAll()
	b.clean()
}

// Lose fails every later fallible call and every wait with ErrDeviceLost,
// ends what was pending, and the device can still be torn down cleanly.
func TestLose(t *testing.T) {
	b := newBench(t, hostdev.Options{})
	s := b.set(b.fill, [2]uint64{0, 16})
	cb := b.record(recorder.Eager, func(cb recorder.CommandBuffer) { b.fillCmd(cb, s, 1, false) })
	f, _ := b.d.NewFence()
	b.d.Pause()
	require.NoError(t, b.d.Submit(cb, f))
	require.False(t, b.d.Lost())
	done := make(chan error, 1)
	go func() { _, err := b.d.WaitFence(f, -1); done <- err }()
	b.d.Lose()
	require.ErrorIs(t, <-done, errs.DeviceLost)
	require.True(t, b.d.Lost())
	require.Equal(t, 0, b.d.Pending())
	for _, c := range hostdev.Calls() {
		require.ErrorIs(t, invoke(b, c), errs.DeviceLost, c.String())
	}
	b.d.DestroyFence(f)
	b.d.FreeCommandBuffer(b.pool, cb)
	b.closeAll()
	b.clean()
}

// The Go references of the catalogue kernels compute what the GLSL
// kernels do, over the part of the problem the dispatch covers.
func TestBuiltins(t *testing.T) {
	k := hostdev.Builtins()
	f32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	get := func(b []byte) []float32 {
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	run := func(name string, groups [3]uint32, push []byte, bufs ...[]byte) {
		kern := k[name]
		kern.Run(&hostdev.Invocation{Groups: groups, Local: kern.Local, Push: push, Buffers: bufs})
	}
	one := [3]uint32{1, 1, 1}
	x, y, z := f32(1, 2, 3, 4), f32(10, 20, 30, 40), make([]byte, 16)
	run("add", one, words(4), x, y, z)
	require.Equal(t, []float32{11, 22, 33, 44}, get(z))
	run("sub", one, words(4), y, x, z)
	require.Equal(t, []float32{9, 18, 27, 36}, get(z))
	run("mul", one, words(4), x, y, z)
	require.Equal(t, []float32{10, 40, 90, 160}, get(z))
	run("div", one, words(4), y, x, z)
	require.Equal(t, []float32{10, 10, 10, 10}, get(z))
	run("scale", one, words(math.Float32bits(3), 3), x, z)
	require.Equal(t, []float32{3, 6, 9, 10}, get(z), "n=3 leaves the last element")
	run("axpy", one, words(math.Float32bits(2), 4), x, y)
	require.Equal(t, []float32{12, 24, 36, 48}, get(y))
	run("fill", one, words(7, 2), z)
	require.Equal(t, uint32(7), binary.LittleEndian.Uint32(z[4:]))
	run("copy", one, words(4), x, z)
	require.Equal(t, []float32{1, 2, 3, 4}, get(z))
	out := make([]byte, 4)
	run("sum", one, words(4), x, out)
	require.Equal(t, []float32{10}, get(out))
	run("sum_subgroup", one, words(3), x, out)
	require.Equal(t, []float32{6}, get(out))
	run("dot", one, words(4), x, x, out)
	require.Equal(t, []float32{30}, get(out))
	// 2x3 · 3x2
	a, bm, c := f32(1, 2, 3, 4, 5, 6), f32(7, 8, 9, 10, 11, 12), make([]byte, 16)
	run("matmul", one, words(2, 2, 3), a, bm, c)
	require.Equal(t, []float32{58, 64, 139, 154}, get(c))
	tr := make([]byte, 24)
	run("transpose", one, words(2, 3), a, tr)
	require.Equal(t, []float32{1, 4, 2, 5, 3, 6}, get(tr))
	sm := make([]byte, 8)
	run("softmax", one, words(1, 2), f32(0, 0), sm)
	require.Equal(t, []float32{0.5, 0.5}, get(sm))
}

// A specialization constant overrides the kernel's workgroup size, which
// decides how much of the problem a dispatch covers.
func TestSpecializedWorkgroupSize(t *testing.T) {
	b := newBench(t, hostdev.Options{Unified: true})
	bytes, err := b.d.MapMemory(b.mem)
	require.NoError(t, err)
	p, err := b.d.NewPipeline(code, recorder.PipelineDesc{Name: "fill", Bindings: 1, Writes: 1, PushSize: 8, Spec: []uint32{2}})
	require.NoError(t, err)
	s, err := b.d.AllocateSet(b.dp, p)
	require.NoError(t, err)
	b.d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Size: 64}})
	b.run(b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
		b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: p, Set: s, Groups: [3]uint32{1, 1, 1}, Push: words(5, 16)})
	}))
	require.Equal(t, uint32(5), binary.LittleEndian.Uint32(bytes[28:]))
	require.Equal(t, uint32(0), binary.LittleEndian.Uint32(bytes[32:]), "one group of 2 invocations of 4 elements covers 8 elements")
	b.d.DestroyCommandPool(b.pool)
	b.pool, _ = b.d.NewCommandPool()
	b.d.DestroyPipeline(p)
	b.closeAll()
	b.clean()
}

// A specialization constant sizes the workgroup only by its ID: a value
// for constant 1 leaves fill's x size alone, one for constant 0 by ID sets
// it, as the Vulkan device does with the IDs in the desc.
func TestSpecializedWorkgroupSizeByID(t *testing.T) {
	for _, c := range []struct {
		ids    []uint32
		covers bool // whether one group covers element 8 (x size above 2, four elements per invocation)
	}{{[]uint32{1}, true}, {[]uint32{0}, false}} {
		b := newBench(t, hostdev.Options{Unified: true})
		bytes, err := b.d.MapMemory(b.mem)
		require.NoError(t, err)
		p, err := b.d.NewPipeline(code, recorder.PipelineDesc{Name: "fill", Bindings: 1, Writes: 1, PushSize: 8, Spec: []uint32{2}, SpecIDs: c.ids})
		require.NoError(t, err)
		s, err := b.d.AllocateSet(b.dp, p)
		require.NoError(t, err)
		b.d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Size: 64}})
		b.run(b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
			b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: p, Set: s, Groups: [3]uint32{1, 1, 1}, Push: words(5, 16)})
		}))
		want := uint32(0)
		if c.covers {
			want = 5
		}
		require.Equal(t, want, binary.LittleEndian.Uint32(bytes[32:]), "spec IDs %v", c.ids)
		b.d.DestroyCommandPool(b.pool)
		b.pool, _ = b.d.NewCommandPool()
		b.d.DestroyPipeline(p)
		b.closeAll()
		b.clean()
	}
}

// A texel binding's range is checked as vk checks it (whole texels, at an
// offset multiple of MinTexelBufferOffsetAlignment, at most
// MaxTexelBufferElements of them), and a refused update leaves the set
// with the ranges it had: the copy through it still copies them.
func TestTexelRangesRefusedAsVulkanDoes(t *testing.T) {
	b := newBench(t, hostdev.Options{Unified: true, MaxStorageBufferRange: 1024}) // 64 texels: fewer than the page holds
	bytes, err := b.d.MapMemory(b.mem)
	require.NoError(t, err)
	copy(bytes, words(11, 12, 13, 14))
	desc := copyDesc
	desc.Texels = 0b01 // src read as texels
	p, err := b.d.NewPipeline(code, desc)
	require.NoError(t, err)
	s := b.set(p, [2]uint64{0, 16}, [2]uint64{64, 16})
	l := b.d.Info().Limits
	for _, bad := range [][2]uint64{{0, 0}, {0, 24}, {l.MinTexelBufferOffsetAlignment / 2, 16}, {0, 16 * (uint64(l.MaxTexelBufferElements) + 1)}} {
		err := b.d.UpdateSet(s, []recorder.BufferRange{{Memory: b.mem, Offset: bad[0], Size: bad[1]}, {Memory: b.mem, Offset: 128, Size: 16}})
		require.Error(t, err, "texel range %d+%d", bad[0], bad[1])
	}
	cb := b.record(recorder.Eager, func(cb recorder.CommandBuffer) {
		b.d.CmdDispatch(cb, &recorder.Dispatch{Pipeline: p, Set: s, Groups: [3]uint32{1, 1, 1}, Push: words(4)})
		b.d.CmdBarrier(cb, recorder.BarrierToHost)
	})
	b.run(cb)
	require.NoError(t, b.d.InvalidateMemory(b.mem, 64, 16))
	require.Equal(t, words(11, 12, 13, 14), bytes[64:80], "the set kept the ranges of its last update")
	b.d.FreeCommandBuffer(b.pool, cb)
	b.d.DestroyPipeline(p)
	b.clean()
	b.closeAll()
}
