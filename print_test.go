package vkc

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// Each handle prints what it is, not its fields: the device its name,
// driver and ids, a buffer its element type, length and place in its
// buffer when a view, a stream its ID and slot, a kernel its name and
// bindings, a graph its launches; closed ones say so, and nil ones print
// without panicking.
func TestHandlesPrintWhatTheyAre(t *testing.T) {
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) {
		ks := hostdev.Builtins()
		ks["affine"] = affineHost()
		return hostdev.New(hostdev.Options{Kernels: ks}), nil
	}), WithStreams(4))
	require.NoError(t, err)
	info := dev.Info()
	assert.Equal(t, fmt.Sprintf("vkc.Device{%s (%s), driver %s, id %#04x:%#04x, 4 streams}",
		info.Name, info.Type, info.DriverVersion, info.VendorID, info.DeviceID), fmt.Sprint(dev))

	x, err := FromSlice(dev, make([]float32, 16))
	require.NoError(t, err)
	assert.Equal(t, "vkc.Buffer[float32]{len 16}", x.String())
	v, err := x.View(4, 8)
	require.NoError(t, err)
	assert.Equal(t, "vkc.Buffer[float32]{len 8, view at byte 16 of 64}", fmt.Sprint(v))
	h, err := ViewAs[Float16](x, 8, 4)
	require.NoError(t, err)
	assert.Equal(t, "vkc.Buffer[Float16]{len 4, view at byte 8 of 64}", h.String())
	require.NoError(t, v.Close())
	assert.Equal(t, "vkc.Buffer[float32]{len 8, view at byte 16 of 64, closed}", v.String())

	s := dev.StreamWithID(6)
	assert.Equal(t, "vkc.Stream{id 6, slot 2}", fmt.Sprint(s))

	code, err := os.ReadFile("testdata/affine.spv")
	require.NoError(t, err)
	k, err := dev.LoadKernel(KernelSpec{Name: "affine", SPIRV: code})
	require.NoError(t, err)
	assert.Equal(t, `vkc.Kernel{"affine", bindings [read write], push 12 bytes, local 64x1x1}`, k.String())

	y, err := FromSlice(dev, make([]float32, 16))
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error {
		if err := Fill(s, x, 1); err != nil {
			return err
		}
		return Copy(s, x, y)
	})
	require.NoError(t, err)
	assert.Equal(t, "vkc.Graph{2 launches, stream 6}", fmt.Sprint(g))
	require.NoError(t, g.Close())
	assert.Equal(t, "vkc.Graph{2 launches, stream 6, closed}", g.String())
	require.NoError(t, k.Close())
	assert.Contains(t, k.String(), ", closed}")

	require.NoError(t, dev.Close())
	assert.Contains(t, dev.String(), ", closed}")
	assert.Contains(t, x.String(), ", closed}", "the device's Close closed its buffers")

	var (
		nd *Device
		nb *Buffer[int32]
		ns *Stream
		nk *Kernel
		ng *Graph
	)
	assert.Equal(t, "vkc.Device(nil)", nd.String())
	assert.Equal(t, "vkc.Buffer[int32](nil)", nb.String())
	assert.Equal(t, "vkc.Buffer[uint8](nil)", (&Buffer[uint8]{}).String())
	assert.Equal(t, "vkc.Stream(nil)", ns.String())
	assert.Equal(t, "vkc.Kernel(nil)", nk.String())
	assert.Equal(t, "vkc.Graph(nil)", ng.String())
	assert.Equal(t, "vkc.Device(nil)", (&Device{}).String())
}

// On lavapipe the device prints the driver's own name and version.
func TestVulkanDevicePrintsItsDriver(t *testing.T) {
	dev := openTest(t)
	info := dev.Info()
	require.NotEmpty(t, info.Name)
	assert.Contains(t, dev.String(), info.Name)
	assert.Contains(t, dev.String(), "driver "+info.DriverVersion)
	assert.Contains(t, dev.String(), fmt.Sprintf("id %#04x:", info.VendorID))
}
