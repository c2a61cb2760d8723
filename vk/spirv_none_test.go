//go:build vkc_nospirvtools

package vk

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without SPIRV-Tools only the structural check runs: garbage is refused,
// a whole but wrong module is not (the default build refuses it).
func TestValidateSPIRVWithoutSPIRVTools(t *testing.T) {
	assert.ErrorIs(t, ValidateSPIRV([]byte("not spir-v at all!!!"), 0), ErrBadSPIRV)
	bad, err := os.ReadFile("testdata/badindex.spv")
	require.NoError(t, err)
	assert.NoError(t, ValidateSPIRV(bad, 0))
}
