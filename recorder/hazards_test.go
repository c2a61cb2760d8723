package recorder

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

func claim(page alloc.PageID, off, size uint64) alloc.Claim {
	return alloc.Claim{Page: page, Offset: off, Size: size}
}

func TestHazards(t *testing.T) {
	x, y, z := claim(0, 0, 256), claim(0, 256, 256), claim(1, 0, 256)
	var h hazards
	first := []capture.Binding{{Claim: x}, {Claim: y, Write: true}}
	assert.False(t, h.needBarrier(first), "an empty buffer has no hazard")
	h.add(first)
	assert.False(t, h.needBarrier([]capture.Binding{{Claim: x}, {Claim: z, Write: true}}), "read after read and a fresh write are independent")
	assert.True(t, h.needBarrier([]capture.Binding{{Claim: y}, {Claim: z, Write: true}}), "read after write")
	assert.True(t, h.needBarrier([]capture.Binding{{Claim: z}, {Claim: x, Write: true}}), "write after read")
	assert.True(t, h.needBarrier([]capture.Binding{{Claim: y, Write: true}}), "write after write")
	assert.True(t, h.needBarrier([]capture.Binding{{Claim: claim(0, 300, 8)}}), "a sub-range of a written claim overlaps it")
	assert.False(t, h.needBarrier([]capture.Binding{{Claim: claim(0, 512, 8)}}), "the neighbouring range does not")
	h.reset()
	assert.False(t, h.needBarrier([]capture.Binding{{Claim: y}, {Claim: x, Write: true}}), "a barrier clears the tracked sets")
}

func TestHazardsCapForcesBarrier(t *testing.T) {
	var h hazards
	for i := 0; i <= hazardLimit; i++ {
		h.add([]capture.Binding{{Claim: claim(alloc.PageID(i), 0, 4)}})
	}
	assert.True(t, h.needBarrier([]capture.Binding{{Claim: claim(9999, 0, 4)}}), "past the limit a barrier is cheaper than the scan")
}

// FuzzHazards checks needBarrier against the definition: a barrier is
// needed iff some new binding overlaps an earlier write, or a new write
// overlaps an earlier read (within the tracked limit).
func FuzzHazards(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		var h hazards
		var reads, writes []alloc.Claim
		for len(data) >= 3 {
			c := claim(alloc.PageID(data[0]%2), uint64(data[1]%16)*16, uint64(data[2]%4+1)*16)
			write := data[0]&4 != 0
			data = data[3:]
			b := []capture.Binding{{Claim: c, Write: write}}
			want := len(reads)+len(writes) > hazardLimit
			for _, w := range writes {
				want = want || w.Overlaps(c)
			}
			if write {
				for _, r := range reads {
					want = want || r.Overlaps(c)
				}
			}
			got := h.needBarrier(b)
			if got != want {
				t.Fatalf("needBarrier(%v write=%v) = %v, want %v (reads %v writes %v)", c, write, got, want, reads, writes)
			}
			if got {
				h.reset()
				reads, writes = reads[:0], writes[:0]
			}
			h.add(b)
			if write {
				writes = append(writes, c)
			} else {
				reads = append(reads, c)
			}
		}
	})
}
