//go:build vkc_nospirvtools

package vk

import (
	"encoding/binary"
	"fmt"
)

// SPIRVValidator names the check ValidateSPIRV runs in this build.
const SPIRVValidator = "structural check only (built with vkc_nospirvtools)"

// ValidateSPIRV checks that code is a SPIR-V module a Vulkan device used at
// apiVersion may be given. This build (tag vkc_nospirvtools, for platforms
// without the SPIRV-Tools library) checks only that it is whole words
// starting with SPIR-V's magic number and that its SPIR-V version is one
// that Vulkan version takes (a newer one is ErrUnsupported, naming both
// versions): callers read
// every module with package shaders first (the recorder does), and a
// module that is whole but semantically wrong reaches the driver. The
// default build runs the Khronos validator; see spirv.go.
func ValidateSPIRV(code []byte, apiVersion uint32) error {
	if err := wholeWords(code); err != nil {
		return err
	}
	if magic := binary.LittleEndian.Uint32(code); magic != spirvMagic {
		return fmt.Errorf("%w: magic number %#08x, want %#08x", ErrBadSPIRV, magic, spirvMagic)
	}
	return checkSPIRVVersion(code, apiVersion)
}
