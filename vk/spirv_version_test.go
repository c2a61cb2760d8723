package vk

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiVersion packs Vulkan 1.minor as VK_MAKE_API_VERSION does.
func apiVersion(minor uint32) uint32 { return 1<<22 | minor<<12 }

// targetModules are axpy compiled by glslc for each Vulkan target
// environment, by the minor version of that target: glslc's own choice of
// SPIR-V version for a target is the oracle of what that Vulkan takes.
var targetModules = map[uint32]string{0: "testdata/axpy_vk10.spv", 1: "testdata/axpy.spv", 2: "testdata/axpy_vk12.spv", 3: "testdata/axpy_vk13.spv"}

// A module compiled for Vulkan 1.t is accepted by a device used at 1.t or
// later, and refused by an older one as unsupported, not invalid, with a
// message naming the module's SPIR-V version, the Vulkan version it needs
// and the one the device is used at.
func TestValidateSPIRVRefusesAModuleNewerThanTheDevice(t *testing.T) {
	for target, path := range targetModules {
		code, err := os.ReadFile(path)
		require.NoError(t, err)
		header := binary.LittleEndian.Uint32(code[4:])
		spirv := fmt.Sprintf("SPIR-V %d.%d", header>>16&0xff, header>>8&0xff)
		for device := uint32(0); device <= 3; device++ {
			err := ValidateSPIRV(code, apiVersion(device))
			if device >= target {
				assert.NoError(t, err, "%s (Vulkan 1.%d) on a Vulkan 1.%d device", spirv, target, device)
				continue
			}
			require.ErrorIs(t, err, ErrUnsupported, "%s (Vulkan 1.%d) on a Vulkan 1.%d device", spirv, target, device)
			assert.NotErrorIs(t, err, ErrBadSPIRV, "the module is valid; the device is too old")
			assert.ErrorContains(t, err, spirv)
			assert.ErrorContains(t, err, fmt.Sprintf("needs Vulkan 1.%d", target))
			assert.ErrorContains(t, err, fmt.Sprintf("used at Vulkan 1.%d", device))
		}
	}
	// A SPIR-V version no Vulkan takes yet is unsupported too.
	code, err := os.ReadFile("testdata/axpy_vk13.spv")
	require.NoError(t, err)
	future := append([]byte(nil), code...)
	binary.LittleEndian.PutUint32(future[4:], 0x00010700)
	err = ValidateSPIRV(future, apiVersion(3))
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "SPIR-V 1.7")
}

// The device validates for the version it is used at, which on a Vulkan
// 1.3 driver (lavapipe) is 1.3: modules glslc compiles for Vulkan 1.2 and
// 1.3 build pipelines. The same modules on the device used at 1.1 are
// refused before the driver sees them.
func TestNewPipelineTakesModulesOfTheDeviceVersion(t *testing.T) {
	d := fixture(t)
	if d.api < apiVersion(3) {
		t.Skipf("the device is used at %s; this test needs Vulkan 1.3", versionName(d.api))
	}
	for _, target := range []uint32{2, 3} {
		code, err := os.ReadFile(targetModules[target])
		require.NoError(t, err)
		p, err := d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
		require.NoError(t, err, "Vulkan 1.%d module", target)
		p.Destroy()
	}
	calls := d.moduleCalls.Load()
	d.api = apiVersion(1) // as on a Vulkan 1.1 device
	code, err := os.ReadFile(targetModules[3])
	require.NoError(t, err)
	_, err = d.NewPipeline(code, PipelineDesc{Bindings: 2, PushSize: 8})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "SPIR-V 1.6, which needs Vulkan 1.3; the device is used at Vulkan 1.1")
	assert.Equal(t, calls, d.moduleCalls.Load(), "the driver was handed the module")
}
