package ops

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// allTypes is every vkc element type, by the name ops' errors use.
var allTypes = []string{"float32", "Float16", "float64", "int32", "uint32", "int8", "uint8", "int16", "uint16", "int64", "uint64", "BFloat16"}

// opsTable reads docs/guide/ops.md's op × type table: for each op, the
// types marked "yes".
func opsTable(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../docs/guide/ops.md")
	require.NoError(t, err)
	defer f.Close()
	table := map[string][]string{}
	var header []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil && cells[0] == "op" && slices.Contains(cells, "float32"):
			header = cells
		case header == nil, strings.HasPrefix(cells[0], "---"):
		default:
			require.Len(t, cells, len(header), "row %q", line)
			op := strings.Trim(cells[0], "`")
			table[op] = []string{}
			for i, c := range cells[1:] {
				require.Contains(t, []string{"yes", "no"}, c, "row %q", line)
				if c == "yes" {
					table[op] = append(table[op], header[i+1])
				}
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, table, "no op table found in docs/guide/ops.md")
	return table
}

// runAs runs op on small tensors of the named type, or (real false) on
// zero tensors, which an op must refuse by type before looking at them.
func runAs(t *testing.T, dev *vkc.Device, op, typ string, real bool) error {
	switch typ {
	case "float32":
		return runTyped[float32](t, dev, op, real)
	case "Float16":
		return runTyped[vkc.Float16](t, dev, op, real)
	case "float64":
		return runTyped[float64](t, dev, op, real)
	case "int32":
		return runTyped[int32](t, dev, op, real)
	case "uint32":
		return runTyped[uint32](t, dev, op, real)
	case "int8":
		return runTyped[int8](t, dev, op, real)
	case "uint8":
		return runTyped[uint8](t, dev, op, real)
	case "int16":
		return runTyped[int16](t, dev, op, real)
	case "uint16":
		return runTyped[uint16](t, dev, op, real)
	case "int64":
		return runTyped[int64](t, dev, op, real)
	case "uint64":
		return runTyped[uint64](t, dev, op, real)
	case "BFloat16":
		return runTyped[vkc.BFloat16](t, dev, op, real)
	}
	t.Fatalf("no element type %q", typ)
	return nil
}

// tableOps are the ops the table test can run; an op listed in the table
// and missing here fails the test.
var tableOps = []string{"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid",
	"Relu", "Gelu", "GeluErf", "Silu", "Scale", "Axpy", "Sum", "Mean", "Max", "Argmax", "Softmax", "LayerNorm",
	"RMSNorm", "Gather", "ScatterAdd", "Transpose", "Convert", "Copy", "Fill"}

// runTyped runs op on T: [2, 4] tensors of ones (a valid input to every
// op), or zero tensors.
func runTyped[T vkc.Element](t *testing.T, dev *vkc.Device, op string, real bool) error {
	var x, y, v Tensor[T]
	var idx Tensor[uint32]
	var f32 Tensor[float32]
	if real {
		ones := []float64{1, 1, 1, 1, 1, 1, 1, 1}
		x = Of(upload[T](t, dev, ones), 2, 4)
		y = Of(upload[T](t, dev, ones), 2, 4)
		v = Of(upload[T](t, dev, ones[:4]), 4)
		idx = Of(upload[uint32](t, dev, []float64{1, 0}), 2)
		f32 = Of(fresh[float32](t, dev, 8), 2, 4)
	}
	s := dev.Stream()
	unary := map[string]func(*vkc.Stream, Tensor[T], Tensor[T]) error{
		"Exp": Exp[T], "Log": Log[T], "Sqrt": Sqrt[T], "Tanh": Tanh[T], "Sigmoid": Sigmoid[T], "Relu": Relu[T],
		"Gelu": Gelu[T], "GeluErf": GeluErf[T], "Silu": Silu[T], "Transpose": Transpose[T], "Copy": Copy[T],
	}
	binary := map[string]func(*vkc.Stream, Tensor[T], Tensor[T], Tensor[T]) error{
		"Add": Add[T], "Sub": Sub[T], "Mul": Mul[T], "Div": Div[T], "Maximum": Maximum[T], "Minimum": Minimum[T],
	}
	reductions := map[string]func(*vkc.Stream, Tensor[T], int, Tensor[T]) error{"Sum": Sum[T], "Mean": Mean[T], "Max": Max[T]}
	if fn := unary[op]; fn != nil {
		return fn(s, x, y)
	}
	if fn := binary[op]; fn != nil {
		return fn(s, x, v, y)
	}
	if fn := reductions[op]; fn != nil {
		return fn(s, x, 1, idxLike(v, real, 2))
	}
	switch op {
	case "Fill":
		return Fill(s, *new(T), y)
	case "Scale":
		return Scale(s, Const(2), x, y)
	case "Axpy":
		return Axpy(s, Const(2), x, y)
	case "Argmax":
		return Argmax(s, x, 1, idx)
	case "Softmax":
		return Softmax(s, x, -1, y)
	case "LayerNorm":
		return LayerNorm(s, x, v, v, Const(1e-5), y)
	case "RMSNorm":
		return RMSNorm(s, x, v, Tensor[T]{}, Const(1e-5), y)
	case "Gather":
		return Gather(s, x, idx, y)
	case "ScatterAdd":
		return ScatterAdd(s, x, idx, y)
	case "Convert":
		return errors.Join(Convert(s, x, f32), Convert(s, f32, y))
	}
	t.Fatalf("the table test cannot run %s: add it to runTyped and tableOps", op)
	return nil
}

// idxLike is v's first n elements as a tensor (a reduction's output), or
// a zero tensor.
func idxLike[T vkc.Element](v Tensor[T], real bool, n int) Tensor[T] {
	if !real {
		return v
	}
	return v.Slice(0, 0, n)
}

// Every op of the table takes the types it marks and refuses the others
// with an error naming the op and the type, which wraps the refusal; and
// every op the code has is in the table.
func TestOpsTableMatchesTheCode(t *testing.T) {
	dev := openTest(t)
	table := opsTable(t)
	for _, op := range tableOps {
		assert.Contains(t, table, op, "op %s is not in docs/guide/ops.md's table", op)
	}
	for op, types := range table {
		for _, typ := range allTypes {
			err := runAs(t, dev, op, typ, slices.Contains(types, typ))
			if slices.Contains(types, typ) {
				assert.NoError(t, err, "%s of %s: the table says yes", op, typ)
				continue
			}
			if assert.Error(t, err, "%s of %s: the table says no", op, typ) {
				assert.True(t, errors.Is(err, vkc.ErrUnsupported), "%s of %s: %v", op, typ, err)
				assert.Contains(t, err.Error(), op)
				assert.Contains(t, err.Error(), typ)
			}
		}
	}
}
