/* tuned.c: the dispatch of tuned launchers (runtime/tuned.c) on a GPU: a softmax in two variants,
 * the file's own (BN=8192) and BN=4096, with one size class (N=4096) naming the second. A launch
 * the second's assume(N <= BN) refuses must run the first instead, and give the right rows; one
 * both refuse must fail with TILERT_ERR_ASSUME and launch nothing.
 *
 * usage: tuned [DIR]   (DIR: the compiled examples, default build/examples; needs
 * DIR/softmax.ptx and DIR/tuned/softmax_bn4096.ptx). Without a device: skips. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

static int passed, failed;

static void check(bool ok, const char *what)
{
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    if (ok)
        passed++;
    else
        failed++;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    long n;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (s = malloc((size_t)n + 1)) != NULL) {
        if (fread(s, 1, (size_t)n, f) != (size_t)n) {
            free(s);
            s = NULL;
        } else {
            s[n] = 0;
        }
    }
    fclose(f);
    return s;
}

/* The PTX's `.target` ("sm_80"), as tilert_embedded wants it. */
static void ptx_target(const char *ptx, char *out, size_t size)
{
    const char *p = strstr(ptx, "\n.target ");
    snprintf(out, size, "sm_80");
    if (p)
        sscanf(p + 9, "%15[a-z0-9_]", out);
}

/* One launch through the dispatch at R x N: its status, and with TILERT_OK the rows checked
 * against a double-precision softmax. */
static void run(const tilert_tuned *t, int rows, int n, tilert_status want, const char *what)
{
    size_t count = (size_t)rows * (size_t)n;
    float *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
    CUdeviceptr dx = 0, dy = 0;
    bool ok = x && y && gpu_alloc(&dx, count * 4 + 16) && gpu_alloc(&dy, count * 4 + 16);
    if (ok) {
        rng_fill(x, count, -4.0f, 4.0f);
        ok = gpu_upload(dx, x, count * 4) && gpu_fill32(dy, GPU_POISON, count);
    }
    tilert_status st = TILERT_ERR_CUDA;
    if (ok) {
        tilert_arg args[4] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
        const int32_t sizes[2] = { rows, n };
        st = tilert_tuned_launch(t, 0, args, 4, sizes);
        ok = gpu_sync() && gpu_download(y, dy, count * 4);
    }
    char name[200];
    snprintf(name, sizeof name, "%s: R=%d N=%d gives %s (got %s%s%s)", what, rows, n,
             tilert_status_name(want), tilert_status_name(st), st ? ": " : "",
             st ? tilert_last_error() : "");
    double worst = 0;
    if (ok && st == TILERT_OK)
        for (int r = 0; r < rows; r++) {
            double m = -INFINITY, s = 0;
            for (int j = 0; j < n; j++)
                m = fmax(m, x[(size_t)r * n + j]);
            for (int j = 0; j < n; j++)
                s += exp(x[(size_t)r * n + j] - m);
            for (int j = 0; j < n; j++) {
                double e = fabs(y[(size_t)r * n + j] - exp(x[(size_t)r * n + j] - m) / s);
                if (isnan(e) || e > worst)
                    worst = isnan(e) ? INFINITY : e;
            }
        }
    if (ok && st == TILERT_ERR_ASSUME) {   /* nothing ran: Y still poisoned */
        uint32_t w;
        memcpy(&w, &y[0], 4);
        ok = w == GPU_POISON;
    }
    check(ok && st == want && worst < 1e-5, name);
    gpu_free(dx);
    gpu_free(dy);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    tilert_context *ctx;
    int rc = gpu_test_begin(&ctx, "tuned");
    if (rc >= 0)
        return rc;
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    char path[1024], arch0[16], arch1[16];
    snprintf(path, sizeof path, "%s/softmax.ptx", dir);
    char *ptx0 = read_text(path);
    snprintf(path, sizeof path, "%s/tuned/softmax_bn4096.ptx", dir);
    char *ptx1 = read_text(path);
    if (!ptx0 || !ptx1) {
        printf("FAIL cannot read %s/softmax.ptx and %s\n0 passed, 1 failed\n", dir, path);
        gpu_close(ctx);
        return 1;
    }
    ptx_target(ptx0, arch0, sizeof arch0);
    ptx_target(ptx1, arch1, sizeof arch1);
    static const char *const names[1] = { "softmax" };
    tilert_embedded v0 = { "tuned_v0", ptx0, arch0, NULL, NULL, 0, names, 1, NULL };
    tilert_embedded v1 = { "tuned_v1", ptx1, arch1, NULL, NULL, 0, names, 1, NULL };
    tilert_embedded *const variants[2] = { &v0, &v1 };
    static const int32_t classes[2] = { 64, 4096 };
    static const int class_variant[1] = { 1 };
    const tilert_tuned t = { variants, 2, 0, 2, classes, class_variant, 1 };

    const int32_t at8192[2] = { 37, 8192 };
    check(tilert_tuned_variant(&t, at8192) == 1, "the only class names variant 1 everywhere");
    run(&t, 37, 1000, TILERT_OK, "variant 1 takes it");
    run(&t, 37, 4096, TILERT_OK, "variant 1 takes it");
    run(&t, 37, 8192, TILERT_OK, "variant 1 refuses, variant 0 takes it");
    run(&t, 5, 6000, TILERT_OK, "variant 1 refuses, variant 0 takes it");
    run(&t, 3, 9000, TILERT_ERR_ASSUME, "both refuse");
    tilert_embedded_unload(&v0);
    tilert_embedded_unload(&v1);
    free(ptx0);
    free(ptx1);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
