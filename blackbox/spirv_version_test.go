package blackbox_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Promise (LoadKernel: modules "are validated for the device's Vulkan
// version"): modules glslc compiles for Vulkan 1.2 (SPIR-V 1.5) and 1.3
// (SPIR-V 1.6, its workgroup size a LocalSizeId of specialization
// constants) load and run on a Vulkan 1.3 device, with their own workgroup
// size and a requested one.
func TestModulesOfNewerVulkanTargetsLoadAndRun(t *testing.T) {
	dev := openDevice(t)
	var major, minor int
	api := dev.Info().APIVersion
	if _, err := fmt.Sscanf(api, "%d.%d", &major, &minor); err != nil || major == 1 && minor < 3 {
		t.Skipf("the device runs Vulkan %s; this test needs 1.3", api)
	}
	s := dev.Stream()
	const n = 1000
	xs := make([]float32, n)
	want := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i%97 - 48)
		want[i] = 2*xs[i] + 1
	}
	x := upload(t, dev, xs)
	for _, module := range []string{"affine_vk12", "affine_vk13"} {
		for _, local := range []uint32{0, 128} {
			t.Run(fmt.Sprintf("%s/local%d", module, local), func(t *testing.T) {
				k, err := dev.LoadKernel(vkc.KernelSpec{Name: module, SPIRV: testdataModule(t, module), LocalSize: [3]uint32{local, 0, 0}})
				require.NoError(t, err)
				defer k.Close()
				spec := k.Spec()
				require.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, spec.Bindings)
				require.Equal(t, uint32(12), spec.PushSize)
				require.Equal(t, [3]uint32{max(local, 64), 1, 1}, spec.LocalSize)
				y := newBuffer[float32](t, dev, n)
				groups := (n + spec.LocalSize[0] - 1) / spec.LocalSize[0]
				require.NoError(t, k.Launch(s, [3]uint32{groups, 1, 1}, affinePush(2, 1, n), x, y))
				require.Equal(t, want, read(t, s, y))
			})
		}
	}
}
