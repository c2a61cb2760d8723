package ops

import (
	"errors"
	"slices"
	"testing"

	"github.com/vkcompute/vkc"
)

// walk lists, for each operand, the element index each position of shape
// addresses through its strides, row-major.
func walk(shape []int, strides [][]int) [][]int {
	out := make([][]int, len(strides))
	for k, st := range strides {
		out[k] = indices(layout{shape: shape, strides: st})
	}
	return out
}

// FuzzMergeAxes: merging axes visits the same elements of every operand
// in the same order, never yields more axes, keeps a dynamic axis 0, and
// flags as contiguous exactly the operands addressed as 0, 1, 2, ...
func FuzzMergeAxes(f *testing.F) {
	f.Add([]byte{2, 3, 4}, []byte{12, 4, 1, 0, 1, 0}, false)
	f.Add([]byte{1, 5, 1, 2}, []byte{10, 2, 2, 1, 0, 0, 0, 1}, true)
	f.Fuzz(func(t *testing.T, dims, rawStrides []byte, keepFirst bool) {
		if len(dims) == 0 || len(dims) > 5 {
			return
		}
		shape := make([]int, len(dims))
		n := 1
		for i, d := range dims {
			shape[i] = int(d%4) + 1
			n *= shape[i]
		}
		var strides [][]int
		for k := 0; k+len(shape) <= len(rawStrides) && k < 3*len(shape); k += len(shape) {
			st := make([]int, len(shape))
			for i := range st {
				st[i] = int(rawStrides[k+i] % 13)
			}
			strides = append(strides, st)
		}
		if len(strides) == 0 {
			return
		}
		want := walk(shape, strides)
		ms, mst := mergeAxes(shape, strides, keepFirst)
		if len(ms) > len(shape) && !(len(shape) == 0 && len(ms) == 1) {
			t.Fatalf("merging %v gave more axes: %v", shape, ms)
		}
		if keepFirst && ms[0] != shape[0] {
			t.Fatalf("keepFirst: axis 0 of %v became %v", shape, ms)
		}
		got := walk(ms, mst)
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("operand %d of shape %v strides %v: merged to %v %v visits %v, want %v", k, shape, strides[k], ms, mst[k], got[k], want[k])
			}
			seq := true
			for i, at := range want[k] {
				seq = seq && at == i
			}
			if rowMajor(ms, mst[k]) != seq {
				t.Fatalf("operand %d (%v over %v): rowMajor %v, visits %v", k, mst[k], ms, !seq, want[k])
			}
		}
	})
}

// FuzzRowStride: when a dynamic tensor's first rows are said to lie in a
// prefix of per elements a row, every element of rows 0..n-1 is below
// n*per, for every n (so marking that prefix written misses nothing the
// kernel writes), and a buffer shorter than all its rows' strides is
// refused; a layout whose rows do not lie so is refused as unsupported.
func FuzzRowStride(f *testing.F) {
	f.Add([]byte{3, 4}, []byte{4, 1})
	f.Add([]byte{2, 3, 2}, []byte{9, 3, 1})
	f.Fuzz(func(t *testing.T, dims, rawStrides []byte) {
		if len(dims) == 0 || len(dims) > 4 || len(rawStrides) < len(dims) {
			return
		}
		l := layout{shape: make([]int, len(dims)), strides: make([]int, len(dims))}
		for i, d := range dims {
			l.shape[i] = int(d%5) + 1
			l.strides[i] = int(rawStrides[i] % 17)
		}
		per, err := rowStride(l, 1<<20)
		if err != nil {
			if !errors.Is(err, vkc.ErrUnsupported) {
				t.Fatalf("layout %v %v: %v, not ErrUnsupported", l.shape, l.strides, err)
			}
			return
		}
		idx := indices(l)
		rowLen := len(idx) / l.shape[0]
		for n := 1; n <= l.shape[0]; n++ {
			for _, at := range idx[:n*rowLen] {
				if at >= n*per {
					t.Fatalf("layout %v %v: element %d of the first %d rows is past the prefix %d", l.shape, l.strides, at, n, n*per)
				}
			}
		}
		if _, err := rowStride(l, l.shape[0]*per-1); !errors.Is(err, vkc.ErrUnsupported) {
			t.Fatalf("layout %v %v: rows %d apart in %d elements: %v, not ErrUnsupported", l.shape, l.strides, per, l.shape[0]*per-1, err)
		}
	})
}
