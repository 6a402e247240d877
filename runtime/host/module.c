/* module.c: the host driver's modules and launches. Loading a module reads the tilec source its
 * PTX carries (compiler/meta_source.c) and checks it with the compiler's front end, with the -D
 * values it was compiled with; a launch decodes the kernel's parameter block by the kernel ABI
 * (tilec.h) and runs the interpreter on it. Each tensor pointer's bounds are the rest of the
 * device allocation it points into, so an access past the memory a test allocated is reported
 * at its source location.
 *
 * The compiler's front end and the interpreter keep their diagnostics in one global state:
 * loads and launches take one lock, and a launch points the diagnostics at its module's source. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "host.h"
#include "interp.h"

struct CUfunc_st { struct CUmod_st *mod; Kernel *k; };

struct CUmod_st {
    Arena *arena;
    Program *p;
    Buf file, src, names;
    Define defs[META_MAX_DEFINES];
    int ndefs;
    bool print_all_blocks;     /* compiled with --print-all-blocks: print() in every block */
    struct CUfunc_st *funcs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void module_free(struct CUmod_st *m)
{
    if (!m)
        return;
    if (m->arena)
        arena_free(m->arena);
    buf_free(&m->file);
    buf_free(&m->src);
    buf_free(&m->names);
    free(m->funcs);
    free(m);
}

/* The JIT error log buffer the caller passed, if any. */
static void log_error(unsigned n, CUjit_option *opt, void **val, const char *text)
{
    char *buf = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
            buf = val[i];
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)val[i];
    }
    if (buf && size)
        snprintf(buf, size, "%s", text);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!image || !meta_source_read(image, &m->file, &m->src, m->defs, &m->ndefs, &m->names,
                                         &m->print_all_blocks)) {
        log_error(numOptions, options, optionValues,
                  "the module carries no tilec source (//$source): only modules tilec wrote can "
                  "run on the host; rebuild it with this tilec");
        module_free(m);
        return CUDA_ERROR_INVALID_PTX;
    }
    pthread_mutex_lock(&lock);
    /* the front end's messages go to the JIT log, as a real JIT's would */
    FILE *msgs = tmpfile();
    FILE *saved = diag.out;
    diag.out = msgs;
    m->arena = arena_new();
    m->p = compile_front(m->arena, m->file.s, m->src.s, m->src.len, m->defs, m->ndefs);
    diag.out = saved;
    if (!m->p) {
        char text[4096] = "the module's tilec source does not compile";
        if (msgs) {
            rewind(msgs);
            size_t got = fread(text, 1, sizeof text - 1, msgs);
            text[got] = 0;
        }
        log_error(numOptions, options, optionValues, text);
    }
    if (msgs)
        fclose(msgs);
    pthread_mutex_unlock(&lock);
    if (!m->p) {
        module_free(m);
        return CUDA_ERROR_INVALID_PTX;
    }
    m->funcs = calloc((size_t)m->p->nkernels + 1, sizeof *m->funcs);
    if (!m->funcs) {
        module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < m->p->nkernels; i++)
        m->funcs[i] = (struct CUfunc_st){ m, m->p->kernels[i] };
    *module = m;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    if (!hmod)
        return CUDA_ERROR_INVALID_HANDLE;
    module_free(hmod);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (!hmod || !name)
        return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < hmod->p->nkernels; i++)
        if (!strcmp(hmod->p->kernels[i]->name, name)) {
            *hfunc = &hmod->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* Shared memory and every other launch attribute mean nothing on the host. */
CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)attrib, (void)value;
    return hfunc ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The interpreter runs a kernel as written: no occupancy to report, so a product's K loop is
 * never split over blocks (runtime/launch.c launches it whole). */
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                             size_t dynamicSMemSize)
{
    (void)blockSize, (void)dynamicSMemSize;
    if (!numBlocks || !func)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    if (!numClusters || !func || !config)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* One argument from the parameter block: its type as the kernel ABI passes it. */
static InterpArg decode(const Kernel *k, int i, void *param)
{
    InterpArg a;
    memset(&a, 0, sizeof a);
    if (i >= k->nparams) {
        int32_t v;
        memcpy(&v, param, 4);
        a.i = v;
        return a;
    }
    const Param *p = &k->params[i];
    if (p->is_tensor) {
        CUdeviceptr d;
        memcpy(&d, param, sizeof d);
        a.ptr = (void *)(uintptr_t)d;
        a.bytes = host_allocation(a.ptr);
        return a;
    }
    switch (p->type) {
    case TY_F32: { float f; memcpy(&f, param, 4); a.f = f; break; }
    case TY_F16: { uint16_t h; memcpy(&h, param, 2); a.f = f16_bits_to_f32(h); break; }
    case TY_BF16: { uint16_t h; memcpy(&h, param, 2); a.f = bf16_bits_to_f32(h); break; }
    case TY_I64: memcpy(&a.i, param, 8); break;
    case TY_U32: { uint32_t v; memcpy(&v, param, 4); a.i = v; break; }
    case TY_BOOL: { uint32_t v; memcpy(&v, param, 4); a.i = v != 0; break; }
    default: { int32_t v; memcpy(&v, param, 4); a.i = v; break; }
    }
    return a;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra)
{
    (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
    (void)blockDimZ, (void)sharedMemBytes, (void)hStream;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (extra || !kernelParams)
        return CUDA_ERROR_NOT_SUPPORTED;   /* libtilert passes kernelParams */
    const Kernel *k = f->k;
    int n = interp_nargs(k);
    InterpArg *args = calloc((size_t)n + 1, sizeof *args);
    if (!args)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++)
        args[i] = decode(k, i, kernelParams[i]);
    /* the grid is the kernel's own grid() of these arguments, as the launcher computed it */
    pthread_mutex_lock(&lock);
    struct CUmod_st *m = f->mod;
    diag_reset(m->file.s, m->src.s, m->src.len);
    /* print() as the module was compiled: in block (0, 0, 0), or in every block */
    InterpOptions opt = { NULL, m->print_all_blocks };
    bool ok = interp_launch(m->p, f->k, args, n, &opt);
    fflush(stdout);
    pthread_mutex_unlock(&lock);
    free(args);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

/* A clustered launch runs as a plain one: the interpreter runs the source, whose meaning does
 * not depend on how blocks are grouped (the cluster only shares copies in the PTX). */
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                          config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                          kernelParams, extra);
}
