package recorder

import "github.com/vkcompute/vkc/capture"

// Recording reports whether a capture window records on s's slot now: work
// issued there is recorded into a graph, not executed. A caller whose call
// cannot be recorded (a copy between devices through host memory, whose
// read would not be replayed) refuses it then.
func (r *Recorder) Recording(s StreamID) bool {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.win.IsRecording()
}

// WindowOpen reports whether s's slot has a capture window open: prepared
// (its warmup runs) or recording. Work whose form depends on a
// measurement must not be chosen then, as the warmup and the recorded run
// must issue the same work.
func (r *Recorder) WindowOpen(s StreamID) bool {
	b := r.slotOf(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.win.State() != capture.Idle
}
