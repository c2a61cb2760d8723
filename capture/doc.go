// Package capture is the bookkeeping of vkc's capture window: the lifecycle
// of one slot's window and the memory its recorded launches
// were given. It imports nothing from Vulkan, so every rule here is tested,
// fuzzed and benchmarked in microseconds with no device; the recorder pairs it
// with the command buffer it actually records into.
//
// # The window
//
// Work issued on a stream between Begin and End is recorded instead of
// executed, then sealed into a graph that replays it for the cost of one
// submit. Before the window opens, a warmup run executes the same work so the
// memory pools grow to the working set (no page may be created inside a
// window). A StreamCapture therefore moves through three states:
//
//	Idle --Prepare(owner)--> Prepared --Begin--> Recording --End(caller)--> Idle
//
// The full table, with what every call does from every state:
//
//	call              Idle               Prepared              Recording
//	Prepare(owner)    -> Prepared,       error                 error
//	                  empty recording
//	Begin()           error              -> Recording          error
//	End(caller)       error              -> Idle (aborted),    -> Idle, always;
//	                                     error                 Owned = caller==owner
//	Abort()           error              -> Idle, dropped      -> Idle, dropped
//	Record / Fail /   no-op              no-op                 remembered
//	RetainHost
//	Take*             drain what the     nil                   nil
//	                  last window left
//
// Every error wraps errs.CaptureState and, except for the two closing calls
// from Prepared noted above, leaves both the state and the recording
// untouched, so a misuse never corrupts a window in progress.
//
// End closes the window even for a caller that does not own it: the slot
// is shared by several logical streams, and a window that only its
// owner could close would wedge the slot for all of them. Only an owned End
// may seal; Seal turns any other outcome into an error while still handing
// back the recorded write set (to taint, since those launches never ran) and
// the retained host staging (to release).
//
// A StreamCapture is not safe for concurrent use: the recorder's lock on
// the slot guards it, so Record, called on every recorded launch,
// takes no lock and allocates nothing.
package capture
