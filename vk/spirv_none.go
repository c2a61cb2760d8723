//go:build vkc_nospirvtools

package vk

// SPIRVValidator names the check ValidateSPIRV runs in this build.
const SPIRVValidator = "structural check only (built with vkc_nospirvtools)"

// ValidateSPIRV checks that code is a SPIR-V module a Vulkan device may be
// given. This build (tag vkc_nospirvtools, for platforms without the
// SPIRV-Tools library) runs only CheckSPIRV's structural check: a module
// that is whole but semantically wrong reaches the driver. The default
// build runs the Khronos validator as well; see spirv.go.
func ValidateSPIRV(code []byte, _ uint32) error {
	return CheckSPIRV(code)
}
