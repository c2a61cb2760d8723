package wgsl

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// cacheEntries bounds the compiled modules kept in memory: enough for
// every kernel of a program that compiles a few variants of each, small
// enough (modules are a few KiB) not to matter.
const cacheEntries = 256

// compiled is the process's cache of compiled modules.
var compiled = newModuleCache(cacheEntries)

// moduleCache is a bounded least-recently-used map from a cache key to a
// compiled module, safe for concurrent use. Two goroutines compiling the
// same key at once both compile; the second store wins, with equal bytes.
type moduleCache struct {
	mu    sync.Mutex
	limit int
	order *list.List // of *cacheEntry, most recently used first
	byKey map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	key [sha256.Size]byte
	k   kernel
}

func newModuleCache(limit int) *moduleCache {
	return &moduleCache{limit: limit, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

// get returns the kernel cached under key; the caller must not modify its
// module.
func (c *moduleCache) get(key [sha256.Size]byte) (kernel, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return kernel{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).k, true
}

// put caches k under key, evicting the least recently used kernel beyond
// the limit.
func (c *moduleCache) put(key [sha256.Size]byte, k kernel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		e.Value.(*cacheEntry).k = k
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, k: k})
	for c.order.Len() > c.limit {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}

// len is the number of modules cached.
func (c *moduleCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
