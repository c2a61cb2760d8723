//go:build !vkc_nospirvtools

package vk

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shippedModules lists every SPIR-V module the project ships or tests
// with: the built-in kernels, the root package's test kernels and this
// package's own valid ones.
func shippedModules(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"../shaders/spv/*.spv", "../testdata/*.spv", "testdata/*.spv"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	kept := paths[:0]
	for _, p := range paths {
		if filepath.Base(p) != "badindex.spv" { // invalid on purpose
			kept = append(kept, p)
		}
	}
	require.GreaterOrEqual(t, len(kept), 15, "modules found: %v", kept)
	return kept
}

// Every shipped module validates; one with cooperative matrices
// (testdata/coopmat.spv) only where the linked SPIRV-Tools knows them,
// and elsewhere is refused as unsupported, never as invalid.
func TestValidateSPIRVAcceptsEveryShippedModule(t *testing.T) {
	for _, p := range shippedModules(t) {
		code, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, api := range []uint32{0, instanceAPI} {
			err := ValidateSPIRV(code, api)
			if filepath.Base(p) == "coopmat.spv" && errors.Is(err, ErrUnsupported) {
				t.Logf("%s: %v", p, err)
				assert.ErrorContains(t, err, "does not know capability 6022", p)
				continue
			}
			assert.NoError(t, err, p)
		}
	}
}

// badIndex is testdata/badindex.spvasm: structurally whole, semantically
// wrong (an access chain past the last member of a struct).
func badIndex(t testing.TB) []byte {
	code, err := os.ReadFile("testdata/badindex.spv")
	require.NoError(t, err)
	return code
}

func TestValidateSPIRVRefusesAccessChainPastTheStruct(t *testing.T) {
	code := badIndex(t)
	err := ValidateSPIRV(code, 0)
	require.ErrorIs(t, err, ErrBadSPIRV)
	t.Log(err)
	assert.ErrorContains(t, err, "SPIR-V validator")
	assert.ErrorContains(t, err, "OpAccessChain can not find index 1")
}

// The validator's target environment follows the API version the device
// is used at, as its message for a module invalid in every one shows; on
// a Vulkan 1.0 device the module's SPIR-V 1.3 is refused first, as
// unsupported.
func TestValidateSPIRVFollowsTheAPIVersion(t *testing.T) {
	code := badIndex(t)
	for minor, env := range []string{"vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"} {
		err := ValidateSPIRV(code, apiVersion(uint32(minor)))
		if minor == 0 {
			assert.ErrorIs(t, err, ErrUnsupported, "SPIR-V 1.3 on Vulkan 1.0")
			continue
		}
		assert.ErrorIs(t, err, ErrBadSPIRV)
		assert.ErrorContains(t, err, env)
	}
}

// A module the validator refuses fails NewPipeline with ErrBadSPIRV and
// the validator's message, and vkCreateShaderModule is never called: the
// fixture also checks that the validation layer, which crashed on this
// module, saw nothing.
func TestNewPipelineRefusesInvalidSPIRVBeforeTheDriver(t *testing.T) {
	d := fixture(t)
	_, err := d.NewPipeline(badIndex(t), PipelineDesc{Bindings: 1})
	require.ErrorIs(t, err, ErrBadSPIRV)
	assert.ErrorContains(t, err, "OpAccessChain")
	assert.Zero(t, d.moduleCalls.Load(), "the driver was handed the module")
	assert.Zero(t, d.LiveCount(ObjShaderModule))

	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.NoError(t, err)
	p.Destroy()
	assert.Equal(t, int64(1), d.moduleCalls.Load())
}

// A module declaring a capability the linked validator does not know is
// not called invalid: ValidateSPIRV says the validator is too old for it,
// as ErrUnsupported naming the capability and SPIRV-Tools' version.
func TestValidateSPIRVSaysWhenItDoesNotKnowACapability(t *testing.T) {
	code, err := os.ReadFile("../shaders/spv/add.spv")
	require.NoError(t, err)
	patched := append([]byte(nil), code...)
	const opCapability = 2<<16 | 17 // word count 2, OpCapability
	found := false
	for i := 20; i+8 <= len(patched); i += 4 {
		if binary.LittleEndian.Uint32(patched[i:]) == opCapability {
			binary.LittleEndian.PutUint32(patched[i+4:], 64999) // no capability has this number
			found = true
			break
		}
	}
	require.True(t, found, "add.spv declares a capability")
	err = ValidateSPIRV(patched, 0)
	require.ErrorIs(t, err, ErrUnsupported)
	require.NotErrorIs(t, err, ErrBadSPIRV)
	assert.ErrorContains(t, err, "does not know capability 64999")
	assert.ErrorContains(t, err, "SPIRV-Tools v")
}

func TestUnknownCapabilityReadsTheValidatorsMessage(t *testing.T) {
	for text, want := range map[string]uint32{
		"Invalid capability operand: 6022":                   6022,
		"Invalid capability operand: 5 [OpCapability ...]":   5,
		"Invalid capability operand: x":                      0,
		"OpAccessChain can not find index 1 into the struct": 0,
	} {
		got, ok := unknownCapability(text)
		assert.Equal(t, want, got, text)
		assert.Equal(t, want != 0, ok, text)
	}
}
