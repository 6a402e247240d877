/* gpu_util.c: see gpu_util.h. Test and benchmark helpers, not part of libtilert. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_util.h"

gpu_open_status gpu_open(int device, tilert_context **ctx, char *why, size_t why_size)
{
    tilert_status s = tilert_init(device, ctx);
    if (s != TILERT_OK) {
        snprintf(why, why_size, "%s: %s", tilert_status_name(s), tilert_last_error());
        return s == TILERT_ERR_NO_DEVICE ? GPU_NO_DEVICE : GPU_ERROR;
    }
    CUresult r = cuCtxSetCurrent(tilert_cu_context(*ctx));
    if (r != CUDA_SUCCESS) {
        snprintf(why, why_size, "cuCtxSetCurrent: %s", gpu_error_text(r));
        tilert_release(*ctx);
        *ctx = NULL;
        return GPU_ERROR;
    }
    why[0] = 0;
    return GPU_OK;
}

void gpu_close(tilert_context *ctx)
{
    if (!ctx)
        return;
    (void)cuCtxSetCurrent(NULL);
    tilert_release(ctx);
}

const char *gpu_error_text(CUresult r)
{
    static _Thread_local char text[256];
    const char *name = NULL, *desc = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "CUDA_ERROR_UNKNOWN";
    if (cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "no description";
    snprintf(text, sizeof text, "%s (%s)", name, desc);
    return text;
}

bool gpu_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    fprintf(stderr, "%s: %s\n", what, gpu_error_text(r));
    return false;
}

bool gpu_alloc(CUdeviceptr *p, size_t bytes)
{
    *p = 0;
    return gpu_check(cuMemAlloc(p, bytes ? bytes : 1), "cuMemAlloc");
}

void gpu_free(CUdeviceptr p)
{
    if (p)
        (void)gpu_check(cuMemFree(p), "cuMemFree");
}

bool gpu_upload(CUdeviceptr dst, const void *src, size_t bytes)
{
    return !bytes || gpu_check(cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

bool gpu_download(void *dst, CUdeviceptr src, size_t bytes)
{
    return !bytes || gpu_check(cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

bool gpu_fill32(CUdeviceptr p, uint32_t pattern, size_t count)
{
    return !count || gpu_check(cuMemsetD32(p, pattern, count), "cuMemsetD32");
}

CUdeviceptr gpu_new_from(const void *host, size_t n)
{
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, n * 4 + 16) || (n && !gpu_upload(d, host, n * 4)))
        return 0;
    return d;
}

CUdeviceptr gpu_new_filled(size_t n, uint32_t pattern)
{
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, n * 4 + 16) || !gpu_fill32(d, pattern, n))
        return 0;
    return d;
}

bool gpu_sync(void)
{
    return gpu_check(cuCtxSynchronize(), "cuCtxSynchronize");
}

bool gpu_timer_init(gpu_timer *t, CUstream stream)
{
    memset(t, 0, sizeof *t);
    t->stream = stream;
    if (!gpu_check(cuEventCreate(&t->start, CU_EVENT_DEFAULT), "cuEventCreate"))
        return false;
    if (!gpu_check(cuEventCreate(&t->stop, CU_EVENT_DEFAULT), "cuEventCreate")) {
        (void)cuEventDestroy(t->start);
        t->start = NULL;
        return false;
    }
    return true;
}

bool gpu_timer_start(gpu_timer *t)
{
    return gpu_check(cuEventRecord(t->start, t->stream), "cuEventRecord");
}

bool gpu_timer_stop(gpu_timer *t, float *ms)
{
    return gpu_check(cuEventRecord(t->stop, t->stream), "cuEventRecord") &&
           gpu_check(cuEventSynchronize(t->stop), "cuEventSynchronize") &&
           gpu_check(cuEventElapsedTime(ms, t->start, t->stop), "cuEventElapsedTime");
}

void gpu_timer_free(gpu_timer *t)
{
    if (t->start)
        (void)cuEventDestroy(t->start);
    if (t->stop)
        (void)cuEventDestroy(t->stop);
    t->start = t->stop = NULL;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void rng_seed(uint64_t seed)
{
    rng_state = seed;
}

uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float rng_uniform(float lo, float hi)
{
    /* 24 random bits: every value exactly representable in [0, 1). */
    float u = (float)(rng_next() >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

void rng_fill(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_uniform(lo, hi);
}

uint64_t rng_seed_from(const char *env)
{
    const char *s = env ? getenv(env) : NULL;
    if (s && *s)
        return strtoull(s, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
           ((uint64_t)getpid() << 32);
}

int gpu_test_begin(tilert_context **ctx, const char *title)
{
    char why[1024];
    gpu_open_status g = gpu_open(0, ctx, why, sizeof why);
    if (g == GPU_NO_DEVICE) {
        printf("skipped: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", why);
        return 0;
    }
    if (g != GPU_OK) {
        printf("FAIL device setup: %s\n0 passed, 1 failed\n", why);
        return 1;
    }
    uint64_t seed = rng_seed_from("TILEC_TEST_SEED");
    rng_seed(seed);
    printf("%s, device sm_%d, seed %llu (TILEC_TEST_SEED=%llu repeats it)%s\n", title, tilert_device_arch(*ctx),
           (unsigned long long)seed, (unsigned long long)seed, test_small() ? ", small cases (TILEC_TEST_SMALL)" : "");
    return -1;
}

bool test_small(void)
{
    const char *s = getenv("TILEC_TEST_SMALL");
    return s && *s && strcmp(s, "0") != 0;
}
