// Package blackbox_test is vkc's black-box regression suite.
//
// These tests use only vkc's public API, as a user's program would: no
// package internals, no test hooks, no hostdev. Each test checks one promise
// that README.md, docs/GUIDE.md and its chapters, docs/ARCHITECTURE.md or a
// doc comment of the public API makes, and its comment names that promise
// and where it is made. A test here fails when the library breaks a promise
// it documents; when the project decides a promise differently, the test
// changes with the documentation, in the same commit.
//
// They are written from the documentation, not from the code, to attack
// what it promises, and are kept by area:
//
//   - taint_test.go: what reads as ErrUnwritten, eagerly and replayed
//     (docs/guide/buffers.md "Buffers", capture rules 4 and 5, "Changing a graph").
//   - lifetime_test.go: Close, nil and zero values, objects outliving
//     what they recorded, Close racing calls (docs/guide/errors.md, capture rule 2).
//   - capture_test.go: capture windows and graphs (docs/guide/capture.md "The
//     contract", the ErrCaptureState and ErrStreamCapturing sentinels).
//   - capture_scenarios_test.go: the numbered capture-window scenarios:
//     warmup, recorded run and replays, windows doomed or refused, wrong
//     transitions, host writes, Close during a replay (docs/guide/capture.md "The
//     contract").
//   - input_test.go: input validation, sizes, Open options and user
//     kernels (docs/GUIDE.md "Writing kernels", "Errors", KernelSpec, LoadKernel).
//   - dynamic_ledger_test.go: dynamic lengths never make unwritten bytes
//     look written, eagerly, replayed and with Set racing launches
//     (docs/guide/capture.md "Changing a graph without re-capturing it").
//   - close_concurrent_test.go: Close racing Close, and a read of another
//     stream's pending work honouring its context (docs/guide/errors.md).
//   - gcsafe_test.go: open, use and close under garbage-collector pressure
//     (docs/ARCHITECTURE.md "Calling Vulkan from Go").
//   - quickstart_test.go: the README's quick start, eager and captured.
//   - readme_capture_test.go: the README's capture example, as written.
//   - close_races_test.go: a refused replay taints its outputs; Buffer and
//     Kernel Close wait for a racing launch (docs/guide/errors.md, capture rule 6).
//   - concurrent_streams_test.go: four streams on four goroutines, eager
//     and replayed, under -race (docs/guide/buffers.md "Streams").
//   - races_under_gc_test.go, races_under_gc_steps_test.go: the stress
//     suite: every constructor and op under garbage-collector pressure,
//     eight workers hammering one device on their own slots and on shared
//     ones, and Device.Close racing every kind of call; every result is
//     checked against the host (docs/guide/buffers.md "Streams", "Errors",
//     docs/ARCHITECTURE.md "Calling Vulkan from Go").
//   - capture_edges_test.go: replays of unwritten inputs, a kernel closed
//     while a graph holds it, temporaries larger than a page in a capture,
//     a neighbour's capture refused, LoadKernel racing Device.Close, a
//     module whose access chain indexes past a struct (docs/guide/capture.md "The
//     contract", "Errors", ErrBadSPIRV).
//   - misuse_test.go: sizes whose byte counts overflow, aliased outputs, a
//     nil context, nil and zero receivers, Capture of nil or of a function
//     that panics, Kernel.Close racing Device.Close (docs/guide/errors.md,
//     capture rule 1).
//   - param_write_test.go: a Param bound where a kernel writes is refused
//     with ErrParamWritten, eagerly and in a capture window, and keeps its
//     value (docs/guide/capture.md "Changing a graph without re-capturing it").
//   - matmul_texel_test.go, matmul_texel_attack_test.go: Matmul on a CPU
//     driver's texel path (docs/ARCHITECTURE.md "Texel bindings"): graphs
//     over texel inputs, Device.Close racing every call under collector
//     pressure, descriptor-set churn with pinned windows, the unwritten
//     rule, views at texel and stand-in offsets, pages released under
//     cached views, other slots' writes; every product against a float64
//     reference (docs/GUIDE.md "The ops", "Buffers", "Errors").
//
// Every device is opened with the validation layer on; at cleanup it is
// closed and the test fails on any Vulkan object left alive or any message
// the layer printed (see openDevice). No test asserts on time: concurrent
// attacks run a fixed number of iterations.
package blackbox_test
