package ops

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vkcompute/vkc"
)

// elemType is what ops knows of an element type: the suffix of its kernel
// variants ("" where ops has none), its Go name for errors, and whether it
// is a float.
type elemType struct {
	suffix string
	name   string
	float  bool
}

// typeOf describes T.
func typeOf[T vkc.Element]() elemType {
	switch any(*new(T)).(type) {
	case float32:
		return elemType{"f32", "float32", true}
	case vkc.Float16:
		return elemType{"f16", "Float16", true}
	case float64:
		return elemType{"f64", "float64", true}
	case int32:
		return elemType{"i32", "int32", false}
	case uint32:
		return elemType{"u32", "uint32", false}
	}
	name := fmt.Sprintf("%T", *new(T))
	return elemType{name: strings.TrimPrefix(name, "vkc.")}
}

// The element types each op family accepts (docs/guide/ops.md lists them;
// a test keeps the table and these sets equal).
var (
	floatTypes   = []string{"float32", "Float16", "float64"}
	numericTypes = []string{"float32", "Float16", "float64", "int32", "uint32"}
	float32And16 = []string{"float32", "Float16"}
)

// checkType refuses T for op unless its name is in allowed, with an error
// wrapping vkc.ErrUnsupported that names the op, the type and the types
// the op takes.
func checkType[T vkc.Element](op string, allowed []string) (elemType, error) {
	et := typeOf[T]()
	if et.suffix == "" || !slices.Contains(allowed, et.name) {
		return et, fmt.Errorf("vkc: %s of %s: the op takes %s: %w", op, et.name, strings.Join(allowed, ", "), vkc.ErrUnsupported)
	}
	return et, nil
}

// push is a kernel's push-constant block being built, word by word.
type push []byte

// u appends words.
func (p push) u(vs ...uint32) push {
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint32(p, v)
	}
	return p
}

// ints appends n words: vs, then zeros.
func (p push) ints(n int, vs []int) push {
	for i := range n {
		var v uint32
		if i < len(vs) {
			v = uint32(vs[i])
		}
		p = p.u(v)
	}
	return p
}

// scalar appends a constant as the two words a kernel's scalarOf reads:
// float32 bits and 0, or float64's low and high words.
func (p push) scalar(v float64, et elemType) push {
	if et.suffix == "f64" {
		b := math.Float64bits(v)
		return p.u(uint32(b), uint32(b>>32))
	}
	return p.u(math.Float32bits(float32(v)), 0)
}

// Kernel flag bits shared by the element-wise and row kernels.
const (
	flagDynamic = 1 << 0
)

// maxRank is the most axes a kernel takes once axes are merged (MAXR in
// the kernels' types.glsl).
const maxRank = 6

// wg is every kernel's workgroup size.
const wg = 64

// elemsPerGroup is about how many elements one workgroup of an
// element-wise or row kernel covers.
const elemsPerGroup = 4096

// rowsPerGroup is how many rows of inner elements one group covers, so
// that rows rows need at most maxGroups groups.
func rowsPerGroup(rows, inner int, maxGroups uint32) int {
	per := max(1, (elemsPerGroup+inner-1)/inner)
	return max(per, (rows+int(maxGroups)-1)/int(maxGroups))
}

// groupsFor lays n groups over x and, past the device's x limit, y.
func groupsFor(n int, lim [3]uint32) ([3]uint32, error) {
	maxX := int(lim[0])
	if n <= maxX {
		return [3]uint32{uint32(max(n, 1)), 1, 1}, nil
	}
	gy := (n + maxX - 1) / maxX
	if gy > int(lim[1]) {
		return [3]uint32{}, fmt.Errorf("%d workgroups are more than the device's %v", n, lim)
	}
	return [3]uint32{uint32((n + gy - 1) / gy), uint32(gy), 1}, nil
}

// run launches k over rows rows of inner elements, perGroup rows a group:
// with rows param nil, ceil(rows/perGroup) groups now; otherwise groups
// from the param when the launch runs (LaunchIndirect), the param bound
// where the kernel reads its row count.
//
// prefixes name the bindings of the dynamic tensors (prefixOf), whose
// first rows lie in a prefix of their buffer: the launch checks and marks
// only that prefix (vkc.Groups.Prefix), so rows past the param's value
// are neither read nor counted as written.
func run(s *vkc.Stream, k *vkc.Kernel, rowsParam *vkc.Param[uint32], prefixes []rowPrefix, rows, perGroup int, p push, args ...vkc.Arg) error {
	if rowsParam != nil {
		g := vkc.GroupsOf(rowsParam, uint32(perGroup))
		for _, pr := range prefixes {
			g = g.Prefix(pr.binding, pr.per)
		}
		return k.LaunchIndirect(s, g, p, args...)
	}
	g, err := groupsFor((rows+perGroup-1)/perGroup, s.Device().Info().Limits.MaxComputeWorkGroupCount)
	if err != nil {
		return err
	}
	return k.Launch(s, g, p, args...)
}

// rowPrefix is a binding a dynamic op uses only in its first rows, per
// elements a row.
type rowPrefix struct{ binding, per int }

// prefixOf is, for tensor t at binding, dynamic when the op runs over
// its param's rows, the prefix of its buffer its first rows lie in
// (rowStride). A dynamic input whose rows do not lie so has none: the
// launch checks it whole. A dynamic output (written) whose rows do not
// lie so is refused with an error wrapping vkc.ErrUnsupported, since the
// launch would count all of it written, rows past the param's value too.
func prefixOf[T vkc.Element](op, name string, binding int, t Tensor[T], dynamic, written bool) ([]rowPrefix, error) {
	if !dynamic {
		return nil, nil
	}
	per, err := rowStride(t.at, t.buf.Len())
	switch {
	case err != nil && written:
		return nil, fmt.Errorf("vkc: %s: dynamic %s %v: %w", op, name, t, err)
	case err != nil:
		return nil, nil
	}
	return []rowPrefix{{binding: binding, per: per}}, nil
}

// rowStride is how many elements apart the rows of a dynamic layout l
// lie, in a buffer of n elements, so that its first k rows lie in the
// buffer's first k*rowStride elements for every k: its axis-0 stride (a
// single row's span where axis 0 has extent 1). l must start at offset 0,
// each row must lie inside that stride and the buffer must hold all of
// its rows' strides; else an error wrapping vkc.ErrUnsupported.
func rowStride(l layout, n int) (int, error) {
	if len(l.shape) == 0 {
		return 0, fmt.Errorf("a scalar has no rows: %w", vkc.ErrUnsupported)
	}
	if l.offset != 0 {
		return 0, fmt.Errorf("its rows start at offset %d, not 0: %w", l.offset, vkc.ErrUnsupported)
	}
	rowSpan := 1
	for i := 1; i < len(l.shape); i++ {
		rowSpan += (l.shape[i] - 1) * l.strides[i]
	}
	per := l.strides[0]
	if l.shape[0] == 1 {
		per = rowSpan
	}
	if rowSpan > per {
		return 0, fmt.Errorf("a row spans %d elements, more than axis 0's stride %d: %w", rowSpan, per, vkc.ErrUnsupported)
	}
	if l.shape[0]*per > n {
		return 0, fmt.Errorf("its %d rows %d elements apart need %d elements, its buffer has %d: %w", l.shape[0], per, l.shape[0]*per, n, vkc.ErrUnsupported)
	}
	return per, nil
}

// opContext is what every op starts from: the stream's device and its
// cached kernels and stand-ins.
type opContext struct {
	s    *vkc.Stream
	dev  *vkc.Device
	dk   *deviceKernels
	rows *vkc.Param[uint32]
	f32  *vkc.Param[float32]
	f64  *vkc.Param[float64]
}

// begin checks the stream and that every tensor is valid and on its
// device, and gathers the op's context.
func begin(op string, s *vkc.Stream, tensors ...interface {
	Err() error
	device() *vkc.Device
}) (*opContext, error) {
	if s == nil {
		return nil, fmt.Errorf("vkc: %s: nil stream", op)
	}
	d := s.Device()
	if d == nil {
		return nil, fmt.Errorf("vkc: %s: stream of no device", op)
	}
	for i, t := range tensors {
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("vkc: %s: operand %d: %w", op, i, err)
		}
		if t.device() != d {
			return nil, fmt.Errorf("vkc: %s: operand %d is on another device than the stream", op, i)
		}
	}
	dk, err := kernelsOf(d)
	if err != nil {
		return nil, fmt.Errorf("vkc: %s: %w", op, err)
	}
	c := &opContext{s: s, dev: d, dk: dk}
	if c.rows, c.f32, c.f64, err = dk.standIns(); err != nil {
		return nil, fmt.Errorf("vkc: %s: %w", op, err)
	}
	return c, nil
}

// kernel is the named variant on the op's device.
func (c *opContext) kernel(op, name string) (*vkc.Kernel, error) {
	k, err := c.dk.kernel(name)
	if err != nil {
		return nil, fmt.Errorf("vkc: %s: %w", op, err)
	}
	return k, nil
}

// rowsArg is what binds where a kernel reads its row count: the param of
// a dynamic op, else the stand-in.
func (c *opContext) rowsArg(p *vkc.Param[uint32]) vkc.Arg {
	if p != nil {
		return p
	}
	return c.rows
}

// scalarArg is what binds where a kernel reads a scalar param: the
// scalar's param, or the stand-in of the op's compute type. A param of
// the wrong precision, or from another device, is refused.
func (c *opContext) scalarArg(op, what string, sc Scalar, et elemType) (vkc.Arg, error) {
	if sc.err != nil {
		return nil, fmt.Errorf("vkc: %s: %s: %w", op, what, sc.err)
	}
	switch p := sc.param.(type) {
	case nil:
		if et.suffix == "f64" {
			if c.f64 == nil {
				return nil, fmt.Errorf("vkc: %s: float64 needs FeatureFloat64, which the device lacks", op)
			}
			return c.f64, nil
		}
		return c.f32, nil
	case *vkc.Param[float32]:
		if et.suffix == "f64" {
			return nil, fmt.Errorf("vkc: %s: %s is a float32 param; a float64 op computes in float64 and takes a *vkc.Param[float64]", op, what)
		}
		if p.Device() != c.dev {
			return nil, fmt.Errorf("vkc: %s: %s is a param of another device", op, what)
		}
		return p, nil
	case *vkc.Param[float64]:
		if et.suffix != "f64" {
			return nil, fmt.Errorf("vkc: %s: %s is a float64 param; a %s op computes in float32 and takes a *vkc.Param[float32]", op, what, et.name)
		}
		if p.Device() != c.dev {
			return nil, fmt.Errorf("vkc: %s: %s is a param of another device", op, what)
		}
		return p, nil
	}
	return nil, fmt.Errorf("vkc: %s: %s: unknown scalar", op, what)
}

// device is the device of the tensor's buffer.
func (t Tensor[T]) device() *vkc.Device {
	if t.buf == nil {
		return nil
	}
	return t.buf.Device()
}
