//go:build !vkc_nospirvtools

package vk

import (
	"encoding/binary"
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

func TestValidateSPIRVAcceptsEveryShippedModule(t *testing.T) {
	for _, p := range shippedModules(t) {
		code, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NoError(t, ValidateSPIRV(code, 0), p)
		assert.NoError(t, ValidateSPIRV(code, instanceAPI), p)
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

// The target environment follows the API version: axpy.spv is SPIR-V 1.3
// (Vulkan 1.1's), which a Vulkan 1.0 device may not be given, and a module
// stamped 1.6 (Vulkan 1.3's) is too new for vk's Vulkan 1.1.
func TestValidateSPIRVFollowsTheAPIVersion(t *testing.T) {
	code, err := os.ReadFile("testdata/axpy.spv")
	require.NoError(t, err)
	err = ValidateSPIRV(code, 1<<22)
	assert.ErrorIs(t, err, ErrBadSPIRV)
	assert.ErrorContains(t, err, "vulkan1.0")
	newer := append([]byte(nil), code...)
	binary.LittleEndian.PutUint32(newer[4:], 0x00010600)
	err = ValidateSPIRV(newer, instanceAPI)
	assert.ErrorIs(t, err, ErrBadSPIRV)
	assert.ErrorContains(t, err, "vulkan1.1")
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
