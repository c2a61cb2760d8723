package recorder

import (
	"errors"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/vk"
)

// setKey identifies a descriptor set by pipeline (its layout) and the exact
// claims bound, in binding order.
type setKey struct {
	pipe   *vk.Pipeline
	n      int
	claims [vk.MaxBindings]alloc.Claim
}

// setEntry is one cached set. A set is safe to update or free only when no
// pending command buffer references it: lastSerial (the submission that last
// used it) must be complete, and no graph may pin it.
type setEntry struct {
	key        setKey
	set        vk.DescriptorSet
	pool       *vk.DescriptorPool
	lastSerial uint64
	pins       int
	pinGen     uint64 // window generation that last pinned it
	prev, next *setEntry
}

// setCache is a per-backend LRU of descriptor sets. In capture mode it
// never evicts (a graph's sets must survive), growing pools instead.
type setCache struct {
	dev        Device
	capacity   int
	m          map[setKey]*setEntry
	head, tail *setEntry // most and least recently used
	last       *setEntry // memo of the previous lookup: chains hit it
	pools      []*vk.DescriptorPool
	outstand   map[*vk.DescriptorPool]int
	ranges     [vk.MaxBindings]vk.BufferRange
}

const setsPerPool = 256

func newSetCache(dev Device, capacity int) *setCache {
	return &setCache{dev: dev, capacity: capacity, m: make(map[setKey]*setEntry, capacity), outstand: map[*vk.DescriptorPool]int{}}
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

func (c *setCache) allocate(p *vk.Pipeline) (vk.DescriptorSet, *vk.DescriptorPool, error) {
	for i := len(c.pools) - 1; i >= 0; i-- {
		pool := c.pools[i]
		if c.outstand[pool] >= setsPerPool {
			continue
		}
		set, err := pool.Allocate(p)
		if err == nil {
			c.outstand[pool]++
			return set, pool, nil
		}
		var ve *vk.Error
		if !errors.As(err, &ve) {
			return vk.DescriptorSet{}, nil, err
		}
	}
	pool, err := c.dev.NewDescriptorPool(setsPerPool)
	if err != nil {
		return vk.DescriptorSet{}, nil, err
	}
	c.pools = append(c.pools, pool)
	set, err := pool.Allocate(p)
	if err != nil {
		return vk.DescriptorSet{}, nil, err
	}
	c.outstand[pool]++
	return set, pool, nil
}

// get returns the set for key, writing a new one on a miss. blocks maps a
// claim to its page block. pinned forbids eviction (capture mode).
func (c *setCache) get(key *setKey, blocks func(alloc.Claim) *vk.Block, done uint64, pinned bool) (*setEntry, error) {
	if e := c.last; e != nil && e.key == *key {
		return e, nil
	}
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
	set, pool, err := c.allocate(key.pipe)
	if err != nil {
		return nil, err
	}
	for i := 0; i < key.n; i++ {
		cl := key.claims[i]
		c.ranges[i] = vk.BufferRange{Block: blocks(cl), Offset: cl.Offset, Range: cl.Size}
	}
	c.dev.UpdateSet(set, c.ranges[:key.n])
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
	e.pool.Free(e.set)
	c.outstand[e.pool]--
}

// forgetPipeline drops the sets of a pipeline being destroyed. The caller
// has drained the backend, so none is pending; a set pinned by a live graph
// keeps the pipeline alive instead (the graph owns that decision).
func (c *setCache) forgetPipeline(p *vk.Pipeline, done uint64) {
	for e := c.tail; e != nil; {
		prev := e.prev
		if e.key.pipe == p && e.pins == 0 && e.lastSerial <= done {
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
		pool.Destroy()
	}
	c.pools, c.m, c.head, c.tail, c.last = nil, nil, nil, nil, nil
}
