package vkdev

import (
	"fmt"
	"time"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/vk"
)

// surfaceOn calls the user's surface function on the instance; if it
// panics, the instance is closed before the panic goes on, so it does not
// leak with the Open that never returns.
func surfaceOn(in *vk.Instance, create func(instance uintptr) (uint64, error)) (surface uint64, err error) {
	defer func() {
		if p := recover(); p != nil {
			in.Close()
			panic(p)
		}
	}()
	return create(in.Handle())
}

// openPresenting is Open for a window: the instance enables
// o.InstanceExtensions, o.Surface creates the window's surface on it, and
// the device chosen (o.Device, or the best that can present to the surface)
// gets VK_KHR_swapchain and a queue family that computes and presents. The
// result is also a Presenter.
func openPresenting(o Options) (recorder.Device, error) {
	in, err := vk.NewInstance(vk.InstanceOptions{Validation: o.Validation || o.SyncValidation, SyncValidation: o.SyncValidation,
		Logger: o.Logger, Extensions: o.InstanceExtensions, WithoutFeatures: o.WithoutFeatures})
	if err != nil {
		return nil, fromVK(err)
	}
	surface, err := surfaceOn(in, o.Surface)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("creating the window's surface: %w", err)
	}
	if surface == 0 {
		in.Close()
		return nil, fmt.Errorf("the surface function returned no surface")
	}
	fail := func(err error) (recorder.Device, error) {
		in.DestroySurface(surface)
		in.Close()
		return nil, fromVK(err)
	}
	infos, err := in.Devices()
	if err != nil {
		return fail(err)
	}
	var idx int
	if o.Device != "" {
		if idx, err = vk.Select(infos, o.Device); err != nil {
			return fail(err)
		}
	} else {
		var able []vk.DeviceInfo
		for _, info := range infos {
			ok, err := in.CanPresent(info.Index, surface)
			if err != nil {
				return fail(err)
			}
			if ok {
				able = append(able, info)
			}
		}
		if len(able) == 0 {
			return fail(fmt.Errorf("no Vulkan device can present to the window's surface"))
		}
		best, _ := vk.Select(able, "")
		idx = able[best].Index
	}
	d, err := in.OpenPresentingDevice(idx, surface) // owns the surface from here
	if err != nil {
		in.Close()
		return nil, fromVK(err)
	}
	return &presentingDevice{vulkanDevice: &vulkanDevice{in: in, d: d, info: d.Info(), cache: setUp(d, o)}}, nil
}

// presentingDevice is the Vulkan device with presentation: a Device and a
// Presenter.
type presentingDevice struct {
	*vulkanDevice
	scs table[*vk.Swapchain]
}

func (v *presentingDevice) NewSwapchain(width, height uint32, vsync bool, old recorder.Swapchain) (recorder.Swapchain, recorder.SwapchainInfo, error) {
	o := vk.SwapchainOptions{Width: width, Height: height, VSync: vsync}
	if old != 0 {
		o.Old = v.scs.get(uint64(old))
	}
	sc, err := v.d.NewSwapchain(o)
	if err != nil {
		return 0, recorder.SwapchainInfo{}, fromVK(err)
	}
	w, h := sc.Extent()
	mw, mh := sc.MaxSource()
	info := recorder.SwapchainInfo{Width: w, Height: h, Images: sc.Images(), Frames: vk.FramesInFlight, BGRA: sc.BGRA(),
		Copyable: sc.Copyable(), MaxFrameWidth: mw, MaxFrameHeight: mh}
	return recorder.Swapchain(v.scs.add(sc)), info, nil
}

func (v *presentingDevice) DestroySwapchain(sc recorder.Swapchain) {
	v.scs.remove(uint64(sc)).Destroy()
}

func (v *presentingDevice) SetFrameSource(sc recorder.Swapchain, width, height uint32) error {
	return fromVK(v.scs.get(uint64(sc)).SetSource(width, height))
}

func (v *presentingDevice) Acquire(sc recorder.Swapchain, frame int, timeout time.Duration) (uint32, error) {
	image, err := v.d.Acquire(v.scs.get(uint64(sc)), frame, timeout)
	return image, fromVK(err)
}

func (v *presentingDevice) CmdFrameCopy(cb recorder.CommandBuffer, sc recorder.Swapchain, x *recorder.FrameCopy) {
	fc := vk.FrameCopy{Src: v.mems.get(uint64(x.Src)), SrcOffset: x.SrcOffset, Width: x.Width, Height: x.Height, Image: x.Image}
	if x.Shot != 0 {
		fc.Shot, fc.ShotOffset = v.mems.get(uint64(x.Shot)), x.ShotOffset
	}
	v.d.CmdFrameCopy(v.cbs.get(uint64(cb)), v.scs.get(uint64(sc)), &fc)
}

func (v *presentingDevice) SubmitFrame(cb recorder.CommandBuffer, sc recorder.Swapchain, frame int, image uint32, f recorder.Fence) error {
	return fromVK(v.d.SubmitFrame(v.cbs.get(uint64(cb)), v.scs.get(uint64(sc)), frame, image, v.fences.get(uint64(f))))
}

func (v *presentingDevice) Present(sc recorder.Swapchain, image uint32) error {
	return fromVK(v.d.Present(v.scs.get(uint64(sc)), image))
}
