package wgsl

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/gogpu/naga/ir"
)

// sizeWorkgroup sets the workgroup size of entry point ep from its
// @workgroup_size attribute in src. The translator works out literal and
// const sizes but leaves an axis an override sizes at 1 (and emits no
// specialization constant for it), so a kernel written for 64 invocations
// would run with one. The overrides are folded into constants before this
// runs, so their values are known; each argument is evaluated here
// (literals, consts, overrides, + - * / and parentheses, u32(...) and
// i32(...)) and an argument naming an override that cannot be evaluated is
// an error rather than a silent size of 1.
func sizeWorkgroup(src string, mod *ir.Module, ep int, overrides map[string]float64, name string) error {
	if len(overrides) == 0 {
		return nil
	}
	args, at, ok := workgroupArgs(src, mod.EntryPoints[ep].Name)
	if !ok {
		return nil
	}
	values := constValues(mod)
	for k, v := range overrides {
		values[k] = v
	}
	for axis, arg := range args {
		if axis >= 3 {
			break
		}
		if !mentionsAny(arg.text, overrides) {
			continue // the translator sized it
		}
		v, err := evalSize(arg.text, values)
		if err == nil && (v < 1 || v > math.MaxUint32 || v != math.Trunc(v)) {
			err = fmt.Errorf("is %v, not a positive whole number", v)
		}
		if err != nil {
			line, col := place(src, at+arg.offset)
			return &Error{Name: name, Line: line, Column: col, Msg: fmt.Sprintf("@workgroup_size argument %q: %v", strings.TrimSpace(arg.text), err)}
		}
		mod.EntryPoints[ep].Workgroup[axis] = uint32(v)
	}
	return nil
}

// sizeArg is one argument of @workgroup_size: its text and its offset
// from the start of the argument list.
type sizeArg struct {
	text   string
	offset int
}

// workgroupArgs finds the @workgroup_size attribute of function fn in src
// and splits its arguments at top-level commas; at is the offset in src
// where the arguments start.
func workgroupArgs(src, fn string) (args []sizeArg, at int, ok bool) {
	text := blankComments(src)
	decl := regexp.MustCompile(`\bfn\s+` + regexp.QuoteMeta(fn) + `\s*\(`).FindStringIndex(text)
	if decl == nil {
		return nil, 0, false
	}
	// The attribute is among those right before the declaration: after
	// the end of the previous declaration.
	start := max(strings.LastIndexAny(text[:decl[0]], ";}"), 0)
	attrs := regexp.MustCompile(`@\s*workgroup_size\s*\(`).FindAllStringIndex(text[start:decl[0]], -1)
	if attrs == nil {
		return nil, 0, false
	}
	at = start + attrs[len(attrs)-1][1]
	depth, from := 0, at
	for i := at; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				if s := text[from:i]; strings.TrimSpace(s) != "" {
					args = append(args, sizeArg{s, from - at})
				}
				return args, at, true
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, sizeArg{text[from:i], from - at})
				from = i + 1
			}
		}
	}
	return nil, 0, false
}

// blankComments replaces WGSL's comments (line comments and nestable block
// comments) with spaces, keeping every other byte where it was.
func blankComments(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); {
		switch {
		case i+1 < len(b) && b[i] == '/' && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				b[i] = ' '
				i++
			}
		case i+1 < len(b) && b[i] == '/' && b[i+1] == '*':
			depth := 0
			for i < len(b) {
				if i+1 < len(b) && b[i] == '/' && b[i+1] == '*' {
					depth++
					b[i], b[i+1] = ' ', ' '
					i += 2
					continue
				}
				if i+1 < len(b) && b[i] == '*' && b[i+1] == '/' {
					depth--
					b[i], b[i+1] = ' ', ' '
					i += 2
					if depth == 0 {
						break
					}
					continue
				}
				if b[i] != '\n' {
					b[i] = ' '
				}
				i++
			}
		default:
			i++
		}
	}
	return string(b)
}

// constValues are the module's scalar consts by name.
func constValues(mod *ir.Module) map[string]float64 {
	values := map[string]float64{}
	for _, c := range mod.Constants {
		if c.Name == "" {
			continue
		}
		if int(c.Init) < len(mod.GlobalExpressions) {
			if lit, ok := mod.GlobalExpressions[c.Init].Kind.(ir.Literal); ok {
				values[c.Name] = ir.LiteralToFloat(lit.Value)
			}
		}
	}
	return values
}

// mentionsAny reports whether expression text names one of names.
func mentionsAny(text string, names map[string]float64) bool {
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) }) {
		if _, ok := names[tok]; ok {
			return true
		}
	}
	return false
}

// evalSize evaluates a workgroup-size argument.
func evalSize(text string, values map[string]float64) (float64, error) {
	p := &sizeParser{text: text, values: values}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.at != len(p.text) {
		return 0, errNoValue
	}
	return v, nil
}

// sizeParser is a recursive-descent evaluator of the integer expressions
// a workgroup size may be written with.
type sizeParser struct {
	text   string
	at     int
	values map[string]float64
}

func (p *sizeParser) space() {
	for p.at < len(p.text) && unicode.IsSpace(rune(p.text[p.at])) {
		p.at++
	}
}

// next consumes c if it is the next byte after spaces.
func (p *sizeParser) next(c byte) bool {
	p.space()
	if p.at < len(p.text) && p.text[p.at] == c {
		p.at++
		return true
	}
	return false
}

func (p *sizeParser) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		switch {
		case p.next('+'):
			var r float64
			r, err = p.product()
			v += r
		case p.next('-'):
			var r float64
			r, err = p.product()
			v -= r
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *sizeParser) product() (float64, error) {
	v, err := p.operand()
	for err == nil {
		switch {
		case p.next('*'):
			var r float64
			r, err = p.operand()
			v *= r
		case p.next('/'):
			var r float64
			if r, err = p.operand(); err == nil {
				if r == 0 {
					return 0, fmt.Errorf("divides by zero")
				}
				v = math.Trunc(v / r)
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *sizeParser) operand() (float64, error) {
	if p.next('(') {
		v, err := p.sum()
		if err == nil && !p.next(')') {
			err = errNoValue
		}
		return v, err
	}
	p.space()
	start := p.at
	for p.at < len(p.text) && (p.text[p.at] == '_' || unicode.IsLetter(rune(p.text[p.at])) || unicode.IsDigit(rune(p.text[p.at]))) {
		p.at++
	}
	word := p.text[start:p.at]
	switch {
	case word == "":
		return 0, errNoValue
	case word[0] >= '0' && word[0] <= '9':
		n, err := strconv.ParseUint(strings.TrimRight(word, "ui"), 0, 64)
		if err != nil {
			return 0, errNoValue
		}
		return float64(n), nil
	case word == "u32" || word == "i32":
		if !p.next('(') {
			return 0, errNoValue
		}
		v, err := p.sum()
		if err == nil && !p.next(')') {
			err = errNoValue
		}
		return math.Trunc(v), err
	}
	v, ok := p.values[word]
	if !ok {
		return 0, fmt.Errorf("%q is not a const or override with a known value", word)
	}
	return v, nil
}
