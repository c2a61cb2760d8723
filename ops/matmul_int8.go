package ops

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/vkcompute/vkc"
)

// MatmulInt8Options are what MatmulInt8 may be told. The zero value
// chooses the kernel by measurement, as Matmul does.
type MatmulInt8Options struct {
	// Heuristic chooses the kernel by a fixed rule (off CPU drivers the
	// cooperative matrices where they apply, else the packed
	// dot-product kernel where it applies), never by timing.
	Heuristic bool
}

// MatmulInt8 writes into c the product of a (M x K) and b (K x N), int8
// matrices, with int32 sums: the integer product of quantized weights
// and activations, exact while no sum passes the int32 range (K up to
// 131071 whatever the values). Operands are rank 2 and of any layout
// (strides in elements; B transposed is b.T() of an N x K tensor); C must
// be writable. Static shapes only: a dynamic operand is refused.
//
// Three kernels compute it: one reading a byte at a time (any layout; it
// needs FeatureStorage8 and FeatureInt8); one taking four products
// per instruction from packed words through SPV_KHR_integer_dot_product's
// OpSDot, where the device has FeatureIntegerDotProduct and A's rows and
// B's columns run along K contiguously from a word boundary, with K a
// multiple of 4 (store B as the transpose of an N x K matrix); and one on
// the device's int8 cooperative matrices summed in int32
// (FeatureCooperativeMatrix), any layout. The first
// call of a shape class times the kernels that apply and keeps the
// faster, as Matmul's tuner does (MatmulInt8Options.Heuristic turns it
// off). On a CPU driver a kernel applies only where its loop over K fits
// the driver's loop budget; past it the product is refused with an error
// wrapping vkc.ErrUnsupported.
func MatmulInt8(s *vkc.Stream, a, b Tensor[int8], c Tensor[int32], o MatmulInt8Options) error {
	p, err := planInt8(s, a, b, c)
	if err != nil {
		return err
	}
	cands := p.candidates()
	if len(cands) == 0 {
		return fmt.Errorf("vkc: MatmulInt8: %s: %w: no kernel takes it on this device (the byte kernel needs 8-bit storage and int8, the packed one integer dot products and a K-contiguous layout; a CPU driver stops an invocation's loops after %d iterations)",
			p.describe, vkc.ErrUnsupported, loopBudget)
	}
	return tuned(s, p.dev, tuning{
		op: "MatmulInt8", class: p.class, cands: cands, fallback: p.heuristic(cands), fixed: o.Heuristic,
		applies: p.applies, run: p.runVariant,
	})
}

// int8Plan is a checked MatmulInt8 call.
type int8Plan struct {
	dev      *vkc.Device
	m, n, k  int
	a, b, c  layout
	aBuf     *vkc.Buffer[int8]
	bBuf     *vkc.Buffer[int8]
	cBuf     *vkc.Buffer[int32]
	feats    vkc.Features
	cpu      bool
	coop     coopConfig  // the int8 cooperative-matrix configuration, if the device has one
	coopK    *vkc.Kernel // matmul_coopmat_i8, loaded where it applies
	describe string
}

func planInt8(s *vkc.Stream, a, b Tensor[int8], c Tensor[int32]) (*int8Plan, error) {
	if s == nil {
		return nil, errors.New("vkc: MatmulInt8: nil stream")
	}
	if err := operandErr("MatmulInt8", a.Err(), b.Err(), c.Err()); err != nil {
		return nil, err
	}
	describe := fmt.Sprintf("A %v · B %v → C %v", a.at.shape, b.at.shape, c.at.shape)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("vkc: MatmulInt8: %s: %s", describe, fmt.Sprintf(format, args...))
	}
	dev := s.Device()
	if a.buf.Device() != dev || b.buf.Device() != dev || c.buf.Device() != dev {
		return nil, fail("an operand is on another device than the stream")
	}
	if a.rows != nil || b.rows != nil || c.rows != nil {
		return nil, fmt.Errorf("vkc: MatmulInt8: %s: %w: a dynamic operand", describe, vkc.ErrUnsupported)
	}
	if a.Rank() != 2 || b.Rank() != 2 || c.Rank() != 2 {
		return nil, fail("every operand needs two axes")
	}
	m, k, n := a.at.shape[0], a.at.shape[1], b.at.shape[1]
	if b.at.shape[0] != k {
		return nil, fail("A's %d columns are not B's %d rows", k, b.at.shape[0])
	}
	if c.at.shape[0] != m || c.at.shape[1] != n {
		return nil, fail("C must be %d x %d", m, n)
	}
	if err := writable("MatmulInt8", "C", c); err != nil {
		return nil, err
	}
	if err := int8NoOverlap(c, a, b); err != nil {
		return nil, fmt.Errorf("vkc: MatmulInt8: %s: %w", describe, err)
	}
	info := dev.Info()
	p := &int8Plan{
		dev: dev, m: m, n: n, k: k, a: a.at, b: b.at, c: c.at,
		aBuf: a.buf, bBuf: b.buf, cBuf: c.buf,
		feats: info.Features, cpu: info.Type == vkc.TypeCPU, coop: coopConfigFor(info, elemI8), describe: describe,
	}
	if p.applies(variantI8CoopMat) {
		var err error
		if p.coopK, err = coopKernel(dev, elemI8, p.coop); err != nil {
			p.coop = coopConfig{} // refused by this build or the driver: the other kernels compute it
		}
	}
	return p, nil
}

// int8NoOverlap refuses a C sharing memory with A or B (overlapsC).
func int8NoOverlap(c Tensor[int32], a, b Tensor[int8]) error {
	cr, err := rangeOf(c)
	if err != nil {
		return err
	}
	for i, in := range []Tensor[int8]{a, b} {
		shared, err := overlapsC(cr, in)
		if err != nil {
			return err
		}
		if shared {
			return fmt.Errorf("C shares memory with %s: %w", [...]string{"A", "B"}[i], vkc.ErrOverlap)
		}
	}
	return nil
}

// applies reports whether variant v's kernel can compute p on its device.
func (p *int8Plan) applies(v variant) bool {
	switch v {
	case variantI8Generic:
		return p.feats.Has(vkc.FeatureStorage8|vkc.FeatureInt8) && loopsFit(p.cpu, p.k+1)
	case variantI8Dot4:
		return p.feats.Has(vkc.FeatureIntegerDotProduct) && p.k%4 == 0 && p.k > 0 &&
			p.a.strides[1] == 1 && p.b.strides[0] == 1 &&
			aligned4(p.a.offset, p.a.strides[0], p.b.offset, p.b.strides[1]) &&
			loopsFit(p.cpu, p.k/4+1)
	case variantI8CoopMat:
		return p.coop.fits(p.m, p.n) && loopsFit(p.cpu, p.coop.iters(p.k))
	}
	return false
}

// heuristic is the kernel chosen with no measurement: the cooperative
// matrices off CPU drivers where they apply, else the packed kernel where
// it applies, else the first that does.
func (p *int8Plan) heuristic(cands []variant) variant {
	if !p.cpu && p.applies(variantI8CoopMat) {
		return variantI8CoopMat
	}
	if p.applies(variantI8Dot4) {
		return variantI8Dot4
	}
	return cands[0]
}

// candidates are the variants that apply, the byte kernel first.
func (p *int8Plan) candidates() []variant {
	var out []variant
	for _, v := range []variant{variantI8Generic, variantI8Dot4, variantI8CoopMat} {
		if p.applies(v) {
			out = append(out, v)
		}
	}
	return out
}

// runCoopMat launches matmul_coopmat_i8 (the plan's coopK) over the
// whole product, in matmul_coopmat's push-constant layout (no bias, no
// activation).
func (p *int8Plan) runCoopMat(s *vkc.Stream) error {
	g, err := p.coop.groups(p.m, p.n, 1)
	if err != nil {
		return fmt.Errorf("vkc: MatmulInt8: %s: %w", p.describe, err)
	}
	words := pushWords(p.m, p.n, p.k, 0,
		p.a.offset, p.a.strides[0], p.a.strides[1], 0,
		p.b.offset, p.b.strides[0], p.b.strides[1], 0,
		p.c.offset, p.c.strides[0], p.c.strides[1], 0,
		0, 0, 0, 1, 0)
	if err := p.coopK.Launch(s, g, words, p.aBuf, p.bBuf, p.cBuf); err != nil {
		return fmt.Errorf("vkc: MatmulInt8: %s (%v kernel): %w", p.describe, variantI8CoopMat, err)
	}
	return nil
}

// class is the tuner's key for p: the sizes' powers of two and the
// variants that apply.
func (p *int8Plan) class() string {
	mask := 0
	for _, v := range p.candidates() {
		mask |= 1 << v
	}
	return fmt.Sprintf("i8 m%d n%d k%d v%x", bits.Len(uint(p.m)), bits.Len(uint(p.n)), bits.Len(uint(p.k)), mask)
}

// runVariant launches v's kernel for the whole product.
func (p *int8Plan) runVariant(s *vkc.Stream, v variant) error {
	if v == variantI8CoopMat {
		return p.runCoopMat(s)
	}
	name, words := "matmul_i8", pushWords(p.m, p.n, p.k, 0,
		p.a.offset, p.a.strides[0], p.a.strides[1], p.b.offset,
		p.b.strides[0], p.b.strides[1], p.c.offset, p.c.strides[0],
		p.c.strides[1])
	if v == variantI8Dot4 {
		name, words = "matmul_i8_dot4", pushWords(p.m, p.n, p.k/4, 0,
			p.a.offset/4, p.a.strides[0]/4, p.b.offset/4, p.b.strides[1]/4,
			p.c.offset, p.c.strides[0], p.c.strides[1], 0)
	}
	k, err := kernel(p.dev, name)
	if err != nil {
		return fmt.Errorf("vkc: MatmulInt8: %s: %w", p.describe, err)
	}
	g, err := groups(ceilDiv(p.n, 16), ceilDiv(p.m, 16), 1)
	if err != nil {
		return fmt.Errorf("vkc: MatmulInt8: %s: %w", p.describe, err)
	}
	if err := k.Launch(s, g, words, p.aBuf, p.bBuf, p.cBuf); err != nil {
		return fmt.Errorf("vkc: MatmulInt8: %s (%v kernel): %w", p.describe, v, err)
	}
	return nil
}
