/* driver.c: the CUDA driver calls libtilert and the GPU test programs make, answered on the
 * host.
 *
 * One device (sm_90, or the compute capability $TILERT_HOST_SM names, such as 80), one primary
 * context, device memory that is host memory, copies and fills that are memcpy and memset,
 * streams that run everything at once, events that read the clock. With module.c (modules and launches by
 * the interpreter) it makes libtilert_host.a: a program linked with it instead of libcuda runs
 * its kernels on the CPU, unchanged (docs/runtime.md, "Running on the CPU").
 *
 * Device memory is tracked, so that a copy or a fill outside an allocation fails as the driver
 * would and a launch can give the interpreter each tensor's bounds (host_allocation). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "host.h"

struct CUctx_st { int device; };
struct CUstream_st { int unused; };
struct CUevent_st { struct timespec t; bool recorded; };

static struct CUctx_st primary = { 0 };
static struct CUstream_st the_stream;
static _Thread_local CUcontext current[16];
static _Thread_local int depth;    /* current[depth - 1] is the thread's current context */

/* ---------------------------------------------------------------- errors */

static const struct { CUresult r; const char *name, *text; } errors[] = {
    { CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
    { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
      "the module carries no tilec source block the interpreter can run" },
    { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
      "the interpreter stopped the kernel (its error is on stderr)" },
    { CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
};

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].r == error) {
            *pStr = errors[i].name;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].r == error) {
            *pStr = errors[i].text;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------------------- device and contexts */

CUresult CUDAAPI cuInit(unsigned int Flags) { return Flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

static int host_sm(void)
{
    const char *s = getenv("TILERT_HOST_SM");
    int v = s ? atoi(s) : 0;
    return v >= 80 && v <= 99 ? v : 90;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = host_sm() / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = host_sm() % 10; return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pctx = &primary;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    if (!ctx) {
        if (depth)
            depth--;
        return CUDA_SUCCESS;
    }
    if (!depth)
        depth = 1;
    current[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    *pctx = depth ? current[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    if (!depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = current[depth - 1]->device;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    if (!ctx || depth == (int)(sizeof current / sizeof *current))
        return CUDA_ERROR_INVALID_VALUE;
    current[depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    if (!depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (pctx)
        *pctx = current[depth];
    return CUDA_SUCCESS;
}

/* everything ran when it was called */
CUresult CUDAAPI cuCtxSynchronize(void) { return depth ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

/* ---------------------------------------------------------------- streams and events */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    (void)Flags;
    *phStream = &the_stream;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) { (void)hStream; return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    (void)hStream;
    *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream hStream) { (void)hStream; return CUDA_SUCCESS; }

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    (void)Flags;
    *phEvent = calloc(1, sizeof **phEvent);
    return *phEvent ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    (void)hStream;
    if (!hEvent)
        return CUDA_ERROR_INVALID_HANDLE;
    clock_gettime(CLOCK_MONOTONIC, &hEvent->t);
    hEvent->recorded = true;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) { return hEvent ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (!hStart || !hEnd || !hStart->recorded || !hEnd->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = (float)((double)(hEnd->t.tv_sec - hStart->t.tv_sec) * 1e3 +
                             (double)(hEnd->t.tv_nsec - hStart->t.tv_nsec) * 1e-6);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    free(hEvent);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- memory */

typedef struct { char *base; size_t size; } Allocation;
static Allocation *allocs;
static size_t nallocs, capallocs;
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;

size_t host_allocation(const void *p)
{
    size_t left = 0;
    pthread_mutex_lock(&mem_lock);
    for (size_t i = 0; i < nallocs; i++)
        if ((const char *)p >= allocs[i].base && (const char *)p < allocs[i].base + allocs[i].size) {
            left = (size_t)(allocs[i].base + allocs[i].size - (const char *)p);
            break;
        }
    pthread_mutex_unlock(&mem_lock);
    return left;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    if (!bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    /* 256-byte aligned, as cuMemAlloc's are; aligned_alloc wants a multiple of it */
    size_t n = (bytesize + 255) / 256 * 256;
    char *p = n >= bytesize ? aligned_alloc(256, n) : NULL;
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&mem_lock);
    if (nallocs == capallocs) {
        size_t cap = capallocs ? 2 * capallocs : 64;
        Allocation *a = realloc(allocs, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&mem_lock);
            free(p);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        allocs = a;
        capallocs = cap;
    }
    allocs[nallocs++] = (Allocation){ p, bytesize };
    pthread_mutex_unlock(&mem_lock);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
    char *p = (char *)(uintptr_t)dptr;
    pthread_mutex_lock(&mem_lock);
    for (size_t i = 0; i < nallocs; i++)
        if (allocs[i].base == p) {
            allocs[i] = allocs[--nallocs];
            pthread_mutex_unlock(&mem_lock);
            free(p);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mem_lock);
    return CUDA_ERROR_INVALID_VALUE;
}

/* The n bytes at device address d, or NULL when they are not inside one allocation. */
static char *device_bytes(CUdeviceptr d, size_t n)
{
    char *p = (char *)(uintptr_t)d;
    return host_allocation(p) >= n ? p : NULL;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    char *p = device_bytes(dstDevice, ByteCount);
    if (!p || !srcHost)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(p, srcHost, ByteCount);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    char *p = device_bytes(srcDevice, ByteCount);
    if (!p || !dstHost)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dstHost, p, ByteCount);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    char *p = device_bytes(dstDevice, N);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, uc, N);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    (void)hStream;
    return cuMemsetD8(dstDevice, uc, N);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    char *p = N <= SIZE_MAX / 4 ? device_bytes(dstDevice, N * 4) : NULL;
    if (!p || dstDevice % 4)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < N; i++)
        memcpy(p + 4 * i, &ui, 4);
    return CUDA_SUCCESS;
}

/* The interpreter reads tensors, never TMA descriptors: the map only has to exist. */
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                        cuuint32_t tensorRank, void *globalAddress,
                                        const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                        const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                        CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                        CUtensorMapL2promotion l2Promotion,
                                        CUtensorMapFloatOOBfill oobFill)
{
    (void)tensorDataType, (void)tensorRank, (void)globalAddress, (void)globalDim;
    (void)globalStrides, (void)boxDim, (void)elementStrides, (void)interleave, (void)swizzle;
    (void)l2Promotion, (void)oobFill;
    memset(tensorMap, 0, sizeof *tensorMap);
    return CUDA_SUCCESS;
}
