package recorder

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/vk"
)

// StreamID names a logical stream. Logical streams map onto pooled backend
// streams by id % pool size, so two ids that share a slot share a command
// pool and a capture window.
type StreamID = uint64

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	Streams   int    // backend streams in the pool; default 4
	BatchSize int    // launches per eager command buffer before it is submitted; default 1024
	PageSize  uint64 // suballocator page; default 64 MiB
	CacheSize int    // descriptor sets cached per backend stream; default 512
}

func (o Options) withDefaults() Options {
	if o.Streams <= 0 {
		o.Streams = 4
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1024
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 512
	}
	return o
}

// Recorder owns the memory, the ledger and the backend streams of one device.
type Recorder struct {
	dev      Device
	info     vk.DeviceInfo
	opts     Options
	mem      *alloc.Allocator[*vk.Block]
	ledger   *alloc.Ledger
	backends []*backend

	stagingMu sync.Mutex // guards staging and every Staging's refs
	staging   map[alloc.ClaimKey]*Staging
	recording atomic.Int32 // windows recording now, for Free's fast path
	closed    atomic.Bool
	lost      atomic.Bool // the device reported VK_ERROR_DEVICE_LOST to the recorder
	closeMu   sync.Mutex
}

// blockSource adapts the device to alloc's consumer-side BlockSource.
type blockSource struct {
	dev Device
	r   *Recorder
}

// NewBlock allocates a page's block and maps it when it is host-visible.
func (s blockSource) NewBlock(kind alloc.Kind, size uint64) (*vk.Block, error) {
	use := vk.UseDeviceLocal
	switch kind {
	case alloc.Upload:
		use = vk.UseUpload
	case alloc.Readback:
		use = vk.UseReadback
	}
	b, err := s.dev.AllocateBlock(use, size)
	if err != nil {
		return nil, s.r.observe(err)
	}
	if b.HostVisible() {
		if err := s.r.observe(s.dev.MapBlock(b)); err != nil {
			b.Release()
			return nil, err
		}
	}
	return b, nil
}

// New builds a recorder on dev.
func New(dev Device, o Options) (*Recorder, error) {
	o = o.withDefaults()
	info := dev.Info()
	align := max(info.Limits.MinStorageBufferOffsetAlignment, info.Limits.NonCoherentAtomSize, 16)
	r := &Recorder{dev: dev, info: info, opts: o, ledger: alloc.NewLedger(), staging: map[alloc.ClaimKey]*Staging{}}
	mem, err := alloc.New[*vk.Block](blockSource{dev: dev, r: r}, alloc.Config{
		PageSize:  o.PageSize,
		Alignment: align,
		MaxClaim:  uint64(info.Limits.MaxStorageBufferRange),
	})
	if err != nil {
		return nil, err
	}
	r.mem = mem
	for i := 0; i < o.Streams; i++ {
		b, err := newBackend(r, i)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.backends = append(r.backends, b)
	}
	return r, nil
}

// Device returns the device the recorder drives.
func (r *Recorder) Device() Device { return r.dev }

// Ledger is the device-wide taint ledger.
func (r *Recorder) Ledger() *alloc.Ledger { return r.ledger }

// Stats reports the suballocator's statistics.
func (r *Recorder) Stats() alloc.Stats { return r.mem.Stats() }

// Streams is the number of backend streams (slots).
func (r *Recorder) Streams() int { return len(r.backends) }

// Unified reports whether device-local memory is mapped (no staging copies).
func (r *Recorder) Unified() bool { return r.info.UnifiedMemory }

func (r *Recorder) backendOf(s StreamID) *backend { return r.backends[s%uint64(len(r.backends))] }

func (r *Recorder) usable() error {
	if r.closed.Load() {
		return vk.ErrClosed
	}
	return r.lostErr()
}

// lostErr is vk.ErrDeviceLost once the device is lost, else nil.
func (r *Recorder) lostErr() error {
	if r.lost.Load() || r.dev.Lost() {
		return vk.ErrDeviceLost
	}
	return nil
}

// observe latches device loss from any error a device call returned and
// passes the error on. The recorder trusts what it is told rather than
// only Device.Lost: a loss is unrecoverable in Vulkan, so one result that
// says so makes every later call fail with vk.ErrDeviceLost (and no more
// work reach the queue), whichever layer reported it.
func (r *Recorder) observe(err error) error {
	if err != nil && errors.Is(err, vk.ErrDeviceLost) {
		r.lost.Store(true)
	}
	return err
}

// Alloc reserves size bytes of the given kind. Inside a recording window a
// request that needs a new page fails with alloc.ErrAllocInCapture, and
// dooms every recording window (the recorded run would differ from warmup).
func (r *Recorder) Alloc(kind alloc.Kind, size uint64) (alloc.Claim, error) {
	if err := r.usable(); err != nil {
		return alloc.Claim{}, err
	}
	c, err := r.mem.Alloc(kind, size)
	if errors.Is(err, alloc.ErrAllocInCapture) {
		for _, b := range r.backends {
			b.failWindow(err)
		}
	}
	return c, err
}

// Block returns the page block behind a claim.
func (r *Recorder) Block(c alloc.Claim) *vk.Block {
	b, _, _ := r.mem.Page(c.Page)
	return b
}

// Mapped returns the claim's bytes when its page is mapped, else nil.
func (r *Recorder) Mapped(c alloc.Claim) []byte {
	b := r.Block(c)
	if b == nil {
		return nil
	}
	m := b.Mapped()
	if m == nil {
		return nil
	}
	return m[c.Offset:c.End():c.End()]
}

// Free releases a claim and clears its taint. The caller has synced every
// stream that used it. A claim that a recording window touched is guarded
// first, so its range stays out of reuse until the graph (or the refusal)
// lets it go.
func (r *Recorder) Free(c alloc.Claim) error {
	if r.closed.Load() {
		return nil
	}
	if r.recording.Load() > 0 {
		for _, b := range r.backends {
			if err := b.guardIfTouched(c); err != nil {
				return err
			}
		}
	}
	r.ledger.Written([]alloc.Claim{c})
	return r.mem.Free(c)
}

// Close waits for all work, releases every Vulkan object and block; idempotent.
func (r *Recorder) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed.Swap(true) {
		return nil
	}
	// Every call checks closed under its slot's lock: taking each lock once
	// waits out a call already past that check, so nothing is submitted
	// after the device goes idle below.
	for _, b := range r.backends {
		b.mu.Lock()
		b.mu.Unlock()
	}
	err := r.dev.WaitIdle()
	for _, b := range r.backends {
		b.destroy()
	}
	r.mem.Close()
	if err != nil && !errors.Is(err, vk.ErrDeviceLost) {
		return fmt.Errorf("vkc: waiting for the device at close: %w", err)
	}
	return nil
}

// Drop frees a temporary claim that work just recorded on stream s still
// uses: eagerly it joins the open submission's drop queue (released when its
// fence signals); inside the slot's recording window it is freed at once,
// guarded for the graph like any claim freed inside a window.
func (r *Recorder) Drop(s StreamID, c alloc.Claim) error {
	b := r.backendOf(s)
	b.mu.Lock()
	switch {
	case b.win.IsRecording():
		b.mu.Unlock()
		return r.Free(c)
	case b.open != nil:
		b.open.drops = append(b.open.drops, c)
	case len(b.inflight) > 0:
		last := b.inflight[len(b.inflight)-1]
		last.drops = append(last.drops, c)
	default:
		b.mu.Unlock()
		return r.Free(c)
	}
	b.mu.Unlock()
	r.ledger.Written([]alloc.Claim{c})
	return nil
}
