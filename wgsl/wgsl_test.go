package wgsl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gogpu/naga"
	"github.com/gogpu/naga/ir"
	"github.com/gogpu/naga/spirv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
)

// raw is what the pinned translator emits for src without this package's
// repairs: the reference each repair is checked against, so that a test
// also fails when a new translator version no longer needs the repair.
func raw(t *testing.T, src string) []byte {
	t.Helper()
	ast, err := naga.Parse(src)
	require.NoError(t, err)
	mod, err := naga.LowerWithSource(ast, src)
	require.NoError(t, err)
	require.NoError(t, ir.ProcessOverrides(mod, nil))
	code, err := naga.GenerateSPIRV(mod, spirv.Options{Version: spirv.Version1_3})
	require.NoError(t, err)
	return code
}

// compileOK compiles src, fails the test on error, checks the module with
// spirv-val and returns it with what vkc's reader makes of it.
func compileOK(t *testing.T, src string, opts Options) ([]byte, shaders.Module) {
	t.Helper()
	spec, err := Compile(src, opts)
	require.NoError(t, err)
	assert.Equal(t, opts.Name, spec.Name)
	spirvVal(t, spec.SPIRV)
	mod, err := shaders.InspectEntry(spec.SPIRV, spec.Entry)
	require.NoError(t, err)
	return spec.SPIRV, mod
}

// spirvVal runs the Khronos validator on code for Vulkan 1.2 (the lowest
// Vulkan that takes the SPIR-V 1.4 the translator emits for some
// kernels), failing the test on any complaint. Without spirv-val on the
// PATH the check is skipped, not the test.
func spirvVal(t *testing.T, code []byte) {
	t.Helper()
	tool, err := exec.LookPath("spirv-val")
	if err != nil {
		t.Log("spirv-val not installed: emitted SPIR-V not validated")
		return
	}
	path := filepath.Join(t.TempDir(), "k.spv")
	require.NoError(t, os.WriteFile(path, code, 0o644))
	out, err := exec.Command(tool, "--target-env", "vulkan1.2", path).CombinedOutput()
	require.NoError(t, err, "spirv-val: %s", out)
}

// decorated reports whether the module decorates the storage buffer at
// binding with decoration d (on the variable).
func decorated(t *testing.T, code []byte, binding, d uint32) bool {
	t.Helper()
	m, err := decodeModule(code)
	require.NoError(t, err)
	var id uint32
	found := false
	for _, in := range m.insts {
		if in.op == opDecorate && len(in.operands) == 3 && in.operands[1] == decorationBinding && in.operands[2] == binding {
			id, found = in.operands[0], true
		}
	}
	require.True(t, found, "no binding %d", binding)
	for _, in := range m.insts {
		if in.op == opDecorate && len(in.operands) == 2 && in.operands[0] == id && in.operands[1] == d {
			return true
		}
	}
	return false
}

const accessSrc = `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> stored: array<f32>;
@group(0) @binding(3) var<storage, read_write> both: array<f32>;
@group(0) @binding(4) var<storage, read_write> loaded: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  w[i] = x[i];
  stored[i] = 2.0 * x[i];
  both[i] = both[i] + loaded[i];
}
`

// The translator decorates var<storage, write> NonWritable although the
// code stores to it, a decoration vkc refuses as contradicted by the code
// (TestTranslatorsModulesAreRefusedOrMisread shows it on a device): the
// repair drops it and marks the binding NonReadable, so vkc derives
// WriteOnly.
func TestWriteStorageLosesTheTranslatorsNonWritable(t *testing.T) {
	rawCode := raw(t, accessSrc)
	require.True(t, decorated(t, rawCode, 1, decorationNonWritable), "the translator no longer decorates var<storage, write> NonWritable: drop the repair")

	code, mod := compileOK(t, accessSrc, Options{Name: "access"})
	assert.False(t, decorated(t, code, 1, decorationNonWritable))
	assert.True(t, decorated(t, code, 1, decorationNonReadable))
	assert.Equal(t, shaders.WriteOnly, mod.Bindings[1].Access)
}

// The translator marks a read_write buffer the code only stores to as
// neither NonReadable nor NonWritable, so vkc would take it read-write and
// refuse a launch on a fresh output buffer as reading unwritten memory.
// The repair derives each binding's access from the loads and stores.
func TestBindingAccessFollowsTheCode(t *testing.T) {
	rawMod, err := shaders.Inspect(raw(t, accessSrc))
	require.NoError(t, err)
	require.Equal(t, shaders.ReadWrite, rawMod.Bindings[2].Access, "the translator now marks store-only buffers: drop the repair")

	_, mod := compileOK(t, accessSrc, Options{Name: "access"})
	want := []shaders.Access{shaders.ReadOnly, shaders.WriteOnly, shaders.WriteOnly, shaders.ReadWrite, shaders.ReadOnly}
	var got []shaders.Access
	for _, b := range mod.Bindings {
		got = append(got, b.Access)
	}
	assert.Equal(t, want, got)
}

// A pointer into a buffer passed somewhere the rewriter does not follow (an
// atomic read-modify-write here) counts as a read and a write.
func TestAtomicsCountAsReadAndWrite(t *testing.T) {
	src := `
@group(0) @binding(0) var<storage, read_write> counter: atomic<u32>;
@compute @workgroup_size(1)
fn main() { atomicAdd(&counter, 1u); }
`
	_, mod := compileOK(t, src, Options{Name: "atomic"})
	assert.Equal(t, shaders.ReadWrite, mod.Bindings[0].Access)
}

const namedEntrySrc = `
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(8)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = 2.0 * y[gid.x]; }
@compute @workgroup_size(16)
fn shift(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = y[gid.x] + 1.0; }
`

// The entry point asked for is the module's only one, and the spec names
// it for LoadKernel.
func TestEntryPointChosen(t *testing.T) {
	rawMod, err := shaders.Inspect(raw(t, namedEntrySrc))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"scale", "shift"}, rawMod.EntryPoints)

	for _, c := range []struct {
		entry string
		local uint32
	}{{"scale", 8}, {"shift", 16}} {
		_, mod := compileOK(t, namedEntrySrc, Options{Name: "two", Entry: c.entry})
		assert.Equal(t, []string{c.entry}, mod.EntryPoints, c.entry)
		spec, err := Compile(namedEntrySrc, Options{Name: "two", Entry: c.entry})
		require.NoError(t, err)
		assert.Equal(t, c.entry, spec.Entry)
		assert.Equal(t, [3]uint32{c.local, 1, 1}, mod.LocalSize, c.entry)
	}
	_, err = Compile(namedEntrySrc, Options{Name: "two"})
	assert.ErrorContains(t, err, "several @compute entry points")
	_, err = Compile(namedEntrySrc, Options{Name: "two", Entry: "nope"})
	assert.ErrorContains(t, err, `no @compute entry point "nope"`)
}

const overrideSrc = `
override WG: u32 = 64;
override ROWS: u32 = 2;
const PAD: u32 = 1;
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(WG, ROWS * 2u + PAD, /* z */ 1)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) g: vec3<u32>) {
  y[g.x * WG * (ROWS * 2u + PAD) + li] = li;
}
`

// The translator sizes an override-sized workgroup 1 1 1, with no
// specialization constant: the size comes from the override's value here,
// whether its default or Options.Constants.
func TestOverrideSizedWorkgroup(t *testing.T) {
	rawMod, err := shaders.Inspect(raw(t, overrideSrc))
	require.NoError(t, err)
	require.Equal(t, [3]uint32{1, 1, 1}, rawMod.LocalSize, "the translator now sizes override workgroups: drop the repair")
	require.Equal(t, [3]int64{-1, -1, -1}, rawMod.LocalSizeSpecIDs)

	_, mod := compileOK(t, overrideSrc, Options{Name: "ov"})
	assert.Equal(t, [3]uint32{64, 2*2 + 1, 1}, mod.LocalSize)
	_, mod = compileOK(t, overrideSrc, Options{Name: "ov", Constants: map[string]float64{"WG": 32, "ROWS": 3}})
	assert.Equal(t, [3]uint32{32, 3*2 + 1, 1}, mod.LocalSize)

	_, err = Compile(overrideSrc, Options{Name: "ov", Constants: map[string]float64{"WG": 0}})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 6, e.Line)
	assert.Contains(t, e.Msg, "not a positive whole number")
	_, err = Compile(overrideSrc, Options{Name: "ov", Constants: map[string]float64{"wg": 8}})
	assert.ErrorContains(t, err, `"wg", which is no override`)
}

const zeroingSrc = `
var<workgroup> partial: array<f32, 256>;
var<workgroup> flag: u32;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32) {
  partial[li] = f32(li);
  if (li == 0u) { flag = 1u; }
  workgroupBarrier();
  y[li] = partial[255u - li] + f32(flag);
}
`

// nullStores counts the stores of a null constant into workgroup
// variables: the translator's zeroing of workgroup memory.
func nullStores(t *testing.T, code []byte) int {
	t.Helper()
	m, err := decodeModule(code)
	require.NoError(t, err)
	return stripWorkgroupZeroing(m)
}

// The translator zeroes every workgroup variable from one invocation on
// entry; the repair drops those stores unless asked to keep them.
func TestWorkgroupZeroingDropped(t *testing.T) {
	require.Equal(t, 2, nullStores(t, raw(t, zeroingSrc)), "the translator zeroes workgroup memory differently: revisit the repair")
	code, _ := compileOK(t, zeroingSrc, Options{Name: "zero"})
	assert.Zero(t, nullStores(t, code))
	kept, _ := compileOK(t, zeroingSrc, Options{Name: "zero", ZeroWorkgroupMemory: true})
	assert.Equal(t, 2, nullStores(t, kept))
	// The source has one workgroupBarrier; the zeroing brings its own.
	assert.Equal(t, 2, barriers(t, kept))
	assert.Equal(t, 1, barriers(t, code), "the zeroing's barrier is dropped with it")
}

// barriers counts the module's OpControlBarrier instructions.
func barriers(t *testing.T, code []byte) int {
	t.Helper()
	m, err := decodeModule(code)
	require.NoError(t, err)
	n := 0
	for _, in := range m.insts {
		if in.op == opControlBarrier {
			n++
		}
	}
	return n
}

// A barrier of the source after an if whose block is empty is no
// zeroing's barrier and stays.
func TestSourceBarriersAfterEmptyBlocksStay(t *testing.T) {
	src := `
var<workgroup> s: array<f32, 64>;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
  s[li] = y[li];
  if (li == 0u) {}
  workgroupBarrier();
  y[li] = s[63u - li];
}
`
	kept, _ := compileOK(t, src, Options{Name: "b", ZeroWorkgroupMemory: true})
	code, _ := compileOK(t, src, Options{Name: "b"})
	assert.Equal(t, barriers(t, kept)-1, barriers(t, code))
	assert.Equal(t, 1, barriers(t, code))
}

const nestedSrc = `
var<workgroup> tile: array<array<f32, 4>, 4>;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(16)
fn main(@builtin(local_invocation_index) li: u32) {
  tile[li / 4u][li % 4u] = x[li];
  workgroupBarrier();
  let row = tile[li % 4u];
  y[li] = row[li / 4u];
}
`

// A whole row loaded from a nested workgroup array makes the translator
// use OpCopyLogical, a SPIR-V 1.4 instruction: such a kernel needs a
// Vulkan 1.2 device (vkc validates each module for the device's version).
func TestNestedWorkgroupArraysEmitSPIRV14(t *testing.T) {
	code, _ := compileOK(t, nestedSrc, Options{Name: "nested"})
	assert.Equal(t, uint32(0x00010400), uint32(code[4])|uint32(code[5])<<8|uint32(code[6])<<16|uint32(code[7])<<24)
	flat, _ := compileOK(t, zeroingSrc, Options{Name: "flat"})
	assert.Equal(t, uint32(0x00010300), uint32(flat[4])|uint32(flat[5])<<8|uint32(flat[6])<<16|uint32(flat[7])<<24)
}

// Errors name the kernel and the place, and start with "vkc:".
func TestErrorsCarryNameAndPlace(t *testing.T) {
	cases := []struct {
		name, src    string
		line, column int
		msg          string
	}{
		{"parse", "@compute @workgroup_size(1)\nfn main( {\n}\n", 2, 10, "expected"},
		{"lower", "@compute @workgroup_size(1)\nfn main() {\n  nothing = 3;\n}\n", 2, 1, "unresolved identifier"},
		{"no entry", "fn helper() {}\n", 0, 0, "no @compute entry point"},
		{"override array", "override WG: u32 = 64;\nvar<workgroup> s: array<f32, WG>;\n@compute @workgroup_size(WG)\nfn main(@builtin(local_invocation_index) li: u32) { s[li] = 1.0; }\n", 2, 1, "sized by an override"},
		{"no default", "const A = 1u;\n  @id(3) override N: u32;\n@compute @workgroup_size(N)\nfn main() {}\n", 2, 10, "override N has no default"},
	}
	for _, c := range cases {
		_, err := Compile(c.src, Options{Name: c.name})
		var e *Error
		require.ErrorAs(t, err, &e, c.name)
		assert.True(t, strings.HasPrefix(err.Error(), "vkc: "), err.Error())
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", c.name))
		assert.Equal(t, c.line, e.Line, "%s: %v", c.name, err)
		if c.line != 0 {
			assert.Equal(t, c.column, e.Column, "%s: %v", c.name, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("line %d, column %d", c.line, c.column))
		}
		assert.Contains(t, e.Msg, c.msg)
	}
}

// A compiled module is cached: compiling again returns the same bytes
// (a copy the caller may change) without translating, and different
// options are different entries.
func TestCompileIsCachedBySourceAndOptions(t *testing.T) {
	src := accessSrc + "\n// cache test\n"
	first, err := Compile(src, Options{Name: "cached"})
	require.NoError(t, err)
	key := cacheKey(src, Options{Name: "cached"})
	cachedKernel, ok := compiled.get(key)
	require.True(t, ok)
	cachedCode := cachedKernel.code
	assert.Equal(t, first.SPIRV, cachedCode)
	first.SPIRV[0] ^= 0xff
	again, err := Compile(src, Options{Name: "cached"})
	require.NoError(t, err)
	assert.Equal(t, cachedCode, again.SPIRV)
	assert.NotEqual(t, key, cacheKey(src, Options{Name: "cached", ZeroWorkgroupMemory: true}))
	assert.NotEqual(t, cacheKey(overrideSrc, Options{Constants: map[string]float64{"WG": 1}}),
		cacheKey(overrideSrc, Options{Constants: map[string]float64{"WG": 2}}))
}

// Concurrent compiles of many kernels agree with a serial compile, and the
// cache stays within its bound.
func TestCompileConcurrently(t *testing.T) {
	want, err := compile(overrideSrc, Options{Name: "conc", Constants: map[string]float64{"WG": 4}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 {
				wg := float64(1 + (g*8+i)%16)
				spec, err := Compile(overrideSrc, Options{Name: "conc", Constants: map[string]float64{"WG": wg}})
				if err == nil && wg == 4 && string(spec.SPIRV) != string(want.code) {
					err = errors.New("cached module differs from a fresh compile")
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.LessOrEqual(t, compiled.len(), cacheEntries)
}

// The cache evicts the least recently used module beyond its limit.
func TestModuleCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newModuleCache(2)
	k := func(b byte) (key [32]byte) { key[0] = b; return key }
	c.put(k(1), kernel{code: []byte{1}})
	c.put(k(2), kernel{code: []byte{2}})
	_, _ = c.get(k(1))
	c.put(k(3), kernel{code: []byte{3}})
	_, ok1 := c.get(k(1))
	_, ok2 := c.get(k(2))
	_, ok3 := c.get(k(3))
	assert.Equal(t, []bool{true, false, true}, []bool{ok1, ok2, ok3})
	assert.Equal(t, 2, c.len())
}

// go.mod must pin the translator at TranslatorVersion, which cache keys
// carry.
func TestTranslatorVersionIsPinned(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	assert.Contains(t, string(mod), "\t"+TranslatorVersion+"\n")
}

const scaleSrc = `
override SCALE: f32 = 2.5;
override NEG: bool = false;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(1)
fn main() { y[0] = select(SCALE, -SCALE, NEG); }
`

// constantWords reports whether the module declares a 32-bit OpConstant
// with value word w.
func constantWords(t *testing.T, code []byte, w uint32) bool {
	t.Helper()
	m, err := decodeModule(code)
	require.NoError(t, err)
	for _, in := range m.insts {
		if in.op == 43 && len(in.operands) == 3 && in.operands[2] == w {
			return true
		}
	}
	return false
}

// The translator writes an override used in code as OpConstantNull (0)
// whatever its value; the constant gets its value here.
func TestOverrideValuesReachTheCode(t *testing.T) {
	rawCode := raw(t, scaleSrc)
	require.False(t, constantWords(t, rawCode, math.Float32bits(2.5)), "the translator now writes override values: drop the repair")
	code, _ := compileOK(t, scaleSrc, Options{Name: "scale"})
	assert.True(t, constantWords(t, code, math.Float32bits(2.5)))
	code, _ = compileOK(t, scaleSrc, Options{Name: "scale", Constants: map[string]float64{"SCALE": -0.75}})
	assert.True(t, constantWords(t, code, math.Float32bits(-0.75)))
	assert.False(t, constantWords(t, code, math.Float32bits(2.5)))
}

const uniformSrc = `
struct Params {
  scale: f32,
  offset: f32,
  n: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < p.n) {
    y[i] = p.scale * x[i] + p.offset;
  }
}
`

// A var<uniform> block stays a uniform buffer, read-only, with the
// block's layout: vkc binds uniform buffers as they are.
func TestUniformStaysUniform(t *testing.T) {
	_, mod := compileOK(t, uniformSrc, Options{Name: "uniform"})
	require.Len(t, mod.Bindings, 3)
	b := mod.Bindings[0]
	assert.Equal(t, shaders.UniformBuffer, b.Kind)
	assert.Equal(t, shaders.ReadOnly, b.Access)
	require.NotNil(t, b.Block)
	assert.Equal(t, uint64(4+4+4), b.Block.Size, "f32, f32, u32")
	rawMod, err := shaders.Inspect(raw(t, uniformSrc))
	require.NoError(t, err)
	assert.Equal(t, rawMod.Bindings[0], b, "the repairs leave a uniform block as the translator wrote it")
}

// WGSL makes a store to a read-only buffer an error, which the translator
// lets through; since the repair drops NonWritable where the code stores
// (the translator's var<storage, write>), the declared mode is checked
// here, at the declaration's place.
func TestStoreToReadOnlyBufferRefused(t *testing.T) {
	for _, decl := range []string{"var<storage, read>", "var<storage>", "var < storage , read >"} {
		src := "@group(0) @binding(0)\n  " + decl + " y: array<f32>;\n@compute @workgroup_size(1)\nfn main() { y[0] = 1.0; }\n"
		_, err := Compile(src, Options{Name: "ro"})
		var e *Error
		require.ErrorAs(t, err, &e, decl)
		assert.Equal(t, [2]int{2, 3}, [2]int{e.Line, e.Column}, decl)
		assert.Contains(t, e.Msg, "declared read-only")
	}
	_, err := Compile("@group(0) @binding(0) var<storage, write> y: array<f32>;\n@compute @workgroup_size(1)\nfn main() { y[0] = 1.0; }\n", Options{Name: "wo"})
	assert.NoError(t, err)
}

const userNullStoreSrc = `
var<workgroup> total: f32;
var<workgroup> partial: array<f32, 64>;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
  partial[li] = f32(li);
  if (li == 0u) { total = 7.0; }
  workgroupBarrier();
  if (li == 0u) { total = f32(); }
  workgroupBarrier();
  y[li] = partial[63u - li] + total;
}
`

// workgroupNullStores counts, without changing the module, the stores of
// a null constant into workgroup variables.
func workgroupNullStores(t *testing.T, code []byte) int {
	t.Helper()
	m, err := decodeModule(code)
	require.NoError(t, err)
	workgroup, null := map[uint32]bool{}, map[uint32]bool{}
	n := 0
	for _, in := range m.insts {
		switch {
		case in.op == opVariable && len(in.operands) >= 3 && in.operands[2] == storageClassWorkgroup:
			workgroup[in.operands[1]] = true
		case in.op == opConstantNull && len(in.operands) >= 2:
			null[in.operands[1]] = true
		case in.op == opStore && len(in.operands) >= 2 && workgroup[in.operands[0]] && null[in.operands[1]]:
			n++
		}
	}
	return n
}

// A store of a zero value the source makes itself (total = f32()) is no
// zeroing by the translator: it stays, with its barrier.
func TestSourceNullStoresStay(t *testing.T) {
	kept, _ := compileOK(t, userNullStoreSrc, Options{Name: "u", ZeroWorkgroupMemory: true})
	code, _ := compileOK(t, userNullStoreSrc, Options{Name: "u"})
	require.Equal(t, 3, workgroupNullStores(t, kept), "the translator zeroes workgroup memory differently: revisit the test")
	assert.Equal(t, 1, workgroupNullStores(t, code), "the source's store is dropped")
	assert.Equal(t, 2, barriers(t, code))
}

// A literal of the code (a switch's case value, a composite's index) that
// equals the id of a pointer into a read-only buffer is no store to it:
// the kernel compiles and the buffer keeps NonWritable, whichever ids the
// translator gives.
func TestLiteralsAreNoPointerUses(t *testing.T) {
	for n := 1; n <= 40; n++ {
		src := fmt.Sprintf(`
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<u32>>;
@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  var v = vec4<u32>(g.x, 1u, 2u, 3u);
  switch x[g.x] {
    case %du: { v = v.wzyx; }
    default: { v.y = 5u; }
  }
  y[g.x] = v;
}
`, n)
		spec, err := Compile(src, Options{Name: "lit"})
		require.NoError(t, err, "case %d", n)
		assert.True(t, decorated(t, spec.SPIRV, 0, decorationNonWritable), "case %d: x lost NonWritable", n)
	}
}
