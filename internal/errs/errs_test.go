package errs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// Every sentinel is listed in All once and reads as a user should read it:
// "vkc: " first. The list is checked against the declarations themselves,
// so a sentinel added without a row fails here.
func TestAllListsEverySentinel(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errs.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				if name.Name != "All" {
					declared++
				}
			}
		}
	}
	if declared != len(All) {
		t.Errorf("%d sentinels declared, %d in All", declared, len(All))
	}
	seen := map[error]bool{}
	for _, e := range All {
		if seen[e] {
			t.Errorf("%v listed twice", e)
		}
		seen[e] = true
		if !strings.HasPrefix(e.Error(), "vkc: ") {
			t.Errorf("%q does not start with vkc: ", e)
		}
	}
}
