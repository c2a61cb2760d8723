package shaders

// textHint is what a refusal of bytes that are not SPIR-V adds when they
// look like source text: the commonest such mistake is handing over the
// GLSL itself, and the fix is one compiler call.
func textHint(code []byte) string {
	if !looksLikeText(code) {
		return ""
	}
	return "; the bytes look like text (GLSL source?): compile it to SPIR-V first, e.g. glslc -fshader-stage=compute kernel.comp -o kernel.spv"
}

// looksLikeText reports whether the first bytes of code are printable
// text (ASCII or UTF-8, with tabs and line breaks). A SPIR-V module never
// is: its first word holds the bytes 0x03 0x02 0x23 0x07.
func looksLikeText(code []byte) bool {
	if len(code) == 0 {
		return false
	}
	head := code[:min(len(code), 256)]
	for _, b := range head {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' || b == 0x7f {
			return false
		}
	}
	return true
}
