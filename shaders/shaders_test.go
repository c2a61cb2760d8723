package shaders

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

func names(dir, ext string, t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	require.NoError(t, err)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ext))
	}
	sort.Strings(out)
	return out
}

// builds lists the modules scripts/gen-shaders.sh builds: each source's,
// its _dyn variant's (-DDYNAMIC) where the source has one, its _wide
// variant's (-DWIDE) and _wide_dyn's (both) where it has those, each with
// the glslc arguments that build it.
func builds(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range names("glsl", ".comp", t) {
		src := filepath.Join("glsl", name+".comp")
		out[name] = []string{"-O", "--target-env=vulkan1.1", src}
		text, err := os.ReadFile(src)
		require.NoError(t, err)
		if bytes.Contains(text, []byte("\n#ifdef DYNAMIC\n")) {
			out[name+dynamicSuffix] = []string{"-O", "--target-env=vulkan1.1", "-DDYNAMIC", src}
		}
		if bytes.Contains(text, []byte("\n#ifdef WIDE\n")) {
			out[name+wideSuffix] = []string{"-O", "--target-env=vulkan1.1", "-DWIDE", src}
			if bytes.Contains(text, []byte("\n#ifdef DYNAMIC\n")) {
				out[name+wideSuffix+dynamicSuffix] = []string{"-O", "--target-env=vulkan1.1", "-DWIDE", "-DDYNAMIC", src}
			}
		}
	}
	return out
}

func TestEverySourceHasItsModuleAndCatalogueEntry(t *testing.T) {
	var built []string
	for name := range builds(t) {
		built = append(built, name)
	}
	sort.Strings(built)
	modules := names("spv", ".spv", t)
	require.NotEmpty(t, built)
	assert.Equal(t, built, modules, "every glsl/*.comp (and its -DDYNAMIC variant) needs its spv/*.spv and vice versa")

	var catalogued []string
	for _, k := range All() {
		catalogued = append(catalogued, k.Name)
	}
	sort.Strings(catalogued)
	assert.Equal(t, built, catalogued, "every module needs a catalogue entry and vice versa")
	assert.Len(t, All(), len(catalogue), "every catalogue entry found its embedded module")
}

func TestCatalogueModulesAreValidSPIRV(t *testing.T) {
	validator, lookErr := exec.LookPath("spirv-val")
	for _, k := range All() {
		t.Run(k.Name, func(t *testing.T) {
			require.GreaterOrEqual(t, len(k.SPIRV), 20)
			assert.Equal(t, uint32(spirvMagic), binary.LittleEndian.Uint32(k.SPIRV), "magic number")
			if lookErr != nil {
				t.Skip("spirv-val not on PATH; only the magic number was checked")
			}
			path := filepath.Join(t.TempDir(), k.Name+".spv")
			require.NoError(t, os.WriteFile(path, k.SPIRV, 0o600))
			out, err := exec.Command(validator, "--target-env", "vulkan1.1", path).CombinedOutput()
			assert.NoError(t, err, "spirv-val: %s", out)
		})
	}
}

// The committed modules must be exactly what glslc builds from the sources
// now, with the flags of scripts/gen-shaders.sh; otherwise run go generate.
func TestCommittedSPIRVIsFresh(t *testing.T) {
	compiler, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc not on PATH; cannot check that spv/ matches glsl/")
	}
	for name, args := range builds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), name+".spv")
			msg, err := exec.Command(compiler, append(args, "-o", out)...).CombinedOutput()
			require.NoError(t, err, "glslc: %s", msg)
			fresh, err := os.ReadFile(out)
			require.NoError(t, err)
			committed, err := os.ReadFile(filepath.Join("spv", name+".spv"))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(fresh, committed), "spv/%s.spv is stale: run go generate ./shaders", name)
		})
	}
}

func TestCatalogueMatchesModuleInterface(t *testing.T) {
	for _, k := range All() {
		t.Run(k.Name, func(t *testing.T) {
			mod, err := Inspect(k.SPIRV)
			require.NoError(t, err)
			assert.Contains(t, mod.EntryPoints, "main")

			require.Len(t, mod.Bindings, len(k.Bindings), "binding count")
			for i, b := range mod.Bindings {
				assert.Equal(t, uint32(0), b.Set, "binding %d set", i)
				assert.Equal(t, uint32(i), b.Binding, "bindings are 0..n-1")
				kind := StorageBuffer
				if k.Bindings[i].Texel {
					kind = UniformTexelBuffer
					assert.Equal(t, ReadOnly, k.Bindings[i].Access, "binding %d: texels are read-only", i)
				}
				assert.Equal(t, kind, b.Kind, "binding %d kind", i)
				assert.Equal(t, k.Bindings[i].Access, b.Access, "binding %d (%s) access", i, k.Bindings[i].Name)
			}

			assert.Equal(t, k.PushSize, mod.PushSize, "push-constant block size")
			assert.Zero(t, k.PushSize%4, "push constants are 4-byte fields")
			assert.Len(t, pushFields(k.PushDoc), int(k.PushSize/4), "PushDoc names one field per word: %q", k.PushDoc)

			assert.Equal(t, k.LocalSize, mod.LocalSize, "default workgroup size")
			assert.Equal(t, int64(0), mod.LocalSizeSpecIDs[0], "x size is specialization constant 0")
			if k.LocalSize[1] > 1 {
				assert.Equal(t, int64(1), mod.LocalSizeSpecIDs[1], "y size is specialization constant 1")
			}
		})
	}
}

// pushFields splits a PushDoc into its comma-separated fields, one per
// push-constant word; none for a kernel without push constants.
func pushFields(doc string) []string {
	if doc == "" {
		return nil
	}
	return strings.Split(doc, ",")
}

func TestTilesFollowTheWorkgroupSize(t *testing.T) {
	matmul, err := Get("matmul")
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{8 * matmul.LocalSize[0], 8 * matmul.LocalSize[1]}, matmul.Tile, "8x8 block per invocation by default (ShapeFor picks others per device)")
	transpose, err := Get("transpose")
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{transpose.LocalSize[0], transpose.LocalSize[1]}, transpose.Tile, "one element per invocation")
	for _, k := range All() {
		base := k.Name
		if k.DynamicOf != "" {
			base = k.DynamicOf // a variant is tiled as its static kernel
		}
		if base != "matmul" && base != "matmul_f16" && base != "matmul_f64" && base != "matmul_wide" && base != "matmul_wide_f16" && base != "matmul_texel" && base != "matmul_texel_f16" && base != "transpose" {
			assert.Zero(t, k.Tile, "%s is not tiled in 2-D", k.Name)
		}
	}
}

func TestOnlySubgroupKernelNeedsAFeature(t *testing.T) {
	for _, k := range All() {
		want := FeatureNone
		switch {
		case strings.Contains(k.Name, "subgroup"):
			want = FeatureSubgroupArithmetic
		case strings.HasPrefix(k.Name, "sum_wide"), strings.HasPrefix(k.Name, "dot_wide"):
			want = FeatureSubgroupArithmeticInt64 // subgroupAdd over 64-bit loads
		case strings.Contains(k.Name, "_wide"):
			want = FeatureInt64 // the element-wise kernels' 64-bit words
		}
		assert.Equal(t, want, k.Needs, k.Name)
	}
}

func TestGetUnknownKernel(t *testing.T) {
	_, err := Get("no-such-kernel")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUnknownKernel))
	assert.Contains(t, err.Error(), "no-such-kernel")
}

func TestGetReturnsACopy(t *testing.T) {
	first, err := Get("axpy")
	require.NoError(t, err)
	first.Bindings[0].Access = WriteOnly
	first.SPIRV[0] ^= 0xff
	second, err := Get("axpy")
	require.NoError(t, err)
	assert.Equal(t, ReadOnly, second.Bindings[0].Access)
	assert.Equal(t, uint32(spirvMagic), binary.LittleEndian.Uint32(second.SPIRV))
}

func TestAllIsStable(t *testing.T) {
	assert.Equal(t, All(), All())
}

func TestAccessAndFeatureNames(t *testing.T) {
	assert.Equal(t, "read", ReadOnly.String())
	assert.Equal(t, "write", WriteOnly.String())
	assert.Equal(t, "read-write", ReadWrite.String())
	assert.Equal(t, "Access(9)", Access(9).String())
	assert.True(t, ReadOnly.Reads())
	assert.False(t, ReadOnly.Writes())
	assert.True(t, WriteOnly.Writes())
	assert.False(t, WriteOnly.Reads())
	assert.True(t, ReadWrite.Reads() && ReadWrite.Writes())
	assert.Equal(t, "subgroup arithmetic", FeatureSubgroupArithmetic.String())
	assert.Equal(t, "subgroup arithmetic and 64-bit integers", FeatureSubgroupArithmeticInt64.String())
	assert.Equal(t, "64-bit integers", FeatureInt64.String())
	assert.Equal(t, "none", FeatureNone.String())
	assert.Equal(t, "Feature(7)", Feature(7).String())
	assert.Equal(t, "storage buffer", StorageBuffer.String())
	assert.Equal(t, "uniform buffer", UniformBuffer.String())
}

func TestInspectRejectsMalformedModules(t *testing.T) {
	valid, err := Get("copy")
	require.NoError(t, err)

	badMagic := append([]byte(nil), valid.SPIRV...)
	badMagic[0] ^= 0xff
	// An instruction whose word count runs past the end of the module.
	overrun := append([]byte(nil), valid.SPIRV[:20]...)
	overrun = binary.LittleEndian.AppendUint32(overrun, 100<<16|opDecorate)
	// An instruction that claims zero words, which would never advance.
	zeroLength := binary.LittleEndian.AppendUint32(append([]byte(nil), valid.SPIRV[:20]...), 0)
	// OpDecorate Binding with its literal missing, in an otherwise whole
	// module.
	shortDecorate := binary.LittleEndian.AppendUint32(append([]byte(nil), valid.SPIRV...), 3<<16|opDecorate)
	shortDecorate = binary.LittleEndian.AppendUint32(shortDecorate, 1)
	shortDecorate = binary.LittleEndian.AppendUint32(shortDecorate, decorationBinding)

	cases := map[string][]byte{
		"empty":          nil,
		"short":          valid.SPIRV[:12],
		"ragged":         valid.SPIRV[:len(valid.SPIRV)-1],
		"bad magic":      badMagic,
		"overrun":        overrun,
		"zero length":    zeroLength,
		"short decorate": shortDecorate,
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Inspect(code)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errs.BadSPIRV), "%v", err)
		})
	}
}

func TestInspectMergesAliasedBindings(t *testing.T) {
	// matmul declares B and C twice each (float and vec4 views).
	k, err := Get("matmul")
	require.NoError(t, err)
	mod, err := Inspect(k.SPIRV)
	require.NoError(t, err)
	require.Len(t, mod.Bindings, 3)
	assert.Equal(t, ReadOnly, mod.Bindings[1].Access)
	assert.Equal(t, WriteOnly, mod.Bindings[2].Access)
}

func FuzzInspect(f *testing.F) {
	for _, k := range All() {
		f.Add(k.SPIRV)
	}
	for _, name := range []string{"access", "specs", "readonly_kinds", "two_functions"} {
		if code, err := os.ReadFile(filepath.Join("testdata", name+".spv")); err == nil {
			f.Add(code)
		}
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		mod, err := Inspect(code)
		if err != nil {
			assert.True(t, errors.Is(err, errs.BadSPIRV), "%v", err)
			return
		}
		for i := 1; i < len(mod.Bindings); i++ {
			prev, cur := mod.Bindings[i-1], mod.Bindings[i]
			assert.True(t, prev.Set < cur.Set || (prev.Set == cur.Set && prev.Binding < cur.Binding), "bindings sorted and distinct")
		}
		for _, b := range mod.Bindings {
			if b.Traced && b.Kind == StorageBuffer {
				assert.Equal(t, b.Stores, b.Access.Writes(), "binding %d: a traced buffer is written exactly when the code stores", b.Binding)
				assert.Equal(t, b.Loads || !b.Stores, b.Access.Reads(), "binding %d: read when loaded (or untouched)", b.Binding)
			}
			if !b.Traced {
				assert.Empty(t, b.Contradiction(), "binding %d: no contradiction without a trace", b.Binding)
			}
		}
		for i := 1; i < len(mod.SpecConstants); i++ {
			assert.Less(t, mod.SpecConstants[i-1].ID, mod.SpecConstants[i].ID, "spec constants sorted and distinct")
		}
		// Every entry point is traced without panicking, and one the
		// module lacks is ErrNoEntryPoint.
		for _, e := range mod.EntryPoints {
			other, err := InspectEntry(code, e)
			if assert.NoError(t, err, "entry %q", e) {
				assert.Equal(t, e, other.Entry)
			}
		}
		_, err = InspectEntry(code, "\x00absent")
		assert.True(t, errors.Is(err, ErrNoEntryPoint), "%v", err)
		// Sizing shared memory reads what Inspect accepted without
		// panicking, whatever it answers.
		_, _ = SharedSize(code, map[uint32]uint32{0: 1 << 31, 1: 0})
	})
}

// SharedSize counts every Workgroup variable, with array lengths from
// gl_WorkGroupSize worked out under the specialization given: the
// catalogue's reductions hold one float per invocation, transpose a W.y x
// (W.x + 1) tile.
func TestSharedSizeFollowsSpecialization(t *testing.T) {
	for _, c := range []struct {
		kernel string
		spec   map[uint32]uint32
		want   uint64
	}{
		{"sum", nil, 256 * 4},
		{"sum", map[uint32]uint32{0: 64}, 64 * 4},
		{"softmax", map[uint32]uint32{0: 1024}, 1024 * 4},
		{"transpose", nil, 16 * 17 * 4},
		{"transpose", map[uint32]uint32{0: 32, 1: 8}, 8 * 33 * 4},
		{"axpy", map[uint32]uint32{0: 64}, 0},
		{"matmul", nil, 0},
	} {
		k, err := Get(c.kernel)
		require.NoError(t, err)
		got, err := SharedSize(k.SPIRV, c.spec)
		require.NoError(t, err, c.kernel)
		assert.Equal(t, c.want, got, "%s under %v", c.kernel, c.spec)
	}
	_, err := SharedSize([]byte("not a module"), nil)
	assert.ErrorIs(t, err, errs.BadSPIRV)
}

// Array lengths built with the other operations Vulkan allows in a
// specialization-constant expression (comparisons, select, signed modulo of
// a negative value, negation, boolean logic, bitwise not: what glslang
// emits for ?:, % on int, unary minus, && and ~) are evaluated, under the
// defaults and under a specialization, instead of refusing the module.
func TestSharedSizeEvaluatesSpecConstantLogic(t *testing.T) {
	code, err := os.ReadFile("../testdata/sharedops.spv")
	require.NoError(t, err)
	got, err := SharedSize(code, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64((16+123+10+4+8)*4), got, "defaults: N=16, M=-70, B=true")
	// N=32: a 32, e (~32&7)+1 = 8; M=-14: b -14 smod 64 + 65 = 115, c 2;
	// B=false: d 2.
	got, err = SharedSize(code, map[uint32]uint32{3: 32, 4: uint32(0xffffffff - 13), 5: 0})
	require.NoError(t, err)
	assert.Equal(t, uint64((32+115+2+2+8)*4), got)
	for _, c := range []struct{ op, x, y, want uint32 }{
		{opSDiv, 0x80000000, 0xffffffff, 0x80000000},
		{opSRem, 0x80000000, 0xffffffff, 0},
		{opSMod, uint32(0xffffffff - 69), 64, 58},
		{opSRem, uint32(0xffffffff - 69), 64, uint32(0xffffffff - 5)},
		{opSMod, 70, uint32(0xffffffff - 63), uint32(0xffffffff - 57)},
		{opUMod, 70, 64, 6},
	} {
		assert.Equal(t, c.want, divide(c.op, c.x, c.y), "%d %d %d", c.op, int32(c.x), int32(c.y))
	}
}

// pushModule assembles a module whose only content besides an empty entry
// point is a push-constant block typed by the instructions given (result
// ids 10 to 89 are the caller's; %1 is uint32, the block struct is
// %blockID).
func pushModule(blockID uint32, instructions ...[]uint32) []byte {
	all := [][]uint32{
		append([]uint32{opEntryPoint, execModelGLCompute, 92}, mainName...),
		{opTypeInt, 1, 32, 0},
	}
	all = append(all, instructions...)
	return assemble(append(all,
		[]uint32{opTypePointer, 2, storageClassPushConstant, blockID},
		[]uint32{opVariable, 2, 3, storageClassPushConstant},
		[]uint32{19, 90},                    // OpTypeVoid %90
		[]uint32{33, 91, 90},                // OpTypeFunction %91 = void()
		[]uint32{opFunction, 90, 92, 0, 91}, // main
		[]uint32{opLabel, 93},
		[]uint32{253}, // OpReturn
		[]uint32{opFunctionEnd},
	)...)
}

func TestInspectRefusesAPushBlockWhoseSizeOverflows(t *testing.T) {
	// uint32 pc[0x40000001] with ArrayStride 4 is 4 GiB + 4 bytes: its
	// size must not wrap around to 4 and match a 4-byte description.
	code := pushModule(12,
		[]uint32{opConstant, 1, 10, 0x40000001},
		[]uint32{opTypeArray, 11, 1, 10},
		[]uint32{opDecorate, 11, decorationArrayStride, 4},
		[]uint32{opTypeStruct, 12, 11},
		[]uint32{opMemberDecorate, 12, 0, decorationOffset, 0},
	)
	mod, err := Inspect(code)
	require.ErrorIs(t, err, errs.BadSPIRV, "push size read as %d", mod.PushSize)
	assert.Contains(t, err.Error(), "larger than 4 GiB")
}

func TestInspectSizesASharedPushTypeOnce(t *testing.T) {
	// Thirty struct levels, each of sixteen members (all at offset 0) of
	// the level below: a reader that sizes every use of a type again walks
	// 16^30 paths. The block is one uint32.
	// (Block members must carry an Offset, so each level decorates its
	// sixteen.)
	const levels, members = 30, 16
	var ins [][]uint32
	prev := uint32(1)
	for l := uint32(0); l < levels; l++ {
		id := 10 + l
		st := []uint32{opTypeStruct, id}
		for m := 0; m < members; m++ {
			st = append(st, prev)
		}
		ins = append(ins, st)
		for m := uint32(0); m < members; m++ {
			ins = append(ins, []uint32{opMemberDecorate, id, m, decorationOffset, 0})
		}
		prev = id
	}
	type result struct {
		mod Module
		err error
	}
	done := make(chan result, 1)
	go func() {
		mod, err := Inspect(pushModule(prev, ins...))
		done <- result{mod, err}
	}()
	select {
	case res := <-done:
		require.NoError(t, res.err)
		assert.Equal(t, uint32(4), res.mod.PushSize)
	case <-time.After(10 * time.Second):
		t.Fatal("Inspect did not return: it sizes each use of a shared type again")
	}
}

// Each binding reports the 32-bit number its block is made of, through
// runtime arrays, vectors and aliased blocks (matmul reads B as float and
// as vec4): what a buffer bound there must hold.
func TestInspectReportsElementTypes(t *testing.T) {
	for name, want := range map[string][]ScalarType{
		"fill":   {ScalarUint},
		"copy":   {ScalarUint, ScalarUint},
		"axpy":   {ScalarFloat, ScalarFloat},
		"matmul": {ScalarFloat, ScalarFloat, ScalarFloat},
	} {
		k, err := Get(name)
		require.NoError(t, err)
		mod, err := Inspect(k.SPIRV)
		require.NoError(t, err)
		var got []ScalarType
		for _, b := range mod.Bindings {
			got = append(got, b.Elem)
		}
		assert.Equal(t, want, got, name)
	}
}
