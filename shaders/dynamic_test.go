package shaders

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withVariants are the static kernels a dynamic graph needs: every one with
// scalars except transpose, whose shape no graph changes.
var withVariants = []string{"add", "add_wide", "axpy", "axpy_wide", "binary_f16", "binary_f64", "copy", "copy_wide", "div", "div_wide", "dot", "dot_f16", "dot_f64", "dot_subgroup", "dot_wide", "fill", "fill_wide", "matmul", "matmul_f16", "matmul_f64", "matmul_texel", "matmul_texel_f16", "matmul_wide", "matmul_wide_f16", "mul", "mul_wide", "scale", "scale_wide", "softmax", "softmax_f16", "softmax_f64", "softmax_subgroup", "sub", "sub_wide", "sum", "sum_f16", "sum_f64", "sum_subgroup", "sum_wide"}

// scalarsOf reads a static kernel's push-constant words from its PushDoc
// ("a float32, n uint32"): each field starts with the word's name and type.
func scalarsOf(t *testing.T, k Kernel) []Scalar {
	t.Helper()
	var out []Scalar
	for _, field := range pushFields(k.PushDoc) {
		words := strings.Fields(field)
		require.GreaterOrEqual(t, len(words), 2, "%s: PushDoc field %q names the word and its type", k.Name, field)
		switch words[1] {
		case "uint32":
			out = append(out, Scalar{Name: words[0]})
		case "float32":
			out = append(out, Scalar{Name: words[0], Float: true})
		default:
			require.Failf(t, "unknown push type", "%s: PushDoc field %q: type %q", k.Name, field, words[1])
		}
	}
	return out
}

func TestDynamicVariantsAreTheOnesNeeded(t *testing.T) {
	var statics []string
	for _, k := range All() {
		if k.DynamicOf == "" {
			continue
		}
		statics = append(statics, k.DynamicOf)
		assert.Equal(t, k.DynamicOf+"_dyn", k.Name, "a variant is named <static>_dyn")
		back, err := Dynamic(k.DynamicOf)
		require.NoError(t, err, k.Name)
		assert.Equal(t, k, back, "Dynamic(%q) returns %s", k.DynamicOf, k.Name)
	}
	sort.Strings(statics)
	assert.Equal(t, withVariants, statics)
}

func TestDynamicVariantTakesTheStaticScalarsAsBindings(t *testing.T) {
	for _, name := range withVariants {
		t.Run(name, func(t *testing.T) {
			static, err := Get(name)
			require.NoError(t, err)
			v, err := Dynamic(name)
			require.NoError(t, err)

			want := scalarsOf(t, static)
			require.Len(t, want, int(static.PushSize/4))
			require.NotEmpty(t, want, "a kernel with a variant has scalars")
			assert.Equal(t, want, v.Scalars, "the variant's scalars are the static push words, in order")

			wantBindings := append([]Binding(nil), static.Bindings...)
			for _, s := range want {
				wantBindings = append(wantBindings, ro(s.Name))
			}
			assert.Equal(t, wantBindings, v.Bindings, "the static bindings, then one read-only buffer per scalar")
			for i := range v.Scalars {
				assert.Equal(t, len(static.Bindings)+i, v.ScalarBinding(i))
			}

			assert.Zero(t, v.PushSize, "no push constants")
			assert.Empty(t, v.PushDoc)
			assert.Equal(t, static.LocalSize, v.LocalSize, "workgroup size")
			assert.Equal(t, static.Tile, v.Tile, "tile, so the group counts are the same")
			for _, target := range shapeTargets {
				assert.Equal(t, static.ShapeFor(target), v.ShapeFor(target), "the same shape on %+v", target)
			}
			assert.Equal(t, static.Needs, v.Needs, "device feature")
			assert.Equal(t, name, v.DynamicOf)
			assert.Empty(t, static.DynamicOf)
			assert.Nil(t, static.Scalars, "a static kernel's scalars are push constants")
		})
	}
}

// The catalogue's description of a variant is checked against its module:
// the interface test covers every kernel; this adds what is particular to
// variants, reading the SPIR-V further than Inspect does.
func TestDynamicVariantModulesMatchTheirDescription(t *testing.T) {
	for _, name := range withVariants {
		t.Run(name, func(t *testing.T) {
			static, err := Get(name)
			require.NoError(t, err)
			v, err := Dynamic(name)
			require.NoError(t, err)
			mod, err := Inspect(v.SPIRV)
			require.NoError(t, err)
			staticMod, err := Inspect(static.SPIRV)
			require.NoError(t, err)

			assert.Zero(t, mod.PushSize, "no push-constant block")
			assert.Equal(t, staticMod.LocalSize, mod.LocalSize)
			assert.Equal(t, staticMod.LocalSizeSpecIDs, mod.LocalSizeSpecIDs, "the same specialization constants set the workgroup size")
			require.Len(t, mod.Bindings, len(v.Bindings))
			for i, b := range mod.Bindings[:len(static.Bindings)] {
				assert.Equal(t, staticMod.Bindings[i], b, "binding %d is the static kernel's", i)
			}
			for i, s := range v.Scalars {
				b := mod.Bindings[v.ScalarBinding(i)]
				elem := ScalarUint
				if s.Float {
					elem = ScalarFloat
				}
				described := b
				described.Block = nil // scalarBlock below checks the block's one member
				assert.Equal(t, ModuleBinding{Set: 0, Binding: uint32(v.ScalarBinding(i)), Kind: StorageBuffer, Access: ReadOnly, Elem: elem,
					MinSize: 4, NonWritable: true, Loads: true, Traced: true}, described, "scalar %s", s.Name)
				op, width, offset := scalarBlock(t, v.SPIRV, b.Binding)
				wantOp := uint32(opTypeInt)
				if s.Float {
					wantOp = opTypeFloat
				}
				assert.Equal(t, wantOp, op, "scalar %s: float %v in the catalogue", s.Name, s.Float)
				assert.Equal(t, uint32(32), width, "scalar %s is 4 bytes", s.Name)
				assert.Zero(t, offset, "scalar %s is read at index 0", s.Name)
			}
		})
	}
}

// scalarBlock reads, from a module, the block bound at set 0 binding b,
// which must hold exactly one scalar member: its type's opcode (OpTypeInt
// or OpTypeFloat), its width in bits and its offset.
func scalarBlock(t *testing.T, code []byte, b uint32) (op, width, offset uint32) {
	t.Helper()
	insts, err := decode(code)
	require.NoError(t, err)
	d, err := collect(insts)
	require.NoError(t, err)
	for _, v := range d.variables {
		vd := d.decorations[v.id]
		if vd == nil || vd.binding == nil || *vd.binding != b || (vd.set != nil && *vd.set != 0) {
			continue
		}
		ptr, ok := d.types[v.pointer]
		require.True(t, ok && ptr.op == opTypePointer, "binding %d: variable without a pointer type", b)
		blockID := ptr.words[1]
		block := d.types[blockID]
		require.Equal(t, uint32(opTypeStruct), block.op, "binding %d is a block", b)
		require.Len(t, block.words, 1, "binding %d: one member, the scalar", b)
		member := d.types[block.words[0]]
		require.NotEmpty(t, member.words, "binding %d: the member has a scalar type", b)
		return member.op, member.words[0], d.decorations[blockID].memberOffset[0]
	}
	require.Failf(t, "no such binding", "binding %d not in the module", b)
	return 0, 0, 0
}

func TestDynamicRefusesWhatHasNoVariant(t *testing.T) {
	_, err := Dynamic("transpose")
	require.ErrorIs(t, err, ErrNoDynamicVariant)
	assert.Contains(t, err.Error(), `"transpose"`)

	_, err = Dynamic("axpy_dyn")
	require.ErrorIs(t, err, ErrNoDynamicVariant, "a variant has no variant of its own")

	_, err = Dynamic("no-such-kernel")
	require.ErrorIs(t, err, ErrUnknownKernel)
	assert.False(t, errors.Is(err, ErrNoDynamicVariant))
	assert.Contains(t, err.Error(), "no-such-kernel")
}

func TestDynamicReturnsACopy(t *testing.T) {
	first, err := Dynamic("axpy")
	require.NoError(t, err)
	first.Scalars[0].Float = false
	first.Bindings[2].Access = WriteOnly
	second, err := Dynamic("axpy")
	require.NoError(t, err)
	assert.True(t, second.Scalars[0].Float)
	assert.Equal(t, ReadOnly, second.Bindings[2].Access)
}
