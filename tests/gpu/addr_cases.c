/* addr_cases.c: kernels where a naive base + offset split would be wrong, compiled with and
 * without address splitting (DIR/addr/addr_cases.ptx, DIR/addr/noaddrsplit/addr_cases.ptx from
 * tests/addr/addr_cases.tile), against a CPU reference:
 *   neg_start   a window starting 3 elements before the tensor (negative offsets, fill lanes)
 *   far_rows    rows 12 MiB apart, 8 rows a thread (offsets past the immediate range)
 *   near_wrap   an index i0 + s + 5 with s near +-2^31 (32-bit wrap under the widening)
 * Every case: fresh random inputs (seed printed; TILEC_TEST_SEED repeats), outputs poisoned with
 * a NaN pattern plus a poisoned guard zone after them; the output must match exactly (copies and
 * doublings are exact) and the guard must be untouched.
 * usage: addr_cases [DIR]   Without a CUDA device: prints that it skipped and succeeds.
 * TILEC_TEST_SMALL: the same cases but the larger sizes of neg_start and near_wrap. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

enum { GUARD = 1024, W = 3145728 };

static int passed, failed;

static void report(bool ok, const char *variant, const char *desc, const char *why)
{
    printf("%s %s %s%s%s\n", ok ? "ok" : "FAIL", variant, desc, ok ? "" : ": ", ok ? "" : why);
    ok ? passed++ : failed++;
}

/* Runs kernel k on input x (n floats) writing y (n floats); args is filled by the caller with
 * the two pointers in slots 0 and 1. Compares y with ref exactly. */
static void run(tilert_kernel *k, const char *variant, const char *desc, const float *x, const float *ref, size_t n,
                tilert_arg *args, int nargs)
{
    CUdeviceptr dx = 0, dy = 0;
    float *y = malloc((n + GUARD) * sizeof(float));
    char why[256] = "";
    bool ok = y && gpu_alloc(&dx, n * 4) && gpu_alloc(&dy, (n + GUARD) * 4) && gpu_upload(dx, x, n * 4) &&
              gpu_fill32(dy, GPU_POISON, n + GUARD);
    if (!ok) {
        report(false, variant, desc, "setup failed");
        goto done;
    }
    args[0] = tilert_ptr(dx);
    args[1] = tilert_ptr(dy);
    tilert_status s = tilert_launch(k, 0, args, nargs);
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(y, dy, (n + GUARD) * 4)) {
        snprintf(why, sizeof why, "launch: %s %s", tilert_status_name(s), s ? tilert_last_error() : "");
        report(false, variant, desc, why);
        goto done;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&y[i], &ref[i], 4) && !bad++)
            first = i;
    size_t touched = count_changed(y + n, GUARD, GPU_POISON);
    if (bad)
        snprintf(why, sizeof why, "%zu of %zu wrong, first at %zu: %g, want %g", bad, n, first, y[first], ref[first]);
    else if (touched)
        snprintf(why, sizeof why, "%zu guard words written past the output", touched);
    report(!bad && !touched, variant, desc, why);
done:
    gpu_free(dx);
    gpu_free(dy);
    free(y);
}

static void neg_start(tilert_kernel *k, const char *variant, int n)
{
    float *x = malloc((size_t)n * 4 + 4), *ref = malloc((size_t)n * 4 + 4);
    rng_fill(x, (size_t)n, -1, 1);
    for (int i = 0; i < n; i++)   /* block b reads X[256b - 3 + t] */
        ref[i] = i - 3 >= 0 ? x[i - 3] : 0.0f;
    char desc[64];
    snprintf(desc, sizeof desc, "neg_start N=%d", n);
    tilert_arg a[3];
    a[2] = tilert_i32(n);
    run(k, variant, desc, x, ref, (size_t)n, a, 3);
    free(x), free(ref);
}

static void far_rows(tilert_kernel *k, const char *variant)
{
    size_t n = (size_t)8 * W;
    float *x = malloc(n * 4), *ref = malloc(n * 4);
    rng_fill(x, n, -1, 1);
    for (size_t i = 0; i < n; i++)
        ref[i] = x[i] * 2;
    tilert_arg a[2];
    run(k, variant, "far_rows 8 x 3145728 (rows 12 MiB apart)", x, ref, n, a, 2);
    free(x), free(ref);
}

static void near_wrap(tilert_kernel *k, const char *variant, int n, int32_t s)
{
    float *x = malloc((size_t)n * 4 + 4), *ref = malloc((size_t)n * 4 + 4);
    rng_fill(x, (size_t)n, -1, 1);
    for (int i = 0; i < n; i++) {
        /* the language's i32 arithmetic wraps; lanes outside [0, N) read the fill */
        int32_t idx = (int32_t)((uint32_t)i + (uint32_t)s + 5u);
        ref[i] = idx >= 0 && idx < n ? x[idx] : -1.0f;
    }
    char desc[64];
    snprintf(desc, sizeof desc, "near_wrap N=%d s=%ld", n, (long)s);
    tilert_arg a[4];
    a[2] = tilert_i32(s);
    a[3] = tilert_i32(n);
    run(k, variant, desc, x, ref, (size_t)n, a, 4);
    free(x), free(ref);
}

static void run_module(tilert_context *ctx, const char *path, const char *variant)
{
    tilert_module *mod;
    tilert_kernel *kn, *kf, *kw;
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL %s load %s: %s\n", variant, path, tilert_last_error());
        failed++;
        return;
    }
    if (tilert_get_kernel(mod, "neg_start", &kn) != TILERT_OK || tilert_get_kernel(mod, "far_rows", &kf) != TILERT_OK ||
        tilert_get_kernel(mod, "near_wrap", &kw) != TILERT_OK) {
        printf("FAIL %s kernels in %s: %s\n", variant, path, tilert_last_error());
        failed++;
        tilert_unload(mod);
        return;
    }
    static const int sizes[] = { 1, 3, 255, 256, 1000, 65536 + 7 };
    size_t nsizes = sizeof sizes / sizeof *sizes - (test_small() ? 1 : 0);
    for (size_t i = 0; i < nsizes; i++)
        neg_start(kn, variant, sizes[i]);
    far_rows(kf, variant);
    static const int32_t shifts[] = { 0, -3, -8, 100, INT32_MAX, INT32_MAX - 5, INT32_MAX - 300, INT32_MIN,
                                      INT32_MIN + 3, -INT32_MAX + 1000 };
    for (size_t i = 0; i < sizeof shifts / sizeof *shifts; i++) {
        near_wrap(kw, variant, 1000, shifts[i]);
        if (!test_small())
            near_wrap(kw, variant, 70001, shifts[i]);
    }
    tilert_unload(mod);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "address splitting cases");
    if (rc >= 0)
        return rc;
    char path[1024];
    snprintf(path, sizeof path, "%s/addr/addr_cases.ptx", dir);
    run_module(ctx, path, "[split]");
    snprintf(path, sizeof path, "%s/addr/noaddrsplit/addr_cases.ptx", dir);
    run_module(ctx, path, "[-fno-addr-split]");
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
