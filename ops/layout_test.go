package ops

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// indices lists the element index of every position of l, row-major.
func indices(l layout) []int {
	n, _ := count(l.shape)
	out := make([]int, 0, n)
	pos := make([]int, len(l.shape))
	for range n {
		at := l.offset
		for i, p := range pos {
			at += p * l.strides[i]
		}
		out = append(out, at)
		for i := len(pos) - 1; i >= 0; i-- {
			pos[i]++
			if pos[i] < l.shape[i] {
				break
			}
			pos[i] = 0
		}
	}
	return out
}

func TestContiguousLayoutIsRowMajor(t *testing.T) {
	l, err := contiguous(3, []int{2, 3, 4})
	require.NoError(t, err)
	require.Equal(t, []int{12, 4, 1}, l.strides)
	require.True(t, l.isContiguous())
	require.Equal(t, 3+24, l.span())
	for i, at := range indices(l) {
		require.Equal(t, 3+i, at)
	}
}

func TestPermuteAndTransposeAreStrideChanges(t *testing.T) {
	l, _ := contiguous(0, []int{2, 3})
	tr, err := l.permute([]int{1, 0})
	require.NoError(t, err)
	require.Equal(t, []int{3, 2}, tr.shape)
	require.Equal(t, []int{0, 3, 1, 4, 2, 5}, indices(tr))
	require.False(t, tr.isContiguous())
	_, err = l.permute([]int{0, 0})
	require.ErrorContains(t, err, "each axis")
	_, err = tr.reshape([]int{6})
	require.ErrorContains(t, err, "not contiguous")
}

func TestBroadcastFollowsNumPy(t *testing.T) {
	bias, _ := contiguous(0, []int{4})
	b, err := bias.broadcastTo([]int{3, 4})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, b.strides)
	require.True(t, b.overlapsItself())
	col, _ := contiguous(0, []int{3, 1})
	c, err := col.broadcastTo([]int{2, 3, 5})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 0}, c.strides)
	_, err = bias.broadcastTo([]int{3, 5})
	require.ErrorContains(t, err, "cannot broadcast shape [4] to [3 5]")

	s, err := BroadcastShapes([]int{8, 1, 6, 1}, []int{7, 1, 5})
	require.NoError(t, err)
	require.Equal(t, []int{8, 7, 6, 5}, s)
	_, err = BroadcastShapes([]int{7}, []int{8})
	require.ErrorContains(t, err, "do not broadcast")
}

func TestReshapeInfersOneAxis(t *testing.T) {
	l, _ := contiguous(5, []int{4, 6})
	r, err := l.reshape([]int{-1, 3})
	require.NoError(t, err)
	require.Equal(t, []int{8, 3}, r.shape)
	require.Equal(t, 5, r.offset)
	_, err = l.reshape([]int{5, -1})
	require.ErrorContains(t, err, "no whole extent")
	_, err = l.reshape([]int{5, 5})
	require.ErrorContains(t, err, "24 elements")
}

func TestCheckRefusesLayoutsOutsideTheBuffer(t *testing.T) {
	require.NoError(t, layout{offset: 1, shape: []int{2, 3}, strides: []int{4, 1}}.check(8))
	require.ErrorContains(t, layout{offset: 1, shape: []int{2, 3}, strides: []int{4, 1}}.check(7), "reaches element 7")
	require.ErrorContains(t, layout{shape: []int{2}, strides: []int{-1}}.check(8), "negative")
	require.ErrorContains(t, layout{shape: []int{0}, strides: []int{1}}.check(8), "at least 1")
	require.ErrorContains(t, layout{shape: []int{1 << 20, 1 << 20}, strides: []int{1 << 20, 1}}.check(8), "more than")
	require.ErrorContains(t, layout{shape: []int{2}, strides: []int{1 << 40}}.check(8), "past element")
}

func TestOverlapsItself(t *testing.T) {
	require.False(t, layout{shape: []int{3, 4}, strides: []int{4, 1}}.overlapsItself())
	require.False(t, layout{shape: []int{3, 4}, strides: []int{1, 3}}.overlapsItself())
	require.True(t, layout{shape: []int{3, 4}, strides: []int{2, 1}}.overlapsItself())
	require.False(t, layout{shape: []int{1, 4}, strides: []int{0, 1}}.overlapsItself())
}

// FuzzLayout checks the layout rules against the list of indices they
// address: a layout that check accepts addresses only elements inside the
// buffer; one that does not overlap itself addresses each at most once; a
// contiguous one addresses a run of adjacent elements; a permutation and
// a reshape address the same elements.
func FuzzLayout(f *testing.F) {
	f.Add(uint8(2), uint8(3), uint8(4), uint8(12), uint8(4), uint8(1), uint8(0), uint8(40))
	f.Add(uint8(3), uint8(1), uint8(2), uint8(1), uint8(0), uint8(3), uint8(2), uint8(20))
	f.Fuzz(func(t *testing.T, e0, e1, e2, s0, s1, s2, off, n uint8) {
		l := layout{offset: int(off % 16), shape: []int{int(e0%5) + 1, int(e1%5) + 1, int(e2%5) + 1}, strides: []int{int(s0 % 32), int(s1 % 32), int(s2 % 32)}}
		if l.check(int(n)) != nil {
			return
		}
		idx := indices(l)
		for _, at := range idx {
			if at < 0 || at >= int(n) {
				t.Fatalf("%+v addresses %d outside %d", l, at, n)
			}
		}
		if !l.overlapsItself() {
			sorted := slices.Clone(idx)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(idx) {
				t.Fatalf("%+v said distinct, addresses %v", l, idx)
			}
		}
		if l.isContiguous() {
			for i, at := range idx {
				if at != l.offset+i {
					t.Fatalf("%+v said contiguous, addresses %v", l, idx)
				}
			}
			r, err := l.reshape([]int{-1})
			if err != nil || !slices.Equal(indices(r), idx) {
				t.Fatalf("reshape of %+v: %v %v", l, err, r)
			}
		}
		p, err := l.permute([]int{2, 0, 1})
		if err != nil {
			t.Fatal(err)
		}
		a, b := slices.Clone(idx), indices(p)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("permute of %+v addresses other elements", l)
		}
	})
}
