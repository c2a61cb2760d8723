//go:build race

package vkc

// raceDetector reports whether the tests run under -race, where long soaks
// take their short form: the detector multiplies their cost and finds its
// races in the first thousands of steps.
const raceDetector = true
