package recorder

import (
	"context"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/vk"
)

// Launch is one kernel launch's arguments: the memory bound at bindings
// 0..len(Args)-1 (and whether each is written), the group counts and the
// push-constant bytes. Nothing is retained after Recorder.Launch returns, so
// a caller may keep Args and Push on its stack. The pipeline is a separate
// parameter of Recorder.Launch because the recorder keeps it: Go's escape
// analysis does not tell one field from another, so a retained pointer
// field would move every launch's Args and Push to the heap.
type Launch struct {
	Args   []capture.Binding
	Groups [3]uint32
	Push   []byte
	// ReadWrite has bit i set when Args[i] is written and also read (its
	// old contents feed the result, like Axpy's y): a tainted one is an
	// input, so it skips the launch instead of being cleared by it.
	ReadWrite uint32
}

// splitArgs fills the backend's scratch sets: b.writes, and b.reads, the
// inputs whose taint skips the launch (read-only and read-write bindings).
func (b *backend) splitArgs(args []capture.Binding, readWrite uint32) {
	b.reads, b.writes = b.reads[:0], b.writes[:0]
	for i, a := range args {
		if a.Write {
			b.writes = append(b.writes, a.Claim)
		}
		if !a.Write || readWrite&(1<<uint(i)) != 0 {
			b.reads = append(b.reads, a.Claim)
		}
	}
}

// Launch records pipeline pipe with arguments l on stream s. Eagerly, it is appended to the open command
// buffer (submitted at the batch size, on Sync or on a read); a launch whose
// input is tainted is skipped and its outputs inherit that failure. Inside
// the owner's recording window it is recorded into the graph instead and
// runs only on replay. A neighbour of a capturing stream is refused and its
// outputs tainted.
func (r *Recorder) Launch(s StreamID, pipe *vk.Pipeline, l *Launch) error {
	if len(l.Args) > vk.MaxBindings {
		return fmt.Errorf("vkc: %d bindings (at most %d)", len(l.Args), vk.MaxBindings)
	}
	b := r.backendOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	b.splitArgs(l.Args, l.ReadWrite)
	if err := b.refuseNeighbourWrite(s, "launch", b.writes); err != nil {
		return err
	}
	recording := b.win.IsRecording()
	if !recording {
		if id, bad := r.ledger.Failure(b.reads); bad {
			if len(b.writes) > 0 {
				r.ledger.Inherit(b.writes, id)
			}
			return nil
		}
	}
	var cb *vk.CommandBuffer
	haz := &b.haz
	if recording {
		cb, haz = b.capCB, &b.capHaz
	} else {
		if err := b.ensureOpen(); err != nil {
			r.taintLaunch(b, err)
			return err
		}
		cb = b.open.cb
	}
	var key setKey
	key.pipe, key.n = pipe, len(l.Args)
	for i, a := range l.Args {
		key.claims[i] = a.Claim
	}
	e, err := b.cache.get(&key, r.Block, b.done, b.win.CacheMode() == capture.CachePinned)
	if err != nil {
		if recording {
			b.win.Fail(err)
		}
		r.taintLaunch(b, err)
		return err
	}
	x := &b.disp
	x.Pipeline, x.Set, x.Groups = pipe, e.set, l.Groups
	x.Push = b.push[:copy(b.push[:], l.Push)]
	x.BarrierFirst = haz.needBarrier(l.Args)
	x.Before = vk.BarrierAll
	if x.BarrierFirst {
		haz.reset()
	}
	haz.add(l.Args)
	r.dev.CmdDispatch(cb, x)
	x.Push = nil
	if recording {
		b.win.Record(l.Args...)
		b.touch(l.Args)
		if e.pinGen != b.winGen {
			e.pinGen = b.winGen
			e.pins++
			b.pins = append(b.pins, e)
		}
		return nil
	}
	e.lastSerial = b.serial + 1
	if len(b.writes) > 0 {
		r.ledger.Written(b.writes)
		b.open.writes = append(b.open.writes, b.writes...)
	}
	b.open.launches++
	if b.open.launches >= r.opts.BatchSize {
		return b.submitOpen()
	}
	return nil
}

// taintLaunch marks the scratch write set of a launch that could not be
// recorded, so nobody reads what it would have written.
func (r *Recorder) taintLaunch(b *backend, err error) {
	if len(b.writes) > 0 {
		r.ledger.Taint(b.writes, err)
	}
}

// touch remembers the claims the recording window used, for Free.
func (b *backend) touch(args []capture.Binding) {
	for _, a := range args {
		b.touched[a.Claim] = struct{}{}
	}
}

// guardIfTouched guards a claim being freed inside a recording window that
// touched it, so its range survives until the graph closes or is refused.
func (b *backend) guardIfTouched(c alloc.Claim) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.win.IsRecording() {
		return nil
	}
	if _, ok := b.touched[c]; !ok {
		return nil
	}
	if err := b.r.mem.Guard([]alloc.Claim{c}); err != nil {
		return err
	}
	b.early = append(b.early, c)
	delete(b.touched, c)
	return nil
}

// NewPipeline builds a pipeline on the device.
func (r *Recorder) NewPipeline(code []byte, desc vk.PipelineDesc) (*vk.Pipeline, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	return r.dev.NewPipeline(code, desc)
}

// DestroyPipeline waits for every slot, drops the cached sets of p and
// destroys it. A pipeline a live graph recorded must outlive that graph.
func (r *Recorder) DestroyPipeline(p *vk.Pipeline) error {
	var first error
	for _, b := range r.backends {
		b.mu.Lock()
		if !b.win.IsRecording() {
			if err := b.drain(context.Background()); err != nil && first == nil {
				first = err
			}
		}
		b.cache.forgetPipeline(p, b.done)
		b.mu.Unlock()
	}
	p.Destroy()
	return first
}
