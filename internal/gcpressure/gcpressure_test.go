package gcpressure

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's current GC percent.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A set GOGC rules as the runtime reads it (runtime.readGOGC): GOGC=off was
// read as 1, the most frequent collection, instead of collection off.
func TestPercentFollowsGOGC(t *testing.T) {
	for gogc, want := range map[string]int{
		"":      1,
		"off":   -1,
		"100":   100,
		"50":    50,
		"-1":    -1,
		"bogus": 100,
	} {
		t.Run("GOGC="+gogc, func(t *testing.T) {
			t.Setenv("GOGC", gogc)
			if got := Percent(); got != want {
				t.Fatalf("Percent() = %d, want %d", got, want)
			}
		})
	}
}

// Under GOGC=off, Start leaves collection off, and Stop restores what was
// there before.
func TestStartLeavesCollectionOffUnderGOGCOff(t *testing.T) {
	t.Setenv("GOGC", "off")
	before := gcPercent()
	c := Start(t)
	if got := gcPercent(); got >= 0 {
		t.Errorf("GC percent under GOGC=off is %d, want collection off (negative)", got)
	}
	c.Stop()
	if got := gcPercent(); got != before {
		t.Errorf("GC percent after Stop is %d, want %d", got, before)
	}
}
