package ops

// loopBudget is how many loop iterations, all of an invocation's loops
// together, a driver may run before it cuts them short without an error:
// Mesa's llvmpipe (lavapipe) stops every loop of an invocation after
// 65535, and the sum it was computing is silently short. The row kernel's
// layout keeps each lane's share to half of it where the launch can
// (rowIters); Matmul's variants apply on a CPU driver only where their
// longest invocation stays within it, less loopMargin (problem.loopIters).
const loopBudget = 65535

// loopMargin is what Matmul's estimates leave for the loops they do not
// count: a reduction tree, a tail of a few elements.
const loopMargin = 256

// loopsFit reports whether an invocation running iters loop iterations
// completes on a device: always on a GPU; on a CPU driver (the only kind
// known to cut loops short) within loopBudget less loopMargin.
func loopsFit(cpu bool, iters int) bool {
	return !cpu || iters <= loopBudget-loopMargin
}
