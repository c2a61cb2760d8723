package shaders

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkcompute/vkc/internal/errs"
)

// GLSL handed over as if it were SPIR-V is refused as invalid SPIR-V
// with the fix (compile it first) whatever its length, while bytes that
// are not text get no such hint.
func TestTextIsToldToCompileFirst(t *testing.T) {
	glsl := "#version 450\nlayout(local_size_x = 64) in;\nvoid main() {}\n"
	for _, code := range [][]byte{[]byte(glsl), []byte(glsl[:16]), []byte(glsl[:13])} {
		_, err := Inspect(code)
		if !errors.Is(err, errs.BadSPIRV) {
			t.Fatalf("%d bytes of GLSL: %v, want invalid SPIR-V", len(code), err)
		}
		if !strings.Contains(err.Error(), "compile it to SPIR-V first") {
			t.Errorf("%d bytes of GLSL: %q gives no hint to compile it", len(code), err)
		}
	}
	_, err := Inspect([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	if !errors.Is(err, errs.BadSPIRV) || strings.Contains(err.Error(), "compile") {
		t.Errorf("binary bytes: %v, want invalid SPIR-V without a hint about text", err)
	}
}
