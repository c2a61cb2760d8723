package shaders

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layouts Inspect reads are checked against an independent reader,
// SPIRV-Cross's reflection (spirv-cross --reflect), over a generated
// corpus: random push-constant, storage and uniform blocks in GLSL
// (scalars, vectors, matrices column- and row-major, nested structs,
// arrays and arrays of arrays of all of them, runtime arrays, members at
// explicit offsets) in std430,
// std140 and scalar block layout, compiled by glslc for Vulkan 1.1, 1.2
// and 1.3 in turn. Every struct member's offset, every array and matrix
// stride, every matrix's majority, every span (computed from what
// SPIRV-Cross reports) and every buffer block's size must agree.
const (
	layoutCorpusSeed  = 16
	layoutCorpusCount = 300
)

var layoutTargetEnvs = []string{"vulkan1.1", "vulkan1.2", "vulkan1.3"}

func TestLayoutsMatchSPIRVCrossReflection(t *testing.T) {
	for _, tool := range []string{"glslc", "spirv-cross"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install glslc spirv-cross; scripts/setup.sh installs both): the layout corpus is not checked", tool)
		}
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(layoutCorpusSeed, 0))
	sources := make([]string, layoutCorpusCount)
	for _, env := range layoutTargetEnvs {
		require.NoError(t, os.Mkdir(filepath.Join(dir, env), 0o755))
	}
	for i := range sources {
		sources[i] = newBlockGen(rng).program()
		require.NoError(t, os.WriteFile(corpusSource(dir, i), []byte(sources[i]), 0o644))
	}
	// One glslc per target compiles all of its modules: starting glslc
	// costs far more than compiling one of them.
	var compile sync.WaitGroup
	compileErrs := make([]error, len(layoutTargetEnvs))
	for e, env := range layoutTargetEnvs {
		compile.Add(1)
		go func() {
			defer compile.Done()
			cmd := exec.Command("glslc", "-c", "--target-env="+env)
			cmd.Dir = filepath.Join(dir, env)
			for i := e; i < layoutCorpusCount; i += len(layoutTargetEnvs) {
				cmd.Args = append(cmd.Args, filepath.Base(corpusSource(dir, i)))
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				compileErrs[e] = fmt.Errorf("glslc --target-env=%s: %v: %s", env, err, out)
			}
		}()
	}
	compile.Wait()
	for _, err := range compileErrs {
		require.NoError(t, err)
	}
	type result struct {
		blocks int
		err    error
	}
	results := make([]result, layoutCorpusCount)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				blocks, err := checkCorpusModule(dir, i)
				results[i] = result{blocks, err}
			}
		}()
	}
	for i := range layoutCorpusCount {
		next <- i
	}
	close(next)
	wg.Wait()
	blocks, failed := 0, 0
	for i, r := range results {
		blocks += r.blocks
		if r.err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("module m%03d (%s): %v\n%s", i, layoutTargetEnvs[i%len(layoutTargetEnvs)], r.err, sources[i])
			}
		}
	}
	require.Zero(t, failed, "of %d modules", layoutCorpusCount)
	t.Logf("%d modules (%d per Vulkan target), %d blocks: every offset, stride and size agrees with spirv-cross --reflect", layoutCorpusCount, layoutCorpusCount/len(layoutTargetEnvs), blocks)
}

// corpusSource is where the source of module i of the corpus in dir lies,
// under its target's directory; glslc -c writes the module beside it, its
// name the source's with ".spv" added.
func corpusSource(dir string, i int) string {
	return filepath.Join(dir, layoutTargetEnvs[i%len(layoutTargetEnvs)], fmt.Sprintf("m%03d.comp", i))
}

// checkCorpusModule reads compiled module i of dir with Inspect and with
// spirv-cross, and compares every block both report; it returns the
// number of blocks compared.
func checkCorpusModule(dir string, i int) (int, error) {
	spv := corpusSource(dir, i) + ".spv"
	out, err := exec.Command("spirv-cross", spv, "--reflect").Output()
	if err != nil {
		return 0, fmt.Errorf("spirv-cross: %v", err)
	}
	var refl reflection
	if err := json.Unmarshal(out, &refl); err != nil {
		return 0, fmt.Errorf("spirv-cross output: %v", err)
	}
	code, err := os.ReadFile(spv)
	if err != nil {
		return 0, err
	}
	mod, err := Inspect(code)
	if err != nil {
		return 0, fmt.Errorf("Inspect: %v", err)
	}
	c := layoutComparison{types: refl.Types}
	blocks := 0
	if len(refl.PushConstants) != 1 || mod.Push == nil {
		return 0, fmt.Errorf("push-constant blocks: spirv-cross %d, Inspect %v", len(refl.PushConstants), mod.Push != nil)
	}
	if err := c.block("push constants", refl.PushConstants[0], mod.Push); err != nil {
		return 0, err
	}
	blocks++
	bound := map[[2]uint32]*Layout{}
	for _, b := range mod.Bindings {
		bound[[2]uint32{b.Set, b.Binding}] = b.Block
	}
	for _, b := range append(refl.SSBOs, refl.UBOs...) {
		l := bound[[2]uint32{b.Set, b.Binding}]
		if l == nil {
			return 0, fmt.Errorf("binding %d: Inspect has no block layout", b.Binding)
		}
		if err := c.block(fmt.Sprintf("binding %d", b.Binding), b, l); err != nil {
			return 0, err
		}
		blocks++
	}
	if blocks != 1+len(mod.Bindings) {
		return 0, fmt.Errorf("spirv-cross reports %d blocks, Inspect %d bindings and push constants", blocks, len(mod.Bindings))
	}
	return blocks, nil
}

// reflection is the part of spirv-cross --reflect's JSON the test reads.
type reflection struct {
	Types         map[string]reflectedStruct `json:"types"`
	SSBOs         []reflectedBlock           `json:"ssbos"`
	UBOs          []reflectedBlock           `json:"ubos"`
	PushConstants []reflectedBlock           `json:"push_constants"`
}

type reflectedBlock struct {
	Type      string  `json:"type"`
	BlockSize *uint64 `json:"block_size"` // absent for push constants
	Set       uint32  `json:"set"`
	Binding   uint32  `json:"binding"`
}

type reflectedStruct struct {
	Members []reflectedMember `json:"members"`
}

type reflectedMember struct {
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	Offset       uint32   `json:"offset"`
	Array        []uint32 `json:"array"` // innermost dimension first; 0 is a runtime array
	ArrayStride  uint32   `json:"array_stride"`
	MatrixStride uint32   `json:"matrix_stride"`
	RowMajor     bool     `json:"row_major"`
}

type layoutComparison struct{ types map[string]reflectedStruct }

// block compares a whole block: its struct and, for a buffer, its size
// (SPIRV-Cross counts padding after the last member, Inspect does not,
// except that both end a block holding a runtime array at its offset).
func (c layoutComparison) block(where string, b reflectedBlock, l *Layout) error {
	span, endsInRuntime, err := c.structure(where, b.Type, l)
	if err != nil {
		return err
	}
	if b.BlockSize != nil {
		if endsInRuntime && *b.BlockSize != span || *b.BlockSize < span {
			return fmt.Errorf("%s: block_size %d, span %d (ends in a runtime array: %v)", where, *b.BlockSize, span, endsInRuntime)
		}
	}
	return nil
}

// structure compares struct type name with l and returns the span it
// computes from SPIRV-Cross's offsets and strides.
func (c layoutComparison) structure(where, name string, l *Layout) (span uint64, endsInRuntime bool, err error) {
	st, ok := c.types[name]
	if !ok {
		return 0, false, fmt.Errorf("%s: spirv-cross has no type %s", where, name)
	}
	if l.Kind != LayoutStruct || len(l.Members) != len(st.Members) {
		return 0, false, fmt.Errorf("%s: Inspect has a %v of %d members, spirv-cross a struct of %d", where, l.Kind, len(l.Members), len(st.Members))
	}
	for i, m := range st.Members {
		at := where + "." + m.Name
		ml := l.Members[i]
		if ml.Offset != m.Offset {
			return 0, false, fmt.Errorf("%s: offset %d, spirv-cross %d", at, ml.Offset, m.Offset)
		}
		s, err := c.member(at, m, len(m.Array), m.ArrayStride, ml.Layout)
		if err != nil {
			return 0, false, err
		}
		span = max(span, uint64(m.Offset)+s)
		endsInRuntime = len(m.Array) > 0 && m.Array[len(m.Array)-1] == 0
	}
	if l.Size != span {
		return 0, false, fmt.Errorf("%s: size %d, spirv-cross's offsets and strides give %d", where, l.Size, span)
	}
	return span, endsInRuntime, nil
}

// member compares a member's type with its outermost dims array
// dimensions peeled, the outermost of them stride bytes apart.
func (c layoutComparison) member(where string, m reflectedMember, dims int, stride uint32, l *Layout) (uint64, error) {
	var span uint64
	if dims > 0 {
		length := m.Array[dims-1]
		kind := LayoutArray
		if length == 0 {
			kind = LayoutRuntimeArray
		}
		if l.Kind != kind || l.Count != length || l.Stride != stride {
			return 0, fmt.Errorf("%s: %v of %d, stride %d; spirv-cross %v of %d, stride %d", where, l.Kind, l.Count, l.Stride, kind, length, stride)
		}
		var inner uint32
		if dims > 1 {
			inner = stride / m.Array[dims-2] // GLSL's arrays of arrays nest without padding
		}
		elem, err := c.member(where+"[]", m, dims-1, inner, l.Elem)
		if err != nil {
			return 0, err
		}
		if length > 0 {
			span = uint64(length-1)*uint64(stride) + elem
		}
	} else if strings.HasPrefix(m.Type, "_") {
		s, _, err := c.structure(where, m.Type, l)
		if err != nil {
			return 0, err
		}
		span = s
	} else {
		s, err := compareGLSLType(where, m, l)
		if err != nil {
			return 0, err
		}
		span = s
	}
	if l.Size != span {
		return 0, fmt.Errorf("%s: size %d, spirv-cross's strides give %d", where, l.Size, span)
	}
	return span, nil
}

var glslTypeName = regexp.MustCompile(`^(d|i|u)?(vec|mat)?([234])?(?:x([234]))?$`)

// compareGLSLType compares a scalar, vector or matrix SPIRV-Cross names
// (float, ivec3, dmat2x3) with l and returns its span from the name and
// the member's MatrixStride.
func compareGLSLType(where string, m reflectedMember, l *Layout) (uint64, error) {
	width := uint32(4)
	switch m.Type {
	case "float", "int", "uint":
		if l.Kind != LayoutScalar || l.Width != width {
			return 0, fmt.Errorf("%s: %v of width %d, spirv-cross %s", where, l.Kind, l.Width, m.Type)
		}
		return uint64(width), nil
	case "double":
		if l.Kind != LayoutScalar || l.Width != 8 {
			return 0, fmt.Errorf("%s: %v of width %d, spirv-cross %s", where, l.Kind, l.Width, m.Type)
		}
		return 8, nil
	}
	g := glslTypeName.FindStringSubmatch(m.Type)
	if g == nil || g[2] == "" {
		return 0, fmt.Errorf("%s: spirv-cross type %q is not one the corpus generates", where, m.Type)
	}
	if g[1] == "d" {
		width = 8
	}
	n, _ := strconv.Atoi(g[3])
	if g[2] == "vec" {
		if l.Kind != LayoutVector || l.Width != width || l.Count != uint32(n) {
			return 0, fmt.Errorf("%s: %v of %d×%d bytes, spirv-cross %s", where, l.Kind, l.Count, l.Width, m.Type)
		}
		return uint64(n) * uint64(width), nil
	}
	columns, rows := n, n
	if g[4] != "" {
		rows, _ = strconv.Atoi(g[4])
	}
	if l.Kind != LayoutMatrix || l.Width != width || l.Count != uint32(columns) || l.Elem.Count != uint32(rows) ||
		l.Stride != m.MatrixStride || l.RowMajor != m.RowMajor {
		return 0, fmt.Errorf("%s: %v %dx%d of %d bytes, stride %d, row-major %v; spirv-cross %s, stride %d, row-major %v",
			where, l.Kind, l.Count, l.Elem.Count, l.Width, l.Stride, l.RowMajor, m.Type, m.MatrixStride, m.RowMajor)
	}
	vectors, vector := columns, rows
	if m.RowMajor {
		vectors, vector = rows, columns
	}
	return uint64(vectors-1)*uint64(m.MatrixStride) + uint64(vector)*uint64(width), nil
}

// blockGen writes one random GLSL compute shader: a few structs, a
// push-constant block, one or two storage blocks (the last member of each
// possibly a runtime array) and perhaps a uniform block.
type blockGen struct {
	rng     *rand.Rand
	structs []string // names of the structs declared so far
	out     strings.Builder
}

func newBlockGen(rng *rand.Rand) *blockGen { return &blockGen{rng: rng} }

var (
	corpusScalars = []string{"float", "int", "uint", "double"}
	corpusVectors = []string{"vec2", "vec3", "vec4", "ivec2", "ivec3", "uvec4", "dvec2", "dvec3", "dvec4"}
	corpusMatrix  = []string{"mat2", "mat3", "mat4", "mat2x3", "mat3x2", "mat2x4", "mat4x3", "mat3x4", "dmat2", "dmat3", "dmat2x3", "dmat4x2"}
)

// memberType is a random member type and whether row_major may qualify
// it (it holds a matrix); arrays have one or two dimensions.
func (g *blockGen) memberType() (base, dims string, matrix bool) {
	switch n := g.rng.IntN(10); {
	case n < 2:
		base = corpusScalars[g.rng.IntN(len(corpusScalars))]
	case n < 5:
		base = corpusVectors[g.rng.IntN(len(corpusVectors))]
	case n < 8 || len(g.structs) == 0:
		base, matrix = corpusMatrix[g.rng.IntN(len(corpusMatrix))], true
	default:
		base, matrix = g.structs[g.rng.IntN(len(g.structs))], true // may hold matrices
	}
	switch n := g.rng.IntN(10); {
	case n < 2:
		dims = fmt.Sprintf("[%d]", 1+g.rng.IntN(4))
	case n < 3:
		dims = fmt.Sprintf("[%d][%d]", 1+g.rng.IntN(3), 1+g.rng.IntN(3))
	}
	return base, dims, matrix
}

// members writes n members; in a block, matrices are sometimes row_major
// and the first member is sometimes placed at an explicit offset (a
// multiple of 32, aligned for every type), leaving a gap before it.
func (g *blockGen) members(n int, block bool) {
	for i := range n {
		base, dims, matrix := g.memberType()
		var qualifiers []string
		if block && matrix && g.rng.IntN(3) == 0 {
			qualifiers = append(qualifiers, "row_major")
		}
		if block && i == 0 && g.rng.IntN(3) == 0 {
			qualifiers = append(qualifiers, fmt.Sprintf("offset = %d", 32*(1+g.rng.IntN(3))))
		}
		layout := ""
		if len(qualifiers) > 0 {
			layout = "layout(" + strings.Join(qualifiers, ", ") + ") "
		}
		fmt.Fprintf(&g.out, "    %s%s m%d%s;\n", layout, base, i, dims)
	}
}

func (g *blockGen) layout(choices ...string) string { return choices[g.rng.IntN(len(choices))] }

func (g *blockGen) program() string {
	g.out.WriteString("#version 450\n#extension GL_EXT_scalar_block_layout : require\n")
	for i := range g.rng.IntN(4) {
		name := fmt.Sprintf("S%d", i)
		fmt.Fprintf(&g.out, "struct %s {\n", name)
		g.members(1+g.rng.IntN(3), false)
		g.out.WriteString("};\n")
		g.structs = append(g.structs, name)
	}
	fmt.Fprintf(&g.out, "layout(push_constant, %s) uniform Push {\n", g.layout("std430", "std140", "scalar"))
	g.members(1+g.rng.IntN(5), true)
	g.out.WriteString("} pc;\n")
	binding := 0
	for range 1 + g.rng.IntN(2) {
		fmt.Fprintf(&g.out, "layout(%s, set = 0, binding = %d) buffer B%d {\n", g.layout("std430", "std140", "scalar"), binding, binding)
		g.members(1+g.rng.IntN(5), true)
		if g.rng.IntN(2) == 0 {
			base, _, _ := g.memberType()
			fmt.Fprintf(&g.out, "    %s tail[];\n", base)
		}
		fmt.Fprintf(&g.out, "} b%d;\n", binding)
		binding++
	}
	if g.rng.IntN(2) == 0 {
		fmt.Fprintf(&g.out, "layout(%s, set = 0, binding = %d) uniform U {\n", g.layout("std140", "scalar"), binding)
		g.members(1+g.rng.IntN(4), true)
		g.out.WriteString("} u;\n")
	}
	g.out.WriteString("layout(local_size_x = 1) in;\nvoid main() {}\n")
	return g.out.String()
}
