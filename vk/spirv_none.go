//go:build vkc_nospirvtools

package vk

// SPIRVValidator names the check ValidateSPIRV runs in this build.
const SPIRVValidator = "structural check only (built with vkc_nospirvtools)"

// ValidateSPIRV checks that code is a SPIR-V module a Vulkan device may be
// given. This build (tag vkc_nospirvtools, for platforms without the
// SPIRV-Tools library) checks only that it is whole words: callers read
// every module with package shaders first (the recorder does), and a
// module that is whole but semantically wrong reaches the driver. The
// default build runs the Khronos validator; see spirv.go.
func ValidateSPIRV(code []byte, _ uint32) error {
	return wholeWords(code)
}
