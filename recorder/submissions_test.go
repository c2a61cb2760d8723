package recorder

import (
	"context"
	"errors"
	"testing"
)

// TestSubmissionsRefuseOutOfOrder: a batch beside the eager stream (a
// replay, a frame) is refused while a batch is open, since it would run
// before work recorded earlier; a wait with nothing in flight is refused
// too. Each refusal leaves the submissions as they were.
func TestSubmissionsRefuseOutOfOrder(t *testing.T) {
	open, inflight := &batch{serial: 0}, &batch{serial: 3}
	q := submissions{open: open, inflight: []*batch{inflight}, serial: 3, done: 2}
	before := q
	if _, err := q.take(false); !errors.Is(err, errBatchOpen) {
		t.Fatalf("take beside an open batch: %v, want errBatchOpen", err)
	}
	if err := q.enqueue(&batch{}); !errors.Is(err, errBatchOpen) {
		t.Fatalf("enqueue beside an open batch: %v, want errBatchOpen", err)
	}
	if q.open != before.open || len(q.inflight) != 1 || q.inflight[0] != inflight || q.serial != 3 || q.done != 2 {
		t.Fatalf("a refused transition changed the submissions: %+v", q)
	}

	var empty submissions
	if err := empty.waitOldest(context.Background()); !errors.Is(err, errNothingInFlight) {
		t.Fatalf("waitOldest with nothing in flight: %v, want errNothingInFlight", err)
	}
	if empty.serial != 0 || empty.done != 0 || len(empty.failed) != 0 {
		t.Fatalf("a refused wait changed the submissions: %+v", empty)
	}
}
