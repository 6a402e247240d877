/* app.c: a C program that links two generated kernels, vecadd and softmax.
 *
 * Their launchers come from `tilec --emit=c` (vecadd.c/.h, softmax.c/.h, see app.mk); this file
 * only sees typed functions. It fills random inputs, launches, compares with a CPU reference
 * computed in double, also checks that bad launches are refused, prints one line per kernel and
 * exits non-zero on any failure. Without a CUDA device it says so and exits 0. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "softmax.h"
#include "vecadd.h"

static unsigned long long rng_state;

static float rand_uniform(float lo, float hi)   /* xorshift64*: reproducible from the seed */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    unsigned long long r = rng_state * 2685821657736338717ULL;
    return lo + (hi - lo) * (float)((r >> 40) / 16777216.0);
}

/* Failing driver/runtime calls end the program: there is nothing to check after them. */
#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
    const char *n_ = NULL; cuGetErrorName(r_, &n_); \
    fprintf(stderr, "app: %s: %s\n", #call, n_ ? n_ : "unknown CUDA error"); exit(1); } } while (0)

static void fill(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rand_uniform(lo, hi);
}

/* ||out - ref|| / ||ref||, or INFINITY when out holds a NaN (an element never written). */
static double rel_error(const float *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(out[i]))
            return INFINITY;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static CUdeviceptr dev_alloc(size_t bytes)
{
    CUdeviceptr p;
    CU(cuMemAlloc(&p, bytes ? bytes : 4));
    return p;
}

/* NaN bits everywhere, so an element the kernel forgets shows up. */
static void poison(CUdeviceptr p, size_t n)
{
    CU(cuMemsetD32(p, 0x7fc00000u, n ? n : 1));
}

static bool expect_status(const char *what, tilert_status got, tilert_status want)
{
    if (got == want)
        return true;
    printf("  %s: got %s, want %s (%s)\n", what, tilert_status_name(got), tilert_status_name(want),
           tilert_last_error());
    return false;
}

static bool test_vecadd(void)
{
    static const int sizes[] = { 1, 1000, 1024, 4097, 1 << 20 };
    bool ok = true;
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        size_t bytes = (size_t)n * sizeof(float);
        float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
        double *ref = malloc((size_t)n * sizeof *ref);
        if (!x || !y || !z || !ref) {
            fprintf(stderr, "app: out of memory\n");
            exit(1);
        }
        float alpha = rand_uniform(-2, 2);
        fill(x, (size_t)n, -1, 1);
        fill(y, (size_t)n, -1, 1);
        for (int i = 0; i < n; i++)
            ref[i] = (double)alpha * x[i] + y[i];
        CUdeviceptr dx = dev_alloc(bytes), dy = dev_alloc(bytes), dz = dev_alloc(bytes);
        CU(cuMemcpyHtoD(dx, x, bytes));
        CU(cuMemcpyHtoD(dy, y, bytes));
        poison(dz, (size_t)n);
        tilert_status s = vecadd_vecadd_launch(0, dx, dy, dz, alpha, n);
        if (expect_status("vecadd launch", s, TILERT_OK)) {
            CU(cuCtxSynchronize());
            CU(cuMemcpyDtoH(z, dz, bytes));
            double err = rel_error(z, ref, (size_t)n);
            if (!(err < 1e-6)) {
                printf("  vecadd N=%d: relative error %g\n", n, err);
                ok = false;
            }
        } else {
            ok = false;
        }
        CU(cuMemFree(dx));
        CU(cuMemFree(dy));
        CU(cuMemFree(dz));
        free(x), free(y), free(z), free(ref);
    }
    /* The launcher refuses what the kernel cannot take, and launches nothing. */
    CUdeviceptr d = dev_alloc(64 * sizeof(float));
    ok &= expect_status("vecadd null pointer", vecadd_vecadd_launch(0, 0, d, d, 1, 16),
                        TILERT_ERR_BAD_ARGS);
    ok &= expect_status("vecadd negative size", vecadd_vecadd_launch(0, d, d, d, 1, -1),
                        TILERT_ERR_BAD_ARGS);
    if (vecadd_vecadd_info.threads <= 0)
        ok = false;
    CU(cuMemFree(d));
    return ok;
}

static bool test_softmax(void)
{
    static const int shapes[][2] = { { 1, 1 }, { 3, 1000 }, { 64, 2048 }, { 257, 8192 } };
    bool ok = true;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        int rows = shapes[t][0], n = shapes[t][1];
        size_t count = (size_t)rows * (size_t)n, bytes = count * sizeof(float);
        float *x = malloc(bytes), *y = malloc(bytes);
        double *ref = malloc(count * sizeof *ref);
        if (!x || !y || !ref) {
            fprintf(stderr, "app: out of memory\n");
            exit(1);
        }
        fill(x, count, -8, 8);
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * n;
            double m = -INFINITY, sum = 0;
            for (int i = 0; i < n; i++)
                m = xr[i] > m ? xr[i] : m;
            for (int i = 0; i < n; i++)
                sum += exp(xr[i] - m);
            for (int i = 0; i < n; i++)
                ref[(size_t)r * n + i] = exp(xr[i] - m) / sum;
        }
        CUdeviceptr dx = dev_alloc(bytes), dy = dev_alloc(bytes);
        CU(cuMemcpyHtoD(dx, x, bytes));
        poison(dy, count);
        tilert_status s = softmax_softmax_launch(0, dx, dy, rows, n);
        if (expect_status("softmax launch", s, TILERT_OK)) {
            CU(cuCtxSynchronize());
            CU(cuMemcpyDtoH(y, dy, bytes));
            double err = rel_error(y, ref, count);
            if (!(err < 1e-5)) {
                printf("  softmax R=%d N=%d: relative error %g\n", rows, n, err);
                ok = false;
            }
        } else {
            ok = false;
        }
        CU(cuMemFree(dx));
        CU(cuMemFree(dy));
        free(x), free(y), free(ref);
    }
    /* assume(N <= BN) is checked before launching: a longer row is refused. */
    CUdeviceptr d = dev_alloc(8193 * sizeof(float));
    ok &= expect_status("softmax N=8193", softmax_softmax_launch(0, d, d, 1, 8193),
                        TILERT_ERR_ASSUME);
    CU(cuMemFree(d));
    return ok;
}

int main(void)
{
    CUresult r = cuInit(0);
    int ndev = 0;
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(&ndev);
    if (r != CUDA_SUCCESS || ndev == 0) {
        const char *name = NULL;
        if (r != CUDA_SUCCESS && (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name))
            name = "CUDA driver unavailable";   /* the toolkit's stub library answers so */
        printf("skipped: no CUDA device (%s)\n", r != CUDA_SUCCESS ? name : "none present");
        return 0;
    }
    tilert_context *ctx;
    if (tilert_init(0, &ctx) != TILERT_OK) {
        fprintf(stderr, "app: tilert_init: %s\n", tilert_last_error());
        return 1;
    }
    /* Allocations need a current context; launches then run in it. Loading up front is
     * optional (the first launch would do it) but moves the JIT out of the first launch. */
    CU(cuCtxPushCurrent(tilert_cu_context(ctx)));
    if (vecadd_load(ctx) != TILERT_OK || softmax_load(ctx) != TILERT_OK) {
        fprintf(stderr, "app: loading the kernels: %s\n", tilert_last_error());
        return 1;
    }
    rng_state = (unsigned long long)time(NULL) | 1;
    printf("seed %llu, device sm_%d\n", rng_state, tilert_device_arch(ctx));

    bool vecadd_ok = test_vecadd();
    printf("%s vecadd (%s, %d threads, %d registers predicted)\n", vecadd_ok ? "ok" : "FAIL",
           vecadd_code(), vecadd_vecadd_info.threads, vecadd_vecadd_info.pred_regs);
    bool softmax_ok = test_softmax();
    printf("%s softmax (%s, %d threads, %d registers predicted)\n", softmax_ok ? "ok" : "FAIL",
           softmax_code(), softmax_softmax_info.threads, softmax_softmax_info.pred_regs);

    vecadd_unload();
    softmax_unload();
    CUcontext popped;
    CU(cuCtxPopCurrent(&popped));
    tilert_release(ctx);
    return vecadd_ok && softmax_ok ? 0 : 1;
}
