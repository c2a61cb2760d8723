package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/vkcompute/vkc/shaders"
	"github.com/vkcompute/vkc/vk"
)

// rawDevice is vkc's own cgo layer with nothing above it: no recorder, no
// suballocator, no hazard tracking. The dispatch and alloc suites measure it
// beside vkc so the table shows what the layers above vk/ cost.
type rawDevice struct {
	inst *vk.Instance
	dev  *vk.Device
}

// openRaw opens the device the settings name (or VKC_DEVICE, or the best)
// directly on vk/.
func openRaw(cfg settings) (*rawDevice, error) {
	inst, err := vk.NewInstance(vk.InstanceOptions{Validation: cfg.validate})
	if err != nil {
		return nil, err
	}
	infos, err := inst.Devices()
	if err != nil {
		inst.Close()
		return nil, err
	}
	want := cfg.device
	if want == "" {
		want = os.Getenv("VKC_DEVICE")
	}
	index, err := vk.Select(infos, want)
	if err != nil {
		inst.Close()
		return nil, err
	}
	dev, err := inst.OpenDevice(index)
	if err != nil {
		inst.Close()
		return nil, err
	}
	return &rawDevice{inst: inst, dev: dev}, nil
}

// Close destroys the device and the instance; every object made on the
// device must be released first.
func (r *rawDevice) Close() error {
	r.dev.Close()
	var err error
	if live := r.dev.Live(); len(live) > 0 {
		err = fmt.Errorf("vkbench: raw path left Vulkan objects alive: %v", live)
	}
	if errs, warns := r.inst.ValidationCounts(); errs+warns > 0 {
		err = errors.Join(err, fmt.Errorf("%w: raw path: %d validation errors, %d warnings: %q", ErrMismatch, errs, warns, r.inst.RecentMessages()))
	}
	r.inst.Close()
	return err
}

// hostBlock allocates a mapped block the host can fill and read: device-local
// where that memory is host-visible (lavapipe, unified memory), otherwise
// read-back memory, which costs a discrete GPU bandwidth but not dispatch
// overhead, the only thing the raw path is measured for.
func (r *rawDevice) hostBlock(size uint64) (*vk.Block, error) {
	b, err := r.dev.AllocateBlock(vk.UseDeviceLocal, size)
	if err != nil {
		return nil, err
	}
	if !b.HostVisible() {
		b.Release()
		if b, err = r.dev.AllocateBlock(vk.UseReadback, size); err != nil {
			return nil, err
		}
	}
	if err := r.dev.MapBlock(b); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// rawAxpy is an axpy chain (y = a*x + y, K times over the same x and y)
// written straight on vk/: the C baseline's replay in Go.
type rawAxpy struct {
	raw    *rawDevice
	n      int
	x, y   *vk.Block
	pipe   *vk.Pipeline
	pool   *vk.DescriptorPool
	set    vk.DescriptorSet
	cmds   *vk.CommandPool
	replay *vk.CommandBuffer // recorded once, resubmitted
	batch  *vk.CommandBuffer // re-recorded every run
	fence  *vk.Fence
	disp   vk.Dispatch
	push   [8]byte
	k      int // launches recorded in replay
}

// newRawAxpy builds the pipeline, the buffers (x[i] = xs[i], y = 0) and the
// command buffers for an n-element chain of k launches.
func newRawAxpy(raw *rawDevice, xs []float32, k int) (_ *rawAxpy, err error) {
	kernel, err := shaders.Get("axpy")
	if err != nil {
		return nil, err
	}
	a := &rawAxpy{raw: raw, n: len(xs)}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	d := raw.dev
	size := uint64(4 * len(xs))
	if a.x, err = raw.hostBlock(size); err != nil {
		return nil, err
	}
	if a.y, err = raw.hostBlock(size); err != nil {
		return nil, err
	}
	xb := a.x.Mapped()
	for i, v := range xs {
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(v))
	}
	if err = a.x.FlushRange(0, size); err != nil {
		return nil, err
	}
	local := kernel.LocalSize[0]
	span := kernel.Span(local) // the elements a group covers (four per invocation for axpy)
	desc := vk.PipelineDesc{Bindings: len(kernel.Bindings), PushSize: kernel.PushSize, Spec: []uint32{local}}
	if a.pipe, err = d.NewPipeline(kernel.SPIRV, desc); err != nil {
		return nil, err
	}
	if a.pool, err = d.NewDescriptorPool(1); err != nil {
		return nil, err
	}
	if a.set, err = a.pool.Allocate(a.pipe); err != nil {
		return nil, err
	}
	d.UpdateSet(a.set, []vk.BufferRange{{Block: a.x, Offset: 0, Range: size}, {Block: a.y, Offset: 0, Range: size}})
	if a.cmds, err = d.NewCommandPool(); err != nil {
		return nil, err
	}
	if a.replay, err = a.cmds.Allocate(); err != nil {
		return nil, err
	}
	if a.batch, err = a.cmds.Allocate(); err != nil {
		return nil, err
	}
	if a.fence, err = d.NewFence(); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(a.push[0:], math.Float32bits(1))
	binary.LittleEndian.PutUint32(a.push[4:], uint32(len(xs)))
	groups := (uint32(len(xs)) + span - 1) / span
	a.disp = vk.Dispatch{Pipeline: a.pipe, Set: a.set, Groups: [3]uint32{groups, 1, 1}, Push: a.push[:], Before: vk.BarrierAll}
	if err = a.record(a.replay, 0, k); err != nil {
		return nil, err
	}
	a.k = k
	return a, nil
}

// record records k dependent launches, a barrier before every one but the
// first, and the barrier that makes y visible to the host.
func (a *rawAxpy) record(cb *vk.CommandBuffer, flags uint32, k int) error {
	d := a.raw.dev
	if err := d.Begin(cb, flags); err != nil {
		return err
	}
	for i := range k {
		a.disp.BarrierFirst = i > 0
		d.CmdDispatch(cb, &a.disp)
	}
	d.CmdBarrier(cb, vk.BarrierToHost)
	return d.End(cb)
}

// submitWait submits cb and waits for it, as the C baseline does.
func (a *rawAxpy) submitWait(cb *vk.CommandBuffer) error {
	d := a.raw.dev
	if err := d.Submit(cb, a.fence); err != nil {
		return err
	}
	if _, err := d.WaitFence(a.fence, -1); err != nil {
		return err
	}
	return d.ResetFence(a.fence)
}

// Replay resubmits the chain recorded once: the C baseline's replay.
func (a *rawAxpy) Replay() error { return a.submitWait(a.replay) }

// Batched re-records the k-launch chain and submits it: the C baseline's batched.
func (a *rawAxpy) Batched(k int) error {
	if err := a.raw.dev.Reset(a.batch); err != nil {
		return err
	}
	if err := a.record(a.batch, vk.OneTimeSubmit, k); err != nil {
		return err
	}
	return a.submitWait(a.batch)
}

// ResetY zeroes y through the mapping.
func (a *rawAxpy) ResetY() error {
	clear(a.y.Mapped())
	return a.y.FlushRange(0, a.y.Size())
}

// Y reads y through the mapping.
func (a *rawAxpy) Y() ([]float32, error) {
	if err := a.y.InvalidateRange(0, a.y.Size()); err != nil {
		return nil, err
	}
	out := make([]float32, a.n)
	yb := a.y.Mapped()
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(yb[4*i:]))
	}
	return out, nil
}

// Close waits for the device and releases everything built; it tolerates a
// partly built chain.
func (a *rawAxpy) Close() {
	_ = a.raw.dev.WaitIdle()
	if a.fence != nil {
		a.fence.Destroy()
	}
	a.replay.Free()
	a.batch.Free()
	if a.cmds != nil {
		a.cmds.Destroy()
	}
	if a.pool != nil {
		a.pool.Destroy()
	}
	if a.pipe != nil {
		a.pipe.Destroy()
	}
	for _, b := range []*vk.Block{a.x, a.y} {
		if b != nil {
			b.Release()
		}
	}
}
