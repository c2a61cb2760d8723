// Package ops is vkc's op library: element-wise arithmetic with NumPy's
// broadcasting, activations, reductions along an axis, normalisations,
// gathers and scatters, and matrix products for every shape (float, and
// int8 into int32 sums).
//
// It is built on vkc's public API and nothing else of the module but its
// own subpackages: every kernel it runs is loaded with Device.LoadKernel
// and launched like any user kernel. Whatever ops does, a library built on
// vkc can do the same way.
//
// Operands are Tensors: a buffer (or view) with a shape and strides in
// elements, so transposes and broadcasts cost no copy, and whose axis 0
// may be sized by a vkc.Param at run time, so a captured graph follows the
// param's value on every replay. Scalars are one type, Scalar, holding a
// constant or a param.
package ops
