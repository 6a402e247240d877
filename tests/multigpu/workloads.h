/* workloads.h: the kernels tests/multigpu runs from many host threads and devices, each launched
 * on fresh random inputs in the context current on the calling thread and checked element by
 * element against a CPU reference (tests/gpu/ref_util.h's bounds), with every buffer checked to
 * belong to that thread's device and context.
 *
 * Each kernel runs two ways: through the launcher `tilec --emit=c` generated for it (the code
 * the launcher embeds: a cubin for the device's arch or the PTX by JIT), and through a module
 * the thread loaded itself with tilert_load_ptx_file from the compiled examples. */
#ifndef WORKLOADS_H
#define WORKLOADS_H

#include <stdbool.h>
#include <stdint.h>

#include "tilert.h"

/* vecadd, softmax and layernorm are plain loads and stores; matmul_f16 needs more than 48 KiB
 * of shared memory (the per-function attribute the runtime sets once); matmul_tf32 on sm_90a
 * copies through TMA (tensor maps encoded per launch, and the context's zero buffer when K is
 * 0). */
typedef enum { W_VECADD, W_SOFTMAX, W_LAYERNORM, W_MATMUL_F16, W_MATMUL_TF32, W_COUNT } Workload;
extern const char *const workload_name[W_COUNT];

typedef enum { VIA_LAUNCHER, VIA_MODULE } Via;

/* What one host thread works with. Its context (ctx's) must be current on the thread. */
typedef struct {
    char where[64];                 /* "device 1", "device 0, own context": for messages */
    tilert_context *ctx;
    int ordinal;                    /* the device every buffer must be on */
    CUstream stream;                /* the thread's own, non-blocking */
    tilert_module *mod[W_COUNT];    /* from worker_load_modules; NULL: not loaded */
    uint64_t rng;                   /* the thread's own generator (splitmix64) */
    int products;                   /* matmuls run: the 2nd and every 8th after have K = 0 */
    int passed, failed;
} Worker;

/* Makes w for the context current on this thread: its stream, its generator from seed; keeps
 * the counts of checks made with w before (w zeroed, or begun and ended, first). False
 * (printed) when the stream cannot be made or belongs to another context. */
bool worker_begin(Worker *w, tilert_context *ctx, int ordinal, const char *where, uint64_t seed);
void worker_end(Worker *w);
/* tilert_load_ptx_file of every workload's example PTX from exdir into w's context. */
bool worker_load_modules(Worker *w, const char *exdir);
void worker_unload_modules(Worker *w);

/* One launch of wl on fresh random inputs of random size (rarely tile multiples; K = 0 for a
 * thread's second product and every eighth after, where TMA copies read the context's zero
 * buffer), checked: every output element within its bound, none left unwritten, no
 * write past the end, every buffer on w's device and in w's context. Counts the result in w and
 * prints a line on failure. */
bool run_workload(Worker *w, Workload wl, Via via);

/* A check that is not a workload: counts it in w, prints `FAIL where: what` when !ok. */
bool worker_expect(Worker *w, bool ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* printf under one lock, so lines of concurrent threads do not interleave. */
void say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* What the generated launchers of a workload report and do, by workload. */
const char *launcher_code(Workload wl);        /* PREFIX_code() */
void launcher_unload(Workload wl);             /* PREFIX_unload() */
void launcher_unload_context(Workload wl, tilert_context *ctx);
tilert_status launcher_load(Workload wl, tilert_context *ctx);
/* The code the launchers must pick on a device of compute capability arch (90: sm_90). */
const char *expected_code(int arch);

/* "CUDA_ERROR_..." for r. */
const char *cu_name(CUresult r);

#endif
