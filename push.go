package vkc

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"

	"github.com/vkcompute/vkc/shaders"
)

// Push lays v out as the kernel's push constants, ready for Launch,
// LaunchIndirect and the other launches that take push bytes, so that a
// Go struct can stand for the module's push-constant block instead of
// bytes packed by hand. v is a struct or a non-nil pointer to one whose
// fields, in order, are the block's members (fields named _ are padding
// and skipped): each is placed at the member's Offset decoration, arrays
// and matrices by their ArrayStride and MatrixStride, so std430, std140
// and scalar layouts all come out as the module reads them. Types are
// checked member by member: a Go float32 for a 32-bit float, int32 for a
// signed 32-bit integer, uint64 for a device address, Float16 for a
// 16-bit float, a [N]T array for a vector of N or an array of N, a
// [C][R]T for a matrix of C columns of R rows, a struct for a struct. A
// mismatch names the member (by its Go path) and both types. Bytes not
// covered by a member are zero.
func (k *Kernel) Push(v any) ([]byte, error) {
	if k == nil || k.rk == nil {
		return nil, errNilKernel
	}
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, fmt.Errorf("vkc: kernel %q: push constants from a nil %v", k.name, rv.Type())
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Kind() != reflect.Struct {
		return nil, fmt.Errorf("vkc: kernel %q: push constants from %T; want a struct or a pointer to one", k.name, v)
	}
	layout := k.pushLayout
	if layout == nil {
		if k.user {
			return nil, fmt.Errorf("vkc: kernel %q: the module has no push-constant block", k.name)
		}
		return nil, fmt.Errorf("vkc: kernel %q: typed push constants are for kernels from LoadKernel", k.name)
	}
	out := make([]byte, k.push)
	if err := placeValue(out, 0, layout, rv, rv.Type().Name()); err != nil {
		return nil, fmt.Errorf("vkc: kernel %q: push constants: %w", k.name, err)
	}
	return out, nil
}

// float16Type and bfloat16Type are the 16-bit floats' Go types, uint16
// underneath: Float16 is a module's float16, BFloat16 nothing a module
// declares, and neither is a uint16.
var (
	float16Type  = reflect.TypeFor[Float16]()
	bfloat16Type = reflect.TypeFor[BFloat16]()
)

// placeValue writes v into out at offset as layout l places it; path names
// v in errors. The module's layout was bounded by Inspect (every member
// inside the block's size, which is len(out)), so offsets stay in out.
func placeValue(out []byte, offset uint64, l *shaders.Layout, v reflect.Value, path string) error {
	switch l.Kind {
	case shaders.LayoutScalar, shaders.LayoutPointer:
		return placeScalar(out, offset, l, v, path)
	case shaders.LayoutVector:
		return placeArray(out, offset, l.Elem, uint64(l.Width), l.Count, v, path, "vector")
	case shaders.LayoutArray:
		return placeArray(out, offset, l.Elem, uint64(l.Stride), l.Count, v, path, "array")
	case shaders.LayoutMatrix:
		return placeMatrix(out, offset, l, v, path)
	case shaders.LayoutStruct:
		return placeStruct(out, offset, l, v, path)
	}
	return fmt.Errorf("%s: the module's %v cannot be pushed", path, l.Kind)
}

// placeMatrix places a matrix from a Go [C][R]T, column c, row r at
// Stride bytes per column and Width per row, or the other way round for a
// row-major matrix, so the Go array always reads column by column.
func placeMatrix(out []byte, offset uint64, l *shaders.Layout, v reflect.Value, path string) error {
	if v.Kind() != reflect.Array || v.Len() != int(l.Count) {
		return mismatch(path, v.Type(), fmt.Sprintf("a matrix of %d columns ([%d][%d]%s)", l.Count, l.Count, l.Elem.Count, l.Elem.Elem.TypeName()))
	}
	for c := 0; c < v.Len(); c++ {
		col := v.Index(c)
		colPath := fmt.Sprintf("%s[%d]", path, c)
		if col.Kind() != reflect.Array || col.Len() != int(l.Elem.Count) {
			return mismatch(colPath, col.Type(), fmt.Sprintf("a column of %d %s", l.Elem.Count, l.Elem.Elem.TypeName()))
		}
		for r := 0; r < col.Len(); r++ {
			at := offset + uint64(c)*uint64(l.Stride) + uint64(r)*uint64(l.Width)
			if l.RowMajor {
				at = offset + uint64(r)*uint64(l.Stride) + uint64(c)*uint64(l.Width)
			}
			if err := placeScalar(out, at, l.Elem.Elem, col.Index(r), fmt.Sprintf("%s[%d]", colPath, r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// placeStruct places a struct member by member from a Go struct's fields
// in order, skipping fields named _ (padding); the counts must match.
func placeStruct(out []byte, offset uint64, l *shaders.Layout, v reflect.Value, path string) error {
	if v.Kind() != reflect.Struct {
		return mismatch(path, v.Type(), fmt.Sprintf("a struct of %d members", len(l.Members)))
	}
	member := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Name == "_" {
			continue
		}
		fieldPath := f.Name
		if path != "" {
			fieldPath = path + "." + f.Name
		}
		if member >= len(l.Members) {
			return fmt.Errorf("%s: %s has more fields than the module's %d members", fieldPath, v.Type(), len(l.Members))
		}
		m := l.Members[member]
		if err := placeValue(out, offset+uint64(m.Offset), m.Layout, v.Field(i), fieldPath); err != nil {
			return err
		}
		member++
	}
	if member != len(l.Members) {
		return fmt.Errorf("%s has %d fields (besides _), the module's block %d members", v.Type(), member, len(l.Members))
	}
	return nil
}

// placeArray places a vector's or an array's count elements, stride bytes
// apart, from a Go array of as many.
func placeArray(out []byte, offset uint64, elem *shaders.Layout, stride uint64, count uint32, v reflect.Value, path, what string) error {
	if v.Kind() != reflect.Array || v.Len() != int(count) {
		return mismatch(path, v.Type(), fmt.Sprintf("a %s of %d %s ([%d]%s)", what, count, elem.TypeName(), count, elem.TypeName()))
	}
	for i := 0; i < v.Len(); i++ {
		if err := placeValue(out, offset+uint64(i)*stride, elem, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// placeScalar places one number, whose Go type must be the module's.
func placeScalar(out []byte, offset uint64, l *shaders.Layout, v reflect.Value, path string) error {
	bits, ok := scalarBits(l, v)
	if !ok {
		return mismatch(path, v.Type(), l.TypeName())
	}
	if offset+uint64(l.Width) > uint64(len(out)) {
		return fmt.Errorf("%s: at byte %d, past the block's %d bytes", path, offset, len(out))
	}
	switch l.Width {
	case 1:
		out[offset] = byte(bits)
	case 2:
		binary.LittleEndian.PutUint16(out[offset:], uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(out[offset:], uint32(bits))
	case 8:
		binary.LittleEndian.PutUint64(out[offset:], bits)
	default:
		return fmt.Errorf("%s: a %d-byte number cannot be pushed", path, l.Width)
	}
	return nil
}

// scalarBits is v's bits as the module's scalar l holds them; ok is false
// where v's Go type is not the one that stands for l's: a uint64 for a
// device address, Float16 for a 16-bit float, float32 or float64 for
// the others, a signed integer of l's width for a signed one, an unsigned
// integer of l's width (not Float16 or BFloat16) otherwise.
func scalarBits(l *shaders.Layout, v reflect.Value) (bits uint64, ok bool) {
	t := v.Type()
	switch {
	case l.Kind == shaders.LayoutPointer:
		ok = t.Kind() == reflect.Uint64
		bits = uint64Of(v, ok)
	case l.Float && t == float16Type:
		ok = l.Width == 2
		bits = uint64Of(v, ok)
	case l.Float:
		ok = (t.Kind() == reflect.Float32 && l.Width == 4) || (t.Kind() == reflect.Float64 && l.Width == 8)
		if ok && l.Width == 4 {
			bits = uint64(math.Float32bits(float32(v.Float())))
		} else if ok {
			bits = math.Float64bits(v.Float())
		}
	case l.Signed:
		ok = isInt(t.Kind()) && uint32(t.Size()) == l.Width
		if ok {
			bits = uint64(v.Int())
		}
	default:
		ok = t != float16Type && t != bfloat16Type && isUint(t.Kind()) && uint32(t.Size()) == l.Width
		bits = uint64Of(v, ok)
	}
	return bits, ok
}

func uint64Of(v reflect.Value, ok bool) uint64 {
	if !ok {
		return 0
	}
	return v.Uint()
}

func isInt(k reflect.Kind) bool {
	return k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64
}

func isUint(k reflect.Kind) bool {
	return k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64
}

func mismatch(path string, have reflect.Type, want string) error {
	return fmt.Errorf("member %s is %v in Go, %s in the module", path, have, want)
}
