package vkc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
)

// One constant may size two axes, and any ID may size an axis: a request
// sets the constant once, and one that asks two sizes of it is refused.
func TestLocalSizeRequestOfASharedConstant(t *testing.T) {
	mod := shaders.Module{LocalSize: [3]uint32{8, 8, 1}, LocalSizeSpecIDs: [3]int64{7, 7, -1}}
	local, values, ids, err := workgroupSpec(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 16, 4}}, mod)
	require.NoError(t, err)
	assert.Equal(t, [3]uint32{16, 16, 1}, local)
	assert.Equal(t, []uint32{16}, values)
	assert.Equal(t, []uint32{7}, ids)

	_, _, _, err = workgroupSpec(KernelSpec{Name: "shared", LocalSize: [3]uint32{16, 8, 1}}, mod)
	assert.ErrorContains(t, err, "specialization constant 7, which sizes axes x and y")
}
