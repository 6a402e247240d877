/* context.c: driver initialisation, primary contexts, and contexts the program made itself.
 *
 * The runtime shares the primary context with cudart and other libraries (so pointers from
 * cudaMalloc work) and never leaves it current behind the caller's back: every driver call runs
 * between rt_push and rt_pop. */
#include <stdlib.h>

#include "tilert_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result;

static void driver_init(void)
{
    init_result = cuInit(0);
}

tilert_status rt_driver_init(void)
{
    pthread_once(&init_once, driver_init);
    if (init_result != CUDA_SUCCESS)
        return rt_cuda_error_as(TILERT_ERR_NO_DEVICE, "cuInit", init_result);
    return TILERT_OK;
}

tilert_status rt_push(tilert_context *ctx)
{
    CUresult r = cuCtxPushCurrent(ctx->ctx);
    return r == CUDA_SUCCESS ? TILERT_OK : rt_cuda_error("cuCtxPushCurrent", r);
}

void rt_pop(void)
{
    CUcontext popped;
    /* Cannot fail after a successful push on this thread; nothing useful to do if it did. */
    (void)cuCtxPopCurrent(&popped);
}

/* Zeroes n bytes at p and waits until they are. On a stream of its own: a memset on the NULL
 * stream is not ordered before launches on CU_STREAM_NON_BLOCKING streams, and waiting for the
 * whole context would also wait for the caller's kernels. Sets *what when a call fails. */
static CUresult clear_and_wait(CUdeviceptr p, size_t n, const char **what)
{
    CUstream stream;
    CUresult r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        *what = "cuStreamCreate (clearing the zero buffer for empty tensor maps)";
        return r;
    }
    if ((r = cuMemsetD8Async(p, 0, n, stream)) != CUDA_SUCCESS)
        *what = "cuMemsetD8Async (clearing the zero buffer for empty tensor maps)";
    else if ((r = cuStreamSynchronize(stream)) != CUDA_SUCCESS)
        *what = "cuStreamSynchronize (clearing the zero buffer for empty tensor maps)";
    (void)cuStreamDestroy(stream);
    return r;
}

tilert_status rt_zero_buffer(tilert_context *ctx, CUdeviceptr *out)
{
    CUresult r = CUDA_SUCCESS;
    const char *what = NULL;
    pthread_mutex_lock(&ctx->zero_lock);
    if (!ctx->zero_buffer) {
        CUdeviceptr p;
        if ((r = cuMemAlloc(&p, RT_ZERO_BUFFER_BYTES)) != CUDA_SUCCESS)
            what = "cuMemAlloc (the zero buffer for empty tensor maps)";
        else if ((r = clear_and_wait(p, RT_ZERO_BUFFER_BYTES, &what)) != CUDA_SUCCESS)
            (void)cuMemFree(p);
        else
            ctx->zero_buffer = p;
    }
    *out = ctx->zero_buffer;
    pthread_mutex_unlock(&ctx->zero_lock);
    return what ? rt_cuda_error(what, r) : TILERT_OK;
}

/* What every handle needs once its device is known: the arch, and the zero buffer's lock. */
static tilert_status context_setup(tilert_context *c)
{
    int major = 0, minor = 0;
    CUresult r;
    if ((r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev)) ||
        (r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev)))
        return rt_cuda_error("cuDeviceGetAttribute", r);
    c->arch = 10 * major + minor;
    if (pthread_mutex_init(&c->zero_lock, NULL))
        return rt_error(TILERT_ERR_NO_MEMORY, "pthread_mutex_init failed");
    return TILERT_OK;
}

tilert_status tilert_init(int device, tilert_context **out)
{
    tilert_status s;
    CUresult r;
    int count = 0;
    if (!out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_init: out is NULL");
    *out = NULL;
    if ((s = rt_driver_init()))
        return s;
    if ((r = cuDeviceGetCount(&count)) != CUDA_SUCCESS)
        return rt_cuda_error_as(TILERT_ERR_NO_DEVICE, "cuDeviceGetCount", r);
    if (device < 0 || device >= count)
        return rt_error(TILERT_ERR_NO_DEVICE, "tilert_init: no CUDA device %d (%d present)",
                        device, count);
    tilert_context *c = calloc(1, sizeof *c);
    if (!c)
        return rt_error(TILERT_ERR_NO_MEMORY, "tilert_init: out of memory");
    if ((r = cuDeviceGet(&c->dev, device)) != CUDA_SUCCESS) {
        free(c);
        return rt_cuda_error("cuDeviceGet", r);
    }
    if ((s = context_setup(c))) {
        free(c);
        return s;
    }
    if ((r = cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
        pthread_mutex_destroy(&c->zero_lock);
        free(c);
        return rt_cuda_error("cuDevicePrimaryCtxRetain", r);
    }
    c->retained = true;
    *out = c;
    return TILERT_OK;
}

/* A context the caller made (cuCtxCreate) cannot be retained: the caller keeps it alive, and
 * tilert_release leaves it be. Its device comes from the context itself. */
tilert_status tilert_attach(CUcontext cu, tilert_context **out)
{
    tilert_status s;
    CUresult r;
    if (!out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_attach: out is NULL");
    *out = NULL;
    if (!cu)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_attach: the context is NULL");
    if ((s = rt_driver_init()))
        return s;
    tilert_context *c = calloc(1, sizeof *c);
    if (!c)
        return rt_error(TILERT_ERR_NO_MEMORY, "tilert_attach: out of memory");
    c->ctx = cu;
    if ((s = rt_push(c))) {
        free(c);
        return s;
    }
    r = cuCtxGetDevice(&c->dev);
    rt_pop();
    if (r != CUDA_SUCCESS) {
        free(c);
        return rt_cuda_error("cuCtxGetDevice", r);
    }
    if ((s = context_setup(c))) {
        free(c);
        return s;
    }
    *out = c;
    return TILERT_OK;
}

void tilert_release(tilert_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->zero_buffer && rt_push(ctx) == TILERT_OK) {
        (void)cuMemFree(ctx->zero_buffer);
        rt_pop();
    }
    pthread_mutex_destroy(&ctx->zero_lock);
    if (ctx->retained)
        (void)cuDevicePrimaryCtxRelease(ctx->dev);
    free(ctx);
}

CUcontext tilert_cu_context(tilert_context *ctx)
{
    return ctx ? ctx->ctx : NULL;
}

int tilert_device_arch(tilert_context *ctx)
{
    return ctx ? ctx->arch : 0;
}
