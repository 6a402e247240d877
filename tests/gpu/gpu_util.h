/* gpu_util.h: small helpers for programs that run tilec kernels on a GPU (tests/gpu, bench/):
 * device setup with a clean "no device" answer, checked memory helpers, event timing, and a
 * seeded random generator. Each helper prints its own error to stderr (naming the CUDA error)
 * and returns false, so callers can write `if (!gpu_alloc(&p, n)) goto fail;`. */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilert.h"

/* Result of gpu_open. */
typedef enum { GPU_OK, GPU_NO_DEVICE, GPU_ERROR } gpu_open_status;

/* tilert_init(device) and makes its primary context current on this thread (for cuMemAlloc and
 * friends). GPU_NO_DEVICE when there is no driver or device: callers skip; why is in `why`. */
gpu_open_status gpu_open(int device, tilert_context **ctx, char *why, size_t why_size);
void gpu_close(tilert_context *ctx);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for r. */
const char *gpu_error_text(CUresult r);
/* Prints "what: CUDA_ERROR_... (...)" to stderr and returns false when r is an error. */
bool gpu_check(CUresult r, const char *what);

bool gpu_alloc(CUdeviceptr *p, size_t bytes);
void gpu_free(CUdeviceptr p);           /* 0 is ignored */
bool gpu_upload(CUdeviceptr dst, const void *src, size_t bytes);
bool gpu_download(void *dst, CUdeviceptr src, size_t bytes);
/* Fills count 32-bit words with pattern (e.g. a NaN bit pattern to catch unwritten outputs). */
bool gpu_fill32(CUdeviceptr p, uint32_t pattern, size_t count);
bool gpu_sync(void);
/* A new buffer of n 32-bit words (plus 16 bytes of slack) holding host[0..n), or every word
 * `pattern`: 0 on failure (already reported). */
CUdeviceptr gpu_new_from(const void *host, size_t n);
CUdeviceptr gpu_new_filled(size_t n, uint32_t pattern);

/* A quiet NaN with a payload no arithmetic produces: an output still holding it was not written. */
enum { GPU_POISON = 0x7fc0dead };

/* Event timing on a stream: start, then stop returns the milliseconds between them. */
typedef struct { CUevent start, stop; CUstream stream; } gpu_timer;
bool gpu_timer_init(gpu_timer *t, CUstream stream);
bool gpu_timer_start(gpu_timer *t);
bool gpu_timer_stop(gpu_timer *t, float *ms);   /* synchronises on the stop event */
void gpu_timer_free(gpu_timer *t);

/* Random numbers (splitmix64): reproducible from the seed that the program prints. */
void rng_seed(uint64_t seed);
uint64_t rng_next(void);
float rng_uniform(float lo, float hi);
void rng_fill(float *x, size_t n, float lo, float hi);
/* A seed from the environment variable `env` when set (to reproduce a run), else the clock. */
uint64_t rng_seed_from(const char *env);

/* The start every GPU test program shares: opens device 0 and seeds the generator from
 * TILEC_TEST_SEED (or the clock), printing `title, seed S`. Returns -1 to go on; otherwise the
 * program's exit status, after printing the skip line (no device: 0) or the failure (1). */
int gpu_test_begin(tilert_context **ctx, const char *title);

/* TILEC_TEST_SMALL set and not "0": run a small subset of the cases -- every kernel and every
 * code path (sizes smaller than a tile, tile multiples, neither; pipelined and tensor-core
 * variants), all at small sizes -- for compute-sanitizer, which slows kernels down 10 to 100
 * times (tests/sanitize-run.sh). */
bool test_small(void);

#endif
