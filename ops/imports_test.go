package ops

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ops is built on vkc's public API alone: of this module, its files (tests
// included) import the root package and ops' own packages, nothing else.
func TestOpsImportsOnlyThePublicAPI(t *testing.T) {
	const module = "github.com/vkcompute/vkc"
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module+"/") && p != module+"/ops" && !strings.HasPrefix(p, module+"/ops/") {
				t.Errorf("%s imports %s: ops may import only %s and its own packages", path, p, module)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
