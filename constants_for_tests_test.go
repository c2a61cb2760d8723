package vkc

import (
	"errors"
	"sync"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/lockrank"
)

// constantsPerSlot bounds how many device copies of constant scalars each
// slot keeps for reuse. A program cycling through a few constants (a
// learning rate, a shape) finds them all cached; one using ever new
// values (a step counter baked into Const) keeps this many and releases
// the rest, so device memory stays bounded however long it runs.
const constantsPerSlot = 64

// constantCache holds one slot's device copies of the constant scalars that
// the dynamic kernels read where the static ones take push constants: a
// Const, or a shape or a buffer length that a launch with a device length
// reads from memory. Its copies are allocated as the slot's own work
// (Recorder.AllocOn), so making one never needs a page while another
// slot's window records; inside the slot's own window only its warmup
// could have made it, as for an op's temporaries.
//
// A copy leaving the cache is released like an op's temporary
// (Recorder.Drop): after the slot's submitted work that may read it
// completes, or, when a graph recorded it, when the last such graph closes
// (the graph guards the claims it reads). A copy pinned by a launch being
// recorded never leaves: the launch still binds it.
type constantCache struct {
	mu      lockrank.Mutex
	entries map[uint32]*constantEntry
	clock   uint64 // counts lookups: an entry's last use orders evictions
}

// constantEntry is one cached device copy and its users.
type constantEntry struct {
	core *bufferCore
	pins int    // launches being recorded that bind it
	used uint64 // the cache's clock at its last lookup
}

// pins are the cached constants one launch binds, released when the
// launch is recorded (or refused). It lives on the launching op's stack.
type pins struct {
	cache   *constantCache
	entries [8]*constantEntry
	n       int
}

// release unpins every constant the launch held.
func (p *pins) release() {
	if p.n == 0 {
		return
	}
	p.cache.mu.Lock()
	for _, e := range p.entries[:p.n] {
		e.pins--
	}
	p.cache.mu.Unlock()
	p.n = 0
}

// constant returns the device copy of a constant scalar for a launch on s,
// pinned in p until p.release. The caller has entered s's device.
func (d *Device) constant(s *Stream, bits uint32, p *pins) (*bufferCore, error) {
	cache := &d.constantCaches()[d.rec.Slot(s.id)]
	if p.n == len(p.entries) {
		return nil, errTooManyConstants
	}
	if p.cache != nil && p.cache != cache {
		return nil, errTooManyConstants // one launch, one stream: never happens
	}
	p.cache = cache
	cache.mu.Lock()
	defer cache.mu.Unlock()
	cache.clock++
	e, ok := cache.entries[bits]
	if !ok {
		core, err := d.newConstant(s, bits)
		if err != nil {
			return nil, err
		}
		for len(cache.entries) >= constantsPerSlot && cache.evict(d, s) {
		}
		e = &constantEntry{core: core}
		if cache.entries == nil {
			cache.entries = make(map[uint32]*constantEntry, constantsPerSlot)
		}
		cache.entries[bits] = e
	}
	e.used = cache.clock
	e.pins++
	p.entries[p.n] = e
	p.n++
	return e.core, nil
}

// errTooManyConstants is an internal limit: no catalogue kernel binds more
// constant scalars than pins holds.
var errTooManyConstants = errors.New("vkc: internal: a launch binds more constant scalars than it can pin")

// newConstant allocates and writes the device copy of bits as work of s's
// slot.
func (d *Device) newConstant(s *Stream, bits uint32) (*bufferCore, error) {
	c, err := d.rec.AllocOn(s.id, alloc.Upload, elemSize)
	if err != nil {
		return nil, public(err)
	}
	b := [4]byte{byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24)}
	if err := d.rec.SetHost([]alloc.Claim{c}, [][]byte{b[:]}); err != nil {
		_ = d.rec.Drop(s.id, c)
		return nil, public(err)
	}
	return newBufferCore(d, c, 1, elemUint, nil), nil
}

// evict releases the least recently used unpinned copy and reports
// whether there was one (when every copy is pinned the cache holds more
// than its bound until a later miss finds them unpinned). The caller
// holds c.mu.
func (c *constantCache) evict(d *Device, s *Stream) bool {
	var oldest uint32
	var victim *constantEntry
	for bits, e := range c.entries {
		if e.pins == 0 && (victim == nil || e.used < victim.used) {
			oldest, victim = bits, e
		}
	}
	if victim == nil {
		return false
	}
	delete(c.entries, oldest)
	_ = d.rec.Drop(s.id, victim.core.claim)
	return true
}

// constantCaches holds each open device's caches, one per slot, made on
// the device's first use of a constant and dropped when it closes.
var constantCaches = struct {
	mu   sync.Mutex
	devs map[*Device][]constantCache
}{devs: map[*Device][]constantCache{}}

// constantCaches is d's cache per slot.
func (d *Device) constantCaches() []constantCache {
	constantCaches.mu.Lock()
	defer constantCaches.mu.Unlock()
	if c, ok := constantCaches.devs[d]; ok {
		return c
	}
	c := make([]constantCache, d.rec.Slots())
	for i := range c {
		c[i].mu.SetRank(lockrank.Constants, i)
	}
	if err := d.OnClose(func() {
		constantCaches.mu.Lock()
		delete(constantCaches.devs, d)
		constantCaches.mu.Unlock()
	}); err == nil {
		constantCaches.devs[d] = c
	}
	return c
}
