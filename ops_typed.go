package vkc

import (
	"fmt"
	"math"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// Float is the element types the ops compute with: float32 (the ops
// without Of), Float16 (loaded and stored in 16 bits, computed and
// accumulated in float32; a store rounds as the device converts float32
// to float16, to nearest even on lavapipe) and float64 (all in float64,
// where the device has FeatureFloat64).
//
// The …Of ops take any of them: AxpyOf, ScaleOf, AddOf, SubOf, MulOf,
// DivOf, SumOf, DotOf, SoftmaxOf, MatmulOf and the Dyn forms AddDynOf,
// SubDynOf, MulDynOf, DivDynOf, SumDynOf, DotDynOf, SoftmaxDynOf,
// MatmulDynOf. On float32 buffers they are the float32 ops themselves.
// Their contracts (aliasing, shapes, lengths, what Dyn leaves untouched)
// are those of the float32 op of the same name.
type Float interface{ float32 | float64 | Float16 }

// kernelSuffix is the catalogue suffix of T's op kernels, after checking
// the device computes with T.
func kernelSuffix[T Float](d *Device, op string) (string, error) {
	switch kindOf[T]() {
	case elemFloat16:
		return "_f16", d.unsupported(op+" on Float16", FeatureStorage16)
	case elemFloat64:
		return "_f64", d.unsupported(op+" on float64", FeatureFloat64)
	}
	return "", nil
}

// as32 is b as a float32 buffer when T is float32.
func as32[T Float](b *Buffer[T]) (*Buffer[float32], bool) {
	f, ok := any(b).(*Buffer[float32])
	return f, ok
}

// streamDevice is s's device, nil for a nil or zero stream (whose calls
// then fail as every call on it does).
func streamDevice(s *Stream) *Device {
	if s == nil {
		return nil
	}
	return s.dev
}

// prepare runs the checks every typed op shares: no nil buffer, a stream
// with a device, and the kernel suffix of T on it.
func prepare[T Float](s *Stream, op string, bufs ...Arg) (string, error) {
	if err := present(op, bufs...); err != nil {
		return "", err
	}
	d := streamDevice(s)
	if d == nil {
		return "", errNilStream
	}
	return kernelSuffix[T](d, op)
}

// Binary ops of the typed binary kernels.
const (
	binaryAdd uint32 = iota
	binarySub
	binaryMul
	binaryDiv
)

func binaryOf[T Float](s *Stream, name string, op uint32, x, y, z *Buffer[T]) error {
	if x32, ok := as32(x); ok {
		y32, _ := as32(y)
		z32, _ := as32(z)
		return binary3(s, name, x32, y32, z32)
	}
	sfx, err := prepare[T](s, name, x, y, z)
	if err != nil {
		return err
	}
	if err := sameLen(name, x.core.n, y.core, z.core); err != nil {
		return err
	}
	var p [16]byte
	return run1D(s, "binary"+sfx, x.core.n, pushWords(&p, op, uint32(x.core.n)), x.core, y.core, z.core)
}

// AddOf is Add for any Float type.
func AddOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "add", binaryAdd, x, y, z)
}

// SubOf is Sub for any Float type.
func SubOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "sub", binarySub, x, y, z)
}

// MulOf is Mul for any Float type.
func MulOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "mul", binaryMul, x, y, z)
}

// DivOf is Div for any Float type.
func DivOf[T Float](s *Stream, x, y, z *Buffer[T]) error {
	return binaryOf(s, "div", binaryDiv, x, y, z)
}

// scaled is AxpyOf (op 0) and ScaleOf (op 1).
func scaled[T Float](s *Stream, name string, op uint32, a float64, x, y *Buffer[T]) error {
	if x32, ok := as32(x); ok {
		y32, _ := as32(y)
		if op == 0 {
			return Axpy(s, float32(a), x32, y32)
		}
		return Scale(s, float32(a), x32, y32)
	}
	sfx, err := prepare[T](s, name, x, y)
	if err != nil {
		return err
	}
	if err := sameLen(name, x.core.n, y.core); err != nil {
		return err
	}
	var p [16]byte
	n := uint32(x.core.n)
	push := pushWords(&p, math.Float32bits(float32(a)), op, n)
	if sfx == "_f64" {
		bits := math.Float64bits(a)
		push = pushWords(&p, uint32(bits), uint32(bits>>32), op, n)
	}
	return run1D(s, "axpy"+sfx, x.core.n, push, x.core, y.core)
}

// AxpyOf is Axpy for any Float type: y = a*x + y, with a rounded to the
// type the kernel computes in (float32 for Float16).
func AxpyOf[T Float](s *Stream, a float64, x, y *Buffer[T]) error {
	return scaled(s, "Axpy", 0, a, x, y)
}

// ScaleOf is Scale for any Float type: y = a*x.
func ScaleOf[T Float](s *Stream, a float64, x, y *Buffer[T]) error {
	return scaled(s, "Scale", 1, a, x, y)
}

// partialKind is the element type a typed reduction's partials hold:
// float32 for Float16 (its later passes run the float32 sum), float64 for
// float64.
func partialKind(sfx string) (elemKind, string) {
	if sfx == "_f64" {
		return elemFloat64, "sum_f64"
	}
	return elemFloat, ""
}

// tempOf allocates scratch of n elements of kind that a launch about to
// be recorded on s writes.
func (d *Device) tempOf(s *Stream, n int, kind elemKind) (*bufferCore, error) {
	c, err := d.rec.AllocOn(s.id, alloc.DeviceLocal, bytesFor(kind, n))
	if err != nil {
		return nil, public(err)
	}
	return &bufferCore{dev: d, claim: c, n: n, elem: kind}, nil
}

// reduceTyped sums the first pass's elements (first: sum or dot of the
// type) into out[0] through partials; a Float16 result is summed in
// float32 and converted (to nearest even) into out at the end.
func reduceTyped(s *Stream, first, sfx string, srcs []*bufferCore, n int, out *bufferCore) error {
	d := s.dev
	kind, later := partialKind(sfx)
	if later == "" {
		later = d.sumKernel()
	}
	var prev *bufferCore
	defer func() {
		if prev != nil {
			_ = d.rec.Drop(s.id, prev.claim)
		}
	}()
	name := first
	for {
		k, err := d.builtin(name)
		if err != nil {
			return err
		}
		w := int(k.local[0])
		var p [16]byte
		push := pushWords(&p, uint32(n))
		if n <= w {
			if out.elem == kind {
				return k.launch(s, [3]uint32{1, 1, 1}, push, append(append([]*bufferCore(nil), srcs...), out))
			}
			t, err := d.tempOf(s, 1, kind)
			if err != nil {
				return err
			}
			defer func() { _ = d.rec.Drop(s.id, t.claim) }()
			if err := k.launch(s, [3]uint32{1, 1, 1}, push, append(append([]*bufferCore(nil), srcs...), t)); err != nil {
				return err
			}
			return convertCores(s, t, out)
		}
		parts := (n + w - 1) / w
		t, err := d.tempOf(s, parts, kind)
		if err != nil {
			return err
		}
		if err := k.launch(s, d.groups1D(n, uint32(w)), push, append(append([]*bufferCore(nil), srcs...), t)); err != nil {
			_ = d.rec.Drop(s.id, t.claim)
			return err
		}
		if prev != nil {
			_ = d.rec.Drop(s.id, prev.claim)
		}
		prev, n, name = t, parts, later
		srcs = []*bufferCore{t}
	}
}

// SumOf is Sum for any Float type, accumulated in float32 for Float16 and
// float64 for float64.
func SumOf[T Float](s *Stream, x, out *Buffer[T]) error {
	if x32, ok := as32(x); ok {
		o32, _ := as32(out)
		return Sum(s, x32, o32)
	}
	sfx, err := prepare[T](s, "Sum", x, out)
	if err != nil {
		return err
	}
	if err := sameLen("Sum", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return reduceTyped(s, "sum"+sfx, sfx, []*bufferCore{x.core}, x.core.n, out.core)
}

// DotOf is Dot for any Float type, accumulated as SumOf.
func DotOf[T Float](s *Stream, x, y, out *Buffer[T]) error {
	if x32, ok := as32(x); ok {
		y32, _ := as32(y)
		o32, _ := as32(out)
		return Dot(s, x32, y32, o32)
	}
	sfx, err := prepare[T](s, "Dot", x, y, out)
	if err != nil {
		return err
	}
	if err := sameLen("Dot", x.core.n, y.core); err != nil {
		return err
	}
	if err := sameLen("Dot", 1, out.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return reduceTyped(s, "dot"+sfx, sfx, []*bufferCore{x.core, y.core}, x.core.n, out.core)
}

// SoftmaxOf is Softmax for any Float type, computed in float32 for
// Float16 and float64 for float64 (its exp computed to float64 precision).
func SoftmaxOf[T Float](s *Stream, src, dst *Buffer[T], rows, cols int) error {
	if s32, ok := as32(src); ok {
		d32, _ := as32(dst)
		return Softmax(s, s32, d32, rows, cols)
	}
	sfx, err := prepare[T](s, "Softmax", src, dst)
	if err != nil {
		return err
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("vkc: Softmax: shape %dx%d must be positive", rows, cols)
	}
	size, err := product("Softmax", rows, cols)
	if err != nil {
		return err
	}
	if err := sameLen("Softmax", size, src.core, dst.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	kern, err := s.dev.builtin("softmax" + sfx)
	if err != nil {
		return err
	}
	var p [16]byte
	return kern.launch(s, s.dev.groups1D(rows, 1), pushWords(&p, uint32(rows), uint32(cols)), []*bufferCore{src.core, dst.core})
}

// matmulShape checks Matmul's shape against the buffers.
func matmulShape(op string, a, b, c *bufferCore, m, n, k int) error {
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("vkc: %s: shape %dx%dx%d must be positive", op, m, n, k)
	}
	mk, err := product(op, m, k)
	if err != nil {
		return err
	}
	kn, err := product(op, k, n)
	if err != nil {
		return err
	}
	mn, err := product(op, m, n)
	if err != nil {
		return err
	}
	if a.n != mk || b.n != kn || c.n != mn {
		return fmt.Errorf("vkc: %s: buffers of %d, %d, %d elements do not fit A %dx%d, B %dx%d, C %dx%d",
			op, a.n, b.n, c.n, m, k, k, n, m, n)
	}
	return distinct(op, c, "an input", a, b)
}

// MatmulOf is Matmul for any Float type, accumulated in float32 for
// Float16 (each C element rounded to Float16 once, at the store) and
// float64 for float64.
func MatmulOf[T Float](s *Stream, a, b, c *Buffer[T], m, n, k int) error {
	if a32, ok := as32(a); ok {
		b32, _ := as32(b)
		c32, _ := as32(c)
		return Matmul(s, a32, b32, c32, m, n, k)
	}
	sfx, err := prepare[T](s, "Matmul", a, b, c)
	if err != nil {
		return err
	}
	if err := matmulShape("Matmul", a.core, b.core, c.core, m, n, k); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	kern, err := s.dev.builtin("matmul" + sfx)
	if err != nil {
		return err
	}
	gx, gy := ceilDiv(n, int(kern.tile[0])), ceilDiv(m, int(kern.tile[1]))
	if err := check2D(s.dev, "Matmul", gx, gy); err != nil {
		return err
	}
	var p [16]byte
	return kern.launch(s, [3]uint32{gx, gy, 1}, pushWords(&p, uint32(m), uint32(n), uint32(k)), []*bufferCore{a.core, b.core, c.core})
}

// dynTyped launches the dynamic variant of a typed 1-D kernel over the
// first n elements of bufs, with scalars (before n) from device values;
// each written buffer is marked written up to n of its own elements.
func dynTyped(s *Stream, name string, bufs, scalars []*bufferCore, n length) error {
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
		for i, b := range bufs {
			spec.extents[i] = n.prefix(n.value, b.elem.size())
		}
	}
	return k.launchWith(s, cores, indirect, &spec)
}

func binaryDynOf[T Float](s *Stream, name string, op uint32, x, y, z *Buffer[T], n *Param[uint32]) error {
	if x32, ok := as32(x); ok {
		y32, _ := as32(y)
		z32, _ := as32(z)
		return binaryDyn(s, name, []string{"add", "sub", "mul", "div"}[op], x32, y32, z32, n)
	}
	sfx, err := prepare[T](s, name, x, y, z)
	if err != nil {
		return err
	}
	if err := sameLen(name, x.core.n, y.core, z.core); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	opValue, err := s.dev.constant(op)
	if err != nil {
		return err
	}
	l, err := lengthOf(s.dev, name, n, x.core.n)
	if err != nil {
		return err
	}
	return dynTyped(s, "binary"+sfx, []*bufferCore{x.core, y.core, z.core}, []*bufferCore{opValue}, l)
}

// AddDynOf is AddDyn for any Float type.
func AddDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryDynOf(s, "AddDyn", binaryAdd, x, y, z, n)
}

// SubDynOf is SubDyn for any Float type.
func SubDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryDynOf(s, "SubDyn", binarySub, x, y, z, n)
}

// MulDynOf is MulDyn for any Float type.
func MulDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryDynOf(s, "MulDyn", binaryMul, x, y, z, n)
}

// DivDynOf is DivDyn for any Float type.
func DivDynOf[T Float](s *Stream, x, y, z *Buffer[T], n *Param[uint32]) error {
	return binaryDynOf(s, "DivDyn", binaryDiv, x, y, z, n)
}

// reduceDynTyped is reduceDyn for the typed first passes (see
// reduceTyped): each pass reads its element count from a device value
// derived from n, and a Float16 result is converted from float32 at the end.
func reduceDynTyped(s *Stream, first, sfx string, srcs []*bufferCore, n length, pass int, out *bufferCore) error {
	d := s.dev
	kind, later := partialKind(sfx)
	if later == "" {
		later = d.sumKernel()
	}
	name := first
	if pass > 0 {
		name = later
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
	prefixes := func(cores []*bufferCore) []capture.Extent {
		ext := make([]capture.Extent, len(cores))
		for i, c := range srcs {
			ext[i] = n.prefix(count, c.elem.size())
		}
		return ext
	}
	if capacity <= w {
		target := out
		if out.elem != kind {
			t, err := d.tempOf(s, 1, kind)
			if err != nil {
				return err
			}
			defer func() { _ = d.rec.Drop(s.id, t.claim) }()
			target = t
		}
		cores := append(append([]*bufferCore(nil), srcs...), target, count)
		spec := launchSpec{groups: [3]uint32{1, 1, 1}, limits: n.limits()}
		if n.p != nil {
			spec.extents = prefixes(cores)
		}
		if err := k.launchWith(s, cores, nil, &spec); err != nil {
			return err
		}
		if target != out {
			return convertCores(s, target, out)
		}
		return nil
	}
	parts := (capacity + w - 1) / w
	t, err := d.tempOf(s, parts, kind)
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
		spec.extents = prefixes(cores)
		spec.extents[len(srcs)] = n.prefix(next, kind.size())
	}
	if err := k.launchWith(s, cores, indirect, &spec); err != nil {
		return err
	}
	return reduceDynTyped(s, first, sfx, []*bufferCore{t}, n, pass+1, out)
}

// SumDynOf is SumDyn for any Float type, accumulated as SumOf.
func SumDynOf[T Float](s *Stream, x, out *Buffer[T], n *Param[uint32]) error {
	if x32, ok := as32(x); ok {
		o32, _ := as32(out)
		return SumDyn(s, x32, o32, n)
	}
	sfx, err := prepare[T](s, "SumDyn", x, out)
	if err != nil {
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
	return reduceDynTyped(s, "sum"+sfx, sfx, []*bufferCore{x.core}, l, 0, out.core)
}

// DotDynOf is DotDyn for any Float type, accumulated as SumOf.
func DotDynOf[T Float](s *Stream, x, y, out *Buffer[T], n *Param[uint32]) error {
	if x32, ok := as32(x); ok {
		y32, _ := as32(y)
		o32, _ := as32(out)
		return DotDyn(s, x32, y32, o32, n)
	}
	sfx, err := prepare[T](s, "DotDyn", x, y, out)
	if err != nil {
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
	return reduceDynTyped(s, "dot"+sfx, sfx, []*bufferCore{x.core, y.core}, l, 0, out.core)
}

// SoftmaxDynOf is SoftmaxDyn for any Float type.
func SoftmaxDynOf[T Float](s *Stream, src, dst *Buffer[T], rows *Param[uint32], cols int) error {
	if s32, ok := as32(src); ok {
		d32, _ := as32(dst)
		return SoftmaxDyn(s, s32, d32, rows, cols)
	}
	sfx, err := prepare[T](s, "SoftmaxDyn", src, dst)
	if err != nil {
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
	k, err := d.dynamicKernel("softmax" + sfx)
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
		row := uint64(cols) * src.core.elem.size()
		spec.extents = make([]capture.Extent, len(cores))
		spec.extents[0] = l.prefix(l.value, row)
		spec.extents[1] = l.prefix(l.value, row)
	}
	return k.launchWith(s, cores, indirect, &spec)
}

// MatmulDynOf is MatmulDyn for any Float type.
func MatmulDynOf[T Float](s *Stream, a, b, c *Buffer[T], m *Param[uint32], n, k int) error {
	if a32, ok := as32(a); ok {
		b32, _ := as32(b)
		c32, _ := as32(c)
		return MatmulDyn(s, a32, b32, c32, m, n, k)
	}
	sfx, err := prepare[T](s, "MatmulDyn", a, b, c)
	if err != nil {
		return err
	}
	if n <= 0 || k <= 0 || a.core.n%k != 0 {
		return fmt.Errorf("vkc: MatmulDyn: k=%d and n=%d must be positive and k divide A's %d elements", k, n, a.core.n)
	}
	rows := a.core.n / k
	if err := matmulShape("MatmulDyn", a.core, b.core, c.core, rows, n, k); err != nil {
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
	kern, err := d.dynamicKernel("matmul" + sfx)
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
		size := a.core.elem.size()
		spec.extents = make([]capture.Extent, len(cores))
		spec.extents[0] = l.prefix(l.value, uint64(k)*size)
		spec.extents[2] = l.prefix(l.value, uint64(n)*size)
	}
	return kern.launchWith(s, cores, indirect, &spec)
}
