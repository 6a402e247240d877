/* tilert.h: libtilert, the tilec runtime. A small C API over the CUDA driver API.
 *
 * Every function returns a tilert_status. On failure, tilert_last_error() gives a message for the
 * calling thread (including the CUDA error name, e.g. "CUDA_ERROR_OUT_OF_MEMORY", and for PTX JIT
 * failures the JIT's error log). The library never calls exit() or abort().
 * Thread-safe: modules may be loaded and kernels launched from several threads.
 */
#ifndef TILERT_H
#define TILERT_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TILERT_OK = 0,
    TILERT_ERR_CUDA,          /* a driver call failed: the message names the CUresult */
    TILERT_ERR_JIT,           /* PTX JIT compilation failed: the message holds the JIT log */
    TILERT_ERR_NOT_FOUND,     /* no kernel of that name in the module */
    TILERT_ERR_BAD_META,      /* the module's //@tilec metadata is missing or malformed */
    TILERT_ERR_BAD_ARGS,      /* wrong argument count/kinds, null or misaligned pointer,
                                 negative size */
    TILERT_ERR_ASSUME,        /* an assume() fact is false for these arguments: not launched */
    TILERT_ERR_NO_MEMORY,
    TILERT_ERR_NO_DEVICE,     /* no CUDA device / driver */
    TILERT_ERR_ARCH,          /* no code in the module for this device's architecture */
} tilert_status;

const char *tilert_status_name(tilert_status s);   /* "TILERT_ERR_ASSUME" ... */
const char *tilert_last_error(void);                /* message of this thread's last failure */

/* A context: the CUDA primary context of one device, retained (tilert_init), or a context the
 * caller created and keeps alive until tilert_release (tilert_attach; released, it is left
 * as it was). Modules load into the context; launches run in it, on its device. */
typedef struct tilert_context tilert_context;
tilert_status tilert_init(int device, tilert_context **out);
tilert_status tilert_attach(CUcontext cu, tilert_context **out);
void tilert_release(tilert_context *ctx);
CUcontext tilert_cu_context(tilert_context *ctx);
/* Compute capability, e.g. 90 for sm_90. */
int tilert_device_arch(tilert_context *ctx);

/* A loaded module. PTX must carry tilec's metadata block; a cubin needs the metadata text
 * separately (what tilec --emit=meta writes, or the generated C launcher holds). */
typedef struct tilert_module tilert_module;
tilert_status tilert_load_ptx(tilert_context *ctx, const char *ptx, tilert_module **out);
tilert_status tilert_load_ptx_file(tilert_context *ctx, const char *path, tilert_module **out);
tilert_status tilert_load_cubin(tilert_context *ctx, const void *cubin, size_t size,
                                const char *meta, tilert_module **out);
void tilert_unload(tilert_module *mod);

typedef struct tilert_kernel tilert_kernel;
tilert_status tilert_get_kernel(tilert_module *mod, const char *name, tilert_kernel **out);

/* Kernel arguments, in the kernel's ABI order: its parameters as declared (tensors as device
 * pointers, scalars), then its size symbols in order of first appearance. */
typedef enum { TILERT_ARG_PTR, TILERT_ARG_I32, TILERT_ARG_U32, TILERT_ARG_I64, TILERT_ARG_F32,
               TILERT_ARG_F16BITS, TILERT_ARG_BF16BITS, TILERT_ARG_BOOL } tilert_arg_kind;
typedef struct {
    tilert_arg_kind kind;
    union { CUdeviceptr ptr; int32_t i32; uint32_t u32; int64_t i64; float f32; uint16_t bits16;
            int32_t b; } v;
} tilert_arg;

static inline tilert_arg tilert_ptr(CUdeviceptr p) { tilert_arg a; a.kind = TILERT_ARG_PTR; a.v.ptr = p; return a; }
static inline tilert_arg tilert_i32(int32_t x) { tilert_arg a; a.kind = TILERT_ARG_I32; a.v.i32 = x; return a; }
static inline tilert_arg tilert_f32(float x) { tilert_arg a; a.kind = TILERT_ARG_F32; a.v.f32 = x; return a; }

/* Checks the arguments against the kernel's metadata (count, kinds, non-null and aligned pointers,
 * non-negative sizes), evaluates every assume() fact and refuses with TILERT_ERR_ASSUME and the
 * fact's source text when one is false, computes the grid from the kernel's grid() expressions,
 * builds the TMA tensor maps the kernel takes as hidden parameters (refusing a tensor TMA cannot
 * copy from), sets the dynamic shared memory limit when needed, and launches on the stream
 * (0 = default). An empty grid (a dimension of 0 blocks) launches nothing and succeeds. */
tilert_status tilert_launch(tilert_kernel *k, CUstream stream, const tilert_arg *args, int nargs);

/* What the metadata says about a kernel. */
typedef struct {
    const char *name;
    int threads;
    int smem_bytes;
    int regs;               /* predicted registers per thread */
    int nargs;
} tilert_kernel_info;
tilert_status tilert_kernel_get_info(tilert_kernel *k, tilert_kernel_info *out);
/* The grid the kernel would be launched with for these arguments. */
tilert_status tilert_kernel_grid(tilert_kernel *k, const tilert_arg *args, int nargs,
                                 unsigned grid[3]);

/* used by generated launchers */

/* What `tilec --emit=c` embeds in a generated C file: the PTX text (with its //@tilec block) and
 * cubins for some architectures. Generated code defines one tilert_embedded per source file and
 * calls the functions below from its typed launchers; nothing here is meant to be called by hand.
 *
 * Loading: once per CUDA context, lazily at the first launch or explicitly. A launch runs in the
 * context current on the calling thread when there is one (it must be a device's primary
 * context, the one tilert_init and the CUDA runtime use); with none current, in the context
 * given to the last explicit load, else in device 0's primary context. The code loaded is the
 * cubin whose architecture equals the device's (sm_90a counts as sm_90), else the PTX through
 * the driver's JIT when the device is at least the PTX's target, else TILERT_ERR_ARCH. */
typedef struct {
    const char *arch;                  /* "sm_80", "sm_90a" */
    const unsigned char *data;
    size_t size;
    const char *meta;                  /* this code's //@tilec block; NULL: the PTX's */
} tilert_embedded_cubin;

typedef struct tilert_embedded_state tilert_embedded_state;

typedef struct {
    const char *name;                  /* the generated prefix, for messages */
    const char *ptx;                   /* NUL-terminated PTX with its //@tilec block */
    const char *ptx_arch;              /* the PTX's .target: "sm_80" */
    const char *meta;                  /* the PTX's //@tilec block alone */
    const tilert_embedded_cubin *cubins; int ncubins;
    const char *const *kernels; int nkernels;   /* kernel names; a launcher passes its index */
    tilert_embedded_state *state;      /* the runtime's; NULL until the first load */
} tilert_embedded;

/* Loads the module into ctx's context (nothing if already there) and makes ctx the context used
 * by launches from threads with no current context. ctx NULL: the context a launch from this
 * thread would use. */
tilert_status tilert_embedded_load(tilert_embedded *m, tilert_context *ctx);
/* The kernel handle for the context a launch from this thread would use, loading if needed. */
tilert_status tilert_embedded_kernel(tilert_embedded *m, int kernel, tilert_kernel **out);
/* tilert_embedded_kernel, then tilert_launch. */
tilert_status tilert_embedded_launch(tilert_embedded *m, int kernel, CUstream stream,
                                     const tilert_arg *args, int nargs);
/* Unloads from every context and forgets the default one. Launches must not run concurrently. */
void tilert_embedded_unload(tilert_embedded *m);
/* Unloads from ctx's context only (nothing if not loaded there); launches in other contexts may
 * run concurrently, none in this one. */
void tilert_embedded_unload_context(tilert_embedded *m, tilert_context *ctx);
/* What was loaded for the context a launch from this thread would use: "cubin sm_90a",
 * "ptx sm_80 (JIT)", or "not loaded". */
const char *tilert_embedded_code(tilert_embedded *m);

/* A kernel that `tilec --emit=c --tune=FILE` compiled once per set of consts tilec-tune chose
 * (its variants), and the size classes that pick among them. Generated launchers define one per
 * tuned kernel and call the two functions below; the choice is documented in docs/runtime.md. */
typedef struct {
    tilert_embedded *const *variants; int nvariants;   /* [0]: the file's own consts */
    int kernel;                        /* the kernel's index in every variant's module */
    int nsizes;                        /* its size arguments, in ABI order */
    const int32_t *class_sizes;        /* nclasses rows of nsizes: the shapes it was tuned at */
    const int *class_variant;          /* per class, the variant that won there */
    int nclasses;
} tilert_tuned;

/* The variant a launch at these sizes (nsizes of them, ABI order) tries first: the variant of
 * the nearest class, by the sum over sizes of (log2 size - log2 class size)^2, a size below 1
 * counting as 1; the first such class in the table on a tie; 0 without classes. */
int tilert_tuned_variant(const tilert_tuned *t, const int32_t *sizes);
/* Launches the kernel in that variant. When the variant's assume() facts refuse the arguments
 * (TILERT_ERR_ASSUME), tries the variants of the next nearest classes, then variant 0; returns
 * the status of the last one tried. */
tilert_status tilert_tuned_launch(const tilert_tuned *t, CUstream stream, const tilert_arg *args,
                                  int nargs, const int32_t *sizes);

#ifdef __cplusplus
}
#endif
#endif
