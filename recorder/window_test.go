package recorder

import (
	"errors"
	"testing"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
)

// requireRefused fails unless err is want and the window kept cb and gen.
func requireRefused(t *testing.T, what string, err, want error, w *window, cb CommandBuffer, gen uint64) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
	if w.cb != cb || w.gen != gen {
		t.Fatalf("%s changed the window: cb %d gen %d, was %d %d", what, w.cb, w.gen, cb, gen)
	}
}

// TestWindowRefusesOutsideRecording: a window that is not prepared does
// not start recording, and one that does not record takes no launch, no
// early claim and hands over no recording; each refusal leaves it as it was.
func TestWindowRefusesOutsideRecording(t *testing.T) {
	w := newWindow(nil)
	e, k := &setEntry{}, &Kernel{}
	c := alloc.Claim{Page: 1, Size: 16}
	requireRefused(t, "startRecording of an idle window", w.startRecording(7), errs.CaptureState, &w, 0, 0)
	_, err := w.recordLaunch([]capture.Binding{{Claim: c}}, nil, e, k)
	requireRefused(t, "recordLaunch outside a recording", err, errNotRecording, &w, 0, 0)
	if e.pins != 0 || len(w.touched) != 0 || len(w.kernels) != 0 {
		t.Fatalf("a refused launch pinned %d sets, touched %d claims, held %d kernels", e.pins, len(w.touched), len(w.kernels))
	}
	requireRefused(t, "freedEarly outside a recording", w.freedEarly(c), errNotRecording, &w, 0, 0)
	_, err = w.takeRecording()
	requireRefused(t, "takeRecording with none begun", err, errNothingRecorded, &w, 0, 0)
}

// TestWindowHandsOverRecordingOnce: a recording pins each set once and
// holds each kernel once however many launches use them; it is handed over
// only after the state machine left Recording, and only once.
func TestWindowHandsOverRecordingOnce(t *testing.T) {
	w := newWindow(nil)
	e, k := &setEntry{}, &Kernel{}
	c := alloc.Claim{Page: 1, Size: 16}
	if err := w.Prepare(3); err != nil {
		t.Fatal(err)
	}
	if err := w.startRecording(7); err != nil {
		t.Fatal(err)
	}
	requireRefused(t, "startRecording twice", w.startRecording(8), errs.CaptureState, &w, 7, 1)
	for i := range 3 {
		newKernel, err := w.recordLaunch([]capture.Binding{{Claim: c, Write: true}}, []Limit{{Param: c, Max: 4}}, e, k)
		if err != nil || newKernel != (i == 0) {
			t.Fatalf("launch %d: new kernel %v, %v", i, newKernel, err)
		}
	}
	if e.pins != 1 {
		t.Fatalf("a set bound by three launches of one recording pinned %d times", e.pins)
	}
	_, err := w.takeRecording()
	requireRefused(t, "takeRecording while recording", err, errNotRecording, &w, 7, 1)
	if _, err := w.Seal(3); err != nil {
		t.Fatal(err)
	}
	rec, err := w.takeRecording()
	if err != nil || rec.cb != 7 || len(rec.pins) != 1 || len(rec.kernels) != 1 || len(rec.limits) != 3 {
		t.Fatalf("takeRecording after the seal: %+v, %v", rec, err)
	}
	_, err = w.takeRecording()
	requireRefused(t, "the recording handed over twice", err, errNothingRecorded, &w, 0, 1)
}
