//go:build !vkc_nospirvtools

package vk

/*
#cgo LDFLAGS: -lSPIRV-Tools -lm
#cgo !darwin LDFLAGS: -lstdc++
#cgo darwin LDFLAGS: -lc++
#include <stdlib.h>
#include <string.h>
#include <spirv-tools/libspirv.h>

// vkc_spirv_validate runs the Khronos validator over words for env. It
// returns the validator's result and, on failure, its message in *msg
// (malloc'd; the caller frees it) and the index of the instruction it is
// about in *where.
static int vkc_spirv_validate(int env, const uint32_t *words, size_t count, char **msg, size_t *where) {
	*msg = NULL;
	*where = 0;
	spv_context ctx = spvContextCreate((spv_target_env)env);
	if (!ctx) return SPV_ERROR_INTERNAL;
	spv_diagnostic diag = NULL;
	spv_result_t r = spvValidateBinary(ctx, words, count, &diag);
	if (r != SPV_SUCCESS && diag && diag->error) {
		size_t n = strlen(diag->error);
		*msg = malloc(n + 1);
		if (*msg) memcpy(*msg, diag->error, n + 1);
		*where = diag->position.index;
	}
	spvDiagnosticDestroy(diag);
	spvContextDestroy(ctx);
	return r;
}
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// SPIRVValidator names the check ValidateSPIRV runs in this build.
const SPIRVValidator = "SPIRV-Tools"

// ValidateSPIRV checks that code is a SPIR-V module that a Vulkan device
// used at apiVersion (as VK_MAKE_API_VERSION packs it; 0 means 1.3, the
// most vk asks for) may be given: first that its SPIR-V version is one that
// Vulkan version takes (a newer one is ErrUnsupported, naming both
// versions: the module may be valid, the device is too old for it), then
// with the Khronos SPIR-V validator (SPIRV-Tools' spvValidateBinary,
// linked statically from the spirv-tools package) for the matching Vulkan
// target environment.
// Drivers do not validate SPIR-V, and a module that is whole but wrong (an
// access chain past a struct's members, say) crashes some of them; so
// NewPipeline calls this before the driver sees a module. The error wraps
// ErrBadSPIRV and carries the validator's message.
//
// Built with the tag vkc_nospirvtools, for platforms without the library,
// it checks only that code is whole words; callers read every module with
// package shaders first (the recorder does), which refuses one that is not
// whole.
func ValidateSPIRV(code []byte, apiVersion uint32) error {
	if err := wholeWords(code); err != nil {
		return err
	}
	if err := checkSPIRVVersion(code, apiVersion); err != nil {
		return err
	}
	env, name := spirvEnv(apiVersion)
	words := C.CBytes(code) // C memory: aligned for uint32 and outside the collector's reach
	defer C.free(words)
	var msg *C.char
	var where C.size_t
	r := C.vkc_spirv_validate(env, (*C.uint32_t)(words), C.size_t(len(code)/4), &msg, &where)
	if r == C.SPV_SUCCESS {
		return nil
	}
	text := fmt.Sprintf("result %d", int(r))
	if msg != nil {
		text = oneLine(C.GoString(msg))
		C.free(unsafe.Pointer(msg))
	}
	if c, ok := unknownCapability(text); ok {
		return fmt.Errorf("%w: the SPIR-V validator this build of vkc links (SPIRV-Tools %s) does not know capability %d, which the module declares: build vkc against a newer SPIRV-Tools (the spirv-tools package; cooperative matrices need 2023.4 or later), or with the tag vkc_nospirvtools",
			ErrUnsupported, C.GoString(C.spvSoftwareVersionString()), c)
	}
	return fmt.Errorf("%w: SPIR-V validator (%s), instruction %d: %s", ErrBadSPIRV, name, uint64(where), text)
}

// unknownCapability reports the capability number of the validator's
// message for a capability it does not know (SPIRV-Tools: "Invalid
// capability operand: N"): a module newer than the linked validator, not
// a bad one, so ValidateSPIRV says so instead of calling it invalid.
func unknownCapability(text string) (uint32, bool) {
	const prefix = "Invalid capability operand: "
	rest, ok := strings.CutPrefix(text, prefix)
	if !ok {
		return 0, false
	}
	digits := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = rest[:i]
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	return uint32(n), err == nil
}

// oneLine joins the validator's message, which may end with the offending
// instruction disassembled on lines of its own, into one line.
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return lines[0] + " [" + strings.Join(lines[1:], "; ") + "]"
}

// spirvEnv picks the validator's target environment for a Vulkan version.
func spirvEnv(apiVersion uint32) (C.int, string) {
	if apiVersion == 0 {
		apiVersion = instanceAPI
	}
	switch major, minor := apiVersion>>22&0x7f, apiVersion>>12&0x3ff; {
	case major == 1 && minor == 0:
		return C.SPV_ENV_VULKAN_1_0, "vulkan1.0"
	case major == 1 && minor == 1:
		return C.SPV_ENV_VULKAN_1_1, "vulkan1.1"
	case major == 1 && minor == 2:
		return C.SPV_ENV_VULKAN_1_2, "vulkan1.2"
	}
	return C.SPV_ENV_VULKAN_1_3, "vulkan1.3"
}
