// Package gcpressure is test support for the packages that call C: it
// makes the garbage collector run as often as it can while a test drives
// cgo calls, the condition under which a C call reading memory that only a
// finalizer or an unreachable Go value kept alive fails, and it says how
// long a soak run should be. Tests of vk and of the root package use it.
package gcpressure

import (
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Percent is the GC percent a pressured test runs with, as
// debug.SetGCPercent takes it: 1, the most frequent collection, unless the
// environment sets GOGC, which then rules as the runtime reads it, so that
// Start leaves the collector as the environment set it: GOGC=100 runs the
// test with Go's default, GOGC=off gives -1 (collection off), and a value
// the runtime cannot read gives its default, 100. An empty GOGC counts as
// unset.
func Percent() int {
	v := os.Getenv("GOGC")
	switch {
	case v == "":
		return 1
	case v == "off":
		return -1
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil {
		return int(n)
	}
	return 100
}

// Churn is a goroutine that allocates without pause and never calls C, as
// every real program's other goroutines do.
type Churn struct {
	done   chan struct{}
	wg     sync.WaitGroup
	n      atomic.Int64
	sink   atomic.Pointer[[]byte]
	once   sync.Once
	oldGC  int
	allocs int64
}

// Start sets the GC percent to Percent and starts a Churn; both last until
// Stop or the end of the test, whichever comes first.
func Start(t testing.TB) *Churn {
	t.Helper()
	c := &Churn{done: make(chan struct{}), oldGC: debug.SetGCPercent(Percent())}
	c.wg.Go(func() {
		for {
			select {
			case <-c.done:
				return
			default:
			}
			b := make([]byte, 4096)
			c.sink.Store(&b)
			c.n.Add(1)
		}
	})
	t.Cleanup(func() { c.Stop() })
	return c
}

// Stop ends the goroutine, restores the GC percent and reports how many
// allocations the goroutine made. Calls after the first report the same.
func (c *Churn) Stop() int64 {
	c.once.Do(func() {
		close(c.done)
		c.wg.Wait()
		c.sink.Store(nil)
		debug.SetGCPercent(c.oldGC)
		c.allocs = c.n.Load()
	})
	return c.allocs
}

// Soak reports whether the long runs are asked for: VKC_SOAK set to
// anything but "" or "0". CI keeps the short ones.
func Soak() bool {
	v := os.Getenv("VKC_SOAK")
	return v != "" && v != "0"
}

// Scaled is ci, or soak when Soak.
func Scaled(ci, soak int) int {
	if Soak() {
		return soak
	}
	return ci
}
