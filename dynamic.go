package vkc

import (
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// Value is a scalar an op's Dyn form reads on the device when it runs: a
// constant (Const) or a *Param, whose current value every replay reads.
type Value[T Element] interface {
	deviceValue(d *Device) (*bufferCore, error)
}

// Const is a Value that never changes. Its value lives in a 32-bit
// device word: an op given a Const of an element type of another size
// refuses it.
func Const[T Element](v T) Value[T] { return constant[T]{v} }

type constant[T Element] struct{ v T }

func (c constant[T]) deviceValue(d *Device) (*bufferCore, error) {
	if k := kindOf[T](); k.size() != elemSize {
		return nil, fmt.Errorf("vkc: Const of %s: device constants hold 32-bit values", k)
	}
	return d.constant(uint32(bitsOf(c.v)))
}

// constant returns the device copy of a constant scalar, made once per
// value and kept until the device closes. The caller has entered d.
func (d *Device) constant(bits uint32) (*bufferCore, error) {
	d.mu.Lock()
	c, ok := d.consts[bits]
	d.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := newCore(d, 1, elemUint, alloc.Upload)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	if err := d.rec.SetHost([]alloc.Claim{c.claim}, [][]byte{b[:]}); err != nil {
		_ = c.close()
		return nil, public(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := d.consts[bits]; ok { // another goroutine made it first
		delete(d.buffers, c)
		_ = c.free()
		return prev, nil
	}
	d.consts[bits] = c
	return c, nil
}

// length is the device length of a Dyn op: a param, or the buffers' whole
// length when n is nil (then nothing is dynamic).
type length struct {
	p        *paramCore // nil: static
	capacity int        // the most the buffers hold
	value    *bufferCore
}

// lengthOf prepares n (nil: static, capacity) as the length of op.
func lengthOf(d *Device, op string, n *Param[uint32], capacity int) (length, error) {
	if n == nil {
		v, err := d.constant(uint32(capacity))
		return length{capacity: capacity, value: v}, err
	}
	if err := n.valid(); err != nil {
		return length{}, err
	}
	if n.core.buf.dev != d {
		return length{}, fmt.Errorf("vkc: %s: length param of another device", op)
	}
	if _, err := n.core.asLength(op, capacity); err != nil {
		return length{}, err
	}
	return length{p: n.core, capacity: capacity, value: n.core.buf}, nil
}

// limits is the bound a dynamic length puts on a graph that records the op.
func (l length) limits() []recorder.Limit {
	if l.p == nil {
		return nil
	}
	return []recorder.Limit{{Param: l.p.buf.claim, Max: uint32(min(l.capacity, 1<<32-1))}}
}

// prefix is the extent of a buffer the op reads or writes scale bytes of
// per unit of the length: the ledger checks and marks only that much.
func (l length) prefix(value *bufferCore, scale uint64) capture.Extent {
	if l.p == nil {
		return capture.Extent{}
	}
	return capture.Extent{Param: value.claim, Scale: scale}
}

// dynamicKernel returns the dynamic variant of catalogue kernel name.
func (d *Device) dynamicKernel(name string) (*Kernel, error) {
	v, err := shaders.Dynamic(name)
	if err != nil {
		return nil, err
	}
	return d.builtin(v.Name)
}

// dyn1D launches the dynamic variant of a 1-D catalogue kernel over the
// first n elements of bufs: scalars (in push order, before n) come from
// device values; n from the length, with indirect group counts when it is
// dynamic; written buffers are marked written up to n.
func dyn1D(s *Stream, op, name string, bufs []*bufferCore, scalars []*bufferCore, n length) error {
	d := s.dev
	k, err := d.dynamicKernel(name)
	if err != nil {
		return err
	}
	cores := append(append(append(make([]*bufferCore, 0, len(bufs)+len(scalars)+1), bufs...), scalars...), n.value)
	spec := launchSpec{limits: n.limits()}
	var indirect *bufferCore
	if n.p == nil {
		spec.groups = d.groups1D(n.capacity, k.local[0])
	} else {
		if indirect, err = n.p.view(lengthView{groups: true, local: k.local[0], spread: true}); err != nil {
			return err
		}
		spec.extents = make([]capture.Extent, len(cores))
		for i := range bufs {
			spec.extents[i] = n.prefix(n.value, elemSize)
		}
	}
	return k.launchWith(s, cores, indirect, &spec)
}

// FillDyn is Fill with a device value and a device length: elements from
// n on are left untouched. A nil n covers the whole buffer. It takes
// buffers of 32-bit elements (Fill takes every type).
func FillDyn[T Element](s *Stream, buf *Buffer[T], v Value[T], n *Param[uint32]) error {
	if err := present("FillDyn", buf); err != nil {
		return err
	}
	if err := words32("FillDyn", buf.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return dynOp[T](s, "FillDyn", "fill", []*bufferCore{buf.core}, n, v)
}

// words32 refuses a buffer whose elements are not 32 bits to an op whose
// length counts 32-bit words (the dynamic fill and copy).
func words32(op string, b *bufferCore) error {
	if b.elem.size() != elemSize {
		return fmt.Errorf("vkc: %s: buffers of %s (%d-byte elements): the dynamic forms take 32-bit elements; use Fill or Copy", op, b.elem, b.elem.size())
	}
	return nil
}

// CopyDyn copies the first n elements of src into dst (same length) with a
// kernel, leaving the rest of dst untouched. A nil n copies everything. It
// takes buffers of 32-bit elements (Copy takes every type).
func CopyDyn[T Element](s *Stream, src, dst *Buffer[T], n *Param[uint32]) error {
	if err := present("CopyDyn", src, dst); err != nil {
		return err
	}
	if err := distinct("CopyDyn", dst.core, "the source", src.core); err != nil {
		return err
	}
	if err := words32("CopyDyn", src.core); err != nil {
		return err
	}
	if err := sameLen("CopyDyn", src.core.n, dst.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return dynOp[T](s, "CopyDyn", "copy", []*bufferCore{src.core, dst.core}, n)
}

// AxpyDyn is Axpy with a device scalar and a device length: y[i] = a*x[i]
// + y[i] for i < n, the rest of y untouched. A nil n covers the buffers.
func AxpyDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	if err := present("AxpyDyn", x, y); err != nil {
		return err
	}
	if err := sameLen("AxpyDyn", x.core.n, y.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return dynOp[float32](s, "AxpyDyn", "axpy", []*bufferCore{x.core, y.core}, n, a)
}

// ScaleDyn is Scale with a device scalar and a device length: y[i] =
// a*x[i] for i < n, the rest of y untouched.
func ScaleDyn(s *Stream, a Value[float32], x, y *Buffer[float32], n *Param[uint32]) error {
	if err := present("ScaleDyn", x, y); err != nil {
		return err
	}
	if err := sameLen("ScaleDyn", x.core.n, y.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return dynOp[float32](s, "ScaleDyn", "scale", []*bufferCore{x.core, y.core}, n, a)
}

// AddDyn is Add over the first n elements (the rest of z untouched).
func AddDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binaryDyn(s, "AddDyn", "add", x, y, z, n)
}

// SubDyn is Sub over the first n elements (the rest of z untouched).
func SubDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binaryDyn(s, "SubDyn", "sub", x, y, z, n)
}

// MulDyn is Mul over the first n elements (the rest of z untouched).
func MulDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binaryDyn(s, "MulDyn", "mul", x, y, z, n)
}

// DivDyn is Div over the first n elements (the rest of z untouched).
func DivDyn(s *Stream, x, y, z *Buffer[float32], n *Param[uint32]) error {
	return binaryDyn(s, "DivDyn", "div", x, y, z, n)
}

func binaryDyn(s *Stream, op, name string, x, y, z *Buffer[float32], n *Param[uint32]) error {
	if err := present(op, x, y, z); err != nil {
		return err
	}
	if err := sameLen(op, x.core.n, y.core, z.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return dynOp[float32](s, op, name, []*bufferCore{x.core, y.core, z.core}, n)
}

// dynOp resolves the scalars and the length of a 1-D Dyn op and launches it.
func dynOp[T Element](s *Stream, op, name string, bufs []*bufferCore, n *Param[uint32], scalars ...Value[T]) error {
	d := s.dev
	vals := make([]*bufferCore, len(scalars))
	for i, v := range scalars {
		if v == nil {
			return fmt.Errorf("vkc: %s: scalar %d is nil (use Const or a *Param)", op, i)
		}
		c, err := v.deviceValue(d)
		if err != nil {
			return fmt.Errorf("vkc: %s: %w", op, err)
		}
		vals[i] = c
	}
	l, err := lengthOf(d, op, n, bufs[0].n)
	if err != nil {
		return err
	}
	return dyn1D(s, op, name, bufs, vals, l)
}

// SumDyn writes the sum of the first n elements of x into out, a
// one-element buffer. A nil n sums all of x.
func SumDyn(s *Stream, x, out *Buffer[float32], n *Param[uint32]) error {
	if err := present("SumDyn", x, out); err != nil {
		return err
	}
	if err := sameLen("SumDyn", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	l, err := lengthOf(s.dev, "SumDyn", n, x.core.n)
	if err != nil {
		return err
	}
	return reduceDyn(s, []*bufferCore{x.core}, l, 0, out.core)
}

// DotDyn writes the dot product of the first n elements of x and y into
// out, a one-element buffer. A nil n covers the buffers.
func DotDyn(s *Stream, x, y, out *Buffer[float32], n *Param[uint32]) error {
	if err := present("DotDyn", x, y, out); err != nil {
		return err
	}
	if err := sameLen("DotDyn", x.core.n, y.core); err != nil {
		return err
	}
	if err := sameLen("DotDyn", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	l, err := lengthOf(s.dev, "DotDyn", n, x.core.n)
	if err != nil {
		return err
	}
	return reduceDyn(s, []*bufferCore{x.core, y.core}, l, 0, out.core)
}

// reduceDyn reduces the first n elements of srcs (one source: sum; two:
// dot, then sum of the partials) into out. Its passes are laid out for the
// capacity; each reads its element count from a device value derived from
// n (ceil(n/256^pass)) and its group counts from another, so a smaller n
// does less work and later passes reduce what is there.
func reduceDyn(s *Stream, srcs []*bufferCore, n length, pass int, out *bufferCore) error {
	d := s.dev
	name := d.sumKernel()
	if len(srcs) == 2 {
		name = "dot"
	}
	k, err := d.dynamicKernel(name)
	if err != nil {
		return err
	}
	w := int(k.local[0])
	capacity := int(divide(uint32(min(n.capacity, 1<<32-1)), pass))
	count, err := n.derived(pass)
	if err != nil {
		return err
	}
	if capacity <= w {
		cores := append(append([]*bufferCore(nil), srcs...), out, count)
		spec := launchSpec{groups: [3]uint32{1, 1, 1}, limits: n.limits()}
		if n.p != nil {
			spec.extents = make([]capture.Extent, len(cores))
			for i := range srcs {
				spec.extents[i] = n.prefix(count, elemSize)
			}
		}
		return k.launchWith(s, cores, nil, &spec)
	}
	parts := (capacity + w - 1) / w
	t, err := d.temp(s, parts)
	if err != nil {
		return err
	}
	defer func() { _ = d.rec.Drop(s.id, t.claim) }()
	next, err := n.derived(pass + 1)
	if err != nil {
		return err
	}
	cores := append(append([]*bufferCore(nil), srcs...), t, count)
	spec := launchSpec{limits: n.limits()}
	var indirect *bufferCore
	if n.p == nil {
		spec.groups = d.groups1D(capacity, uint32(w))
	} else {
		if indirect, err = n.p.view(lengthView{passes: pass, groups: true, local: uint32(w), spread: true}); err != nil {
			return err
		}
		spec.extents = make([]capture.Extent, len(cores))
		for i := range srcs {
			spec.extents[i] = n.prefix(count, elemSize)
		}
		spec.extents[len(srcs)] = n.prefix(next, elemSize)
	}
	if err := k.launchWith(s, cores, indirect, &spec); err != nil {
		return err
	}
	return reduceDyn(s, []*bufferCore{t}, n, pass+1, out)
}

// derived is the element count of a reduction's pass: ceil(n/256^pass).
func (l length) derived(pass int) (*bufferCore, error) {
	if l.p == nil {
		return l.value.dev.constant(uint32(divide(uint32(min(l.capacity, 1<<32-1)), pass)))
	}
	return l.p.view(lengthView{passes: pass})
}

// SoftmaxDyn is Softmax over the first rows rows of src (rows x cols,
// row-major): the rows of dst past them are left untouched. The buffers
// hold len/cols rows.
func SoftmaxDyn(s *Stream, src, dst *Buffer[float32], rows *Param[uint32], cols int) error {
	if err := present("SoftmaxDyn", src, dst); err != nil {
		return err
	}
	if cols <= 0 || src.core.n%cols != 0 {
		return fmt.Errorf("vkc: SoftmaxDyn: %d columns do not divide a buffer of %d elements", cols, src.core.n)
	}
	if err := sameLen("SoftmaxDyn", src.core.n, dst.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	d := s.dev
	l, err := lengthOf(d, "SoftmaxDyn", rows, src.core.n/cols)
	if err != nil {
		return err
	}
	k, err := d.dynamicKernel("softmax")
	if err != nil {
		return err
	}
	colsValue, err := d.constant(uint32(cols))
	if err != nil {
		return err
	}
	cores := []*bufferCore{src.core, dst.core, l.value, colsValue}
	spec := launchSpec{limits: l.limits()}
	var indirect *bufferCore
	if l.p == nil {
		spec.groups = d.groups1D(l.capacity, 1)
	} else {
		if indirect, err = l.p.view(lengthView{groups: true, local: 1, spread: true}); err != nil {
			return err
		}
		spec.extents = make([]capture.Extent, len(cores))
		spec.extents[0] = l.prefix(l.value, uint64(cols)*elemSize)
		spec.extents[1] = l.prefix(l.value, uint64(cols)*elemSize)
	}
	return k.launchWith(s, cores, indirect, &spec)
}

// MatmulDyn is Matmul whose row count m is a device length: C's first m
// rows are written from A's first m rows, the rest of C untouched. The
// buffers hold A (len/k rows) and C for that many rows.
func MatmulDyn(s *Stream, a, b, c *Buffer[float32], m *Param[uint32], n, k int) error {
	if err := present("MatmulDyn", a, b, c); err != nil {
		return err
	}
	if n <= 0 || k <= 0 || a.core.n%k != 0 {
		return fmt.Errorf("vkc: MatmulDyn: k=%d and n=%d must be positive and k divide A's %d elements", k, n, a.core.n)
	}
	rows := a.core.n / k
	kn, err := product("MatmulDyn", k, n)
	if err != nil {
		return err
	}
	mn, err := product("MatmulDyn", rows, n)
	if err != nil {
		return err
	}
	if b.core.n != kn || c.core.n != mn {
		return fmt.Errorf("vkc: MatmulDyn: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			a.core.n, b.core.n, c.core.n, rows, k, k, n, rows, n)
	}
	if err := distinct("MatmulDyn", c.core, "an input", a.core, b.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	d := s.dev
	l, err := lengthOf(d, "MatmulDyn", m, rows)
	if err != nil {
		return err
	}
	kern, err := d.dynamicKernel("matmul")
	if err != nil {
		return err
	}
	nValue, err := d.constant(uint32(n))
	if err != nil {
		return err
	}
	kValue, err := d.constant(uint32(k))
	if err != nil {
		return err
	}
	gx, gy := ceilDiv(n, int(kern.tile[0])), ceilDiv(rows, int(kern.tile[1]))
	if err := check2D(d, "MatmulDyn", gx, gy); err != nil {
		return err
	}
	cores := []*bufferCore{a.core, b.core, c.core, l.value, nValue, kValue}
	spec := launchSpec{limits: l.limits(), groups: [3]uint32{gx, gy, 1}}
	var indirect *bufferCore
	if l.p != nil {
		if indirect, err = l.p.view(lengthView{groups: true, local: kern.tile[1], fixedX: gx}); err != nil {
			return err
		}
		spec.extents = make([]capture.Extent, len(cores))
		spec.extents[0] = l.prefix(l.value, uint64(k)*elemSize)
		spec.extents[2] = l.prefix(l.value, uint64(n)*elemSize)
	}
	return kern.launchWith(s, cores, indirect, &spec)
}

// Groups are group counts a device length decides when a launch runs:
// see GroupsOf and Kernel.LaunchIndirect.
type Groups struct {
	n   *Param[uint32]
	per uint32
}

// GroupsOf is ceil(n/perGroup) groups in x (one in y and z), recomputed
// on every n.Set: a user kernel launched with LaunchIndirect then covers n
// elements with perGroup per group, on every replay the n current then.
// Set refuses an n that would need more groups than the device's x limit.
func GroupsOf(n *Param[uint32], perGroup uint32) Groups { return Groups{n: n, per: perGroup} }

// LaunchIndirect is Launch with group counts taken from device memory when
// the launch runs (vkCmdDispatchIndirect), so a graph that recorded it does
// more or less work as its length param changes, with no re-capture. The
// kernel reads the length itself if it needs it: bind the same param as
// one of args. Every buffer the kernel writes counts as written whole.
func (k *Kernel) LaunchIndirect(s *Stream, g Groups, push []byte, args ...Arg) error {
	if k == nil || k.rk == nil {
		return errNilKernel
	}
	if g.per == 0 || g.n.valid() != nil {
		return fmt.Errorf("vkc: kernel %q: LaunchIndirect needs GroupsOf(a *Param[uint32], perGroup > 0)", k.name)
	}
	if err := k.enter(s); err != nil {
		return err
	}
	defer k.leave(s)
	var bound [recorder.MaxBindings]*bufferCore
	nb, err := k.bind(&bound, push, args)
	if err != nil {
		return err
	}
	cores := bound[:nb]
	if g.n.core.buf.dev != s.dev {
		return fmt.Errorf("vkc: kernel %q: group-count param of another device", k.name)
	}
	maxX := s.dev.info.Limits.MaxComputeWorkGroupCount[0]
	c := g.n.core
	// The param is held for the launch: it records a limit on the param's
	// claim, which must not be freed and claimed again meanwhile.
	if !c.buf.life.enter() {
		return ErrClosed
	}
	defer c.buf.life.leave()
	c.mu.Lock()
	n := uint32(c.bits)    // a length is a Param[uint32]
	err = c.checkLength(n) // under c.mu, as in Set: it reads c.views
	if err == nil {
		c.length = true
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("vkc: kernel %q: %w", k.name, err)
	}
	if groupsFor(n, 0, g.per) > uint64(maxX) {
		return fmt.Errorf("vkc: kernel %q: length %d needs more than the device's %d groups of %d", k.name, n, maxX, g.per)
	}
	view, err := c.view(lengthView{groups: true, local: g.per})
	if err != nil {
		return err
	}
	limit := uint64(g.per) * uint64(maxX)
	spec := launchSpec{push: push, limits: []recorder.Limit{{Param: c.buf.claim, Max: uint32(min(limit, 1<<32-1))}}}
	return k.launchWith(s, cores, view, &spec)
}
