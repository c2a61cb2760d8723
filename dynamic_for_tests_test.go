package vkc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// Value is a scalar an op's Dyn form reads on the device when it runs: a
// constant (Const) or a *Param, whose current value every replay reads.
type Value[T Element] interface {
	scalar() scalar
}

// Const is a Value that never changes. An op whose scalars are all known
// and whose length is the buffers' own runs its static kernel, with the
// value as a push constant (a graph records it as it is, which a constant
// allows). Where the op reads its scalars from device memory (a length
// param, or another scalar that is a param), the value's device copy is
// made as the launching stream's own work and cached per slot; a copy
// leaving that bounded cache is freed once the work that read it
// completes, or the last graph that recorded it closes, so a program using
// ever new constants (or buffer lengths) does not grow. Its value is one
// 32-bit word (a push constant or a device word): an op given a Const of
// an element type of another size refuses it.
func Const[T Element](v T) Value[T] { return constant[T]{v} }

type constant[T Element] struct{ v T }

func (c constant[T]) scalar() scalar {
	if k := kindOf[T](); k.size() != elemSize {
		return scalar{err: fmt.Errorf("Const of %s: device constants hold 32-bit values", k)}
	}
	return known(uint32(bitsOf(c.v)))
}

// scalar is one scalar argument of an op, the way its caller gave it: bits
// the host knows (a static op's argument, a Const, a shape), which reach a
// static kernel as a push-constant word and a dynamic one as a cached
// device copy; or a param's value, which only the dynamic kernel can read.
type scalar struct {
	bits  uint32
	param *bufferCore // nil: the bits are known
	err   error       // a nil Value or Param: reported when the op runs
}

func known(bits uint32) scalar { return scalar{bits: bits} }

// errNilValue marks a nil Value given as a Dyn form's scalar.
var errNilValue = errors.New("vkc: nil Value (use Const or a *Param)")

// scalarOf is a Dyn form's scalar argument (a Value of any element type).
func scalarOf(v interface{ scalar() scalar }) scalar {
	if v == nil {
		return scalar{err: errNilValue}
	}
	return v.scalar()
}

// check refuses a nil scalar or a param of another device than s's.
func (sc scalar) check(op string, i int, s *Stream) error {
	if sc.err == errNilValue {
		return fmt.Errorf("vkc: %s: scalar %d is nil (use Const or a *Param)", op, i)
	}
	if sc.err != nil {
		return fmt.Errorf("vkc: %s: scalar %d: %w", op, i, sc.err)
	}
	if sc.param != nil && sc.param.dev != s.dev {
		return fmt.Errorf("vkc: %s: scalar %d is a param of device %q, used on a stream of another device", op, i, sc.param.dev.info.Name)
	}
	return nil
}

// deviceValue is the memory a dynamic kernel reads the scalar from: the
// param itself, or the known bits' cached copy, pinned in p.
func (sc scalar) deviceValue(s *Stream, p *pins) (*bufferCore, error) {
	if sc.param != nil {
		return sc.param, nil
	}
	return s.dev.constant(s, sc.bits, p)
}

// allKnown reports whether every scalar is known on the host.
func allKnown(scalars []scalar) bool {
	for _, sc := range scalars {
		if sc.param != nil || sc.err != nil {
			return false
		}
	}
	return true
}

// length is the length of an op: a param, or the buffers' whole length
// when n is nil (then nothing about the length is dynamic).
type length struct {
	p        *paramCore // nil: static
	capacity int        // the most the buffers hold
}

// lengthOf checks n (nil: static, capacity) as the length of op.
func lengthOf(s *Stream, op string, n *Param[uint32], capacity int) (length, error) {
	if n == nil {
		return length{capacity: capacity}, nil
	}
	if err := n.valid(); err != nil {
		return length{}, err
	}
	if n.core.buf.dev != s.dev {
		return length{}, fmt.Errorf("vkc: %s: length param of another device", op)
	}
	if _, err := n.core.asLength(op, capacity); err != nil {
		return length{}, err
	}
	return length{p: n.core, capacity: capacity}, nil
}

// word is the length as a scalar argument: the param, or the capacity.
func (l length) word() scalar {
	if l.p == nil {
		return known(uint32(min(l.capacity, 1<<32-1)))
	}
	return scalar{param: l.p.buf}
}

// limits is the bound a dynamic length puts on a graph that records the op.
func (l length) limits() []recorder.Limit {
	if l.p == nil {
		return nil
	}
	return []recorder.Limit{{Param: l.p.buf.claim, Max: uint32(min(l.capacity, 1<<32-1))}}
}

// prefix is the extent of buffer b the op reads or writes scale bytes of
// per unit of value (the length, or a value derived from it): the ledger
// checks and marks only that much, and all of b's claim (its padding to
// whole words too) once the prefix covers every element.
func (l length) prefix(value *bufferCore, scale uint64, b *bufferCore) capture.Extent {
	if l.p == nil {
		return capture.Extent{}
	}
	return capture.Extent{Param: value.claim, Scale: scale, Elements: uint64(b.n) * b.elem.size()}
}

// kernelFor is catalogue kernel name (static) or its dynamic variant.
func (d *Device) kernelFor(name string, static bool) (*Kernel, error) {
	if static {
		return d.builtin(name)
	}
	v, err := shaders.Dynamic(name)
	if err != nil {
		return nil, err
	}
	return d.builtin(v.Name)
}

// launch1D launches 1-D catalogue kernel name over bufs, whose first sets
// the capacity: scalars are its push-constant words before the length,
// which comes last. With every scalar known and no length param it is the
// static kernel with push constants; otherwise the dynamic variant reads
// each from device memory, its groups come from an indirect dispatch when
// the length is a param, and written buffers are marked written up to it.
func launch1D(s *Stream, op, name string, bufs []*bufferCore, scalars []scalar, n *Param[uint32]) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	d := s.dev
	for i, sc := range scalars {
		if err := sc.check(op, i, s); err != nil {
			return err
		}
	}
	name = d.elementwiseKernel(name)
	capacity := bufs[0].n
	if n == nil && allKnown(scalars) {
		k, err := d.builtin(name)
		if err != nil {
			return err
		}
		var push [16]byte
		for i, sc := range scalars {
			binary.LittleEndian.PutUint32(push[4*i:], sc.bits)
		}
		binary.LittleEndian.PutUint32(push[4*len(scalars):], uint32(capacity))
		return k.launch(s, d.groups1D(capacity, k.local[0]), push[:4*len(scalars)+4], bufs)
	}
	l, err := lengthOf(s, op, n, capacity)
	if err != nil {
		return err
	}
	k, err := d.kernelFor(name, false)
	if err != nil {
		return err
	}
	words := make([]scalar, 0, len(scalars)+1)
	words = append(append(words, scalars...), l.word())
	var indirect *bufferCore
	var groups [3]uint32
	var extents []capture.Extent
	if l.p == nil {
		groups = d.groups1D(capacity, k.local[0])
	} else {
		if indirect, err = l.p.view(s, lengthView{groups: true, local: k.local[0], spread: true}); err != nil {
			return err
		}
		extents = make([]capture.Extent, len(bufs))
		for i, b := range bufs {
			extents[i] = l.prefix(l.p.buf, b.elem.size(), b)
		}
	}
	var p pins
	defer p.release()
	return launchDyn(s, k, bufs, words, extents, l, indirect, groups, &p)
}

// launchDyn launches a dynamic variant: bufs, then one binding per scalar
// word (in push order) holding its device value; extents (nil: none) are
// those of bufs; group counts come from indirect when it is not nil.
func launchDyn(s *Stream, k *Kernel, bufs []*bufferCore, words []scalar, extents []capture.Extent, l length, indirect *bufferCore, groups [3]uint32, p *pins) error {
	cores := make([]*bufferCore, 0, len(bufs)+len(words))
	cores = append(cores, bufs...)
	for _, w := range words {
		v, err := w.deviceValue(s, p)
		if err != nil {
			return err
		}
		cores = append(cores, v)
	}
	spec := launchSpec{groups: groups, limits: l.limits()}
	if extents != nil {
		spec.extents = make([]capture.Extent, len(cores))
		copy(spec.extents, extents)
	}
	return k.launchWith(s, cores, indirect, &spec)
}

// reduction is what the passes of a reduction run: the first pass's
// kernel (a sum or dot of the sources' type), the kernel of the later
// passes, and the element type of the partials they sum. float32 sums
// float32 partials with the subgroup sum where the device has it; Float16
// accumulates in float32 (its result converted at the end), float64 in
// float64.
type reduction struct {
	first, later string
	partial      elemKind
}

// reductionOf is the reduction of srcs (one source: sum; two: dot) whose
// kernels carry sfx (see kernelSuffix).
func (d *Device) reductionOf(srcs []*bufferCore, sfx string) reduction {
	switch sfx {
	case "":
		first := d.reductionKernel("sum")
		if len(srcs) == 2 {
			first = d.reductionKernel("dot")
		}
		return reduction{first: first, later: d.reductionKernel("sum"), partial: elemFloat}
	case "_f64":
		return reduction{first: firstReduction(srcs, sfx), later: "sum_f64", partial: elemFloat64}
	}
	return reduction{first: firstReduction(srcs, sfx), later: d.reductionKernel("sum"), partial: elemFloat}
}

// firstReduction is the first pass's kernel of the type sfx names: a sum
// of one source, a dot product of two.
func firstReduction(srcs []*bufferCore, sfx string) string {
	if len(srcs) == 2 {
		return "dot" + sfx
	}
	return "sum" + sfx
}

// reduceOp reduces the first n elements (nil: all) of srcs (one source:
// sum; two: dot, then sums of the partials) into out; sfx picks the
// kernels of the sources' type.
func reduceOp(s *Stream, op, sfx string, srcs []*bufferCore, out *bufferCore, n *Param[uint32]) error {
	// Whether a pass reads the inputs and writes out in one launch depends
	// on the length, so the rule is decided here once: out overlaps no
	// input, unless it is that input whole (a one-element sum).
	for _, src := range srcs {
		if src.overlaps(out) && src.claim != out.claim {
			return fmt.Errorf("%w: %s: the result overlaps an input (give it memory of its own)", ErrOverlap, op)
		}
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	l, err := lengthOf(s, op, n, srcs[0].n)
	if err != nil {
		return err
	}
	var p pins
	defer p.release()
	return reducePasses(s, s.dev.reductionOf(srcs, sfx), srcs, l, 1, out, &p)
}

// reducePasses records the pass of a reduction whose elements are the
// sources divided by div (the product of the earlier passes' group spans;
// 1 for the first pass) and the passes after it. Its passes are laid out
// for the capacity: each sums groups of its kernel's span into partials
// until one group is left. Statically each takes its element count as a
// push constant; with a length param each reads it from a device value
// derived from n (ceil(n/div)) and its group counts from another, so a
// smaller n does less work and later passes reduce what is there. A result
// whose type is not the partials' is summed into scratch and converted
// into out.
func reducePasses(s *Stream, r reduction, srcs []*bufferCore, n length, div uint64, out *bufferCore, p *pins) error {
	d := s.dev
	name := r.first
	if div > 1 {
		name = r.later
	}
	k, err := d.kernelFor(name, n.p == nil)
	if err != nil {
		return err
	}
	w := int(k.local[0]) // the elements one group sums
	capacity := int(divide(uint32(min(n.capacity, 1<<32-1)), div))
	if capacity <= w {
		if out.elem == r.partial {
			return reduceLaunch(s, k, srcs, out, n, div, capacity, [3]uint32{1, 1, 1}, false, p)
		}
		t, err := d.temp(s, 1, r.partial)
		if err != nil {
			return err
		}
		defer func() { _ = d.rec.Drop(s.id, t.claim) }()
		if err := reduceLaunch(s, k, srcs, t, n, div, capacity, [3]uint32{1, 1, 1}, false, p); err != nil {
			return err
		}
		return convertCores(s, t, out)
	}
	parts := (capacity + w - 1) / w
	t, err := d.temp(s, parts, r.partial)
	if err != nil {
		return err
	}
	defer func() { _ = d.rec.Drop(s.id, t.claim) }()
	if err := reduceLaunch(s, k, srcs, t, n, div, capacity, d.groups1D(capacity, uint32(w)), true, p); err != nil {
		return err
	}
	return reducePasses(s, r, []*bufferCore{t}, n, max(div, 1)*uint64(w), out, p)
}

// reduceLaunch records one pass of a reduction from srcs into dst, over
// count elements (the capacity of this pass) or, with a length param, the
// count derived from it (ceil(n/div)); partial says dst holds the partials
// of a later pass (with a length param, written only as far as the next
// count, ceil(n/(div*span))).
func reduceLaunch(s *Stream, k *Kernel, srcs []*bufferCore, dst *bufferCore, n length, div uint64, count int, groups [3]uint32, partial bool, p *pins) error {
	var bound [3]*bufferCore
	cores := append(append(bound[:0], srcs...), dst)
	if n.p == nil {
		var push [16]byte
		return k.launch(s, groups, pushWords(&push, uint32(count)), cores)
	}
	value, err := n.p.view(s, lengthView{div: div})
	if err != nil {
		return err
	}
	extents := make([]capture.Extent, len(cores))
	for i, src := range srcs {
		extents[i] = n.prefix(value, src.elem.size(), src)
	}
	var indirect *bufferCore
	if partial {
		next, err := n.p.view(s, lengthView{div: max(div, 1) * uint64(k.local[0])})
		if err != nil {
			return err
		}
		extents[len(srcs)] = n.prefix(next, dst.elem.size(), dst)
		if indirect, err = n.p.view(s, lengthView{div: div, groups: true, local: k.local[0], spread: true}); err != nil {
			return err
		}
	}
	return launchDyn(s, k, cores, []scalar{{param: value}}, extents, n, indirect, groups, p)
}

// scalar is the param as an op's scalar: its device value, which only a
// dynamic kernel reads.
func (p *Param[T]) scalar() scalar {
	if err := p.valid(); err != nil {
		return scalar{err: err}
	}
	return scalar{param: p.core.buf}
}

// asLength marks the param as a length for work sized up to capacity and
// checks its current value fits.
func (c *paramCore) asLength(op string, capacity int) (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.length = true
	n := uint32(c.bits) // a length is a Param[uint32]
	if n == 0 || uint64(n) > uint64(capacity) {
		return 0, fmt.Errorf("vkc: %s: length %d outside 1..%d, what the buffers hold", op, n, capacity)
	}
	return n, nil
}
