/* layouts.c: products whose operands are in every layout (tests/gpu/kernels/layouts.tile): A row-
 * or column-major, B row- or column-major, for f16, bf16, tf32 and f32, written with .T and with
 * strides(...) views. Each operand is stored on the device in its own layout; the float64
 * product of the logical matrices (rounded as the tensor cores read them) is the reference, each
 * element within its bound (ref_util.h); outputs poisoned, sizes not tile multiples.
 * TILEC_TEST_SMALL: small sizes only. Usage: layouts EXAMPLES_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;
static tilert_module *mod;

typedef enum { P_F16, P_BF16, P_TF32, P_F32 } Prec;
static const char *const prec_name[] = { "f16", "bf16", "tf32", "f32" };

/* Element (r, c) of a rows x cols matrix stored row-major, or column-major when trans. */
static size_t at(bool trans, int rows, int cols, int r, int c)
{
    return trans ? (size_t)c * rows + r : (size_t)r * cols + c;
}

/* A device copy of the logical rows x cols matrix x in its layout (trans: column-major), as the
 * kernel's element type: 16-bit words for f16/bf16, else f32. */
static CUdeviceptr upload_as(Prec p, const float *x, int rows, int cols, bool trans)
{
    size_t n = (size_t)rows * cols;
    CUdeviceptr d = 0;
    if (p == P_F16 || p == P_BF16) {
        uint16_t *h = malloc(n * 2 + 2);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                float v = x[(size_t)r * cols + c];
                h[at(trans, rows, cols, r, c)] = p == P_F16 ? to_f16(v) : to_bf16(v);
            }
        if (!gpu_alloc(&d, n * 2 + 16) || !gpu_upload(d, h, n * 2))
            d = 0;
        free(h);
        return d;
    }
    float *h = malloc(n * 4 + 4);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            h[at(trans, rows, cols, r, c)] = x[(size_t)r * cols + c];
    d = gpu_new_from(h, n);
    free(h);
    return d;
}

/* Random values exactly representable in p's storage type, and (tf32) the interval the tensor
 * cores may read each as. */
static void operand(Prec p, float *x, float *mid, float *rad, size_t n)
{
    rng_fill(x, n, -1, 1);
    for (size_t i = 0; i < n; i++) {
        if (p == P_F16)
            x[i] = from_f16(to_f16(x[i]));
        else if (p == P_BF16)
            x[i] = from_bf16(to_bf16(x[i]));
        mid[i] = x[i];
        rad[i] = 0;
        if (p == P_TF32)
            tf32_operand(x[i], &mid[i], &rad[i]);
    }
}

/* mm_<prec>_<layout>: C = A @ B with A transposed in memory when ta, B when tb. The kernels'
 * arguments are A, B, C and then the sizes in order of first appearance: M, K, N, except
 * tt (A declared [K, M]): K, M, N. */
static void product(const char *kname, Prec p, bool ta, bool tb, bool sizes_kmn, int m, int n, int kk)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s (%s, A%s @ B%s) M=%d N=%d K=%d", kname, prec_name[p], ta ? "^T" : "",
             tb ? "^T" : "", m, n, kk);
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *a = malloc(sa * 4 + 4), *am = malloc(sa * 4 + 4), *ar = malloc(sa * 4 + 4);
    float *b = malloc(sb * 4 + 4), *bm = malloc(sb * 4 + 4), *br = malloc(sb * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    operand(p, a, am, ar, sa);
    operand(p, b, bm, br, sb);
    ref_matmul_bound(am, p == P_TF32 ? ar : NULL, bm, p == P_TF32 ? br : NULL, ref, bound, m, n, kk,
                     p == P_F32 ? SUM_FMA : SUM_TENSOR);
    CUdeviceptr da = upload_as(p, a, m, kk, ta), db = upload_as(p, b, kk, n, tb);
    CUdeviceptr dc = gpu_new_filled(sc, 0x7fc00001u);
    tilert_kernel *k = NULL;
    if (tilert_get_kernel(mod, kname, &k) != TILERT_OK) {
        printf("FAIL %s: %s\n", kname, tilert_last_error());
        failed++;
    } else if (da && db && dc) {
        tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc),
                              tilert_i32(sizes_kmn ? kk : m), tilert_i32(sizes_kmn ? m : kk), tilert_i32(n) };
        float *h = malloc(sc * 4 + 4);
        tilert_status s = tilert_launch(k, 0, args, 6);
        if (s != TILERT_OK || !gpu_sync() || !gpu_download(h, dc, sc * 4)) {
            printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
            failed++;
        } else {
            report_outputs(desc, h, ref, bound, sc, (size_t)n) ? passed++ : failed++;
        }
        free(h);
    }
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(am), free(ar), free(b), free(bm), free(br), free(ref), free(bound);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "operand layouts");
    if (rc >= 0)
        return rc;
    char path[512];
    snprintf(path, sizeof path, "%s/layouts/layouts.ptx", dir);
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        return 1;
    }
    /* every size a multiple of 8 (the kernels assume it of their contiguous dimensions), none
       of the tiles' (128 x 128 x 64 and 32, 64 x 64 x 16) except the first small one */
    static const int sizes[][3] = { { 8, 8, 8 }, { 136, 200, 72 }, { 264, 136, 200 }, { 128, 128, 128 } };
    static const int sizes_small[][3] = { { 8, 8, 8 }, { 136, 72, 40 } };
    bool small = test_small();
    static const char *const layouts[] = { "nn", "nt", "tn", "tt" };
    for (int p = P_F16; p <= P_F32; p++)
        for (int l = 0; l < 4; l++)
            for (size_t i = 0; i < (small ? COUNT(sizes_small) : COUNT(sizes)); i++) {
                const int *s = small ? sizes_small[i] : sizes[i];
                char kname[32];
                snprintf(kname, sizeof kname, "mm_%s_%s", prec_name[p], layouts[l]);
                product(kname, (Prec)p, l >= 2, l % 2 == 1, l == 3, s[0], s[1], s[2]);
            }
    /* other tile shapes, thread and stage counts, each on its path (sizes multiples of 8) */
    static const struct { const char *name; Prec p; bool ta, tb, kmn; } shapes[] = {
        { "mm_bf16_tt_wide", P_BF16, true, true, false }, { "mm_f16_nt_small", P_F16, false, true, false },
        { "mm_f16_nt_wg", P_F16, false, true, false }, { "mm_tf32_nt_wg", P_TF32, false, true, false },
        { "mm_tf32_tn_small", P_TF32, true, false, false }, { "mm_f32_nt_wide", P_F32, false, true, false },
        { "mm_f16_tn_wg", P_F16, true, false, false }, { "mm_f16_nn_wg", P_F16, false, false, false },
        /* no pipeline: the transposed operand staged through registers */
        { "mm_f16_nt_plain", P_F16, false, true, false }, { "mm_bf16_tt_plain", P_BF16, true, true, false },
        { "mm_tf32_nt_plain", P_TF32, false, true, false }, { "mm_f32_tn_plain", P_F32, true, false, false },
        /* tf32 A^T @ B with B turned K-major in shared memory (sm_90a): two k slabs and two chunk
           columns a thread, a 256-wide tile */
        { "mm_tf32_tn_wg", P_TF32, true, false, true }, { "mm_tf32_tn_wide", P_TF32, true, false, false },
    };
    static const int shape_sizes[][3] = { { 8, 8, 8 }, { 72, 264, 40 }, { 264, 136, 96 } };
    for (size_t j = 0; j < COUNT(shapes); j++)
        for (size_t i = small ? 1 : 0; i < (small ? 2 : COUNT(shape_sizes)); i++)
            product(shapes[j].name, shapes[j].p, shapes[j].ta, shapes[j].tb, shapes[j].kmn, shape_sizes[i][0],
                    shape_sizes[i][1], shape_sizes[i][2]);
    /* a transposed operand the pipeline cannot copy (no alignment facts): odd sizes */
    static const int odd[][3] = { { 1, 1, 1 }, { 7, 9, 13 }, { 100, 70, 45 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(odd)); i++) {
        product("mm_f16_nt_unaligned", P_F16, false, true, false, odd[i][0], odd[i][1], odd[i][2]);
        /* ... and one the transposing copy takes in 4-byte pieces */
        product("mm_tf32_tn_unaligned", P_TF32, true, false, false, odd[i][0], odd[i][1], odd[i][2]);
    }
    /* ... and where the launch's sizes make their rows 16-byte aligned, which takes the loop's
       other version, copying in 16-byte pieces (lower_version.c) */
    product("mm_f16_nt_unaligned", P_F16, false, true, false, 136, 72, 96);
    product("mm_tf32_tn_unaligned", P_TF32, true, false, false, 136, 72, 96);
    /* 64 x 256 tiles without the facts (the staged version in bands of rows): odd sizes, several
       iterations, and aligned sizes, which take the copying version */
    static const int band[][3] = { { 7, 9, 13 }, { 100, 300, 131 }, { 136, 264, 200 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(band)); i++) {
        product("mm_f16_nn_band", P_F16, false, false, false, band[i][0], band[i][1], band[i][2]);
        product("mm_bf16_nt_band", P_BF16, false, true, false, band[i][0], band[i][1], band[i][2]);
    }
    if (!small) {
        product("mm_tf32_tn_unaligned", P_TF32, true, false, false, 130, 261, 77);
        /* grids of 35 x 35 and 35 x 34 blocks of 64 x 64: at least 8 a multiprocessor on any
           current GPU, where the compiler numbers the blocks down 8 rows at a time (the last
           group 3 rows) */
        product("mm_f32_nn", P_F32, false, false, false, 2200, 2200, 8);
        product("mm_f32_tt", P_F32, true, true, true, 2216, 2176, 24);
    }
    tilert_unload(mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
