// Package vk is vkc's thin, unsafe layer over Vulkan and the only package
// that uses cgo (wgpu-hal to the recorder's wgpu-core).
//
// # Every Vulkan call goes through our own C
//
// vk calls Vulkan only from cvk.c, through function pointers fetched with
// vkGetInstanceProcAddr (from libvulkan.so.1, opened with dlopen) and
// vkGetDeviceProcAddr: the loader, the instance and its validation
// messenger, physical-device queries, device creation, every create and
// destroy, and the hot path (recording a launch, copies, barriers, submit,
// fence waits). Two rules keep every call safe while the garbage collector
// runs and other goroutines allocate:
//
//   - Every Vulkan struct, and every array or struct it points to, is built
//     in C, on the C stack of the call that uses it (cvk.c's vkc_create_*
//     functions take scalars and handles and fill the create info there),
//     or in C memory the Go side allocates and frees around the call (the
//     SPIR-V words, the hot path's per-command-buffer scratch). No C-visible
//     struct ever holds a Go pointer.
//   - Go memory reaches C only as a direct argument of a cgo call (an out
//     handle, the specialization constants, a query-results slice): cgo
//     pins it for exactly that call, it holds no Go pointer, and Vulkan
//     does not keep it past the return.
//
// vkc used vulkan-go for setup until it crashed under garbage-collection
// pressure: its generated marshalling copies nested create infos into C
// memory whose only owner is a finalizer attached to a value that is
// unreachable during the C call (unpackArgSComputePipelineCreateInfo,
// unpackSPushConstantRange, unpackSSpecializationInfo and the like in its
// cgo_helpers.go set runtime.SetFinalizer(&unpacked, ...) with a func that
// frees the copies), and stores pointers to Go slices (pCode, pSetLayouts)
// in those C structs without keeping the slices alive; a collection in the
// middle of vkCreateComputePipelines freed what the driver was reading.
// Rather than keep it for the calls where it happened to be safe, vk
// dropped it: one rule for every call, and no 40,000 lines of generated
// cgo to compile.
//
// # Adopted devices
//
// AdoptInstance and Instance.AdoptDevice run vk on handles another
// program created (adopt.go): the device's function table is loaded from
// them, Close destroys only vk's own objects, the program's queue lock is
// vk's queue lock, and the program's validation messenger hears vk's
// calls. That program may well call Vulkan through vulkan-go; vk still
// never does (package vulkango converts handles only).
//
// # SPIR-V validation
//
// NewPipeline hands the driver only a module that ValidateSPIRV accepts:
// one whose SPIR-V version the Vulkan version in use takes (the lower of
// the device's and 1.3, what the instance asks for; a newer one is
// ErrUnsupported, naming both), checked by the Khronos SPIR-V validator
// (SPIRV-Tools, linked statically from Debian's spirv-tools package) for
// that Vulkan version. Drivers do
// not validate SPIR-V; a module that is whole but wrong crashes some of
// them. Callers read every module with package shaders first (structure,
// bindings, push constants); the recorder does so for every kernel.
// Building with the tag vkc_nospirvtools, for platforms without the
// library, leaves only that structural reading.
//
// # Concurrency and lifetime
//
// Objects are used from several goroutines by the layer above. Every call
// into C holds the device's gate shared; Device.Close takes it exclusively,
// so it waits for calls in progress and every later call returns ErrClosed
// or does nothing instead of reaching a destroyed device (fence waits run
// in slices, so a wait that would never end does not hold Close up).
// Destroyed flags, live counts, pool counts and mappings are atomic or
// under a mutex; descriptor and command pools carry the external
// synchronisation Vulkan asks for their allocate and free. A command that
// names a destroyed pipeline, released block or destroyed query pool is
// left out and fails the recording's End with ErrClosed. Recording into
// one command buffer stays one goroutine's at a time, as Vulkan requires.
//
// The hot path writes its arguments into C-side scratch and makes one cgo
// call per command, so recording a launch allocates nothing in Go.
//
// Every object created is counted by kind (Device.Live) so tests can check
// that Close brought everything back to zero; every failing call returns a
// *Error naming the call and the VkResult, which matches ErrOutOfDeviceMemory
// or ErrDeviceLost with errors.Is.
package vk
