package vk

import (
	"github.com/vkcompute/vkc/devinfo"

	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under every policy a wait returns when the work is done (true, with the
// work's result in memory), and a bounded wait on a fence nothing will
// signal returns false when its time is up: polling never outlives the
// timeout's slice, and spinning forever is only for forever waits.
func TestEveryWaitPolicyWaitsForTheWorkAndHonoursTimeouts(t *testing.T) {
	d := fixture(t)
	const n = 256
	r := newAxpyRig(t, d, n)
	defer r.close()
	idle, err := d.NewFence()
	require.NoError(t, err)
	defer idle.Destroy()
	xs, ys := r.x.Mapped(), r.y.Mapped()
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push, math.Float32bits(1))
	binary.LittleEndian.PutUint32(push[4:], n)
	for name, policy := range map[string]WaitPolicy{"auto": AutoWaitPolicy(d.Info()), "auto on a GPU": AutoWaitPolicy(DeviceInfo{Type: devinfo.TypeDiscrete}), "spin": WaitSpin, "yield": WaitYield, "block": WaitBlock,
		"negative": {Spin: -1, Yield: -time.Second}} {
		d.SetWaitPolicy(policy)
		for i := range n {
			binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(float32(i)))
			binary.LittleEndian.PutUint32(ys[4*i:], math.Float32bits(0))
		}
		require.NoError(t, d.Reset(r.cb))
		require.NoError(t, d.Begin(r.cb, OneTimeSubmit))
		d.CmdDispatch(r.cb, &Dispatch{Pipeline: r.pipe, Set: r.set, Groups: [3]uint32{n / 64, 1, 1}, Push: push, Before: BarrierAll})
		d.CmdBarrier(r.cb, BarrierToHost)
		require.NoError(t, d.End(r.cb))
		require.NoError(t, d.Submit(r.cb, r.f))
		ok, err := d.WaitFence(r.f, -1)
		require.NoError(t, err, name)
		require.True(t, ok, name)
		for i := range n {
			require.Equal(t, float32(i), math.Float32frombits(binary.LittleEndian.Uint32(ys[4*i:])), "%s: y[%d]", name, i)
		}
		require.NoError(t, d.ResetFence(r.f))
		for _, timeout := range []time.Duration{0, time.Microsecond, 3 * time.Millisecond} {
			ok, err := d.WaitFence(idle, timeout)
			require.NoError(t, err, "%s, %v", name, timeout)
			require.False(t, ok, "%s: a fence nothing signals, waited for %v", name, timeout)
		}
	}
}

// BenchmarkSubmitWait is one launch submitted and waited for, per wait
// policy: the cost an eager launch pays for its wait.
func BenchmarkSubmitWait(b *testing.B) {
	d := fixture(b)
	const n = 256
	r := newAxpyRig(b, d, n)
	defer r.close()
	push := make([]byte, 8)
	binary.LittleEndian.PutUint32(push, math.Float32bits(1))
	binary.LittleEndian.PutUint32(push[4:], n)
	for _, p := range []struct {
		name   string
		policy WaitPolicy
	}{{"auto", AutoWaitPolicy(d.Info())}, {"spin", WaitSpin}, {"yield", WaitYield}, {"block", WaitBlock}} {
		b.Run(p.name, func(b *testing.B) {
			d.SetWaitPolicy(p.policy)
			for b.Loop() {
				if err := d.Reset(r.cb); err != nil {
					b.Fatal(err)
				}
				if err := d.Begin(r.cb, OneTimeSubmit); err != nil {
					b.Fatal(err)
				}
				d.CmdDispatch(r.cb, &Dispatch{Pipeline: r.pipe, Set: r.set, Groups: [3]uint32{n / 64, 1, 1}, Push: push, Before: BarrierAll})
				if err := d.End(r.cb); err != nil {
					b.Fatal(err)
				}
				if err := d.Submit(r.cb, r.f); err != nil {
					b.Fatal(err)
				}
				if ok, err := d.WaitFence(r.f, -1); !ok || err != nil {
					b.Fatal(ok, err)
				}
				if err := d.ResetFence(r.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
