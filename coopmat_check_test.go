package vkc

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/shaders"
)

// A cooperative matrix type is run where one configuration has its scope
// and, in its use, its sizes and component type; any other is refused.
func TestRunsCooperativeMatrixMatchesTheUseOfAConfiguration(t *testing.T) {
	configs := []CooperativeMatrix{
		{M: 16, N: 8, K: 32, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup},
		{M: 8, N: 8, K: 32, A: ComponentSint8, B: ComponentUint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup},
	}
	f16 := func(rows, cols uint32, use shaders.CooperativeMatrixUse) shaders.CooperativeMatrixType {
		return shaders.CooperativeMatrixType{Float: true, Bits: 16, Scope: 3, Rows: rows, Columns: cols, Use: use}
	}
	for _, tc := range []struct {
		name string
		t    shaders.CooperativeMatrixType
		want bool
	}{
		{"A is M x K", f16(16, 32, shaders.UseMatrixA), true},
		{"A as N x K", f16(8, 32, shaders.UseMatrixA), false},
		{"B is K x N", f16(32, 8, shaders.UseMatrixB), true},
		{"B as N x K", f16(8, 32, shaders.UseMatrixB), false},
		{"accumulator of the result type", shaders.CooperativeMatrixType{Float: true, Bits: 32, Scope: 3, Rows: 16, Columns: 8, Use: shaders.UseAccumulator}, true},
		{"accumulator of A's type", f16(16, 8, shaders.UseAccumulator), false},
		{"signed int8 A", shaders.CooperativeMatrixType{Signed: true, Bits: 8, Scope: 3, Rows: 8, Columns: 32, Use: shaders.UseMatrixA}, true},
		{"unsigned int8 A", shaders.CooperativeMatrixType{Bits: 8, Scope: 3, Rows: 8, Columns: 32, Use: shaders.UseMatrixA}, false},
		{"unsigned int8 B", shaders.CooperativeMatrixType{Bits: 8, Scope: 3, Rows: 32, Columns: 8, Use: shaders.UseMatrixB}, true},
		{"workgroup scope", shaders.CooperativeMatrixType{Float: true, Bits: 16, Scope: 2, Rows: 16, Columns: 32, Use: shaders.UseMatrixA}, false},
		{"8-bit float", shaders.CooperativeMatrixType{Float: true, Bits: 8, Scope: 3, Rows: 8, Columns: 32, Use: shaders.UseMatrixA}, false},
		{"an unknown use", f16(16, 32, 7), false},
	} {
		require.Equal(t, tc.want, runsCooperativeMatrix(configs, tc.t), tc.name)
	}
	require.False(t, runsCooperativeMatrix(nil, f16(16, 32, shaders.UseMatrixA)), "no configurations")
}

// A configuration prints as its sizes, types and scope; an unknown type
// or scope as its number.
func TestCooperativeMatrixNamesItsConfiguration(t *testing.T) {
	c := CooperativeMatrix{M: 16, N: 8, K: 32, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	require.Equal(t, "16x8x32 float16·float16+float32→float32 (subgroup)", c.String())
	require.Equal(t, "int8", ComponentSint8.String())
	require.Equal(t, "uint64", ComponentUint64.String())
	require.Equal(t, "ComponentType(1000491000)", ComponentType(1000491000).String())
	require.Equal(t, "workgroup", ScopeWorkgroup.String())
	require.Equal(t, "Scope(4)", Scope(4).String())
}
