package recorder

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
