package recorder

import (
	"errors"
	"testing"

	"github.com/vkcompute/vkc/internal/errs"
)

// TestFramesInTurn: frames are submitted in turn, wrapping at the count; a
// frame out of turn is refused and changes nothing; broken semaphores
// refuse every present until a reset.
func TestFramesInTurn(t *testing.T) {
	f := newFrames(2)
	b := &slot{}
	if err := f.submitted(1, b, 5); !errors.Is(err, errFrameOrder) || f.next != 0 || f.use[1].slot != nil {
		t.Fatalf("frame 1 before frame 0: %v (next %d)", err, f.next)
	}
	for i, k := range []int{0, 1, 0} {
		if err := f.submitted(k, b, uint64(i+1)); err != nil {
			t.Fatalf("frame %d in turn: %v", k, err)
		}
	}
	if f.next != 1 || f.use[0].serial != 3 || f.use[1].serial != 2 {
		t.Fatalf("after three frames: next %d, uses %+v", f.next, f.use[:2])
	}
	f.completed(0)
	if f.use[0].slot != nil {
		t.Fatal("a completed frame still names its submission")
	}
	if err := f.usable(); err != nil {
		t.Fatal(err)
	}
	f.breakSemaphores()
	if err := f.usable(); !errors.Is(err, errs.OutOfDate) {
		t.Fatalf("broken semaphores: %v, want errs.OutOfDate", err)
	}
	if f = newFrames(2); f.usable() != nil {
		t.Fatal("a reset left the semaphores broken")
	}
}
