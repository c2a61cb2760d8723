package vkc

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OnClose's functions run once, the last registered first, when the
// device closes; a closed device refuses a registration, so a cache never
// keeps state nothing will clean.
func TestOnCloseRunsOnceInReverseOrder(t *testing.T) {
	dev, err := Open(WithValidation(true))
	require.NoError(t, err)
	var order []int
	require.NoError(t, dev.OnClose(func() { order = append(order, 1) }))
	require.NoError(t, dev.OnClose(func() { order = append(order, 2) }))
	assert.Error(t, dev.OnClose(nil))
	closeAndCheck(t, dev)
	assert.Equal(t, []int{2, 1}, order)
	require.NoError(t, dev.Close())
	assert.Equal(t, []int{2, 1}, order, "a second Close runs nothing again")
	assert.True(t, errors.Is(dev.OnClose(func() {}), ErrClosed))
	var nilDev *Device
	assert.Error(t, nilDev.OnClose(func() {}))
}

// A function registered with OnClose may close the device's kernels and
// buffers: they are released by the device anyway, and nothing leaks.
func TestOnCloseMayCloseTheDevicesObjects(t *testing.T) {
	dev, err := Open(WithValidation(true))
	require.NoError(t, err)
	b, err := NewBuffer[float32](dev, 4)
	require.NoError(t, err)
	require.NoError(t, dev.OnClose(func() { assert.NoError(t, b.Close()) }))
	closeAndCheck(t, dev)
}
