package recorder

import (
	"errors"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
)

// setKey identifies a descriptor set by kernel (its layout) and the exact
// claims bound, in binding order; claims past n are zero, so keys of the
// same binding compare equal.
type setKey struct {
	kernel  *Kernel
	n       int
	claims  [MaxBindings]alloc.Claim
	formats [MaxBindings]TexelFormat // of the texel bindings; zero elsewhere
}

// setEntry is one cached set. A set is safe to update or free only when no
// pending command buffer references it: lastSerial (the submission that last
// used it) must be complete, and no graph may pin it.
type setEntry struct {
	key        setKey
	set        DescriptorSet
	pool       DescriptorPool
	lastSerial uint64
	pins       int
	pinGen     uint64 // window generation that last pinned it
	prev, next *setEntry
}

// setCache is a per-slot LRU of descriptor sets. In capture mode it
// never evicts (a graph's sets must survive), growing pools instead.
type setCache struct {
	r          *Recorder
	self       *slot // the slot whose cache it is, for reclaiming (memory.go)
	capacity   int
	m          map[setKey]*setEntry
	head, tail *setEntry // most and least recently used
	last       *setEntry // memo of the previous lookup: chains hit it
	pools      []DescriptorPool
	outstand   map[DescriptorPool]int
	ranges     [MaxBindings]BufferRange
	key        setKey // scratch for lookups, so none allocates
}

const setsPerPool = 256

func newSetCache(r *Recorder, capacity int) *setCache {
	return &setCache{r: r, capacity: capacity, m: make(map[setKey]*setEntry, capacity), outstand: map[DescriptorPool]int{}}
}

func (c *setCache) unlink(e *setEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *setCache) pushFront(e *setEntry) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

// evictable finds the least recently used set no pending work or graph uses.
func (c *setCache) evictable(done uint64) *setEntry {
	for e := c.tail; e != nil; e = e.prev {
		if e.pins == 0 && e.lastSerial <= done {
			return e
		}
	}
	return nil
}

// allocate takes a set for kernel k from a pool with room, or a new pool.
// A pool may refuse a set before it holds setsPerPool of them (Vulkan's
// fragmented or out-of-pool-memory results): it counts as full until one
// of its sets is freed, and the next pool, or a new one, is tried, so the
// launch (or the recording window) does not fail for it. Only a lost
// device, or a refusal from a new pool, fails.
func (c *setCache) allocate(k *Kernel) (DescriptorSet, DescriptorPool, error) {
	d := c.r.dev
	for i := len(c.pools) - 1; i >= 0; i-- {
		pool := c.pools[i]
		if c.outstand[pool] >= setsPerPool {
			continue
		}
		set, err := d.AllocateSet(pool, k.pipe)
		if err != nil {
			if err := c.r.observe(err); errors.Is(err, errs.DeviceLost) {
				return 0, 0, err
			}
			c.outstand[pool] = setsPerPool
			continue
		}
		c.outstand[pool]++
		return set, pool, nil
	}
	pool, err := retryOutOfMemory(c.r, c.self, true, func() (DescriptorPool, error) {
		pool, err := d.NewDescriptorPool(setsPerPool)
		return pool, c.r.observe(err)
	})
	if err != nil {
		return 0, 0, c.r.observe(err)
	}
	c.pools = append(c.pools, pool)
	set, err := d.AllocateSet(pool, k.pipe)
	if err != nil {
		return 0, 0, c.r.observe(err)
	}
	c.outstand[pool]++
	return set, pool, nil
}

// sameClaims reports whether args bind exactly key's claims, in key's
// formats.
func sameClaims(key *setKey, args []capture.Binding, formats *[MaxBindings]TexelFormat) bool {
	for i, a := range args {
		if key.claims[i] != a.Claim {
			return false
		}
	}
	return key.formats == *formats
}

// texelFormats are the formats launch l views k's texel bindings as: its
// own where given, else the pipeline's; zero for other bindings.
func texelFormats(k *Kernel, l *Launch) [MaxBindings]TexelFormat {
	var out [MaxBindings]TexelFormat
	texels := k.desc.Texels | k.desc.StorageTexels
	if texels == 0 {
		return out // most kernels: nothing to look at on the launch path
	}
	for i := range out {
		if texels>>uint(i)&1 == 0 {
			continue
		}
		out[i] = k.desc.Formats[i]
		if l.Formats[i] != 0 {
			out[i] = l.Formats[i]
		}
	}
	return out
}

// get returns the set binding args to kernel k, writing a new one on a
// miss. pinned forbids eviction (a window is open).
func (c *setCache) get(k *Kernel, l *Launch, done uint64, pinned bool) (*setEntry, error) {
	args := l.Args
	formats := texelFormats(k, l)
	if e := c.last; e != nil && e.key.kernel == k && e.key.n == len(args) && sameClaims(&e.key, args, &formats) {
		return e, nil // a chain: the same set as the previous launch
	}
	key := &c.key
	key.kernel, key.n, key.formats = k, len(args), formats
	for i, a := range args {
		key.claims[i] = a.Claim
	}
	clear(key.claims[len(args):])
	if e, ok := c.m[*key]; ok {
		if c.head != e {
			c.unlink(e)
			c.pushFront(e)
		}
		c.last = e
		return e, nil
	}
	if !pinned && len(c.m) >= c.capacity {
		if e := c.evictable(done); e != nil {
			c.drop(e)
		}
	}
	set, pool, err := c.allocate(k)
	if err != nil {
		return nil, err
	}
	for i := 0; i < key.n; i++ {
		cl := key.claims[i]
		c.ranges[i] = BufferRange{Memory: c.r.memoryOf(cl), Offset: cl.Offset, Size: cl.Size, Format: key.formats[i]}
		if (k.desc.Texels|k.desc.StorageTexels)>>uint(i)&1 != 0 {
			if b := l.TexelBytes[i]; b != 0 {
				c.ranges[i].Size = min(c.ranges[i].Size, b) // the data, not the claim's padding
			}
			c.ranges[i].Size -= c.ranges[i].Size % key.formats[i].Size() // a texel view covers whole texels
		}
	}
	if err := c.r.dev.UpdateSet(set, c.ranges[:key.n]); err != nil {
		c.r.dev.FreeSet(pool, set) // written by no command buffer yet
		c.outstand[pool]--
		return nil, c.r.observe(err)
	}
	e := &setEntry{key: *key, set: set, pool: pool}
	c.m[*key] = e
	c.pushFront(e)
	c.last = e
	return e, nil
}

func (c *setCache) drop(e *setEntry) {
	c.unlink(e)
	delete(c.m, e.key)
	if c.last == e {
		c.last = nil
	}
	c.r.dev.FreeSet(e.pool, e.set)
	c.outstand[e.pool]--
}

// forgetKernel drops the sets of a kernel being destroyed. The caller has
// drained the slot, so none is pending, and no graph holds the kernel, so
// none is pinned.
func (c *setCache) forgetKernel(k *Kernel, done uint64) {
	for e := c.tail; e != nil; {
		prev := e.prev
		if e.key.kernel == k && e.pins == 0 && e.lastSerial <= done {
			c.drop(e)
		}
		e = prev
	}
}

// trim evicts down to capacity once capture mode ends.
func (c *setCache) trim(done uint64) {
	for len(c.m) > c.capacity {
		e := c.evictable(done)
		if e == nil {
			return
		}
		c.drop(e)
	}
}

func (c *setCache) destroy() {
	for _, pool := range c.pools {
		c.r.dev.DestroyDescriptorPool(pool)
	}
	c.pools, c.m, c.head, c.tail, c.last = nil, nil, nil, nil, nil
}
