// Package lockrank is the recorder's lock order as code. Every lock of the
// recorder has a rank; a goroutine takes locks in strictly increasing rank,
// except that several locks of an ordered rank (the slots) may be held at
// once when taken in increasing index. Built with the tag vkc_lockrank
// each acquisition checks that against the locks the goroutine holds and
// panics naming both locks; without the tag Mutex and RWMutex are
// sync.Mutex and sync.RWMutex and the ranks cost nothing. The model is
// wgpu-core's lock/rank.rs: the order is declared once, here, and a test
// run with the tag finds an inversion the first time a path takes it,
// instead of the first time two goroutines deadlock on it.
package lockrank

import "strconv"

// Rank is a lock's place in the order: a goroutine holding a lock of rank
// h may take one of rank r only if h < r (or h == r for an ordered rank,
// in increasing index).
type Rank uint8

// The recorder's locks, in the order a goroutine may take them.
const (
	unranked Rank = iota
	// PendingRead is a PendingRead's mutex, which serialises its Wait and
	// Close; both go on to take the device's lock or a slot's under it.
	PendingRead
	// Device is Recorder.devMu: held shared by calls that reach the device
	// outside a slot, exclusively by Close. Taken before any other but a
	// pending read's.
	Device
	// Presentation is a Presentation's mutex, which serialises its calls
	// and waits for frames on slots under it.
	Presentation
	// Slot is a slot's mutex. A call holds one, except SetHost, SetLength
	// and LengthLimit, which take every slot's in index order.
	Slot
	// Staging is Recorder.stagingMu: the persistent host staging by claim.
	Staging
	// Kernels is Recorder.kernelsMu: live kernels and their references.
	Kernels
	// Graphs is Recorder.graphsMu: the live graphs LengthLimit scans.
	Graphs
	// Guards is Recorder.guardMu: the claims the recorder guards.
	Guards
	// Presentations is Recorder.presMu: the swapchains still open.
	Presentations
	// Events is Recorder.eventsMu: the timed events still open, taken
	// under a slot's lock by Record and alone by Event.Close and Close.
	Events
	// Event is an Event's mutex: its closed flag and timestamp query,
	// held only while reading them (a leaf).
	Event
	// Born is Recorder.bornMu: the buffers allocated while windows record
	// and the slots recording then (a leaf).
	Born
	numRanks
)

var names = [numRanks]string{
	unranked:      "an unranked lock",
	PendingRead:   "PendingRead.mu",
	Device:        "Recorder.devMu",
	Presentation:  "Presentation.mu",
	Slot:          "slot.mu",
	Staging:       "Recorder.stagingMu",
	Kernels:       "Recorder.kernelsMu",
	Graphs:        "Recorder.graphsMu",
	Guards:        "Recorder.guardMu",
	Presentations: "Recorder.presMu",
	Events:        "Recorder.eventsMu",
	Event:         "Event.mu",
	Born:          "Recorder.bornMu",
}

// String names the lock a rank stands for.
func (r Rank) String() string {
	if r < numRanks {
		return names[r]
	}
	return "rank " + strconv.Itoa(int(r))
}

// ordered reports whether several locks of rank r may be held at once,
// taken in increasing index.
func (r Rank) ordered() bool { return r == Slot }

// Ranks lists the order, lowest first, for documentation and tests.
func Ranks() []Rank {
	out := make([]Rank, 0, numRanks-1)
	for r := unranked + 1; r < numRanks; r++ {
		out = append(out, r)
	}
	return out
}
