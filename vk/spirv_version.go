package vk

import (
	"encoding/binary"
	"fmt"
)

// spirvMagic is the first word of a SPIR-V module, read little-endian.
const spirvMagic = 0x07230203

// spirvVulkan is, for each SPIR-V version (major<<16 | minor<<8, as a
// module's header word holds it), the oldest Vulkan version (as
// VK_MAKE_API_VERSION packs it) that core accepts it in: SPIR-V 1.0 in
// Vulkan 1.0, 1.1 to 1.3 in Vulkan 1.1, 1.4 and 1.5 in Vulkan 1.2, 1.6 in
// Vulkan 1.3. (SPIR-V 1.4 also reaches Vulkan 1.1 through
// VK_KHR_spirv_1_4, which vk does not enable.)
var spirvVulkan = []struct{ spirv, vulkan uint32 }{
	{0x10000, 1 << 22},
	{0x10100, 1<<22 | 1<<12},
	{0x10200, 1<<22 | 1<<12},
	{0x10300, 1<<22 | 1<<12},
	{0x10400, 1<<22 | 2<<12},
	{0x10500, 1<<22 | 2<<12},
	{0x10600, 1<<22 | 3<<12},
}

// checkSPIRVVersion refuses, with ErrUnsupported naming both versions, a
// module whose SPIR-V version a device of Vulkan version apiVersion may
// not be given (0 means instanceAPI): the module is not invalid, the
// device is too old for it. A version no Vulkan version vk knows accepts
// is refused the same way. code is whole words with a header (wholeWords);
// bytes without SPIR-V's magic number are left to the validator, which
// refuses them as invalid.
func checkSPIRVVersion(code []byte, apiVersion uint32) error {
	if apiVersion == 0 {
		apiVersion = instanceAPI
	}
	if binary.LittleEndian.Uint32(code) != spirvMagic {
		return nil
	}
	version := binary.LittleEndian.Uint32(code[4:])
	spirv := fmt.Sprintf("SPIR-V %d.%d", version>>16&0xff, version>>8&0xff)
	device := versionName(apiVersion)
	for _, v := range spirvVulkan {
		if v.spirv != version&0x00ffff00 {
			continue
		}
		if v.vulkan&^0xfff > apiVersion&^0xfff {
			return fmt.Errorf("%w: the module is %s, which needs %s; the device is used at %s", ErrUnsupported, spirv, versionName(v.vulkan), device)
		}
		return nil
	}
	return fmt.Errorf("%w: the module is %s, which no Vulkan version up to %s takes; the device is used at %s", ErrUnsupported, spirv, versionName(instanceAPI), device)
}

// versionName names a Vulkan version without its patch: "Vulkan 1.3".
func versionName(apiVersion uint32) string {
	return fmt.Sprintf("Vulkan %d.%d", apiVersion>>22&0x7f, apiVersion>>12&0x3ff)
}
