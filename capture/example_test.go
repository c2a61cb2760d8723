package capture_test

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// The recorder's side of one window: warm up, record, then seal; on refusal
// the Sealed still names the writes to taint and the staging to release.
func ExampleStreamCapture_Seal() {
	const stream = 4
	input := alloc.Claim{Page: 0, Offset: 0, Size: 1024}
	output := alloc.Claim{Page: 0, Offset: 1024, Size: 1024}
	staging := alloc.Claim{Page: 1, Offset: 0, Size: 1024}

	var c capture.StreamCapture
	_ = c.Prepare(stream) // the warmup run executes here
	_ = c.Begin()
	c.RetainHost(staging) // a host write recorded as a copy from staging
	c.Record(capture.Binding{Claim: input}, capture.Binding{Claim: output, Write: true})

	sealed, err := c.Seal(stream)
	if err != nil {
		fmt.Println("taint", sealed.Writes, "release", sealed.Host, "because", err)
		return
	}
	fmt.Println("guard", sealed.Touched)
	fmt.Println("writes", sealed.Writes)
	fmt.Println("keep", sealed.Host)
	// Output:
	// guard [page 0 [0,1024) page 0 [1024,2048)]
	// writes [page 0 [1024,2048)]
	// keep [page 1 [0,1024)]
}
