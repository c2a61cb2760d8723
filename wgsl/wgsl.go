// Package wgsl compiles WGSL compute shaders into vkc kernels at run time,
// in pure Go, with the translator github.com/gogpu/naga pinned at one
// exact version (TranslatorVersion).
//
// Compile returns a vkc.KernelSpec for Device.LoadKernel, which checks the
// module as it checks any user's SPIR-V before a driver sees it. Between
// the translator and that check, this package repairs what the translator
// emits that vkc would refuse or run wrongly (see docs/guide/wgsl.md):
// storage-buffer decorations that contradict the code, override values
// and the workgroup sizes they set, and the zero-initialisation of
// workgroup memory, which it drops unless Options.ZeroWorkgroupMemory asks
// to keep it.
//
// It is the only package of vkc that imports the translator, so a program
// that does not import wgsl does not link it.
package wgsl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gogpu/naga"
	"github.com/gogpu/naga/ir"
	"github.com/gogpu/naga/spirv"
	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/shaders"
)

// TranslatorVersion is the module version of the WGSL translator this
// package is built with; it is part of every cache key, and go.mod pins
// exactly this version.
const TranslatorVersion = "github.com/gogpu/naga v0.19.0"

// Options says which kernel to make of a WGSL source.
type Options struct {
	// Name labels the kernel in errors and becomes KernelSpec.Name.
	Name string
	// Entry is the @compute entry point to compile; empty picks the
	// source's only one (a source with several must name one).
	Entry string
	// Constants give overrides their values by name, in place of their
	// defaults (an override without a default must be given one). They
	// are applied when compiling, so each set of values is its own module,
	// cached separately; a workgroup size an override sets follows it.
	Constants map[string]float64
	// ZeroWorkgroupMemory keeps WGSL's guarantee that workgroup memory
	// starts zeroed. The translator keeps it by having one invocation
	// store zeros over every workgroup variable before a barrier, which
	// made a two-pass sum 1.5 to 3 times slower on lavapipe, so by default
	// the stores are dropped and workgroup memory starts undefined, as
	// in GLSL: a kernel must write what it reads there first.
	ZeroWorkgroupMemory bool
}

// Error is a compilation error, typed so a tool can point at the place in
// the source (an editor, a test's message) rather than parse the text.
type Error struct {
	// Name is Options.Name: which kernel failed.
	Name string
	// Line and Column place the error in the source, counted from 1; both
	// are 0 where there is no place (no entry point, an override that
	// Options.Constants names and the source does not declare).
	Line, Column int
	// Msg is what went wrong, without the kernel and the place.
	Msg string
}

// Error formats the error with the vkc prefix every vkc error has.
func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("vkc: wgsl kernel %q: %s", e.Name, e.Msg)
	}
	return fmt.Sprintf("vkc: wgsl kernel %q: line %d, column %d: %s", e.Name, e.Line, e.Column, e.Msg)
}

// Compile translates WGSL source into a kernel spec for Device.LoadKernel.
// The module it returns is checked by vkc's SPIR-V reader before it is
// returned; results are cached in memory by source, options and
// TranslatorVersion, so compiling the same kernel again costs a lookup.
// Compile is safe for concurrent use. Every error is an *Error.
func Compile(src string, opts Options) (vkc.KernelSpec, error) {
	key := cacheKey(src, opts)
	k, ok := compiled.get(key)
	if !ok {
		var err error
		if k, err = compile(src, opts); err != nil {
			return vkc.KernelSpec{}, err
		}
		compiled.put(key, k)
	}
	return vkc.KernelSpec{Name: opts.Name, SPIRV: slices.Clone(k.code), Entry: k.entry}, nil
}

// kernel is a compiled module and the name of its entry point.
type kernel struct {
	code  []byte
	entry string
}

// cacheKey is a digest of everything a compiled module depends on. The
// name is not part of it: it labels the spec and errors, which are not
// cached, so kernels compiled under two names share a module.
func cacheKey(src string, opts Options) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		h.Write(strconv.AppendInt(nil, int64(len(s)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	field(TranslatorVersion)
	field(src)
	field(opts.Entry)
	field(strconv.FormatBool(opts.ZeroWorkgroupMemory))
	for _, k := range slices.Sorted(maps.Keys(opts.Constants)) {
		field(k)
		field(strconv.FormatFloat(opts.Constants[k], 'g', -1, 64))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// compile runs the translator and the repairs. A panic inside the
// translator (it is not hardened against every input) becomes an error.
func compile(src string, opts Options) (k kernel, err error) {
	defer func() {
		if r := recover(); r != nil {
			k, err = kernel{}, &Error{Name: opts.Name, Msg: fmt.Sprintf("the translator failed on this source: %v", r)}
		}
	}()
	ast, err := naga.Parse(src)
	if err != nil {
		return kernel{}, located(opts.Name, src, err)
	}
	mod, err := naga.LowerWithSource(ast, src)
	if err != nil {
		return kernel{}, located(opts.Name, src, err)
	}
	ep, err := pickEntry(mod, opts)
	if err != nil {
		return kernel{}, err
	}
	overrides, err := applyOverrides(src, mod, opts)
	if err != nil {
		return kernel{}, err
	}
	if err := sizeWorkgroup(src, mod, ep, overrides, opts.Name); err != nil {
		return kernel{}, err
	}
	if err := checkWorkgroupArrays(src, mod, opts.Name); err != nil {
		return kernel{}, err
	}
	if errs, err := ir.ValidateWithCapabilities(mod, 0); err != nil {
		return kernel{}, &Error{Name: opts.Name, Msg: err.Error()}
	} else if len(errs) > 0 {
		e := &Error{Name: opts.Name, Msg: errs[0].Error()}
		e.Line, e.Column = functionPlace(src, errs[0].Function)
		return kernel{}, e
	}
	// The module holds the chosen entry point alone: the repairs work out
	// access over every function, and the workgroup size was set for it.
	mod.EntryPoints = []ir.EntryPoint{mod.EntryPoints[ep]}
	code, err := naga.GenerateSPIRV(mod, spirv.Options{Version: spirv.Version1_3})
	if err != nil {
		return kernel{}, &Error{Name: opts.Name, Msg: err.Error()}
	}
	code, err = repair(code, opts)
	if err != nil {
		return kernel{}, &Error{Name: opts.Name, Msg: "repairing the translator's SPIR-V: " + err.Error()}
	}
	if err := checkReadOnly(src, mod, code, opts.Name); err != nil {
		return kernel{}, err
	}
	if _, err := shaders.InspectEntry(code, mod.EntryPoints[0].Name); err != nil {
		return kernel{}, &Error{Name: opts.Name, Msg: "the translator emitted a module vkc cannot read: " + err.Error()}
	}
	return kernel{code: code, entry: mod.EntryPoints[0].Name}, nil
}

// repair applies the SPIR-V rewrites to a translated module.
func repair(code []byte, opts Options) ([]byte, error) {
	m, err := decodeModule(code)
	if err != nil {
		return nil, err
	}
	dropDeadStorageLoads(m)
	fixStorageAccess(m)
	if !opts.ZeroWorkgroupMemory {
		stripWorkgroupZeroing(m)
	}
	return m.encode()
}

// pickEntry finds the compute entry point opts names, or the only one.
func pickEntry(mod *ir.Module, opts Options) (int, error) {
	var names []string
	at := -1
	for i, ep := range mod.EntryPoints {
		if ep.Stage != ir.StageCompute {
			continue
		}
		names = append(names, ep.Name)
		if ep.Name == opts.Entry || opts.Entry == "" {
			at = i
		}
	}
	switch {
	case len(names) == 0:
		return 0, &Error{Name: opts.Name, Msg: "no @compute entry point"}
	case opts.Entry == "" && len(names) > 1:
		return 0, &Error{Name: opts.Name, Msg: fmt.Sprintf("several @compute entry points %q; name one in Options.Entry", names)}
	case at < 0:
		return 0, &Error{Name: opts.Name, Msg: fmt.Sprintf("no @compute entry point %q (have %q)", opts.Entry, names)}
	}
	return at, nil
}

// applyOverrides gives every override its value (from opts.Constants, else
// its default) and folds it into the module as a constant, returning the
// values by name.
func applyOverrides(src string, mod *ir.Module, opts Options) (map[string]float64, error) {
	known := map[string]bool{}
	for _, o := range mod.Overrides {
		known[o.Name] = true
		if _, given := opts.Constants[o.Name]; o.Init == nil && !given {
			e := &Error{Name: opts.Name, Msg: fmt.Sprintf("override %s has no default; give it a value in Options.Constants", o.Name)}
			if loc := regexp.MustCompile(`\boverride\s+` + regexp.QuoteMeta(o.Name) + `\b`).FindStringIndex(blankComments(src)); loc != nil {
				e.Line, e.Column = place(src, loc[0])
			}
			return nil, e
		}
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Constants)) {
		if !known[name] {
			return nil, &Error{Name: opts.Name, Msg: fmt.Sprintf("Options.Constants names %q, which is no override of the source (have %q)", name, slices.Sorted(maps.Keys(known)))}
		}
	}
	if len(mod.Overrides) == 0 {
		return nil, nil
	}
	first := len(mod.Constants)
	if err := ir.ProcessOverrides(mod, ir.PipelineConstants(opts.Constants)); err != nil {
		return nil, &Error{Name: opts.Name, Msg: err.Error()}
	}
	// The folded constants carry their value only as an initializer
	// expression, which the SPIR-V writer does not read: it emits such a
	// constant as OpConstantNull, so every use of an override in code
	// would read 0. Each gets its value as the writer wants it.
	values := map[string]float64{}
	for i, o := range mod.Overrides {
		if first+i >= len(mod.Constants) {
			break
		}
		c := &mod.Constants[first+i]
		lit, ok := ir.Literal{}, false
		if int(c.Init) < len(mod.GlobalExpressions) {
			lit, ok = mod.GlobalExpressions[c.Init].Kind.(ir.Literal)
		}
		var v ir.ScalarValue
		if ok {
			v, ok = scalarOf(lit.Value)
		}
		if !ok {
			return nil, &Error{Name: opts.Name, Msg: fmt.Sprintf("override %q: only bool, i32, u32 and f32 overrides are supported", o.Name)}
		}
		c.Value = v
		values[o.Name] = ir.LiteralToFloat(lit.Value)
	}
	mod.Overrides = nil
	return values, nil
}

// scalarOf is a literal as the SPIR-V writer emits a scalar constant.
func scalarOf(lit ir.LiteralValue) (ir.ScalarValue, bool) {
	switch v := lit.(type) {
	case ir.LiteralBool:
		bits := uint64(0)
		if v {
			bits = 1
		}
		return ir.ScalarValue{Bits: bits, Kind: ir.ScalarBool}, true
	case ir.LiteralI32:
		return ir.ScalarValue{Bits: uint64(uint32(v)), Kind: ir.ScalarSint}, true
	case ir.LiteralU32:
		return ir.ScalarValue{Bits: uint64(v), Kind: ir.ScalarUint}, true
	case ir.LiteralF32:
		return ir.ScalarValue{Bits: uint64(math.Float32bits(float32(v))), Kind: ir.ScalarFloat}, true
	}
	return ir.ScalarValue{}, false
}

// Translator messages place errors as "line L, column C" (the parser) or
// "L:C:" (the lowerer).
var (
	parserPlace  = regexp.MustCompile(`line (\d+), column (\d+): `)
	lowererPlace = regexp.MustCompile(`(?:^|: )(\d+):(\d+): `)
	translator   = regexp.MustCompile(`^(?:(?:parse|lowering|tokenization) error: )+`)
)

// located turns a translator error into an *Error with the place it names.
func located(name, src string, err error) error {
	msg := translator.ReplaceAllString(err.Error(), "")
	e := &Error{Name: name, Msg: msg}
	for _, re := range []*regexp.Regexp{parserPlace, lowererPlace} {
		if m := re.FindStringSubmatchIndex(msg); m != nil {
			e.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
			e.Column, _ = strconv.Atoi(msg[m[4]:m[5]])
			e.Msg = strings.TrimSpace(msg[m[1]:])
			break
		}
	}
	if e.Line == 0 {
		e.Line, e.Column = 1, 1
		if src == "" {
			e.Msg = "empty source: " + e.Msg
		}
	}
	return e
}

// functionPlace is where function fn is declared in src (line and column
// from 1), 0, 0 if it cannot be found: the validator names the function,
// not the place, of what it refuses.
func functionPlace(src, fn string) (line, col int) {
	if fn == "" {
		return 0, 0
	}
	text := blankComments(src)
	re := regexp.MustCompile(`\bfn\s+` + regexp.QuoteMeta(fn) + `\b`)
	loc := re.FindStringIndex(text)
	if loc == nil {
		return 0, 0
	}
	return place(src, loc[0])
}

// place converts a byte offset of src into a line and column from 1.
func place(src string, off int) (line, col int) {
	line = 1 + strings.Count(src[:off], "\n")
	return line, off - strings.LastIndex(src[:off], "\n")
}

// errNoValue is returned by the workgroup-size evaluator for an argument
// it cannot work out.
var errNoValue = errors.New("not a constant expression of literals, consts and overrides")

// checkReadOnly refuses a store to a buffer the source declares read-only
// (var<storage, read>, or var<storage> without a mode), which WGSL makes
// an error and the translator lets through. The repair drops NonWritable
// wherever the code stores, since the translator also marks
// var<storage, write> NonWritable, so the declared mode is read from the
// source: the translator's IR has one mode for both.
func checkReadOnly(src string, mod *ir.Module, code []byte, name string) error {
	m, err := decodeModule(code)
	if err != nil {
		return &Error{Name: name, Msg: err.Error()}
	}
	written := bindingsWritten(m)
	text := blankComments(src)
	for _, g := range mod.GlobalVariables {
		if g.Space != ir.SpaceStorage || g.Binding == nil || !written[[2]uint32{g.Binding.Group, g.Binding.Binding}] {
			continue
		}
		decl := regexp.MustCompile(`var\s*<\s*storage\s*(?:,\s*(\w+)\s*)?>\s*` + regexp.QuoteMeta(g.Name) + `\b`).FindStringSubmatchIndex(text)
		if decl == nil {
			continue
		}
		mode := ""
		if decl[2] >= 0 {
			mode = text[decl[2]:decl[3]]
		}
		if mode == "" || mode == "read" {
			line, col := place(src, decl[0])
			return &Error{Name: name, Line: line, Column: col, Msg: fmt.Sprintf("%s is declared read-only (var<storage, read>) but the code stores to it; declare it var<storage, read_write>", g.Name)}
		}
	}
	return nil
}

// checkWorkgroupArrays refuses a workgroup array sized by an override
// (var<workgroup> s: array<f32, WG>): the translator emits it as a
// runtime-sized array zeroed with a null constant, which is not valid
// SPIR-V, so the error is given here, at the declaration, rather than by
// LoadKernel's validator without a place.
func checkWorkgroupArrays(src string, mod *ir.Module, name string) error {
	for _, g := range mod.GlobalVariables {
		if g.Space != ir.SpaceWorkGroup || !unsized(mod, g.Type, 0) {
			continue
		}
		e := &Error{Name: name, Msg: fmt.Sprintf("workgroup array %s is sized by an override, which this translator cannot emit; size it with a const", g.Name)}
		if loc := regexp.MustCompile(`var\s*<\s*workgroup\s*>\s*` + regexp.QuoteMeta(g.Name) + `\b`).FindStringIndex(blankComments(src)); loc != nil {
			e.Line, e.Column = place(src, loc[0])
		}
		return e
	}
	return nil
}

// unsized reports whether type h is, or holds, an array without a
// constant length (depth bounds the walk through a malformed module).
func unsized(mod *ir.Module, h ir.TypeHandle, depth int) bool {
	if int(h) >= len(mod.Types) || depth > 16 {
		return false
	}
	switch t := mod.Types[h].Inner.(type) {
	case ir.ArrayType:
		return t.Size.Constant == nil || unsized(mod, t.Base, depth+1)
	case ir.StructType:
		for _, m := range t.Members {
			if unsized(mod, m.Type, depth+1) {
				return true
			}
		}
	}
	return false
}
