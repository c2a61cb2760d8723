// Package alloc is vkc's suballocator: it carves pages of device memory into
// byte-range claims, guards the claims a sealed graph touches, refuses growth
// while a capture window records, and keeps the taint ledger that makes a read
// of never-written memory fail. It imports nothing from Vulkan, so every
// invariant here is tested and fuzzed in microseconds with no device.
package alloc

import "fmt"

// PageID names one page: one memory block with one buffer spanning it.
// IDs are small integers so that the page table is a slice, not a map.
type PageID uint32

// Kind says what a page is for, which decides the memory type behind it.
type Kind uint8

const (
	// DeviceLocal pages hold tensors. On devices whose device-local memory is
	// also host-visible (lavapipe, integrated GPUs) they are mapped too.
	DeviceLocal Kind = iota
	// Upload pages are host-visible, write-combined staging for host writes.
	Upload
	// Readback pages are host-visible and host-cached where the device
	// offers it, so downloads read at memory speed.
	Readback
	numKinds
)

// String names the kind for errors and statistics.
func (k Kind) String() string {
	switch k {
	case DeviceLocal:
		return "device-local"
	case Upload:
		return "upload"
	case Readback:
		return "readback"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Claim is a byte range of one page. It is comparable and is its own key:
// two tensors carved from one page are two claims even when adjacent, and all
// bookkeeping (taint, capture recordings, guards) works on claims so that
// nothing leaks onto a sibling range.
type Claim struct {
	Page   PageID
	Offset uint64
	Size   uint64
}

// ClaimKey is the map key of a claim. A claim is its own key; the alias
// keeps call sites that use claims as keys self-explanatory.
type ClaimKey = Claim

// Key returns the claim's map key.
func (c Claim) Key() ClaimKey { return c }

// End is the first byte past the claim.
func (c Claim) End() uint64 { return c.Offset + c.Size }

// Overlaps reports whether two claims share at least one byte.
func (c Claim) Overlaps(o Claim) bool {
	return c.Page == o.Page && c.Offset < o.End() && o.Offset < c.End()
}

// String formats the claim as page:[offset,end).
func (c Claim) String() string {
	return fmt.Sprintf("page %d [%d,%d)", c.Page, c.Offset, c.End())
}
