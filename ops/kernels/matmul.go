// Package kernels holds the compute kernels of package ops: GLSL sources
// compiled offline with glslc (go generate) into SPIR-V that is embedded,
// so that building a program needs no compiler. A test replays every
// go:generate line and fails when a committed module is stale.
package kernels

import (
	"embed"
	"fmt"
)

//go:generate glslc -O --target-env=vulkan1.1 -o matmul_generic.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DDYNAMIC -o matmul_generic_dyn.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DPARTIAL -o matmul_generic_partial.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -o matmul_reduce.spv matmul_reduce.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F16 -o matmul_generic_f16.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F16 -DDYNAMIC -o matmul_generic_f16_dyn.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F16 -DPARTIAL -o matmul_generic_f16_partial.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F16 -o matmul_reduce_f16.spv matmul_reduce.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F64 -o matmul_generic_f64.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F64 -DDYNAMIC -o matmul_generic_f64_dyn.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F64 -DPARTIAL -o matmul_generic_f64_partial.spv matmul_generic.comp
//go:generate glslc -O --target-env=vulkan1.1 -DELEM_F64 -o matmul_reduce_f64.spv matmul_reduce.comp
//go:generate glslc -O --target-env=vulkan1.1 -o matmul_wide.spv matmul_wide.comp
//go:generate glslc -O --target-env=vulkan1.1 -DDYNAMIC -o matmul_wide_dyn.spv matmul_wide.comp
//go:generate glslc -O --target-env=vulkan1.1 -o matmul_gemv.spv matmul_gemv.comp
//go:generate glslc -O --target-env=vulkan1.1 -DDYNAMIC -o matmul_gemv_dyn.spv matmul_gemv.comp

//go:embed matmul_*.spv
var matmulModules embed.FS

// Matmul is the SPIR-V module of the matmul kernel variant name (for
// example "matmul_generic_f16_dyn"), as a go:generate line above builds
// it; an unknown name is an error naming it.
func Matmul(name string) ([]byte, error) {
	code, err := matmulModules.ReadFile(name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("vkc: ops: no matmul kernel %q", name)
	}
	return code, nil
}
