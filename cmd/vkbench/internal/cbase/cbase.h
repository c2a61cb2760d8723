// cbase.h - vkbench's plain-C Vulkan reference: the same work vkc's suites
// measure (a chain of dependent axpy launches, a device copy, a host memcpy,
// a naive sgemm), written the way a C programmer would with nothing between
// the program and the driver. Every entry point is loaded from the Vulkan
// loader at run time (vkGetInstanceProcAddr, then vkGetDeviceProcAddr), so
// building needs only the headers.
//
// Functions returning int return 0 on success and a negative value on
// failure, with cbase_error() describing the failing call. Nothing here is
// safe for concurrent use of one device.
#ifndef VKBENCH_CBASE_H
#define VKBENCH_CBASE_H
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cbase_device cbase_device;
typedef struct cbase_chain cbase_chain;
typedef struct cbase_copy cbase_copy;
typedef struct cbase_memcpy cbase_memcpy;
typedef struct cbase_sgemm cbase_sgemm;

// cbase_load opens the platform's Vulkan loader once per process; it
// returns NULL on success, else why it failed.
const char *cbase_load(void);

// cbase_new returns an empty device for cbase_open to fill (NULL when out of
// memory); cbase_close frees it whatever state cbase_open left it in.
cbase_device *cbase_new(void);
// cbase_open creates the instance (with the Khronos validation layer and a
// counting messenger when validate is set) and a device with one compute
// queue on physical device index, which must be named name when name is
// not empty, so that the reference runs on the device vkc measured.
int cbase_open(cbase_device *d, int validate, uint32_t index, const char *name);
const char *cbase_error(const cbase_device *d);
const char *cbase_device_name(const cbase_device *d);
// cbase_live counts the Vulkan objects made on the device and not yet
// destroyed (buffers, memory, pipelines, command buffers and the rest).
int cbase_live(const cbase_device *d);
// cbase_has_int64 reports whether the device has shaderInt64 enabled (it is
// enabled wherever offered), which the wide axpy chain needs.
int cbase_has_int64(const cbase_device *d);
// cbase_set_staged makes buffers made from now on skip the mapping and go
// through staging copies, the path of devices whose device-local memory the
// host cannot map (discrete GPUs), so that a CPU driver can test it.
void cbase_set_staged(cbase_device *d, int staged);
void cbase_validation(const cbase_device *d, int *errors, int *warnings, char *last, size_t last_len);
// cbase_close destroys the device and the instance (the validation counts
// stay readable, so messages raised while tearing down are seen); with live
// objects it destroys nothing, since that would be invalid usage, and returns
// their count. A second call does nothing. cbase_free then frees d.
int cbase_close(cbase_device *d);
void cbase_free(cbase_device *d);

// A chain is k dependent launches of axpy (y = a*x + y over n floats, a = 1)
// with a buffer barrier on y after each one. Recorded two ways: binding per
// launch (bound = 0: the pipeline and the set bound and (a, n) pushed before
// every dispatch, as the plain program most people write does) and binding
// once (bound = 1: bound and pushed once at the start of the command buffer,
// then a dispatch and its barrier per launch, the fewest commands plain C
// can record for the chain).
int cbase_chain_new(cbase_device *d, const void *spirv, size_t spirv_bytes, const float *x, uint32_t n,
	uint32_t groups, uint32_t k, cbase_chain **out);
// eager: per launch, reset, begin, record, end, submit, wait on the fence
// (one launch per command buffer, so it binds once per launch either way).
int cbase_chain_eager(cbase_chain *c);
// batched: the k launches re-recorded into one command buffer, one submit.
int cbase_chain_batched(cbase_chain *c, int bound);
// record: the recording of batched alone, never submitted.
int cbase_chain_record(cbase_chain *c, int bound);
// replay: the command buffer recorded once at creation, submitted again.
int cbase_chain_replay(cbase_chain *c, int bound);
int cbase_chain_reset_y(cbase_chain *c);
int cbase_chain_read_y(cbase_chain *c, float *out);
void cbase_chain_free(cbase_chain *c);

// A copy is one vkCmdCopyBuffer of bytes between two device buffers,
// recorded once and submitted per run.
int cbase_copy_new(cbase_device *d, const void *src, uint64_t bytes, cbase_copy **out);
int cbase_copy_run(cbase_copy *c);
int cbase_copy_clear_dst(cbase_copy *c);
int cbase_copy_read_dst(cbase_copy *c, void *out);
void cbase_copy_free(cbase_copy *c);

// A memcpy is the C library's memcpy between two pre-faulted heap blocks.
cbase_memcpy *cbase_memcpy_new(const void *src, size_t bytes);
void cbase_memcpy_run(cbase_memcpy *m);
void cbase_memcpy_read_dst(const cbase_memcpy *m, void *out);
void cbase_memcpy_clear_dst(cbase_memcpy *m);
void cbase_memcpy_free(cbase_memcpy *m);

// An sgemm is C = A*B for n x n row-major floats with the kernel given as
// SPIR-V (push: n, or n three times as M, N, K when push_words is 3),
// dispatched as ceil(n/tile_x) x ceil(n/tile_y) groups and recorded once:
// tiles 16 for the naive kernel (one invocation per element, 16 x 16
// groups), 128 for the blocked one (16 x 16 elements per invocation, 8 x 8
// groups), 256 x 128 for vkc's matmul_texel module. Bindings with their
// bit set in texels (A, B) are uniform texel buffers of R32G32B32A32_UINT
// texels over the whole buffer.
int cbase_sgemm_new(cbase_device *d, const void *spirv, size_t spirv_bytes, uint32_t n, uint32_t tile_x,
	uint32_t tile_y, uint32_t texels, uint32_t push_words, const float *a, const float *b, cbase_sgemm **out);
int cbase_sgemm_run(cbase_sgemm *s);
int cbase_sgemm_read_c(cbase_sgemm *s, float *out);
void cbase_sgemm_free(cbase_sgemm *s);

#endif
