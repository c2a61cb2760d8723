// Package kernels holds the op library's compute kernels: GLSL sources
// under glsl/ and the SPIR-V modules glslc builds from them, one per
// variant listed in variants.txt (a kernel and the element types it is
// built for). The modules are committed and embedded, so building vkc
// needs no shader compiler; a test fails when one no longer matches its
// source. After editing a source or variants.txt, run
//
//	go generate ./ops/internal/kernels
package kernels

import (
	"embed"
	"fmt"
)

//go:generate sh gen.sh

//go:embed spv/*.spv
var modules embed.FS

// SPIRV is the module of the named variant (variants.txt), as glslc wrote
// it.
func SPIRV(name string) ([]byte, error) {
	b, err := modules.ReadFile("spv/" + name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("vkc: ops: no kernel %q", name)
	}
	return b, nil
}
