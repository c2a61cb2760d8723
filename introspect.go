package vkc

// Capturing reports whether s's slot has a capture window open now: from
// PrepareCapture (the warmup, which runs) through BeginCapture to
// EndCapture or AbortCapture, so both of Capture's calls of its function
// see true. A library that measures its work before choosing
// how to do it (an autotuner timing kernel variants) asks this first:
// inside a window nothing runs until the graph replays, so there is
// nothing to time, and the warmup and the recorded run must issue the same
// work, which a measurement between them could change. False for a nil stream or a closed device.
func (s *Stream) Capturing() bool {
	if s == nil || s.enter() != nil {
		return false
	}
	defer s.leave()
	return s.dev.rec.WindowOpen(s.id)
}

// PipelineCacheDir is the directory where the device keeps its pipeline
// cache on disk ("" when the file is off: WithPipelineCache("") or
// VKC_PIPELINE_CACHE set empty), so that a library can keep its own
// per-device data (measured tuning choices) beside it, under the same
// setting a user already controls. The directory may not exist yet.
// "" for a nil or closed Device.
func (d *Device) PipelineCacheDir() string {
	if d == nil || d.enter() != nil {
		return ""
	}
	defer d.leave()
	return d.cacheDir
}
