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

/* A context: the CUDA primary context of one device, retained. */
typedef struct tilert_context tilert_context;
tilert_status tilert_init(int device, tilert_context **out);
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
 * sets the dynamic shared memory limit when needed, and launches on the stream (0 = default).
 * An empty grid (a dimension of 0 blocks) launches nothing and succeeds. */
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

#ifdef __cplusplus
}
#endif
#endif
