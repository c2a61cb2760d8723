package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vkcompute/vkc"
)

// The reduce kernel's op codes (reduce.glsl).
const (
	redSum uint32 = iota
	redMax
)

// flagLanes: one invocation per output element (reduce.glsl).
const flagLanes = 1

// Sum writes the sum of x along axis into out. out has x's shape without
// that axis, or with it of extent 1 (NumPy's keepdims): both address the
// same elements, so either may be given. axis may count from the end
// (-1: the last). x may have any layout; out needs distinct elements and
// may not share memory with x. Floats add in their compute type (float32
// for Float16, whose result rounds to Float16 once) in an order that
// depends on the shape, never on timing: the same inputs give the same
// bits. int32 and uint32 wrap on overflow.
//
// A dynamic axis 0 (Tensor.Dynamic) is followed when the work runs.
// Reducing along another axis, x and out keep it: out must be Dynamic
// with x's param (or x static, read whole), and only its first rows are
// written. Reducing along the dynamic axis 0 itself covers only the
// param's rows (Mean divides by their count) into a static out. A
// captured graph follows every Set of the param with no re-capture. Its
// launch has at most as many groups as the param's rows, each striding
// over the outputs: on a CPU driver, where an invocation would then run
// past the loop budget at some value of the param (many outputs a row
// and few rows, or many outputs reduced along a short dynamic axis), it
// is refused with an error wrapping vkc.ErrUnsupported.
//
// Summing all of a tensor is a Sum of it reshaped to one axis. On float32
// rows that are contiguous (axis the last, its extent and x's offset
// multiples of 4) Sum reads four elements a load. On a CPU driver it
// reads them as rgba32f texels where x's buffer can be bound so (see
// rowsKernel), about memcpy's speed on lavapipe, else eight elements a
// 64-bit load where they are multiples of 8 and the device has 64-bit
// integers (FeatureInt64); both add in the same order. Where the texel
// kernel applies and the 64-bit one does not, the order differs from the
// one a buffer that cannot be bound as texels gets, so a sum may then
// differ in its last bits between the two. Max reads such rows as texels
// too, where Sum would.
func Sum[T vkc.Element](s *vkc.Stream, x Tensor[T], axis int, out Tensor[T]) error {
	return reduce(s, "Sum", redSum, numericTypes, x, axis, out, false)
}

// Mean writes the mean of x along axis into out: Sum times 1/extent, in
// the compute type. See Sum; floats only (float32, Float16, float64).
func Mean[T vkc.Element](s *vkc.Stream, x Tensor[T], axis int, out Tensor[T]) error {
	return reduce(s, "Mean", redSum, floatTypes, x, axis, out, true)
}

// Max writes the largest element of x along axis into out; see Sum for
// shapes and dynamic axes. Exact for every type. With a NaN among the elements the result
// is unspecified (the device's comparison decides).
func Max[T vkc.Element](s *vkc.Stream, x Tensor[T], axis int, out Tensor[T]) error {
	return reduce(s, "Max", redMax, numericTypes, x, axis, out, false)
}

// Argmax writes into out the index along axis of the largest element of
// x, the first such index on ties, as uint32 or int32. Shapes and
// dynamic axes as in Sum. With a NaN among the elements the result is unspecified.
// On a CPU driver an axis of more than about 4.18 million elements,
// which its one pass cannot walk within the driver's loop budget, is
// refused with an error wrapping vkc.ErrUnsupported, as is a dynamic
// launch whose few groups would walk too many outputs (see Sum).
func Argmax[T vkc.Element, I int32 | uint32](s *vkc.Stream, x Tensor[T], axis int, out Tensor[I]) error {
	const op = "Argmax"
	et, err := checkType[T](op, numericTypes)
	if err != nil {
		return err
	}
	c, err := begin(op, s, x, out)
	if err != nil {
		return err
	}
	r, err := reducePlan(op, x, axis, out.at, out.rows, writable(op, "out", out))
	if err != nil {
		return err
	}
	if err := noOverlap(op, x, out); err != nil {
		return err
	}
	if r.outPre, err = prefixOf(op, "out", 1, out, r.dynOut, true); err != nil {
		return err
	}
	if err := r.checkLoops(c, op, x.at.shape, r.mode()); err != nil {
		return err
	}
	k, err := c.kernel(op, "argmax_"+et.suffix)
	if err != nil {
		return err
	}
	return r.launch(c, k, redMax, r.mode(), x.at.offset, out.at.offset, 1, et, x.buf, out.buf)
}

// checkLoops refuses, on a CPU driver, a pass of splits splits (0:
// lanes) whose longest invocation would run more loop iterations than
// the driver's budget (loopIters), with an error wrapping
// vkc.ErrUnsupported: the driver would leave outputs short or unwritten.
// Argmax has no second pass to split a long axis over (its partials
// would need their values), so past the budget it is refused.
func (r reducing) checkLoops(c *opContext, op string, xShape []int, splits int) error {
	if c.dev.Info().Type != vkc.TypeCPU {
		return nil
	}
	if it := r.loopIters(splits, c.maxGroupsX()); !loopsFit(true, it) {
		what := "along axis"
		if r.rows != nil {
			what = "with a dynamic axis 0, along axis"
		}
		return fmt.Errorf("vkc: %s: %s %d of %v: an invocation would run %d loop iterations, more than the CPU driver's %d, which would cut the reduction short: %w",
			op, what, r.axis, xShape, it, loopBudget, vkc.ErrUnsupported)
	}
	return nil
}

// loopIters bounds the loop iterations of the longest invocation of a
// reduce or argmax pass of splits splits (0: lanes), as launch lays it
// out. Each item (an output element in lanes, a split of one in groups)
// costs its share of R (all of it in lanes, ceil(chunk/64) in groups),
// the index loop (rank), the tree (log2 64) in groups and the striding
// loop's own step, but one step for a split past a dynamic R; an
// invocation walks ceil(items/lanes) of them. A
// static launch has a group per item (lanes: per 64 items). A dynamic one
// has ceil(n/per) groups at a param of n (dynamicGroups), which may be
// far fewer than the items, its R or its outputs shrinking with n: the
// bound is the largest over every group count it may launch, each at the
// largest n giving that count.
func (r reducing) loopIters(splits int, maxX uint32) int {
	lanes, chunk := splits == 0, r.R
	groups := r.outCount * splits
	if lanes {
		splits, groups = 1, (r.outCount+wg-1)/wg
	} else {
		chunk = (r.R + splits - 1) / splits
	}
	rank := len(r.shape)
	walk := func(outCount, R, g int) int {
		if lanes {
			return (outCount+g*wg-1)/(g*wg)*(R+rank+2) + 1
		}
		// Items of a split past a dynamic R cost one step (the kernel
		// skips them); of the splits that hold any of R, a group takes at
		// most ceil(full/g) per output (its items are every g-th).
		items, full := (outCount*splits+g-1)/g, splits
		if r.dynR {
			full = min(splits, (R+chunk-1)/chunk)
		}
		busy := min(items, outCount*((full+g-1)/g))
		return busy*((min(chunk, R)+wg-1)/wg+rank+10) + (items - busy) + 1
	}
	if r.rows == nil {
		return walk(r.outCount, r.R, groups)
	}
	capRows, per := r.dynamicPer(groups, maxX)
	return dynamicMost(capRows, per, func(g, n int) int {
		outCount, R := r.outCount, r.R
		if r.dynOut {
			outCount = r.outCount / r.shape[0] * n
		}
		if r.dynR {
			R = min(R, (n+r.rdiv-1)/r.rdiv)
		}
		return walk(outCount, R, g)
	})
}

// reducing is a reduction's plan: the axis, and the output elements'
// merged shape with x's strides and out's over it. With a dynamic axis 0
// rows is its param: dynOut when out keeps it (shape[0], kept first, is
// its capacity), dynR when it is the reduced axis (R its capacity).
type reducing struct {
	axis          int
	R, sR         int
	shape         []int
	sIn, sOut     []int
	outCount      int
	contiguousRow bool // x's reduced rows are contiguous, one after another

	rows          *vkc.Param[uint32]
	dynOut, dynR  bool
	rdiv          int // a dynamic R counts ceil(rows/rdiv) elements
	meanOf        int // a Mean along a dynamic axis of this capacity: scale by 1/min(rows, meanOf)
	inPre, outPre []rowPrefix
}

// reducePlan checks axis and out's layout lo (dynamic on outRows, if not
// nil) against x and lays the output elements out; werr is out's
// writability.
func reducePlan[T vkc.Element](op string, x Tensor[T], axis int, lo layout, outRows *vkc.Param[uint32], werr error) (reducing, error) {
	if werr != nil {
		return reducing{}, werr
	}
	rank := len(x.at.shape)
	if axis < -rank || axis >= rank {
		return reducing{}, fmt.Errorf("vkc: %s: axis %d of shape %v", op, axis, x.at.shape)
	}
	if axis < 0 {
		axis += rank
	}
	dynOut, dynR, err := reduceDynamic(op, x, axis, outRows)
	if err != nil {
		return reducing{}, err
	}
	dropped := slices.Delete(slices.Clone(x.at.shape), axis, axis+1)
	kept := slices.Clone(x.at.shape)
	kept[axis] = 1
	var outStrides []int
	switch {
	case slices.Equal(lo.shape, kept):
		outStrides = slices.Delete(slices.Clone(lo.strides), axis, axis+1)
	case slices.Equal(lo.shape, dropped):
		outStrides = slices.Clone(lo.strides)
	default:
		return reducing{}, fmt.Errorf("vkc: %s: out has shape %v; along axis %d of %v it must be %v (or %v, keepdims)", op, lo.shape, axis, x.at.shape, dropped, kept)
	}
	inStrides := slices.Delete(slices.Clone(x.at.strides), axis, axis+1)
	shape, st := mergeAxes(dropped, [][]int{inStrides, outStrides}, dynOut)
	if len(shape) > maxRank-1 {
		return reducing{}, fmt.Errorf("vkc: %s: the output's shape %v needs %d axes once merged, more than the %d the kernels take", op, dropped, len(shape), maxRank-1)
	}
	n, _ := count(shape)
	r := reducing{axis: axis, R: x.at.shape[axis], sR: x.at.strides[axis], shape: shape, sIn: st[0], sOut: st[1], outCount: n,
		dynOut: dynOut, dynR: dynR, rdiv: 1}
	r.contiguousRow = (r.sR == 1 || r.R == 1) && rowMajor(shape, scaled(st[0], r.R))
	if dynOut || dynR {
		r.rows = cmp.Or(outRows, x.rows)
		r.contiguousRow = false // the row kernels take static extents
		if r.inPre, err = prefixOf(op, "x", 0, x, x.rows != nil, false); err != nil {
			return reducing{}, err
		}
	}
	return r, nil
}

// reduceDynamic checks a dynamic axis 0 of x or out against the reduced
// axis: out may be dynamic only when axis is not 0, with x's param if x
// is dynamic too (dynOut); x alone may be dynamic only when axis is 0
// (dynR). The param's value now must be within the capacity.
func reduceDynamic[T vkc.Element](op string, x Tensor[T], axis int, outRows *vkc.Param[uint32]) (dynOut, dynR bool, err error) {
	p := cmp.Or(outRows, x.rows)
	switch {
	case p == nil:
		return false, false, nil
	case outRows != nil && axis == 0:
		return false, false, fmt.Errorf("vkc: %s: out is dynamic and axis 0 is the one reduced: out's axis 0 is not x's", op)
	case outRows != nil && x.rows != nil && x.rows != outRows:
		return false, false, fmt.Errorf("vkc: %s: x is dynamic with another param than out's", op)
	case outRows == nil && axis != 0:
		return false, false, fmt.Errorf("vkc: %s: x is dynamic and out is not, reducing along axis %d: out keeps the dynamic axis 0, so make it Dynamic with x's param", op, axis)
	}
	if n := p.Value(); n < 1 || int(n) > x.at.shape[0] {
		return false, false, fmt.Errorf("vkc: %s: the rows param holds %d, outside 1..%d, the capacity of x %v", op, n, x.at.shape[0], x.at.shape)
	}
	return outRows != nil, outRows == nil, nil
}

// scaled is strides divided by n where they divide (rows of n elements
// one after another have row strides n).
func scaled(strides []int, n int) []int {
	out := make([]int, len(strides))
	for i, s := range strides {
		if s%n != 0 {
			return append(out[:0:0], -1)
		}
		out[i] = s / n
	}
	return out
}

// noOverlap refuses an out sharing memory with x.
func noOverlap[T, U vkc.Element](op string, x Tensor[T], out Tensor[U]) error {
	xr, err := rangeOf(x)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	or, err := rangeOf(out)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	return checkAliasing(op, false, or, nil, []byteRange{xr}, [][]int{nil})
}

// The reduce kernel's flags for lengths read when the launch runs
// (reduce.glsl).
const (
	flagDynOut  = 2
	flagDynR    = 4
	flagMeanDyn = 8
)

// launch runs a reduce or argmax kernel pass: splits groups per output
// element (or, with splits 0, lanes), writing partials (contiguous, per
// output element) when splits > 1, else out through the plan's strides.
// A dynamic plan launches from its param (dynamicGroups), checking and
// marking only the prefixes inPre and outPre name.
func (r reducing) launch(c *opContext, k *vkc.Kernel, code uint32, splits, offIn, offOut int, scale float64, et elemType, in, out vkc.Arg) error {
	flags, chunk := uint32(0), r.R
	groups := r.outCount * splits
	if splits == 0 {
		flags, splits, groups = flagLanes, 1, (r.outCount+wg-1)/wg
	} else {
		chunk = (r.R + splits - 1) / splits
	}
	p := push{}.u(code, uint32(len(r.shape)), flags|r.dynFlags(), uint32(r.outCount)).
		u(uint32(r.R), uint32(r.sR), uint32(splits), uint32(chunk)).
		u(uint32(offIn), uint32(offOut))
	if r.meanOf > 0 {
		p = p.u(uint32(r.meanOf), 0)
	} else {
		p = p.scalar(scale, et)
	}
	p = p.u(uint32(r.rdiv)).ints(maxRank-1, r.shape).ints(maxRank-1, r.sIn).ints(maxRank-1, r.sOut)
	lim := c.dev.Info().Limits.MaxComputeWorkGroupCount
	if r.rows != nil {
		return k.LaunchIndirect(c.s, r.dynamicGroups(groups, lim[0]), p, in, out, r.rows)
	}
	g, err := groupsFor(groups, lim)
	if err != nil {
		return err
	}
	return k.Launch(c.s, g, p, in, out, c.rows)
}

// dynFlags are the kernel flags of the plan's dynamic extents.
func (r reducing) dynFlags() uint32 {
	var f uint32
	if r.dynOut {
		f |= flagDynOut
	}
	if r.dynR {
		f |= flagDynR
	}
	if r.meanOf > 0 {
		f |= flagMeanDyn
	}
	return f
}

// dynamicGroups sizes a dynamic launch from the param: groups at full
// capacity (capRows rows), fewer in proportion as the param holds fewer,
// at most maxX; the kernel's groups stride over whatever work the
// param's value makes.
func (r reducing) dynamicGroups(groups int, maxX uint32) vkc.Groups {
	_, per := r.dynamicPer(groups, maxX)
	g := vkc.GroupsOf(r.rows, uint32(per))
	for _, pr := range slices.Concat(r.inPre, r.outPre) {
		g = g.Prefix(pr.binding, pr.per)
	}
	return g
}

// dynamicPer is a dynamic launch's capacity in param rows and the rows
// a group covers (dynamicGroups): as many groups as the static plan's
// at capacity, at most maxX.
func (r reducing) dynamicPer(groups int, maxX uint32) (capRows, per int) {
	capRows = r.R * r.rdiv // the first pass's R for a second pass's partials
	if r.dynOut {
		capRows = r.shape[0]
	}
	return capRows, max(1, (capRows+groups-1)/max(groups, 1), (capRows+int(maxX)-1)/int(maxX))
}

// partials is the scratch for a first pass's partials: float32 for
// Float16 (which accumulates in float32), T otherwise; release unlocks
// it once the passes are recorded.
func partials[T vkc.Element](dk *deviceKernels, et elemType, n int) (part vkc.Arg, release func(), err error) {
	if et.suffix == "f16" {
		return scratchOf[float32](dk, n)
	}
	return scratchOf[T](dk, n)
}

// reduce runs Sum, Mean and Max: one pass when each output element's
// reduction fits one workgroup's share, else two (twoPass).
func reduce[T vkc.Element](s *vkc.Stream, op string, code uint32, types []string, x Tensor[T], axis int, out Tensor[T], mean bool) error {
	et, err := checkType[T](op, types)
	if err != nil {
		return err
	}
	c, err := begin(op, s, x, out)
	if err != nil {
		return err
	}
	r, err := reducePlan(op, x, axis, out.at, out.rows, writable(op, "out", out))
	if err != nil {
		return err
	}
	if err := noOverlap(op, x, out); err != nil {
		return err
	}
	if r.outPre, err = prefixOf(op, "out", 1, out, r.dynOut, true); err != nil {
		return err
	}
	scale := 1.0
	if mean {
		scale = 1 / float64(r.R)
		if r.dynR {
			r.meanOf = r.R
		}
	}
	k, err := c.kernel(op, "reduce_"+et.suffix)
	if err != nil {
		return err
	}
	if r.R <= perGroup {
		if err := r.checkLoops(c, op, x.at.shape, r.mode()); err != nil {
			return err
		}
		return r.launch(c, k, code, r.mode(), x.at.offset, out.at.offset, scale, et, x.buf, out.buf)
	}
	return twoPass(c, op, code, et, r, x, out, scale)
}

// twoPass reduces into partials[e*splits + j], the first pass (one of
// rowsFirst's for contiguous float32 rows, else the reduce kernel), then
// reduces each output element's splits into out.
func twoPass[T vkc.Element](c *opContext, op string, code uint32, et elemType, r reducing, x, out Tensor[T], scale float64) error {
	splits := (r.R + perGroup - 1) / perGroup
	rows := rowsFirst(c.dev, code, et, r, x)
	if rows != "" {
		splits = (r.R + sumSpan - 1) / sumSpan
	}
	if r.outCount > maxElements/splits {
		return fmt.Errorf("vkc: %s: %d outputs of %d partials each are too many", op, r.outCount, splits)
	}
	// The partials as the second pass's input: output element e's splits
	// at e*splits, one apart; along a dynamic axis only the first
	// ceil(rows/chunk) of them, those the first pass wrote.
	r2 := reducing{axis: r.axis, R: splits, sR: 1, outCount: r.outCount, shape: r.shape, sOut: r.sOut, sIn: make([]int, len(r.shape)),
		rows: r.rows, dynOut: r.dynOut, dynR: r.dynR, rdiv: (r.R + splits - 1) / splits, meanOf: r.meanOf, outPre: r.outPre}
	step := splits
	for i := len(r.shape) - 1; i >= 0; i-- {
		r2.sIn[i] = step
		step *= r.shape[i]
	}
	if rows == "" {
		if err := r.checkLoops(c, op, x.at.shape, splits); err != nil {
			return err
		}
	}
	if err := r2.checkLoops(c, op, x.at.shape, r2.mode()); err != nil {
		return err
	}
	part, release, err := partials[T](c.dk, et, r.outCount*splits)
	if err != nil {
		return fmt.Errorf("vkc: %s: partials: %w", op, err)
	}
	defer release()
	if rows != "" {
		err = sumRows(c, op, rows, r, x, splits, part)
	} else {
		err = firstPass(c, op, code, et, r, x, splits, part)
	}
	if err != nil {
		return err
	}
	second, et2 := "reduce_"+et.suffix, et
	if et.suffix == "f16" {
		second, et2 = "reduce_f32_f16", typeOf[float32]()
	}
	k, err := c.kernel(op, second)
	if err != nil {
		return err
	}
	return r2.launch(c, k, code, r2.mode(), 0, out.at.offset, scale, et2, part, out.buf)
}

// firstPass is the reduce kernel's first pass into partials (float32
// partials for Float16).
func firstPass[T vkc.Element](c *opContext, op string, code uint32, et elemType, r reducing, x Tensor[T], splits int, part vkc.Arg) error {
	name := "reduce_" + et.suffix
	if et.suffix == "f16" {
		name = "reduce_f16_f32"
	}
	k, err := c.kernel(op, name)
	if err != nil {
		return err
	}
	r.outPre, r.meanOf = nil, 0 // into partials, written whole
	return r.launch(c, k, code, splits, x.at.offset, 0, 1, et, x.buf, part)
}

// rowsFirst names the first pass over contiguous float32 rows (R and
// the offset multiples of 4) that reads four or eight elements a load,
// SPAN (sumSpan) elements a group: for a sum rowsKernel's choice, for a
// maximum max_texel_f32 where that choice is the texel kernel; "" where
// none applies (the reduce kernel's first pass).
func rowsFirst[T vkc.Element](dev *vkc.Device, code uint32, et elemType, r reducing, x Tensor[T]) string {
	if et.suffix != "f32" || !r.contiguousRow || x.at.offset%4 != 0 || r.R%4 != 0 {
		return ""
	}
	name := rowsKernel(dev, r, x)
	switch {
	case code == redSum:
		return name
	case code == redMax && name == pathTexel:
		return "max_texel_f32"
	}
	return ""
}

// sumRows runs the first pass name (rowsFirst) over contiguous float32
// rows into part.
func sumRows[T vkc.Element](c *opContext, op, name string, r reducing, x Tensor[T], splits int, part vkc.Arg) error {
	k, err := c.kernel(op, name)
	if err != nil {
		return err
	}
	g, err := groupsFor(r.outCount*splits, c.dev.Info().Limits.MaxComputeWorkGroupCount)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", op, err)
	}
	p := push{}.u(uint32(r.outCount), uint32(r.R), uint32(splits), uint32(x.at.offset))
	return k.Launch(c.s, g, p, x.buf, part)
}

// sumPath, when set, forces rowsKernel's choice (tests): pathTexel,
// pathWide or pathVec4.
var sumPath string

// rowsKernel's kernels.
const (
	pathTexel = "sum_texel_f32"
	pathWide  = "sum_rows_wide_f32"
	pathVec4  = "sum_rows_f32"
)

// rowsKernel names the first pass of a sum over contiguous float32 rows
// (R and the offset multiples of 4). On a CPU driver (lavapipe's loads
// cost per load, not per byte): sum_texel_f32 where x's buffer can be
// bound as rgba32f texels (texelBindable), which gathers each lane's
// four elements with one vector load; else the 64-bit-load build where
// the device has 64-bit integers and the rows start at multiples of 8
// elements. Elsewhere, and as the last resort, the vec4 one.
func rowsKernel[T vkc.Element](dev *vkc.Device, r reducing, x Tensor[T]) string {
	info := dev.Info()
	wide := info.Features.Has(vkc.FeatureInt64) && x.at.offset%8 == 0 && r.R%8 == 0
	switch {
	case sumPath == pathTexel && texelBindable(info.Limits, x.buf), sumPath == pathVec4, sumPath == pathWide && wide:
		return sumPath
	case sumPath != "" || info.Type != vkc.TypeCPU:
		return pathVec4
	case texelBindable(info.Limits, x.buf):
		return pathTexel
	case wide:
		return pathWide
	}
	return pathVec4
}

// texelBindable reports whether b can be bound whole to a storage texel
// binding of four-element texels: its first byte at a multiple of both
// offset alignments (a buffer at a storage-aligned offset is bound as it
// is, with no stand-in) and at most maxTexelBufferElements texels.
func texelBindable[T vkc.Element](lim vkc.Limits, b *vkc.Buffer[T]) bool {
	vb, err := b.VulkanBuffer()
	if err != nil {
		return false
	}
	for _, a := range []uint64{lim.MinTexelBufferOffsetAlignment, lim.MinStorageBufferOffsetAlignment} {
		if a != 0 && vb.Offset%a != 0 {
			return false
		}
	}
	return b.Len()/4 >= 1 && b.Len()/4 <= int(lim.MaxTexelBufferElements)
}

// perGroup is how many elements a workgroup of the reduce kernel reduces
// at most before a reduction is split into two passes.
const perGroup = 4096

// mode is how one pass lays the work out: 0 (lanes) for short reductions
// or many outputs, else 1 (one group per output element). A dynamic plan
// takes lanes up to 1024 elements too: its groups shrink with the param,
// and a group's tree over a few of the capacity's elements is mostly
// barriers.
func (r reducing) mode() int {
	if r.R <= 32 || (r.outCount >= 1024 && r.R <= 1024) || (r.rows != nil && r.R <= 1024) {
		return 0
	}
	return 1
}

// sumSpan is how many elements a group of each of rowsFirst's kernels
// reduces (their SPAN).
const sumSpan = 16384
