package ops

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc"
)

// mmElem is the element type a matmul computes with, which picks the
// kernels' build (matmul_common.glsl's ELEM and ACC).
type mmElem uint8

const (
	elemF32 mmElem = iota
	elemF16
	elemF64
	elemI8 // MatmulInt8's: int8 inputs, int32 sums (its cooperative-matrix build only)
)

func (e mmElem) String() string { return [...]string{"f32", "f16", "f64", "i8"}[e] }

// suffix is the kernel-name suffix of e's builds ("" for float32).
func (e mmElem) suffix() string { return [...]string{"", "_f16", "_f64", "_i8"}[e] }

// mmElemOf is T's mmElem.
func mmElemOf[T vkc.Float]() mmElem {
	switch any(*new(T)).(type) {
	case vkc.Float16:
		return elemF16
	case float64:
		return elemF64
	}
	return elemF32
}

// matrix is where one operand's matrices sit in its buffer: the element
// offset of the first, the strides along the matrix's two axes (rows,
// columns) and along each batch axis of the product (0 where the operand
// is broadcast).
type matrix struct {
	off      int
	row, col int
	batch    []int
}

// problem is a matmul reduced to what the kernels take: sizes, the
// collapsed batch axes, each operand's layout, the epilogue, and the
// param sizing M, if any. It holds no buffer, so that the variant rules
// and the tuner's classes are tested with no device.
type problem struct {
	elem    mmElem
	m, n, k int
	batch   []int // extents of the batch axes, outermost first, none of 1
	a, b, c matrix
	hasBias bool
	bias    matrix // bias[n] at bias.off + n*bias.col
	act     Activation
	dynamic bool // M is a param's value (at most m)
	// buffer lengths, for the wide kernels' reads past a ragged edge
	aLen, bLen int
	// whole: A, B and C are whole buffers, row-major, one matrix each:
	// what a dynamic M takes.
	whole bool
	int64 bool // the device has shaderInt64 (wide loads)
	// texelA, texelB: A's and B's buffers can be bound whole as rgba32f
	// storage texels (texelBindable).
	texelA, texelB bool
	maxTexels      int  // the device's maxTexelBufferElements
	cpu            bool // the device is a CPU driver (DeviceInfo.Type)
	// coop is the cooperative-matrix configuration matmul_coopmat runs
	// with, if the device has one for the element type (coopConfigFor).
	coop coopConfig
}

// batches is the number of matrices in the product.
func (p *problem) batches() int {
	n := 1
	for _, e := range p.batch {
		n *= e
	}
	return n
}

// plan is a checked Matmul call: the problem and the buffers.
type matmulPlan[T vkc.Float] struct {
	problem
	dev                       *vkc.Device
	aBuf, bBuf, cBuf, biasBuf *vkc.Buffer[T]
	rows                      *vkc.Param[uint32]
	coopKernel                *vkc.Kernel // matmul_coopmat, loaded where the variant applies
	heuristic                 bool
	describe                  string // the operands, for errors
}

// planMatmul checks a Matmul call and reduces it to a plan.
func planMatmul[T vkc.Float](s *vkc.Stream, a, b, c Tensor[T], o MatmulOptions[T]) (*matmulPlan[T], error) {
	if s == nil {
		return nil, errMatmulNilStream
	}
	if err := operandErr("Matmul", a.Err(), b.Err(), c.Err()); err != nil {
		return nil, err
	}
	describe := fmt.Sprintf("A %v · B %v → C %v", a.at.shape, b.at.shape, c.at.shape)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("vkc: Matmul: %s: %s", describe, fmt.Sprintf(format, args...))
	}
	dev := s.Device()
	m, n, k, err := matmulSizes(dev, a, b, c)
	if err != nil {
		return nil, fail("%v", err)
	}
	p := &matmulPlan[T]{dev: dev, aBuf: a.buf, bBuf: b.buf, cBuf: c.buf, heuristic: o.Heuristic, describe: describe}
	p.elem = mmElemOf[T]()
	p.m, p.n, p.k = m, n, k
	p.act = o.Activation
	if p.act > ActSilu {
		return nil, fail("unknown activation %v", p.act)
	}
	p.deviceCaps()
	for _, step := range []func() error{
		func() error { return p.dynamicRows(a, b, c) },
		func() error { return p.batchAxes(a, b, c) },
		func() error { return p.biasOf(o.Bias) },
		func() error { return p.checkOverlap(a, b, c, o.Bias) },
	} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("vkc: Matmul: %s: %w", describe, err) // wrapped: ErrOverlap and ErrUnsupported stay reachable
		}
	}
	p.whole = len(p.batch) == 0 &&
		wholeRowMajor(a.at, a.buf.Len()) && wholeRowMajor(b.at, b.buf.Len()) && wholeRowMajor(c.at, c.buf.Len())
	if p.dynamic && !p.whole {
		return nil, fmt.Errorf("vkc: Matmul: %s: %w: a dynamic M needs whole row-major A, B and C, one matrix each, the one product that marks written only the rows M covers", describe, vkc.ErrUnsupported)
	}
	// The cooperative-matrix kernel is loaded (and a refusal kept) only
	// for a product it would compute.
	if p.applies(variantCoopMat) {
		if p.coopKernel, err = coopKernel(dev, p.elem, p.coop); err != nil {
			p.coop = coopConfig{} // refused by this build or the driver: the other variants compute it
		}
	}
	if len(p.candidates()) == 0 {
		return nil, fmt.Errorf("vkc: Matmul: %s: %w: no kernel takes a dynamic M with K of %d on this device: a CPU driver stops an invocation's loops after %d iterations (a static M splits K)", describe, vkc.ErrUnsupported, k, loopBudget)
	}
	return p, nil
}

// operandErr is the first of a product's A, B and C errors (Tensor.Err,
// in that order), named.
func operandErr(op string, errs ...error) error {
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("vkc: %s: %s: %w", op, [...]string{"A", "B", "C"}[i], err)
		}
	}
	return nil
}

// deviceCaps notes what the variants need of the device and the buffers:
// 64-bit integers, the lengths of A and B, whether they can be bound as
// texels, and whether the device is a CPU driver.
func (p *matmulPlan[T]) deviceCaps() {
	info := p.dev.Info()
	p.int64 = info.Features.Has(vkc.FeatureInt64)
	p.aLen, p.bLen = p.aBuf.Len(), p.bBuf.Len()
	if p.elem == elemF32 {
		p.texelA, p.texelB = texelBindable(info.Limits, p.aBuf), texelBindable(info.Limits, p.bBuf)
	}
	p.maxTexels = int(min(info.Limits.MaxTexelBufferElements, 1<<31-1))
	p.cpu = info.Type == vkc.TypeCPU
	p.coop = coopConfigFor(info, p.elem)
}

// matmulSizes checks the operands' devices, ranks and shapes and returns
// M, N and K.
func matmulSizes[T vkc.Float](dev *vkc.Device, a, b, c Tensor[T]) (m, n, k int, err error) {
	for _, t := range []*vkc.Buffer[T]{a.buf, b.buf, c.buf} {
		if t.Device() != dev {
			return 0, 0, 0, errors.New("an operand is on another device than the stream")
		}
	}
	ra, rb, rc := a.Rank(), b.Rank(), c.Rank()
	if ra < 2 || rb < 2 || rc < 2 {
		return 0, 0, 0, errors.New("every operand needs at least two axes (a row vector is [1, K])")
	}
	m, k = a.at.shape[ra-2], a.at.shape[ra-1]
	kb, n := b.at.shape[rb-2], b.at.shape[rb-1]
	if kb != k {
		return 0, 0, 0, fmt.Errorf("A's %d columns are not B's %d rows", k, kb)
	}
	if c.at.shape[rc-2] != m || c.at.shape[rc-1] != n {
		return 0, 0, 0, fmt.Errorf("C must be %d x %d", m, n)
	}
	if rc < max(ra, rb) {
		return 0, 0, 0, errors.New("C has fewer batch axes than A or B")
	}
	if c.at.overlapsItself() {
		return 0, 0, 0, fmt.Errorf("C's layout (strides %v) writes some elements twice", c.at.strides)
	}
	return m, n, k, nil
}

// dynamicRows takes the param sizing M, if any: M of rank-2 A and C, one
// param.
func (p *matmulPlan[T]) dynamicRows(a, b, c Tensor[T]) error {
	if b.rows != nil {
		return errors.New("B cannot be dynamic (only M, axis 0 of rank-2 A and C, can)")
	}
	for _, t := range []Tensor[T]{a, c} {
		if t.rows == nil {
			continue
		}
		if t.Rank() != 2 {
			return errors.New("a dynamic axis 0 must be M: A and C of rank 2")
		}
		if p.rows != nil && p.rows != t.rows {
			return errors.New("A and C are dynamic with two different params")
		}
		p.rows = t.rows
	}
	p.dynamic = p.rows != nil
	return nil
}

// batchAxes sets the batch axes (C's leading axes, A's and B's broadcast
// to them, collapsed) and each operand's matrix layout.
func (p *matmulPlan[T]) batchAxes(a, b, c Tensor[T]) error {
	ra, rb, rc := a.Rank(), b.Rank(), c.Rank()
	cBatch := c.at.shape[:rc-2]
	var axes []batchAxis
	for i, e := range cBatch {
		ax := batchAxis{extent: e, c: c.at.strides[i]}
		var err error
		if ax.a, err = batchStride(a.at, len(cBatch), i, e); err != nil {
			return fmt.Errorf("A: %w", err)
		}
		if ax.b, err = batchStride(b.at, len(cBatch), i, e); err != nil {
			return fmt.Errorf("B: %w", err)
		}
		axes = append(axes, ax)
	}
	axes = collapseBatch(axes)
	for _, ax := range axes {
		p.batch = append(p.batch, ax.extent)
		p.a.batch = append(p.a.batch, ax.a)
		p.b.batch = append(p.b.batch, ax.b)
		p.c.batch = append(p.c.batch, ax.c)
	}
	p.a.off, p.a.row, p.a.col = a.at.offset, a.at.strides[ra-2], a.at.strides[ra-1]
	p.b.off, p.b.row, p.b.col = b.at.offset, b.at.strides[rb-2], b.at.strides[rb-1]
	p.c.off, p.c.row, p.c.col = c.at.offset, c.at.strides[rc-2], c.at.strides[rc-1]
	return nil
}

// biasOf checks and takes the bias: N elements or one, along the last
// axis.
func (p *matmulPlan[T]) biasOf(bias Tensor[T]) error {
	if bias.buf == nil && bias.err == nil {
		return nil
	}
	if err := bias.Err(); err != nil {
		return fmt.Errorf("bias: %w", err)
	}
	if bias.buf.Device() != p.dev {
		return errors.New("the bias is on another device than the stream")
	}
	if bias.rows != nil {
		return errors.New("the bias cannot be dynamic")
	}
	r := bias.Rank()
	last := bias.at.shape[r-1]
	for _, e := range bias.at.shape[:r-1] {
		if e != 1 {
			return fmt.Errorf("bias %v: want a vector of %d elements (or 1)", bias.at.shape, p.n)
		}
	}
	if last != p.n && last != 1 {
		return fmt.Errorf("bias %v: want a vector of %d elements (or 1)", bias.at.shape, p.n)
	}
	p.hasBias, p.biasBuf = true, bias.buf
	p.bias.off, p.bias.col = bias.at.offset, bias.at.strides[r-1]
	if last == 1 {
		p.bias.col = 0
	}
	return nil
}

// checkOverlap refuses a C sharing memory with an input, through one
// buffer or through views of it: C is written while the others are read.
func (p *matmulPlan[T]) checkOverlap(a, b, c Tensor[T], bias Tensor[T]) error {
	return matmulNoOverlap(c, a, b, bias)
}

// batchAxis is one batch axis of the product: its extent and each
// operand's stride along it.
type batchAxis struct{ extent, a, b, c int }

// batchStride is the stride of operand l along batch axis i of C's nb
// batch axes (extent e), by NumPy's broadcasting: matched from the last
// batch axis, and 0 where l lacks the axis or has extent 1.
func batchStride(l layout, nb, i, e int) (int, error) {
	lb := len(l.shape) - 2
	j := i - (nb - lb)
	if j < 0 {
		return 0, nil
	}
	switch l.shape[j] {
	case e:
		return l.strides[j], nil
	case 1:
		return 0, nil
	}
	return 0, fmt.Errorf("batch axis %d has extent %d, C's %d", j, l.shape[j], e)
}

// collapseBatch drops batch axes of extent 1 and merges neighbours that
// step through every operand as one axis would, so that most products
// have one batch axis (the kernels' group z) or none.
func collapseBatch(axes []batchAxis) []batchAxis {
	var out []batchAxis
	for _, ax := range axes {
		if ax.extent == 1 {
			continue
		}
		if len(out) > 0 {
			prev := &out[len(out)-1]
			if prev.a == ax.a*ax.extent && prev.b == ax.b*ax.extent && prev.c == ax.c*ax.extent {
				prev.extent *= ax.extent
				prev.a, prev.b, prev.c = ax.a, ax.b, ax.c
				continue
			}
		}
		out = append(out, ax)
	}
	return out
}

// matmulNoOverlap refuses a C sharing memory with A, B or the bias (the
// zero Tensor for none), wherever their buffers' views lie.
func matmulNoOverlap[T vkc.Float](c Tensor[T], ins ...Tensor[T]) error {
	cr, err := rangeOf(c)
	if err != nil {
		return err
	}
	for i, in := range ins {
		if in.buf == nil {
			continue
		}
		shared, err := overlapsC(cr, in)
		if err != nil {
			return err
		}
		if shared {
			return fmt.Errorf("C shares elements with %s: %w", [...]string{"A", "B", "the bias"}[i], vkc.ErrOverlap)
		}
	}
	return nil
}

// overlapsC reports whether an input of a product shares memory with C's
// bytes cr (the input may be of another element type, one buffer viewed
// as two with vkc.ViewAs): invocations would write C while others still
// read it.
func overlapsC[T vkc.Element](cr byteRange, in Tensor[T]) (bool, error) {
	r, err := rangeOf(in)
	if err != nil {
		return false, err
	}
	return r.handle == cr.handle && r.start < cr.end && cr.start < r.end, nil
}

// wholeRowMajor reports whether l is a whole buffer of n elements as one
// row-major matrix (batch axes all of extent 1).
func wholeRowMajor(l layout, n int) bool {
	return l.offset == 0 && l.isContiguous() && l.span() == n
}
