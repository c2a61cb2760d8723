//go:build !race

package vkc

// raceDetector reports whether the tests run under -race (see
// race_detector_on_test.go).
const raceDetector = false
