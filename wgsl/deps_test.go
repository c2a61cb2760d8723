package wgsl

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const translatorPath = "github.com/gogpu/naga"

// goList runs go list with args from the module root.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH")
	}
	cmd := exec.Command(gocmd, append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v", args)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The translator is linked only into programs that import wgsl: the root
// package and ops, which every vkc program imports, do not depend on it.
func TestCorePackagesDoNotDependOnTheTranslator(t *testing.T) {
	for _, dep := range goList(t, "-deps", "github.com/vkcompute/vkc", "github.com/vkcompute/vkc/ops") {
		assert.False(t, strings.HasPrefix(dep, translatorPath), "the root package or ops depends on %s", dep)
	}
}

// wgsl is the only package of vkc importing the translator.
func TestOnlyWgslImportsTheTranslator(t *testing.T) {
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/vkcompute/vkc/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == "github.com/vkcompute/vkc/wgsl" {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			assert.False(t, strings.HasPrefix(imp, translatorPath), "%s imports %s; only wgsl may", pkg, imp)
		}
	}
}
