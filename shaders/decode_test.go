package shaders

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
)

// assemble builds a module from a header and the instructions given, each
// as its opcode followed by its operands.
func assemble(instructions ...[]uint32) []byte {
	words := []uint32{spirvMagic, 0x00010300, 0, 100, 0}
	for _, in := range instructions {
		words = append(words, uint32(len(in))<<16|in[0])
		words = append(words, in[1:]...)
	}
	code := make([]byte, 0, 4*len(words))
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return code
}

// Instructions of a minimal compute module: entry point %5 named "main"
// ("main" is one word plus a NUL word), a void function type %3 of void %2.
var (
	mainName      = []uint32{0x6e69616d, 0}
	entryMain     = append([]uint32{opEntryPoint, execModelGLCompute, 5}, mainName...)
	typeVoid      = []uint32{19, 2}
	typeVoidFn    = []uint32{33, 3, 2}
	function5     = []uint32{opFunction, 2, 5, 0, 3}
	function6     = []uint32{opFunction, 2, 6, 0, 3}
	label         = []uint32{opLabel, 7}
	returnVoid    = []uint32{253}
	functionEnd   = []uint32{opFunctionEnd}
	wholeFunction = [][]uint32{function5, label, returnVoid, functionEnd}
	callFunction6 = []uint32{opFunctionCall, 2, 8, 6}
)

func TestDecodeAcceptsAWholeModule(t *testing.T) {
	code := assemble(append([][]uint32{entryMain, typeVoid, typeVoidFn}, wholeFunction...)...)
	insts, err := decode(code)
	require.NoError(t, err)
	require.Len(t, insts, 7)
	assert.Equal(t, uint32(opEntryPoint), insts[0].op)
	assert.Equal(t, headerWords, insts[0].at)
	mod, err := Inspect(code)
	require.NoError(t, err)
	assert.Equal(t, []string{"main"}, mod.EntryPoints)
	assert.Empty(t, mod.Bindings)
	assert.Zero(t, mod.PushSize)
}

func TestDecodeRefusesBrokenStructure(t *testing.T) {
	cases := map[string][]byte{
		"function opened inside another":  assemble(entryMain, typeVoid, typeVoidFn, function5, label, function6, label, returnVoid, functionEnd, returnVoid, functionEnd),
		"function end outside a function": assemble(entryMain, typeVoid, typeVoidFn, function5, label, returnVoid, functionEnd, functionEnd),
		"function never closed":           assemble(entryMain, typeVoid, typeVoidFn, function5, label, returnVoid),
		"entry point without function":    assemble(entryMain, typeVoid, typeVoidFn),
		"entry point without a body":      assemble(entryMain, typeVoid, typeVoidFn, function5, functionEnd),
		"entry point without a name":      assemble([]uint32{opEntryPoint, execModelGLCompute, 5}, typeVoid, typeVoidFn, function5, label, returnVoid, functionEnd),
		"function without its type":       assemble(entryMain, typeVoid, typeVoidFn, []uint32{opFunction, 2, 5, 0}, label, returnVoid, functionEnd),
		"short pointer type":              assemble([]uint32{opTypePointer, 9, storageClassStorageBuffer}),
		"called function never defined":   assemble(entryMain, typeVoid, typeVoidFn, function5, label, callFunction6, returnVoid, functionEnd),
		"call without its callee":         assemble(entryMain, typeVoid, typeVoidFn, function5, label, []uint32{opFunctionCall, 2, 8}, returnVoid, functionEnd, function6, []uint32{opLabel, 9}, returnVoid, functionEnd),
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decode(code)
			require.ErrorIs(t, err, errs.BadSPIRV)
			_, err = Inspect(code)
			require.ErrorIs(t, err, errs.BadSPIRV)
		})
	}
}

func TestDecodeNamesABigEndianModule(t *testing.T) {
	k, err := Get("copy")
	require.NoError(t, err)
	swapped := make([]byte, len(k.SPIRV))
	for i := 0; i < len(swapped); i += 4 {
		binary.BigEndian.PutUint32(swapped[i:], binary.LittleEndian.Uint32(k.SPIRV[i:]))
	}
	_, err = Inspect(swapped)
	require.ErrorIs(t, err, errs.BadSPIRV)
	assert.Contains(t, err.Error(), "big-endian")
}

// Drivers do not validate SPIR-V, and lavapipe crashed on a module cut at
// an instruction boundary: every cut of every catalogue module must be
// refused. Each cut decodes the module up to it, so trying every byte of
// the largest modules (70-100 KB each) took minutes under -race; the cuts
// tried are the ones that differ: every byte of the header and of the
// first and last instructions, every instruction boundary (a module of
// whole instructions, only shorter), and a cut into the middle of each
// longer instruction (whose word count then runs past the end).
func TestInspectRefusesEveryTruncation(t *testing.T) {
	for _, k := range All() {
		size := len(k.SPIRV)
		for _, n := range truncations(k.SPIRV) {
			_, err := Inspect(k.SPIRV[:n])
			if !errors.Is(err, errs.BadSPIRV) {
				t.Fatalf("%s cut at byte %d of %d: %v", k.Name, n, size, err)
			}
		}
	}
}

// truncations lists the cut lengths TestInspectRefusesEveryTruncation
// tries on a little-endian module: each byte below 64 and in the last 16,
// each instruction's start, and a byte and a word into each instruction of
// more than one word.
func truncations(code []byte) []int {
	size := len(code)
	var cuts []int
	for n := range size {
		if n < 64 || n >= size-16 {
			cuts = append(cuts, n)
		}
	}
	for at := 4 * headerWords; at+4 <= size; {
		words := int(binary.LittleEndian.Uint32(code[at:]) >> 16)
		if words == 0 {
			break // Inspect refuses the module at this word anyway
		}
		cuts = append(cuts, at)
		if words > 1 {
			cuts = append(cuts, at+5, at+4*(words/2+1)-4)
		}
		at += 4 * words
	}
	return cuts
}

// Two WorkgroupSize built-ins, (64,1,1) and (1,64,1): which sets the size
// would follow map order, so Inspect refuses the module rather than answer
// differently from run to run.
func TestInspectRefusesTwoWorkgroupSizeBuiltIns(t *testing.T) {
	const (
		uintType, vec3Type, one, sixtyFour, first, second = 11, 12, 13, 14, 15, 16
		builtIn                                           = decorationBuiltIn
	)
	code := assemble(entryMain,
		[]uint32{opDecorate, first, builtIn, builtInWorkgroupSize},
		[]uint32{opDecorate, second, builtIn, builtInWorkgroupSize},
		typeVoid, typeVoidFn,
		[]uint32{opTypeInt, uintType, 32, 0},
		[]uint32{opTypeVector, vec3Type, uintType, 3},
		[]uint32{opConstant, uintType, one, 1},
		[]uint32{opConstant, uintType, sixtyFour, 64},
		[]uint32{opConstantComposite, vec3Type, first, sixtyFour, one, one},
		[]uint32{opConstantComposite, vec3Type, second, one, sixtyFour, one},
		function5, label, returnVoid, functionEnd)
	for range 20 {
		mod, err := Inspect(code)
		require.ErrorIs(t, err, errs.BadSPIRV, "local size %v", mod.LocalSize)
		assert.Contains(t, err.Error(), "%15 and %16")
	}
	single := assemble(entryMain,
		[]uint32{opDecorate, first, builtIn, builtInWorkgroupSize},
		typeVoid, typeVoidFn,
		[]uint32{opTypeInt, uintType, 32, 0},
		[]uint32{opTypeVector, vec3Type, uintType, 3},
		[]uint32{opConstant, uintType, one, 1},
		[]uint32{opConstant, uintType, sixtyFour, 64},
		[]uint32{opConstantComposite, vec3Type, first, sixtyFour, one, one},
		function5, label, returnVoid, functionEnd)
	mod, err := Inspect(single)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{64, 1, 1}, mod.LocalSize)
}

// A module whose main calls a function defined after it (glslang's
// layout) cut between the two functions has only whole functions left;
// the call to the missing one is what shows the cut. Every cut, at every
// byte, of a hand-built module and of one glslc built must be refused.
func TestDecodeRefusesEveryCutOfACallingModule(t *testing.T) {
	built, err := os.ReadFile(filepath.Join("testdata", "two_functions.spv"))
	require.NoError(t, err)
	modules := map[string][]byte{
		"hand-built": assemble(entryMain, typeVoid, typeVoidFn, function5, label, callFunction6, returnVoid, functionEnd,
			function6, []uint32{opLabel, 9}, returnVoid, functionEnd),
		"testdata/two_functions.spv": built,
	}
	for name, code := range modules {
		t.Run(name, func(t *testing.T) {
			mod, err := Inspect(code)
			require.NoError(t, err)
			assert.Equal(t, []string{"main"}, mod.EntryPoints)
			for n := range len(code) {
				_, err := Inspect(code[:n])
				require.ErrorIs(t, err, errs.BadSPIRV, "cut at byte %d of %d", n, len(code))
			}
		})
	}
}

// reassemble writes decoded instructions back as a module's words.
func reassemble(header []byte, insts []instruction) []byte {
	out := append([]byte(nil), header...)
	for _, in := range insts {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(in.operands)+1)<<16|in.op)
		for _, w := range in.operands {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out
}

// FuzzDecode: decode never panics, refuses only with errs.BadSPIRV, and
// splits what it accepts exactly (the instructions, written back, are the
// module); Inspect never panics and refuses only with errs.BadSPIRV.
// That Inspect refuses what decode refuses is not asserted: Inspect calls
// decode first and returns its error, so the check could never fail.
func FuzzDecode(f *testing.F) {
	for _, k := range All() {
		f.Add(k.SPIRV)
	}
	f.Add(assemble(append([][]uint32{entryMain, typeVoid, typeVoidFn}, wholeFunction...)...))
	f.Fuzz(func(t *testing.T, code []byte) {
		insts, err := decode(code)
		if err != nil {
			require.ErrorIs(t, err, errs.BadSPIRV)
			return
		}
		require.Equal(t, code, reassemble(code[:4*headerWords], insts), "decoded instructions do not cover the module exactly")
		if _, err := Inspect(code); err != nil {
			require.ErrorIs(t, err, errs.BadSPIRV)
		}
	})
}

// A second GLCompute entry point's LocalSize says nothing about main's: in
// either order of the execution modes, Inspect reports main's.
func TestInspectReadsTheLocalSizeOfMain(t *testing.T) {
	entryOther := []uint32{opEntryPoint, execModelGLCompute, 6, 0x6568746f, 0x72} // "other"
	mainSize := []uint32{opExecutionMode, 5, execModeLocalSize, 4096, 1, 1}
	otherSize := []uint32{opExecutionMode, 6, execModeLocalSize, 64, 1, 1}
	functions := [][]uint32{typeVoid, typeVoidFn, function5, label, returnVoid, functionEnd, function6, {opLabel, 8}, returnVoid, functionEnd}
	for name, modes := range map[string][][]uint32{
		"main first":  {mainSize, otherSize},
		"other first": {otherSize, mainSize},
	} {
		insts := append([][]uint32{entryMain, entryOther}, modes...)
		mod, err := Inspect(assemble(append(insts, functions...)...))
		require.NoError(t, err, name)
		assert.Equal(t, []string{"main", "other"}, mod.EntryPoints, name)
		assert.Equal(t, [3]uint32{4096, 1, 1}, mod.LocalSize, name)
	}
	// Without a LocalSize of its own, main's size is unknown (zero), not
	// the other entry point's.
	mod, err := Inspect(assemble(append([][]uint32{entryMain, entryOther, otherSize}, functions...)...))
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{}, mod.LocalSize)
}

// glslc writes the workgroup size of a SPIR-V 1.6 module as a LocalSizeId
// execution mode of constants (local_size_x_id makes them specialization
// constants): Inspect reads the size and each specializable axis's ID
// from it, and a WorkgroupSize built-in still wins.
func TestInspectReadsLocalSizeID(t *testing.T) {
	uint32Type := []uint32{opTypeInt, 10, 32, 0}
	constants := [][]uint32{
		{opSpecConstant, 10, 11, 8}, // x: 8, SpecId 2
		{opConstant, 10, 12, 4},     // y: 4
		{opSpecConstant, 10, 13, 2}, // z: 2, SpecId 0
	}
	decorations := [][]uint32{{opDecorate, 11, decorationSpecID, 2}, {opDecorate, 13, decorationSpecID, 0}}
	mode := []uint32{opExecutionModeID, 5, execModeLocalSizeID, 11, 12, 13}
	insts := append([][]uint32{entryMain, mode}, decorations...)
	insts = append(append(insts, uint32Type), constants...)
	mod, err := Inspect(assemble(append(insts, append([][]uint32{typeVoid, typeVoidFn}, wholeFunction...)...)...))
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{8, 4, 2}, mod.LocalSize)
	assert.Equal(t, [3]int64{2, -1, 0}, mod.LocalSizeSpecIDs)

	builtIn := [][]uint32{
		{opDecorate, 14, decorationBuiltIn, builtInWorkgroupSize},
		{opTypeVector, 15, 10, 3},
		{opConstantComposite, 15, 14, 12, 12, 12},
	}
	mod, err = Inspect(assemble(append(append(insts, builtIn...), append([][]uint32{typeVoid, typeVoidFn}, wholeFunction...)...)...))
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{4, 4, 4}, mod.LocalSize)
	assert.Equal(t, [3]int64{-1, -1, -1}, mod.LocalSizeSpecIDs)

	notConstant := []uint32{opExecutionModeID, 5, execModeLocalSizeID, 11, 99, 13}
	_, err = Inspect(assemble(append(append([][]uint32{entryMain, notConstant, uint32Type}, constants...), append([][]uint32{typeVoid, typeVoidFn}, wholeFunction...)...)...))
	assert.ErrorIs(t, err, errs.BadSPIRV)
}
