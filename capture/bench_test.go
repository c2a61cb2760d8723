package capture

import (
	"testing"

	"github.com/vkcompute/vkc/alloc"
)

// benchLaunch is a typical kernel's bindings: two inputs and one output.
var benchLaunch = []Binding{
	{Claim: alloc.Claim{Page: 0, Offset: 0, Size: 4096}},
	{Claim: alloc.Claim{Page: 0, Offset: 4096, Size: 4096}},
	{Claim: alloc.Claim{Page: 1, Offset: 0, Size: 4096}, Write: true},
}

// BenchmarkRecord is the per-launch cost inside an open window whose claims
// were seen earlier in it: the hot path of a recorded loop. It must report 0
// allocs/op.
func BenchmarkRecord(b *testing.B) {
	var c StreamCapture
	if err := c.Prepare(1); err != nil {
		b.Fatal(err)
	}
	if err := c.Begin(); err != nil {
		b.Fatal(err)
	}
	c.Record(benchLaunch...)
	b.ReportAllocs()
	for b.Loop() {
		c.Record(benchLaunch...)
	}
}

// BenchmarkRecordWindow is one whole window of 64 launches over 192 distinct
// claims, reopened each iteration: it shows that the buffers are reused
// across windows (0 allocs/op) and what deduplicating fresh claims costs.
func BenchmarkRecordWindow(b *testing.B) {
	const launches = 64
	bindings := make([]Binding, 0, 3*launches)
	for i := range 3 * launches {
		bindings = append(bindings, Binding{Claim: alloc.Claim{Page: alloc.PageID(i % 4), Offset: uint64(i) * 256, Size: 256}, Write: i%3 == 2})
	}
	var c StreamCapture
	window := func() {
		_ = c.Abort()
		_ = c.Prepare(1)
		_ = c.Begin()
		for l := range launches {
			c.Record(bindings[3*l : 3*l+3]...)
		}
	}
	window()
	b.ReportAllocs()
	for b.Loop() {
		window()
	}
}
