package ops

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/vkcompute/vkc"
)

// variant is one way of computing a matmul. Every variant computes the
// same product (to the stated tolerance); they differ in speed by shape.
type variant uint8

const (
	// generic: matmul_generic, any layout and type, 4 x 4 blocks of C
	// per invocation and one element per load.
	variantGeneric variant = iota
	// wide: matmul_wide, float32 with 16 x 32 blocks and eight elements
	// per load; needs unit strides along K (A) and N (B), aligned.
	variantWide
	// gemv: matmul_gemv, M = 1 or N = 1, each element of the matrix read
	// once, eight at a time where aligned.
	variantGEMV
	// splitK: matmul_generic_partial over slices of K into a temporary,
	// then matmul_reduce: for long K and few outputs.
	variantSplitK
	// texel: matmul_texel, float32 with 16 x 32 blocks (wide's) and A
	// and B read as rgba32f storage texels: on CPU drivers a texel load
	// gathers each lane's four elements at once, about 1.5x wide's speed.
	// Needs both buffers bindable as texels, unit strides along K (A) and
	// N (B), texel-aligned offsets, row and batch strides, K a multiple
	// of 4, and the texel of B's last column inside its buffer. It takes batches
	// (group z) and, built as matmul_texel_dyn, a dynamic M. Its workgroup
	// is set by specialization constants (texelShape).
	variantTexel
	// texelPacked: A and B copied (converted from Float16) into float32
	// temporaries laid out for texel, K and N padded with zeros to
	// multiples of 8, then texel on them writing C with its epilogue
	// (through a float32 temporary for Float16): for large float32
	// products whose layouts or sizes keep them off texel, and large
	// Float16 ones.
	variantTexelPacked
	// gemvTexel: matmul_gemv_texel, float32 M = 1 or N = 1 with the
	// matrix and the vector read as rgba32f storage texels: for CPU
	// drivers, where a texel load gathers each lane's four elements at
	// once. Needs both buffers bindable as texels, unit strides along the
	// vector and along K (n = 1) or N (m = 1), texel-aligned offsets and
	// row strides, and no batch or dynamic M.
	variantGEMVTexel
	// splitKTexel: matmul_splitk_texel, split-K's first pass for at most
	// splitTexelMaxM rows of float32 with A and B read as storage texels,
	// then matmul_reduce: long K into few outputs on CPU drivers. Needs
	// what gemvTexel needs of A (rows) and B (rows).
	variantSplitKTexel
	// i8Generic: MatmulInt8's matmul_i8, int8 A and B of any layout read
	// a byte at a time (8-bit storage), int32 sums.
	variantI8Generic
	// i8Dot4: MatmulInt8's matmul_i8_dot4, four products of signed bytes
	// per OpSDot on packed words (FeatureIntegerDotProduct); A's rows and
	// B's columns K-contiguous and word-aligned, K a multiple of 4.
	variantI8Dot4
	// coopMat: matmul_coopmat, the device's cooperative matrices (tensor
	// cores and kin, FeatureCooperativeMatrix) on blocks of A and B staged
	// in shared memory: any layout, Float16 (or float32 where the device
	// has such a configuration) into float32 sums; see matmul_coopmat.go.
	variantCoopMat
	// i8CoopMat: MatmulInt8's matmul_coopmat_i8, the device's int8
	// cooperative matrices summed in int32; any layout.
	variantI8CoopMat
	numVariants
)

var variantNames = [numVariants]string{"generic", "wide", "gemv", "splitk", "texel", "texel-packed", "gemv-texel", "splitk-texel", "i8-generic", "i8-dot4", "coopmat", "i8-coopmat"}

func (v variant) String() string {
	if v < numVariants {
		return variantNames[v]
	}
	return fmt.Sprintf("variant(%d)", uint8(v))
}

// variantNamed is the variant of a name String gave, for the tuner's file.
func variantNamed(name string) (variant, bool) {
	for i, n := range variantNames {
		if n == name {
			return variant(i), true
		}
	}
	return 0, false
}

// The limits of the kernels' geometry.
const (
	genericTile    = 4  // matmul_generic: a 4 x 4 block of C per invocation
	genericLocalX  = 16 // its default workgroup, 16 x 8
	genericLocalY  = 8
	splitLocal     = 8  // matmul_generic_partial: 8 x 1
	wideRows       = 16 // matmul_wide: 16 rows x 4 octets per invocation
	wideOcts       = 4
	wideLocal      = 8 // 8 x 8
	gemvLocal      = 64
	reduceLocal    = 64
	splitMinK      = 1024 // split-K applies from this K
	splitMaxOut    = 4096 // and up to this many elements of C (batches included)
	splitLanes     = 512  // split-K aims at about this many invocations
	splitMinSlice  = 256  // and at least this much of K per invocation
	maxGroupsLimit = 65535
	packMin        = 64 // texel-packed: M and N at least this
)

// applies reports whether variant v can compute p. A dynamic M runs only
// through the generic and texel kernels' _dyn builds, whose indirect
// launches mark written just the rows M covers on every replay: the other
// kernels' launches are tiles of C at its capacity, which would count
// rows of C past M as written (and make rows of A past M that no work
// wrote skip the product).
func (p *problem) applies(v variant) bool {
	if p.dynamic && v != variantGeneric && v != variantTexel {
		return false
	}
	return p.fits(v)
}

// fits reports whether variant v's kernels can compute p's shape and
// layouts, M taken as static, and on a CPU driver within the loop
// iterations an invocation runs (loopsFit): past them lavapipe stops the
// loop over K and stores a short sum, so a variant the tuner measured
// there would look fast and be wrong.
func (p *problem) fits(v variant) bool {
	return p.layoutFits(v) && loopsFit(p.cpu, p.loopIters(v))
}

// layoutFits reports whether variant v's kernels can read and write p's
// operands as they lie, whatever their loops' length.
func (p *problem) layoutFits(v variant) bool {
	switch v {
	case variantGeneric:
		return true
	case variantWide:
		return p.wideFits()
	case variantGEMV:
		return p.elem == elemF32 && p.int64 && (p.m == 1 || p.n == 1) && len(p.batch) <= 1
	case variantSplitK:
		// Few outputs; or any number where one pass over K would take
		// more loop iterations than the device runs.
		return p.k >= splitMinK && (p.m*p.n*p.batches() <= splitMaxOut || !loopsFit(p.cpu, p.k))
	case variantTexel:
		return p.texelFits()
	case variantTexelPacked:
		return p.packFits()
	case variantGEMVTexel:
		return p.gemvTexelFits()
	case variantSplitKTexel:
		return p.m <= splitTexelMaxM && p.k >= splitMinK && p.texelRowMajor()
	case variantCoopMat:
		return p.coopFits()
	}
	return false
}

// loopIters is an upper estimate of the loop iterations of variant v's
// longest invocation (all its loops, both passes' for split-K), from its
// kernel's loops over K and, for a dynamic M, over column blocks.
func (p *problem) loopIters(v variant) int {
	k8 := ceilDiv(p.k, 8)
	switch v {
	case variantGeneric:
		if p.dynamic {
			return ceilDiv(p.n, genericTile*genericLocalX) * (p.k + 1)
		}
		return p.k
	case variantWide, variantTexelPacked:
		return k8 + 1
	case variantTexel:
		if p.dynamic {
			g := p.texelShape()
			return ceilDiv(ceilDiv(p.n, 8), g.octs*g.lx) * (k8 + 2)
		}
		return k8 + 1
	case variantGEMV:
		return p.k
	case variantGEMVTexel:
		return ceilDiv(p.k, 4) + 4 + gemvTexelLocal
	case variantSplitK:
		inner := 1
		if len(p.batch) > 0 {
			inner = p.batch[len(p.batch)-1]
		}
		kSlice, splits := p.splitShape(inner)
		return max(kSlice, splits)
	case variantSplitKTexel:
		sliceQ, splits := p.splitTexelShape()
		return max(ceilDiv(sliceQ, gemvTexelLocal)+4+gemvTexelLocal, splits)
	case variantCoopMat:
		return p.coopIters()
	}
	return p.k
}

// texelRowMajor reports whether matmul_splitk_texel can read A and B:
// float32, one product, both bindable as texels, unit strides
// along K (A) and N (B), offsets and row strides multiples of 4, the
// last row's texel past N inside B's buffer, and few enough groups.
func (p *problem) texelRowMajor() bool {
	return p.elem == elemF32 && len(p.batch) == 0 && p.texelA && p.texelB &&
		p.a.col == 1 && p.b.col == 1 && aligned4(p.a.off, p.a.row, p.b.off, p.b.row) &&
		p.b.off+(p.k-1)*p.b.row+4*ceilDiv(p.n, 4) <= p.bLen/4*4 && ceilDiv(p.n, 4) <= maxGroupsLimit
}

// texelFits reports whether matmul_texel can compute p: float32, A and B
// bindable as texels, unit strides along K (A) and N (B), offsets, row
// and batch strides multiples of 4, K a multiple of 4, the texel of B's
// last column inside its buffer, and few enough groups.
func (p *problem) texelFits() bool {
	if p.elem != elemF32 || !p.texelA || !p.texelB || p.k%4 != 0 || p.a.col != 1 || p.b.col != 1 {
		return false
	}
	if !aligned4(p.a.off, p.a.row, p.b.off, p.b.row) || !aligned4(p.a.batch...) || !aligned4(p.b.batch...) {
		return false
	}
	lastB := p.b.off + p.reach(p.b.batch) + (p.k-1)*p.b.row + 4*ceilDiv(p.n, 4)
	if lastB > p.bLen/4*4 {
		return false
	}
	g := p.texelShape()
	x, y := ceilDiv(ceilDiv(p.n, 8), g.octs*g.lx), ceilDiv(p.m, g.rows*g.ly)
	if p.dynamic {
		x, y = y, 1
	}
	return x <= maxGroupsLimit && y <= maxGroupsLimit && (len(p.batch) == 0 || p.batch[len(p.batch)-1] <= maxGroupsLimit)
}

// packFits reports whether texel-packed can compute p: float32 or
// Float16 (converted to float32 and summed there), one
// product that texel cannot take as it lies (a K not a multiple of 4, a
// transposed or unaligned operand), M and N large, and the temporaries
// within a texel binding's reach. Once texel compiled its epilogue in,
// it ran 1000 x 3000 x 500 faster as it lies (K % 8 of 4) than padded.
func (p *problem) packFits() bool {
	if p.elem == elemF64 || len(p.batch) != 0 || p.m < packMin || p.n < packMin || p.texelFits() {
		return false
	}
	k8, n8 := ceilDiv(p.k, 8)*8, ceilDiv(p.n, 8)*8
	return p.m*k8/4 <= p.maxTexels && k8*n8/4 <= p.maxTexels &&
		ceilDiv(p.m, 16*8) <= maxGroupsLimit && ceilDiv(n8/8, 4*8) <= maxGroupsLimit
}

// texelGeometry is matmul_texel's workgroup, lx x ly invocations (its
// specialization constants 0 and 1), each keeping rows x 8*octs elements
// of C (its ROWS and OCTS, compiled in: octs 2 is the narrow build).
type texelGeometry struct{ lx, ly, rows, octs int }

// texelShape is the geometry matmul_texel runs p with: 16 x 32 blocks in
// groups of 8 x 8, or, where N is at most 128 (a batch of small
// products), the narrow build's 16 x 16 blocks in groups of 8 x 8, one
// group 128 columns wide. A CPU driver runs a group's invocations eight
// lanes at a time along x: the wide block's group is 256 columns, and
// lanes past N would redo the last octet's work, while a group 4 wide
// (the other way to fit 128) puts two rows of A in one gather and ran
// half as fast on lavapipe. Each geometry is a pipeline of its own,
// compiled on first use, so there are only these two.
func (p *problem) texelShape() texelGeometry {
	if ceilDiv(p.n, 8) <= 16 {
		return texelGeometry{lx: 8, ly: 8, rows: 16, octs: 2}
	}
	return texelGeometry{lx: 8, ly: 8, rows: 16, octs: 4}
}

// gemvTexelFits reports whether matmul_gemv_texel can compute p: float32,
// one product, A and B bindable as texels, and (n = 1) A's rows
// unit-stride and B's column too, or (m = 1) B's rows and A's row
// unit-stride, with A's and B's offsets and row strides multiples of 4
// and, for m = 1, the last row's texel past N inside B's buffer; and
// few enough groups.
func (p *problem) gemvTexelFits() bool {
	if p.elem != elemF32 || len(p.batch) != 0 || !p.texelA || !p.texelB {
		return false
	}
	switch {
	case p.n == 1:
		return p.a.col == 1 && p.b.row == 1 && aligned4(p.a.off, p.a.row, p.b.off) &&
			ceilDiv(p.m, gemvTexelRows) <= maxGroupsLimit
	case p.m == 1:
		return p.b.col == 1 && p.a.col == 1 && aligned4(p.b.off, p.b.row, p.a.off) &&
			p.b.off+(p.k-1)*p.b.row+4*ceilDiv(p.n, 4) <= p.bLen/4*4 &&
			ceilDiv(ceilDiv(p.n, 4), gemvTexelLocal) <= maxGroupsLimit
	}
	return false
}

// aligned8 reports whether every value is a multiple of 8.
func aligned8(xs ...int) bool {
	for _, x := range xs {
		if x%8 != 0 {
			return false
		}
	}
	return true
}

// aligned4 reports whether every value is a multiple of 4.
func aligned4(xs ...int) bool {
	for _, x := range xs {
		if x%4 != 0 {
			return false
		}
	}
	return true
}

// reach is the largest offset the batch axes add to a matrix.
func (p *problem) reach(strides []int) int {
	r := 0
	for i, st := range strides {
		r += (p.batch[i] - 1) * st
	}
	return r
}

// wideFits reports whether matmul_wide can read A and B: float32 with
// 64-bit loads, A's rows and B's rows unit-stride and starting on
// multiples of 8 elements, K a multiple of 8, and B's last octet inside
// its buffer.
func (p *problem) wideFits() bool {
	if p.elem != elemF32 || !p.int64 || p.k%8 != 0 || p.a.col != 1 || p.b.col != 1 {
		return false
	}
	if !aligned8(p.a.off, p.a.row, p.b.off, p.b.row) || !aligned8(p.a.batch...) || !aligned8(p.b.batch...) {
		return false
	}
	lastB := p.b.off + p.reach(p.b.batch) + (p.k-1)*p.b.row + 8*ceilDiv(p.n, 8)
	return lastB <= p.bLen
}

// heuristic is the variant chosen with no measurement: for a dynamic M
// the texel kernel on a CPU driver where it applies, else the generic
// one (the two that take a dynamic M, see applies); otherwise, off CPU
// drivers, the cooperative matrices for products of M, N ≥ 64 where they
// apply (what matrix units are for; never timed here, no GPU being at
// hand), and from what lavapipe measured (staticHeuristic): on a CPU driver the texel
// matrix-vector kernels where they apply; the matrix-vector kernel for
// m = 1 or n = 1; on a CPU driver the texel kernel on padded copies
// where it applies (large products the texel kernel cannot take as they
// lie), else the texel kernel for
// large or batched products; the wide kernel where A and B allow and the
// output is large; split-K for long K into few outputs; the wide kernel;
// else the generic kernel.
func (p *problem) heuristic() variant {
	if p.dynamic {
		if p.cpu && p.applies(variantTexel) || !p.applies(variantGeneric) {
			return variantTexel
		}
		return variantGeneric
	}
	return p.staticHeuristic()
}

// staticHeuristic is heuristic's rule for a static M (see heuristic).
func (p *problem) staticHeuristic() variant {
	if v, ok := p.texelChoice(); ok {
		return v
	}
	large := p.m >= 64 && p.n >= 64
	switch {
	case !p.cpu && large && p.applies(variantCoopMat):
		return variantCoopMat
	case p.applies(variantGEMV):
		return variantGEMV
	case p.cpu && p.applies(variantTexelPacked):
		return variantTexelPacked
	case p.cpu && p.applies(variantTexel) && (large || len(p.batch) > 0):
		return variantTexel
	case p.applies(variantWide) && large:
		return variantWide
	case p.applies(variantSplitK):
		return variantSplitK
	case p.applies(variantWide):
		return variantWide
	case !p.applies(variantGeneric):
		// K longer than one pass of a CPU driver's loops: split-K applies.
		return variantSplitK
	}
	return variantGeneric
}

// texelChoice is the heuristic's choice among the texel variants, on a
// CPU driver: gemv-texel where it applies, splitk-texel for few outputs.
func (p *problem) texelChoice() (variant, bool) {
	switch {
	case !p.cpu:
	case p.applies(variantGEMVTexel):
		return variantGEMVTexel, true
	case p.applies(variantSplitKTexel) && p.m*p.n <= splitMaxOut:
		return variantSplitKTexel, true
	}
	return 0, false
}

// candidates are the variants that apply to p, the tuner's choices.
func (p *problem) candidates() []variant {
	var out []variant
	for v := range numVariants {
		if p.applies(v) {
			out = append(out, v)
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// kernel is the matmul kernel variant name on dev, loaded on first use
// and kept with the other ops kernels until the device closes.
func kernel(dev *vkc.Device, name string) (*vkc.Kernel, error) {
	dk, err := kernelsOf(dev)
	if err != nil {
		return nil, err
	}
	return dk.kernel(name)
}

// pushWords encodes push-constant words.
func pushWords(words ...int) []byte {
	out := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(w))
	}
	return out
}

// runVariant computes p with v, one launch (or two, for split-K) per
// combination of the batch axes the kernels do not take.
func (p *matmulPlan[T]) runVariant(s *vkc.Stream, v variant) error {
	if run := p.wholeRun(v); run != nil {
		if err := run(s); err != nil {
			return fmt.Errorf("vkc: Matmul: %s (%v kernel): %w", p.describe, v, err)
		}
		return nil
	}
	outer, inner := p.batch, 1
	if len(outer) > 0 {
		inner = outer[len(outer)-1]
		outer = outer[:len(outer)-1]
	}
	idx := make([]int, len(outer))
	for {
		var da, db, dc int
		for i, x := range idx {
			da += x * p.a.batch[i]
			db += x * p.b.batch[i]
			dc += x * p.c.batch[i]
		}
		var err error
		switch v {
		case variantWide:
			err = p.runWide(s, inner, da, db, dc)
		case variantGEMV:
			err = p.runGEMV(s, inner, da, db, dc)
		case variantSplitK:
			err = p.runSplitK(s, inner, da, db, dc)
		case variantTexel:
			err = p.runTexel(s, p.aBuf, p.bBuf, inner, da, db, dc)
		case variantCoopMat:
			err = p.runCoopMat(s, inner, da, db, dc)
		default:
			err = p.runGeneric(s, inner, da, db, dc)
		}
		if err != nil {
			return fmt.Errorf("vkc: Matmul: %s (%v kernel): %w", p.describe, v, err)
		}
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < outer[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// wholeRun is the run of a variant that takes the whole product in one
// call (no batch loop), nil for the others: the texel matrix-vector and
// split-K kernels, the padded copies, and any variant with a dynamic M.
func (p *matmulPlan[T]) wholeRun(v variant) func(*vkc.Stream) error {
	switch {
	case v == variantGEMVTexel:
		return p.runGEMVTexel
	case v == variantSplitKTexel:
		return p.runSplitKTexel
	case v == variantTexelPacked:
		return p.runTexelPacked
	case p.dynamic:
		return p.runDynamic(v)
	}
	return nil
}

// innerStride is a matrix's stride along the batch axis the kernel takes
// (its group z), 0 with no batch axis.
func innerStride(m matrix) int {
	if len(m.batch) == 0 {
		return 0
	}
	return m.batch[len(m.batch)-1]
}

// groups checks group counts against the kernels' limit.
func groups(x, y, z int) ([3]uint32, error) {
	if x > maxGroupsLimit || y > maxGroupsLimit || z > maxGroupsLimit {
		return [3]uint32{}, fmt.Errorf("%d x %d x %d workgroups exceed %d per axis", x, y, z, maxGroupsLimit)
	}
	return [3]uint32{uint32(x), uint32(y), uint32(z)}, nil
}

// biasArg is the buffer bound as the bias, and the flag word's bit: A's
// buffer stands in when there is none (the kernel does not read it).
func (p *matmulPlan[T]) biasArg() (*vkc.Buffer[T], int) {
	if p.hasBias {
		return p.biasBuf, 1
	}
	return p.aBuf, 0
}

// wideWords are the push constants of matmul_wide and matmul_texel (in
// matmul_generic's layout) for the product at batch offsets da, db, dc.
func (p *matmulPlan[T]) wideWords(da, db, dc, flags int) []byte {
	return pushWords(p.m, p.n, p.k, 0,
		p.a.off+da, p.a.row, p.a.col, innerStride(p.a),
		p.b.off+db, p.b.row, p.b.col, innerStride(p.b),
		p.c.off+dc, p.c.row, p.c.col, innerStride(p.c),
		p.bias.off, p.bias.col, int(p.act), 1, flags)
}

// cAligned is matmul_wide's and matmul_texel's flag 2: C's rows are
// unit-stride and start on multiples of 4, so whole octets are stored as
// two vec4.
func (p *problem) cAligned() int {
	if p.c.col == 1 && p.c.off%4 == 0 && p.c.row%4 == 0 && aligned4(p.c.batch...) {
		return 2
	}
	return 0
}

// epilogueClass is what matmul_texel and matmul_wide compile in of their
// epilogue and store path (specialization constants 2, 3 and 4): the activation,
// whether a bias is added, and whether every octet of C is two aligned
// vec4 stores. A CPU driver runs every side of a branch on push
// constants, so each class is a pipeline with only its own path.
type epilogueClass struct {
	act         Activation
	bias, whole bool
}

// epilogueClass is p's epilogueClass.
func (p *problem) epilogueClass() epilogueClass {
	return epilogueClass{act: p.act, bias: p.hasBias, whole: p.cAligned() != 0 && p.n%8 == 0}
}

// texelKernel is matmul_texel (its _dyn build for a dynamic M, its
// narrow one for octs 2) with geometry g and store class sc.
func texelKernel(dev *vkc.Device, dyn bool, g texelGeometry, sc epilogueClass) (*vkc.Kernel, error) {
	dk, err := kernelsOf(dev)
	if err != nil {
		return nil, err
	}
	name := "matmul_texel"
	if g.octs == 2 {
		name += "_narrow"
	}
	if dyn {
		name += "_dyn"
	}
	consts := sc.constants()
	consts[0], consts[1] = float64(g.lx), float64(g.ly)
	return dk.kernelWith(name, consts)
}

// constants are sc as specialization constants 2, 3 and 4.
func (sc epilogueClass) constants() map[uint32]float64 {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	return map[uint32]float64{2: float64(sc.act), 3: flag(sc.bias), 4: flag(sc.whole)}
}

// runTexel runs matmul_texel on a and b (A's and B's buffers, or their
// padded copies, which p's A and B layouts then describe) for inner
// products at batch offsets da, db, dc.
func (p *matmulPlan[T]) runTexel(s *vkc.Stream, a, b vkc.Arg, inner, da, db, dc int) error {
	g := p.texelShape()
	k, err := texelKernel(p.dev, false, g, p.epilogueClass())
	if err != nil {
		return err
	}
	gr, err := groups(ceilDiv(ceilDiv(p.n, 8), g.octs*g.lx), ceilDiv(p.m, g.rows*g.ly), inner)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	return k.Launch(s, gr, p.wideWords(da, db, dc, flags|p.cAligned()), a, b, p.cBuf, bias)
}

// runDynamic is the run of v for a dynamic M: the _dyn build of the
// generic or texel kernel, launched indirectly with groups of rows from
// the param, so that only the rows of A and C that M covers are read and
// marked written (A and C are whole row-major buffers, see planMatmul).
func (p *matmulPlan[T]) runDynamic(v variant) func(*vkc.Stream) error {
	return func(s *vkc.Stream) error {
		var (
			k       *vkc.Kernel
			err     error
			perRows int
			words   []byte
		)
		bias, flags := p.biasArg()
		if v == variantTexel {
			g := p.texelShape()
			k, err = texelKernel(p.dev, true, g, p.epilogueClass())
			perRows, words = g.rows*g.ly, p.wideWords(0, 0, 0, flags|p.cAligned())
		} else {
			k, err = kernel(p.dev, "matmul_generic"+p.elem.suffix()+"_dyn")
			perRows = genericTile * genericLocalY
			words = pushWords(p.m, p.n, p.k, p.k,
				p.a.off, p.a.row, p.a.col, 0,
				p.b.off, p.b.row, p.b.col, 0,
				p.c.off, p.c.row, p.c.col, 0,
				p.bias.off, p.bias.col, int(p.act), 1, flags)
		}
		if err != nil {
			return err
		}
		g := vkc.GroupsOf(p.rows, uint32(perRows)).Prefix(0, p.a.row).Prefix(2, p.c.row)
		if !p.hasBias {
			// The absent bias's stand-in is A's buffer, which the kernel
			// never reads there: counted whole, A's rows past M, which need
			// not have been written, would make the launch skip.
			g = g.Prefix(3, p.a.row)
		}
		return k.LaunchIndirect(s, g, words, p.aBuf, p.bBuf, p.cBuf, bias, p.rows)
	}
}

func (p *matmulPlan[T]) runGeneric(s *vkc.Stream, inner, da, db, dc int) error {
	k, err := kernel(p.dev, "matmul_generic"+p.elem.suffix())
	if err != nil {
		return err
	}
	g, err := groups(ceilDiv(p.n, genericTile*genericLocalX), ceilDiv(p.m, genericTile*genericLocalY), inner)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	words := pushWords(p.m, p.n, p.k, p.k,
		p.a.off+da, p.a.row, p.a.col, innerStride(p.a),
		p.b.off+db, p.b.row, p.b.col, innerStride(p.b),
		p.c.off+dc, p.c.row, p.c.col, innerStride(p.c),
		p.bias.off, p.bias.col, int(p.act), 1, flags)
	return k.Launch(s, g, words, p.aBuf, p.bBuf, p.cBuf, bias)
}

func (p *matmulPlan[T]) runWide(s *vkc.Stream, inner, da, db, dc int) error {
	dk, err := kernelsOf(p.dev)
	if err != nil {
		return err
	}
	k, err := dk.kernelWith("matmul_wide", p.epilogueClass().constants())
	if err != nil {
		return err
	}
	g, err := groups(ceilDiv(ceilDiv(p.n, 8), wideOcts*wideLocal), ceilDiv(p.m, wideRows*wideLocal), inner)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	return k.Launch(s, g, p.wideWords(da, db, dc, flags|p.cAligned()), p.aBuf, p.bBuf, p.cBuf, bias)
}

// runGEMV runs matmul_gemv as y[j] = Σ v[k]·W[j][k]: for m = 1, W is B
// seen as n x k and v A's row; for n = 1, W is A and v B's column.
func (p *matmulPlan[T]) runGEMV(s *vkc.Stream, inner, da, db, dc int) error {
	type vec struct{ off, step, batch int }
	var (
		j, wOff, wJ, wK, wB int
		w, v                *vkc.Buffer[T]
		vv, y               vec
		wLen                int
		wBatch              []int
	)
	if p.m == 1 {
		j, w, wOff, wJ, wK, wB, wLen, wBatch = p.n, p.bBuf, p.b.off+db, p.b.col, p.b.row, innerStride(p.b), p.bLen, p.b.batch
		v, vv = p.aBuf, vec{p.a.off + da, p.a.col, innerStride(p.a)}
		y = vec{p.c.off + dc, p.c.col, innerStride(p.c)}
	} else {
		j, w, wOff, wJ, wK, wB, wLen, wBatch = p.m, p.aBuf, p.a.off+da, p.a.row, p.a.col, innerStride(p.a), p.aLen, p.a.batch
		v, vv = p.bBuf, vec{p.b.off + db, p.b.row, innerStride(p.b)}
		y = vec{p.c.off + dc, p.c.row, innerStride(p.c)}
	}
	mode, wide := 0, false
	switch {
	case wK == 1:
		wide = p.k >= 8 && aligned8(wOff, wJ) && aligned8(wBatch...)
	case wJ == 1:
		mode = 1
		wide = aligned8(wOff, wK) && aligned8(wBatch...) && wOff+p.reach(wBatch)+(p.k-1)*wK+8*ceilDiv(j, 8) <= wLen
	}
	k, err := kernel(p.dev, "matmul_gemv")
	if err != nil {
		return err
	}
	lanes := j
	if mode == 1 {
		lanes = ceilDiv(j, 8)
	}
	g, err := groups(ceilDiv(lanes, gemvLocal), 1, inner)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	if wide {
		flags |= 2
	}
	words := pushWords(j, p.k, mode, flags,
		wOff, wJ, wK, wB,
		vv.off, vv.step, vv.batch, 0,
		y.off, y.step, y.batch, int(p.act),
		p.bias.off, p.bias.col)
	return k.Launch(s, g, words, w, v, p.cBuf, bias)
}

// gemvTexelRows is how many rows a group of matmul_gemv_texel's dot form
// takes (its ROWS), and gemvTexelLocal its group size (LOCAL).
const (
	gemvTexelRows  = 8
	gemvTexelLocal = 8
)

// runGEMVTexel runs matmul_gemv_texel (see variantGEMVTexel): for n = 1
// its dot form over A's rows with B's column as v, for m = 1 its axpy
// form over B's rows with A's row as v.
func (p *matmulPlan[T]) runGEMVTexel(s *vkc.Stream) error {
	k, err := kernel(p.dev, "matmul_gemv_texel")
	if err != nil {
		return err
	}
	j, mode, w, v := p.m, 0, p.aBuf, p.bBuf
	wOff, wS, vOff, yJ := p.a.off, p.a.row, p.b.off, p.c.row
	lanes := ceilDiv(j, gemvTexelRows)
	if p.n != 1 {
		j, mode, w, v = p.n, 1, p.bBuf, p.aBuf
		wOff, wS, vOff, yJ = p.b.off, p.b.row, p.a.off, p.c.col
		lanes = ceilDiv(ceilDiv(j, 4), gemvTexelLocal)
	}
	g, err := groups(lanes, 1, 1)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	words := pushWords(j, p.k, mode, flags,
		wOff, wS, vOff, p.c.off,
		yJ, int(p.act), p.bias.off, p.bias.col)
	return k.Launch(s, g, words, w, w, v, v, p.cBuf, bias)
}

// matmul_splitk_texel's geometry: at most splitTexelMaxM rows (its
// MAXM), about splitTexelGroups groups, at least splitTexelMinSteps texel
// steps (4 k each) per invocation.
const (
	splitTexelMaxM     = 4
	splitTexelGroups   = 128
	splitTexelMinSteps = 16
)

// runSplitKTexel runs matmul_splitk_texel into a temporary of partial
// products, then matmul_reduce (see variantSplitKTexel).
func (p *matmulPlan[T]) runSplitKTexel(s *vkc.Stream) error {
	partial, err := kernel(p.dev, "matmul_splitk_texel")
	if err != nil {
		return err
	}
	reduce, err := kernel(p.dev, "matmul_reduce")
	if err != nil {
		return err
	}
	n4 := ceilDiv(p.n, 4)
	sliceQ, splits := p.splitTexelShape()
	g, err := groups(n4, splits, 1)
	if err != nil {
		return err
	}
	total := p.m * p.n
	gr, err := groups(ceilDiv(total, reduceLocal), 1, 1)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	partialWords := pushWords(p.m, p.n, p.k, sliceQ, p.a.off, p.a.row, p.b.off, p.b.row)
	reduceWords := pushWords(p.m, p.n, splits, total,
		p.c.off, p.c.row, p.c.col, 0,
		p.bias.off, p.bias.col, int(p.act), flags)
	return withScratch[float32](s, p.dev, splits*total, func(tmp vkc.Arg) error {
		if err := partial.Launch(s, g, partialWords, p.aBuf, p.aBuf, p.bBuf, tmp); err != nil {
			return err
		}
		return reduce.Launch(s, gr, reduceWords, tmp, p.cBuf, bias)
	})
}

// splitShape is split-K's geometry for p: the K of each slice and the
// number of slices, enough slices to give about splitLanes invocations
// (the partial kernel's small groups of splitLocal x 1 leave few idle).
func (p *problem) splitShape(inner int) (kSlice, splits int) {
	blocks := ceilDiv(p.n, genericTile) * ceilDiv(p.m, genericTile) * inner
	splits = max(1, min(splitLanes/max(blocks, 1), p.k/splitMinSlice))
	if p.cpu {
		splits = max(splits, ceilDiv(p.k, loopBudget-loopMargin))
	}
	kSlice = ceilDiv(p.k, splits)
	splits = ceilDiv(p.k, kSlice)
	return kSlice, splits
}

// splitKScratch is a stream's temporary for split-K's partial sums, kept and
// grown per device, stream and accumulation type. mu is held from the
// partial launch to the reduction, so calls on one stream from several
// goroutines do not interleave their use of it.
type splitKScratch struct {
	mu  sync.Mutex
	f32 *vkc.Buffer[float32]
	f64 *vkc.Buffer[float64]
}

// scratchKey names a stream's split-K temporary of one accumulation type.
type scratchKey struct {
	stream uint64
	f64    bool
}

// matmulDevice is what Matmul keeps per device besides its kernels: the
// tuner's choices and the streams' temporaries (split-K's partial sums,
// texel-packed's padded copies). It is dropped when the device closes
// (the device frees the buffers).
type matmulDevice struct {
	tunings *tunings
	mu      sync.Mutex
	scratch map[scratchKey]*splitKScratch
	packed  map[uint64]*packed
}

var matmulDevices = struct {
	mu   sync.Mutex
	devs map[*vkc.Device]*matmulDevice
}{devs: map[*vkc.Device]*matmulDevice{}}

// matmulDeviceOf is dev's entry, made on first use (reading the tuner's
// file) and forgotten when dev closes.
func matmulDeviceOf(dev *vkc.Device) (*matmulDevice, error) {
	matmulDevices.mu.Lock()
	defer matmulDevices.mu.Unlock()
	if md := matmulDevices.devs[dev]; md != nil {
		return md, nil
	}
	md := &matmulDevice{tunings: newTunings(dev), scratch: map[scratchKey]*splitKScratch{}, packed: map[uint64]*packed{}}
	err := dev.OnClose(func() {
		matmulDevices.mu.Lock()
		delete(matmulDevices.devs, dev)
		matmulDevices.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	matmulDevices.devs[dev] = md
	return md, nil
}

// packedOf is the stream's set of texel-packed temporaries.
func (md *matmulDevice) packedOf(stream uint64) *packed {
	md.mu.Lock()
	defer md.mu.Unlock()
	pk := md.packed[stream]
	if pk == nil {
		pk = &packed{}
		md.packed[stream] = pk
	}
	return pk
}

// scratchOf is the stream's temporary of the accumulation type.
func (md *matmulDevice) scratchOf(key scratchKey) *splitKScratch {
	md.mu.Lock()
	defer md.mu.Unlock()
	sc := md.scratch[key]
	if sc == nil {
		sc = &splitKScratch{}
		md.scratch[key] = sc
	}
	return sc
}

func (p *matmulPlan[T]) runSplitK(s *vkc.Stream, inner, da, db, dc int) error {
	kSlice, splits := p.splitShape(inner)
	n := inner * splits * p.m * p.n
	partial, err := kernel(p.dev, "matmul_generic"+p.elem.suffix()+"_partial")
	if err != nil {
		return err
	}
	reduce, err := kernel(p.dev, "matmul_reduce"+p.elem.suffix())
	if err != nil {
		return err
	}
	g, err := groups(ceilDiv(p.n, genericTile*splitLocal), ceilDiv(p.m, genericTile), inner*splits)
	if err != nil {
		return err
	}
	total := inner * p.m * p.n
	gr, err := groups(ceilDiv(total, reduceLocal), 1, 1)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	partialWords := pushWords(p.m, p.n, p.k, kSlice,
		p.a.off+da, p.a.row, p.a.col, innerStride(p.a),
		p.b.off+db, p.b.row, p.b.col, innerStride(p.b),
		0, 0, 0, 0, 0, 0, 0, splits, 0)
	reduceWords := pushWords(p.m, p.n, splits, total,
		p.c.off+dc, p.c.row, p.c.col, innerStride(p.c),
		p.bias.off, p.bias.col, int(p.act), flags)
	run := func(tmp vkc.Arg) error {
		if err := partial.Launch(s, g, partialWords, p.aBuf, p.bBuf, tmp); err != nil {
			return err
		}
		return reduce.Launch(s, gr, reduceWords, tmp, p.cBuf, bias)
	}
	if p.elem == elemF64 {
		return withScratch[float64](s, p.dev, n, run)
	}
	return withScratch[float32](s, p.dev, n, run)
}

// withScratch runs fn with a temporary of at least n elements. Inside a
// capture window it is a buffer of its own, which the graph keeps after
// Close; eagerly, the stream's kept one.
func withScratch[A float32 | float64](s *vkc.Stream, dev *vkc.Device, n int, fn func(vkc.Arg) error) error {
	if s.Capturing() {
		tmp, err := vkc.NewBuffer[A](dev, n)
		if err != nil {
			return err
		}
		err = fn(tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var zero A
	_, wide := any(zero).(float64)
	md, err := matmulDeviceOf(dev)
	if err != nil {
		return err
	}
	sc := md.scratchOf(scratchKey{s.ID(), wide})
	sc.mu.Lock()
	defer sc.mu.Unlock()
	held := any(sc.f32)
	if wide {
		held = sc.f64
	}
	buf, _ := held.(*vkc.Buffer[A])
	if buf == nil || buf.Len() < n {
		if buf != nil {
			if err := buf.Close(); err != nil {
				return err
			}
		}
		if buf, err = vkc.NewBuffer[A](dev, n); err != nil {
			return err
		}
		switch b := any(buf).(type) {
		case *vkc.Buffer[float32]:
			sc.f32 = b
		case *vkc.Buffer[float64]:
			sc.f64 = b
		}
	}
	return fn(buf)
}

// runTexelPacked is variantTexelPacked: A into an M x K8 float32
// temporary and B into a K8 x N8 one (K8, N8: K and N rounded up to
// multiples of 8, the padding zero), then matmul_texel on them writing C
// with its epilogue. Float16 A and B are converted into the temporaries
// (exactly: float32 holds every Float16); matmul_texel writes its
// float32 sums, bias added and activated, into an M x N8 temporary (the
// bias converted into one of N), which is converted into C, rounding to
// nearest even once, as the generic kernel stores its float32 sums.
func (p *matmulPlan[T]) runTexelPacked(s *vkc.Stream) error {
	k8, n8 := ceilDiv(p.k, 8)*8, ceilDiv(p.n, 8)*8
	sizes := []int{p.m * k8, k8 * n8}
	half := p.elem == elemF16
	if half {
		sizes = append(sizes, p.m*n8, p.n)
	}
	return withPacked(s, p.dev, []int{p.m, p.k, p.n}, sizes, func(tmp []*vkc.Buffer[float32]) error {
		at := Strided(p.aBuf, p.a.off, []int{p.m, p.k}, []int{p.a.row, p.a.col})
		bt := Strided(p.bBuf, p.b.off, []int{p.k, p.n}, []int{p.b.row, p.b.col})
		if err := convert(s, "Matmul", at, Strided(tmp[0], 0, []int{p.m, p.k}, []int{k8, 1})); err != nil {
			return err
		}
		if err := convert(s, "Matmul", bt, Strided(tmp[1], 0, []int{p.k, p.n}, []int{n8, 1})); err != nil {
			return err
		}
		q := &matmulPlan[float32]{problem: p.problem, dev: p.dev, aBuf: tmp[0], bBuf: tmp[1], describe: p.describe}
		q.elem, q.k = elemF32, k8
		q.a = matrix{row: k8, col: 1}
		q.b = matrix{row: n8, col: 1}
		if !half {
			q.cBuf, q.biasBuf = any(p.cBuf).(*vkc.Buffer[float32]), any(p.biasBuf).(*vkc.Buffer[float32])
			return q.runTexel(s, tmp[0], tmp[1], 1, 0, 0, 0)
		}
		q.cBuf, q.c = tmp[2], matrix{row: n8, col: 1}
		if p.hasBias {
			bias := Strided(p.biasBuf, p.bias.off, []int{p.n}, []int{p.bias.col})
			if err := convert(s, "Matmul", bias, Of(tmp[3])); err != nil {
				return err
			}
			q.biasBuf, q.bias = tmp[3], matrix{col: 1}
		}
		if err := q.runTexel(s, tmp[0], tmp[1], 1, 0, 0, 0); err != nil {
			return err
		}
		return convert(s, "Matmul", Strided(tmp[2], 0, []int{p.m, p.n}, []int{n8, 1}),
			Strided(p.cBuf, p.c.off, []int{p.m, p.n}, []int{p.c.row, p.c.col}))
	})
}

// packed is a stream's temporaries for texel-packed, zero where no copy
// writes, kept while the shape stays the same.
type packed struct {
	mu    sync.Mutex
	shape []int // what the set was made for: sizes alone would let two shapes share one
	sizes []int // and its sizes: a Float16 product of a shape takes two more than a float32 one
	bufs  []*vkc.Buffer[float32]
}

// withPacked runs fn with zero-filled temporaries of the sizes given, for
// a product of the shape given. The copies into them write the same
// elements on every call of one shape, so the padding stays zero: the
// stream's set is kept and zeroed again only when the shape or the
// sizes change (not only the sizes: M x K8 and K8 x N8 are the same
// sizes for a K of 21 and of 19, whose padding lies in other columns;
// not only the shape: a Float16 product takes two more temporaries). Inside a capture
// window the set is fresh and closed after (the graph keeps it).
func withPacked(s *vkc.Stream, dev *vkc.Device, shape, sizes []int, fn func([]*vkc.Buffer[float32]) error) error {
	fresh := func() ([]*vkc.Buffer[float32], error) {
		var bufs []*vkc.Buffer[float32]
		for _, n := range sizes {
			b, err := vkc.FromSlice(dev, make([]float32, n))
			if err != nil {
				closeAll(bufs)
				return nil, err
			}
			bufs = append(bufs, b)
		}
		return bufs, nil
	}
	if s.Capturing() {
		bufs, err := fresh()
		if err != nil {
			return err
		}
		err = fn(bufs)
		if cerr := closeAll(bufs); err == nil {
			err = cerr
		}
		return err
	}
	md, err := matmulDeviceOf(dev)
	if err != nil {
		return err
	}
	pk := md.packedOf(s.ID())
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if !slices.Equal(pk.shape, shape) || !slices.Equal(pk.sizes, sizes) {
		if err := closeAll(pk.bufs); err != nil {
			return err
		}
		pk.bufs, pk.shape, pk.sizes = nil, nil, nil
		bufs, err := fresh()
		if err != nil {
			return err
		}
		pk.bufs, pk.shape, pk.sizes = bufs, slices.Clone(shape), slices.Clone(sizes)
	}
	return fn(pk.bufs)
}

// closeAll closes every buffer, returning the first error.
func closeAll(bufs []*vkc.Buffer[float32]) error {
	var first error
	for _, b := range bufs {
		if err := b.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// splitTexelShape is how splitk-texel cuts K: texels of K per slice and
// the number of slices, about splitTexelGroups groups of at least
// splitTexelMinSteps texels per invocation, and on a CPU driver slices
// short enough that an invocation's loop stays within loopBudget.
func (p *problem) splitTexelShape() (sliceQ, splits int) {
	n4, k4 := ceilDiv(p.n, 4), p.k/4
	splits = max(1, min(splitTexelGroups/n4, k4/(splitTexelMinSteps*gemvTexelLocal)))
	if p.cpu {
		splits = max(splits, ceilDiv(k4, (loopBudget-loopMargin-4-gemvTexelLocal)*gemvTexelLocal))
	}
	sliceQ = ceilDiv(k4, splits)
	return sliceQ, max(1, ceilDiv(k4, sliceQ))
}
