package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// Gather writes row idx[i] of table into row i of out, for every i: an
// embedding lookup. table is [V, D], idx [N] (uint32 or int32), out [N,
// D]; each may have any layout, out distinct elements sharing no memory
// with table or idx. A row whose index is outside 0..V-1 (a negative
// int32 is) is written as zeros: the device cannot fail an op, and zeros
// are what a padding index should look up. Every element type ops has
// kernels for, copied exactly.
//
// With a dynamic out (and idx, if dynamic, on the same param), the rows
// gathered follow the param when the work runs.
func Gather[T vkc.Element, I int32 | uint32](s *vkc.Stream, table Tensor[T], idx Tensor[I], out Tensor[T]) error {
	const op = "Gather"
	et, err := checkType[T](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, table, idx, out)
	if err != nil {
		return err
	}
	if table.Rank() != 2 || idx.Rank() != 1 {
		return fmt.Errorf("vkc: %s: table %v and idx %v: want a [V, D] table and [N] indices", op, table.at.shape, idx.at.shape)
	}
	N, D := idx.at.shape[0], table.at.shape[1]
	if err := sameShape(op, "out", out, []int{N, D}); err != nil {
		return fmt.Errorf("%w (N from idx %v, D from table %v)", err, idx.at.shape, table.at.shape)
	}
	if err := writable(op, "out", out); err != nil {
		return err
	}
	if table.rows != nil {
		return fmt.Errorf("vkc: %s: table %v is dynamic; only idx and out may be", op, table)
	}
	rowsP := out.rows
	switch {
	case idx.rows != nil && idx.rows != rowsP:
		return fmt.Errorf("vkc: %s: idx is dynamic and out is not, or with another param: make both Dynamic with one param", op)
	case rowsP != nil:
		if n := rowsP.Value(); n < 1 || int(n) > N {
			return fmt.Errorf("vkc: %s: the rows param holds %d, outside 1..%d, out's capacity %v", op, n, N, out.at.shape)
		}
	}
	if err := noOverlap(op, table, out); err != nil {
		return err
	}
	if err := noOverlap(op, idx, out); err != nil {
		return err
	}
	k, err := c.kernel(op, "gather_"+et.suffix)
	if err != nil {
		return err
	}
	var flags uint32
	if rowsP != nil {
		flags |= flagDynamic
	}
	preIdx, errIdx := prefixOf(op, "idx", 1, idx, idx.rows != nil, false)
	preOut, errOut := prefixOf(op, "out", 2, out, rowsP != nil, true)
	if err := cmp.Or(errIdx, errOut); err != nil {
		return err
	}
	pre := slices.Concat(preIdx, preOut)
	maxX := c.maxGroupsX()
	cols := gatherCols(c.dev.Info().Type == vkc.TypeCPU, N, D, maxX)
	for c0 := 0; c0 < D; c0 += cols {
		dc := min(cols, D-c0)
		per := rowsPerGroup(N, dc, maxX)
		p := push{}.u(flags, uint32(per), uint32(N), uint32(table.at.shape[0]), uint32(dc)).
			u(uint32(table.at.offset+c0*table.at.strides[1]), uint32(table.at.strides[0]), uint32(table.at.strides[1])).
			u(uint32(idx.at.offset), uint32(idx.at.strides[0])).
			u(uint32(out.at.offset+c0*out.at.strides[1]), uint32(out.at.strides[0]), uint32(out.at.strides[1]))
		if err := run(s, k, rowsP, pre, N, per, p, table.buf, idx.buf, out.buf, c.rowsArg(rowsP)); err != nil {
			return err
		}
	}
	return nil
}

// gatherCols is how many of a row's D columns one Gather launch covers:
// all of them unless, on a CPU driver, a group's rows of them would run
// an invocation past the loop budget (a group covers whole rows, one
// loop iteration an element and lane); then the halves, quarters, ... of
// them that fit, one launch each.
func gatherCols(cpu bool, N, D int, maxX uint32) int {
	cols := D
	for cols > 1 && !loopsFit(cpu, (rowsPerGroup(N, cols, maxX)*cols+wg-1)/wg+1) {
		cols = (cols + 1) / 2
	}
	return cols
}

// ScatterAdd adds row i of src into row idx[i] of out, for every i:
// out[idx[i], :] += src[i, :], the segment sums of an embedding's
// gradient. src is [N, D], idx [N] (uint32 or int32), out [V, D], read
// and written (so written before); indices outside 0..V-1 add nowhere.
// Deterministic: the rows landing on one output row are added in the
// order of i (in float32 for Float16), then added to it once, with no
// atomics, so equal inputs give equal bits on every device (on a CPU
// driver, rows past what one launch's loops may run, some 65000 over
// ceil(D/64), go in chunks of that many, each chunk's sum added once, in
// order; a dynamic src, whose launch has fewer groups as the param
// holds fewer rows, each walking more output rows, is refused where at
// some value of the param a lane would run past it). It reads idx
// once per output row (V*N reads): meant for the sizes of a batch's
// lookups, not for millions of rows at once. out may not share memory
// with src or idx. Every element type ops has kernels for.
//
// With a dynamic src or idx (both, if both are, on one param), only the
// param's first rows are added, when the work runs: a captured graph
// follows every Set of it. out, whose rows are the indices' range, is
// static; a dynamic out is refused.
func ScatterAdd[T vkc.Element, I int32 | uint32](s *vkc.Stream, src Tensor[T], idx Tensor[I], out Tensor[T]) error {
	const op = "ScatterAdd"
	et, err := checkType[T](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, src, idx, out)
	if err != nil {
		return err
	}
	if src.Rank() != 2 || idx.Rank() != 1 || out.Rank() != 2 || src.at.shape[0] != idx.at.shape[0] || src.at.shape[1] != out.at.shape[1] {
		return fmt.Errorf("vkc: %s: src %v, idx %v, out %v: want src [N, D], idx [N], out [V, D]", op, src.at.shape, idx.at.shape, out.at.shape)
	}
	rowsP, err := scatterRows(op, src, idx, out)
	if err != nil {
		return err
	}
	if err := writable(op, "out", out); err != nil {
		return err
	}
	if err := noOverlap(op, src, out); err != nil {
		return err
	}
	if err := noOverlap(op, idx, out); err != nil {
		return err
	}
	k, err := c.kernel(op, "scatter_add_"+et.suffix)
	if err != nil {
		return err
	}
	V, N, D := out.at.shape[0], src.at.shape[0], src.at.shape[1]
	var flags uint32
	if rowsP != nil {
		flags |= flagDynamic
	}
	at := func(i0, n int) push {
		return push{}.u(flags, uint32(n), uint32(V), uint32(D)).
			u(uint32(src.at.offset+i0*src.at.strides[0]), uint32(src.at.strides[0]), uint32(src.at.strides[1])).
			u(uint32(idx.at.offset+i0*idx.at.strides[0]), uint32(idx.at.strides[0])).
			u(uint32(out.at.offset), uint32(out.at.strides[0]), uint32(out.at.strides[1]))
	}
	// A dynamic launch: a group per output row at the capacity, fewer in
	// proportion to the param, per of its rows a group; the kernel's
	// groups stride over the output rows.
	maxX, per := c.maxGroupsX(), 0
	if rowsP != nil {
		per = max(1, (N+V-1)/V, (N+int(maxX)-1)/int(maxX))
	}
	chunk, err := scatterChunk(op, c.dev.Info().Type == vkc.TypeCPU, N, V, D, per)
	if err != nil {
		return err
	}
	if rowsP == nil {
		return scatterChunks(c, op, k, V, N, chunk, at, src.buf, idx.buf, out.buf)
	}
	p := at(0, N)
	g := vkc.GroupsOf(rowsP, uint32(per))
	preS, errS := prefixOf(op, "src", 0, src, src.rows != nil, false)
	preI, errI := prefixOf(op, "idx", 1, idx, idx.rows != nil, false)
	if err := cmp.Or(errS, errI); err != nil {
		return err
	}
	for _, pr := range slices.Concat(preS, preI) {
		g = g.Prefix(pr.binding, pr.per)
	}
	return k.LaunchIndirect(s, g, p, src.buf, idx.buf, out.buf, rowsP)
}

// scatterChunks launches ScatterAdd's static work: a group per output
// row, over src's N rows chunk a launch (push at(i0, n) for rows i0 on).
func scatterChunks(c *opContext, op string, k *vkc.Kernel, V, N, chunk int, at func(i0, n int) push, args ...vkc.Arg) error {
	g, err := groupsFor(V, c.dev.Info().Limits.MaxComputeWorkGroupCount)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	for i0 := 0; i0 == 0 || i0 < N; i0 += chunk {
		if err := k.Launch(c.s, g, at(i0, min(chunk, N-i0)), append(args, c.rows)...); err != nil {
			return err
		}
	}
	return nil
}

// scatterChunk is how many of src's N rows one ScatterAdd launch adds: a
// lane of the group of output row v scans every one of them for v, for
// each of its ceil(D/64) columns, so on a CPU driver more than about
// loopBudget/ceil(D/64) rows would run it past the loop budget and leave
// the sum short. Static rows past that go in chunks, a launch each, each
// chunk's sum added to out once, in order. A dynamic src (per > 0, the
// param's rows a group of its launch) has ceil(n/per) groups at a param
// of n, striding over the V output rows, so a lane walks ceil(V/g) rows,
// each its columns' scans of the n source rows: where the most of that
// over the param's values (dynamicMost) runs past the budget it is
// refused with an error wrapping vkc.ErrUnsupported, as is a row too
// wide for a chunk of one.
func scatterChunk(op string, cpu bool, N, V, D, per int) (int, error) {
	cols := (D + wg - 1) / wg
	if per > 0 {
		if !cpu {
			return N, nil
		}
		it := dynamicMost(N, per, func(g, n int) int { return (V+g-1)/g*(1+cols*(n+2)) + 1 })
		if !loopsFit(cpu, it) {
			return 0, fmt.Errorf("vkc: %s: dynamic src of %d rows into %d rows of %d columns: a lane would run up to %d loop iterations, more than the CPU driver's %d: %w",
				op, N, V, D, it, loopBudget, vkc.ErrUnsupported)
		}
		return N, nil
	}
	if loopsFit(cpu, cols*(N+2)) {
		return max(N, 1), nil
	}
	chunk := (loopBudget-loopMargin)/cols - 2
	if chunk < 1 {
		return 0, fmt.Errorf("vkc: %s: rows of %d elements: a lane would run %d loop iterations a source row, past the CPU driver's %d: %w", op, D, cols, loopBudget, vkc.ErrUnsupported)
	}
	return chunk, nil
}

// scatterRows is the param of ScatterAdd's dynamic src or idx, nil if
// neither is: one param for both, out static, the value within N.
func scatterRows[T vkc.Element, I int32 | uint32](op string, src Tensor[T], idx Tensor[I], out Tensor[T]) (*vkc.Param[uint32], error) {
	p := cmp.Or(src.rows, idx.rows)
	switch {
	case out.rows != nil:
		return nil, fmt.Errorf("vkc: %s: out %v is dynamic; its rows are the indices' range, static: only src and idx may be", op, out)
	case p == nil:
		return nil, nil
	case src.rows != nil && idx.rows != nil && src.rows != idx.rows:
		return nil, fmt.Errorf("vkc: %s: src and idx are dynamic with two params: make both Dynamic with one", op)
	}
	if n := p.Value(); n < 1 || int(n) > src.at.shape[0] {
		return nil, fmt.Errorf("vkc: %s: the rows param holds %d, outside 1..%d, the capacity of src %v", op, n, src.at.shape[0], src.at.shape)
	}
	return p, nil
}
