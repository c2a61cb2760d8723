package vkc

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// specialization is what a user kernel's pipeline is specialized with: the
// workgroup size it will have, each constant set (typed by the module),
// and the integer constants' values, which size shared arrays.
type specialization struct {
	local     [3]uint32
	constants []recorder.SpecConstant
	ints      map[uint32]uint32
}

// specialize works out a user kernel's specialization from spec.Constants
// and spec.LocalSize against the module's constants and workgroup size.
// A constant the module does not declare, a value its type cannot hold, a
// size requested on an axis the module fixes (other than the size it
// fixes), and two sizes asked of one constant are refused.
func specialize(spec KernelSpec, mod shaders.Module) (specialization, error) {
	sp := specialization{local: mod.LocalSize, ints: map[uint32]uint32{}}
	set, err := typedConstants(spec, mod)
	if err != nil {
		return sp, err
	}
	sized, err := sp.sizeWorkgroup(spec, mod, set)
	if err != nil {
		return sp, err
	}
	for id, size := range sized {
		set[id] = uint64(size)
	}
	for _, c := range mod.SpecConstants {
		bits, ok := set[c.ID]
		if !ok {
			continue
		}
		size := c.Bits / 8
		sp.constants = append(sp.constants, recorder.SpecConstant{ID: c.ID, Size: size, Bits: bits})
		if c.Bits == 32 && c.Kind != shaders.SpecFloat {
			sp.ints[c.ID] = uint32(bits)
		}
	}
	return sp, nil
}

// typedConstants is spec.Constants as the bits of each constant's type in
// the module, by SpecId; a constant the module does not declare, or a value
// its type cannot hold, is refused. The IDs are taken in order, so errors
// are the same run to run.
func typedConstants(spec KernelSpec, mod shaders.Module) (map[uint32]uint64, error) {
	set := map[uint32]uint64{}
	ids := make([]uint32, 0, len(spec.Constants))
	for id := range spec.Constants {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one order, so errors and pipelines are the same run to run
	for _, id := range ids {
		c, ok := findConstant(mod, id)
		if !ok {
			return nil, fmt.Errorf("vkc: kernel %q: Constants sets SpecId %d, which the module does not declare (it has %s)", spec.Name, id, constantList(mod))
		}
		bits, err := constantBits(c, spec.Constants[id])
		if err != nil {
			return nil, fmt.Errorf("vkc: kernel %q: specialization constant %d (%s): %w", spec.Name, id, c.TypeName(), err)
		}
		set[id] = bits
	}
	return set, nil
}

// sizeWorkgroup sets sp.local, axis by axis, from the constants already
// set and spec.LocalSize, and returns the workgroup constants the request
// sets (by SpecId, the size each takes). A size asked along an axis the
// module fixes (other than the size it fixes), an axis sized by a
// constant that is not an integer, and two sizes asked of one constant
// are refused.
func (sp *specialization) sizeWorkgroup(spec KernelSpec, mod shaders.Module, set map[uint32]uint64) (map[uint32]uint32, error) {
	requested := spec.LocalSize != ([3]uint32{})
	sized := map[uint32]uint32{} // the workgroup constants the request sets
	for axis, id := range mod.LocalSizeSpecIDs {
		want := spec.LocalSize[axis]
		if id < 0 {
			if want != 0 && want != mod.LocalSize[axis] {
				return nil, fmt.Errorf("vkc: kernel %q: local size %v asks %d along %c, which the module fixes at %d (no local_size_%c_id)", spec.Name, spec.LocalSize, want, "xyz"[axis], mod.LocalSize[axis], "xyz"[axis])
			}
			continue
		}
		c, ok := findConstant(mod, uint32(id))
		if !ok || c.Kind == shaders.SpecFloat || c.Kind == shaders.SpecBool {
			return nil, fmt.Errorf("vkc: kernel %q: the workgroup size along %c comes from specialization constant %d, which is not an integer constant", spec.Name, "xyz"[axis], id)
		}
		if bits, given := set[uint32(id)]; given {
			if err := checkGivenSize(spec, mod, axis, id, bits); err != nil {
				return nil, err
			}
			sp.local[axis] = uint32(bits)
			continue
		}
		if !requested {
			continue
		}
		size := max(want, 1)
		if prev, ok := sized[uint32(id)]; ok && prev != size {
			return nil, fmt.Errorf("vkc: kernel %q: local size %v asks two sizes (%d, %d) of specialization constant %d, which sizes axes %s", spec.Name, spec.LocalSize, prev, size, id, sharingAxes(mod.LocalSizeSpecIDs, id))
		}
		if _, err := constantBits(c, float64(size)); err != nil {
			return nil, fmt.Errorf("vkc: kernel %q: local size %v along %c: specialization constant %d (%s): %w", spec.Name, spec.LocalSize, "xyz"[axis], id, c.TypeName(), err)
		}
		sized[uint32(id)] = size
		sp.local[axis] = size
	}
	return sized, nil
}

// checkGivenSize refuses bits, the value spec.Constants gives the
// constant id that sizes the workgroup along axis, where it is not a
// size, or where spec.LocalSize asks another size along that axis: the
// constant's value is the size, so the two must agree.
func checkGivenSize(spec KernelSpec, mod shaders.Module, axis int, id int64, bits uint64) error {
	if bits == 0 || bits > math.MaxUint32 {
		return fmt.Errorf("vkc: kernel %q: specialization constant %d sizes the workgroup along %s; %d is not a size", spec.Name, id, sharingAxes(mod.LocalSizeSpecIDs, id), bits)
	}
	if want := spec.LocalSize[axis]; want != 0 && uint64(want) != bits {
		return fmt.Errorf("vkc: kernel %q: local size %v asks %d along %c, but Constants sets its specialization constant %d to %d", spec.Name, spec.LocalSize, want, "xyz"[axis], id, bits)
	}
	return nil
}

// findConstant is the module's specialization constant with SpecId id.
func findConstant(mod shaders.Module, id uint32) (shaders.SpecConstant, bool) {
	i, ok := slices.BinarySearchFunc(mod.SpecConstants, id, func(c shaders.SpecConstant, id uint32) int {
		switch {
		case c.ID < id:
			return -1
		case c.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return shaders.SpecConstant{}, false
	}
	return mod.SpecConstants[i], true
}

// constantList names a module's specialization constants for a message.
func constantList(mod shaders.Module) string {
	if len(mod.SpecConstants) == 0 {
		return "none"
	}
	parts := make([]string, len(mod.SpecConstants))
	for i, c := range mod.SpecConstants {
		parts[i] = fmt.Sprintf("%d %s", c.ID, c.TypeName())
	}
	return strings.Join(parts, ", ")
}

// constantBits is v as the bits of constant c's type, or an error when the
// type cannot hold it: a bool takes 0 or 1; an integer a whole number in its
// range; a float any value short of overflowing its type (it is rounded to
// the nearest; NaN and the infinities pass as they are).
func constantBits(c shaders.SpecConstant, v float64) (uint64, error) {
	switch c.Kind {
	case shaders.SpecBool:
		if v != 0 && v != 1 {
			return 0, fmt.Errorf("%v is not a bool (0 or 1)", v)
		}
		return uint64(v), nil
	case shaders.SpecFloat:
		finite := !math.IsInf(v, 0) && !math.IsNaN(v)
		switch c.Bits {
		case 64:
			return math.Float64bits(v), nil
		case 32:
			if finite && math.Abs(v) > math.MaxFloat32 {
				return 0, fmt.Errorf("%v overflows float32", v)
			}
			return uint64(math.Float32bits(float32(v))), nil
		case 16:
			if finite && math.Abs(v) > 65504 {
				return 0, fmt.Errorf("%v overflows float16", v)
			}
			return uint64(Float16From(float32(v))), nil
		}
	case shaders.SpecInt, shaders.SpecUint:
		if v != math.Trunc(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%v is not a whole number", v)
		}
		lo, hi := 0.0, math.Ldexp(1, int(c.Bits)) // [lo, hi)
		if c.Kind == shaders.SpecInt {
			lo, hi = -math.Ldexp(1, int(c.Bits)-1), math.Ldexp(1, int(c.Bits)-1)
		}
		if v < lo || v >= hi {
			return 0, fmt.Errorf("%v is outside %s's range", v, c.TypeName())
		}
		if c.Kind == shaders.SpecInt {
			return uint64(int64(v)) & (math.MaxUint64 >> (64 - c.Bits)), nil
		}
		return uint64(v), nil
	}
	return 0, fmt.Errorf("a %s constant vkc cannot set", c.TypeName())
}
