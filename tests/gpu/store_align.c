/* store_align.c: stores the facts cannot prove aligned (tests/gpu/kernels/store_align.tile). Each
 * kernel's epilogue tests the output's row length, stride, column start and pointer at the launch
 * and takes vector stores where they allow, element stores where they do not; this runs both:
 * even and odd row lengths and strides, even and odd column offsets, and the output one element
 * past an aligned address. Inputs are small integers, so every product is exact in f32 and in
 * the 16-bit outputs: each written element must equal the reference, and every element outside
 * the window (the gap of a strided view, the columns before the offset, the words before and after
 * the output) must still hold the poison. Usage: store_align EXAMPLES_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;
static tilert_module *mod;

typedef enum { K_F16, K_BF16_LD, K_F32_OFF, K_FFMA, K_WG } Kind;
static const char *const kname[] = { "st_f16", "st_bf16_ld", "st_f32_off", "st_ffma", "st_wg" };

enum { SLACK = 64, POISON16 = 0x7e01 };

/* n values in {-1, 0, 1}: sums of up to 256 of their products are exact in bf16 */
static void small_ints(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(rng_next() % 3) - 1);
}

/* A device copy of x (n values) as 16-bit words (bf16 when bf, else f16) or as f32. */
static CUdeviceptr upload(const float *x, size_t n, int bytes, bool bf)
{
    if (bytes == 4)
        return gpu_new_from(x, n);
    uint16_t *h = malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        h[i] = bf ? to_bf16(x[i]) : to_f16(x[i]);
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, n * 2 + 16) || !gpu_upload(d, h, n * 2))
        d = 0;
    free(h);
    return d;
}

/* The kernel, after the setup (ok) succeeded; NULL and a failure counted otherwise. */
static tilert_kernel *kernel_for(const char *desc, bool ok, const char *name)
{
    tilert_kernel *k = NULL;
    if (!ok || tilert_get_kernel(mod, name, &k) != TILERT_OK) {
        printf("FAIL %s: setup: %s\n", desc, ok ? tilert_last_error() : "device memory");
        failed++;
        return NULL;
    }
    return k;
}

/* Launches k and downloads `bytes` of out into host; false and a failure counted if any step fails. */
static bool launch_fetch(const char *desc, tilert_kernel *k, tilert_arg *args, int na, void *host, CUdeviceptr out,
                         size_t bytes)
{
    tilert_status s = tilert_launch(k, 0, args, na);
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(host, out, bytes)) {
        printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        return false;
    }
    return true;
}

/* bad wrong elements of total, the first at word `first` */
static void verdict(const char *desc, size_t bad, size_t total, size_t first)
{
    if (bad) {
        printf("FAIL %s: %zu of %zu elements wrong, the first at word %zu\n", desc, bad, total, first);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
}

/* C (M x N, row stride ld, starting `col` columns in and `shift` elements past an aligned
 * address) = A @ B (+ bias) by kernel `kind`. */
static void run(Kind kind, int m, int n, int kk, int ld, int col, int shift)
{
    char desc[160];
    snprintf(desc, sizeof desc, "%s M=%d N=%d K=%d ld=%d col=%d pointer+%d", kname[kind], m, n, kk, ld, col, shift);
    bool f32in = kind == K_FFMA, bf = kind == K_BF16_LD;
    int es = kind == K_F32_OFF || kind == K_FFMA ? 4 : 2;
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n;
    size_t total = (size_t)shift + (size_t)m * ld + SLACK;
    float *a = malloc(sa * 4 + 4), *b = malloc(sb * 4 + 4), *bias = malloc((size_t)n * 4 + 4);
    unsigned char *out = malloc(total * es);
    small_ints(a, sa);
    small_ints(b, sb);
    small_ints(bias, (size_t)n);
    /* B is stored [N, K] except for the FFMA kernel's [K, N]: b holds it as stored */
    CUdeviceptr da = upload(a, sa, f32in ? 4 : 2, bf), db = upload(b, sb, f32in ? 4 : 2, bf);
    CUdeviceptr dbias = kind == K_BF16_LD ? upload(bias, (size_t)n, 2, true) : 0, dc = 0;
    bool ok = da && db && (kind != K_BF16_LD || dbias) && gpu_alloc(&dc, total * es + 16);
    if (ok) {
        if (es == 4)
            ok = gpu_fill32(dc, GPU_POISON, total);
        else
            ok = gpu_fill32(dc, POISON16 * 0x10001u, (total + 1) / 2);
    }
    tilert_kernel *k = kernel_for(desc, ok, kname[kind]);
    if (!k)
        goto done;
    CUdeviceptr c = dc + (CUdeviceptr)shift * es;
    tilert_arg args[9];
    int na = 0;
    args[na++] = tilert_ptr(da);
    args[na++] = tilert_ptr(db);
    if (kind == K_BF16_LD)
        args[na++] = tilert_ptr(dbias);
    args[na++] = tilert_ptr(c);
    if (kind == K_F32_OFF)
        args[na++] = tilert_i32(col);
    args[na++] = tilert_i32(m);
    args[na++] = tilert_i32(kk);
    args[na++] = tilert_i32(n);
    if (kind == K_BF16_LD || kind == K_F32_OFF)
        args[na++] = tilert_i32(ld);      /* LDC, or P (the row length of C[M, P]) */
    if (!launch_fetch(desc, k, args, na, out, dc, total * es))
        goto done;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < total; i++) {
        long long r = ((long long)i - shift) / ld, cc = ((long long)i - shift) % ld - col;
        bool inside = (long long)i >= shift && r < m && cc >= 0 && cc < n;
        double want = 0;
        if (inside) {
            for (int t = 0; t < kk; t++)
                want += (double)a[(size_t)r * kk + t] *
                        (f32in ? b[(size_t)t * n + cc] : b[(size_t)cc * kk + t]);
            if (kind == K_BF16_LD)
                want += bias[cc];
        }
        bool good;
        if (es == 4) {
            float v;
            uint32_t w;
            memcpy(&v, out + i * 4, 4);
            memcpy(&w, out + i * 4, 4);
            good = inside ? v == (float)want : w == GPU_POISON;
        } else {
            uint16_t w;
            memcpy(&w, out + i * 2, 2);
            good = inside ? (bf ? from_bf16(w) : from_f16(w)) == (float)want : w == POISON16;
        }
        if (!good && !bad++)
            first = i;
    }
    verdict(desc, bad, total, first);
done:
    gpu_free(da), gpu_free(db), gpu_free(dbias), gpu_free(dc);
    free(a), free(b), free(bias), free(out);
}

/* st_wg_ld: C (M x N, f16) = A @ B^T with B's N rows LDB elements apart (LDB >= K), no assume:
 * the loop's copying version needs K and LDB multiples of 8 (the rows' distance and their
 * length), and the pointers aligned; the other loads B in each iteration. */
static void run_ldb(int m, int n, int kk, int ldb, int shift)
{
    char desc[160];
    snprintf(desc, sizeof desc, "st_wg_ld M=%d N=%d K=%d LDB=%d pointer+%d", m, n, kk, ldb, shift);
    size_t sa = (size_t)m * kk, sb = (size_t)n * ldb, sc = (size_t)m * n, total = (size_t)shift + sc + SLACK;
    float *a = malloc(sa * 4 + 4), *b = malloc(sb * 4 + 4);
    uint16_t *out = malloc(total * 2 + 2);
    small_ints(a, sa);
    small_ints(b, sb);
    CUdeviceptr da = upload(a, sa, 2, false), db = upload(b, sb, 2, false), dc = 0;
    bool ok = da && db && gpu_alloc(&dc, total * 2 + 16) && gpu_fill32(dc, POISON16 * 0x10001u, (total + 1) / 2);
    tilert_kernel *k = kernel_for(desc, ok, "st_wg_ld");
    if (!k)
        goto done;
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc + (CUdeviceptr)shift * 2), tilert_i32(m),
                          tilert_i32(kk), tilert_i32(n), tilert_i32(ldb) };
    if (!launch_fetch(desc, k, args, 7, out, dc, total * 2))
        goto done;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < total; i++) {
        bool inside = i >= (size_t)shift && i - shift < sc;
        double want = 0;
        if (inside) {
            size_t r = (i - shift) / n, cc = (i - shift) % n;
            for (int t = 0; t < kk; t++)
                want += (double)a[r * kk + t] * b[cc * ldb + t];
        }
        bool good = inside ? from_f16(out[i]) == (float)want : out[i] == POISON16;
        if (!good && !bad++)
            first = i;
    }
    verdict(desc, bad, total, first);
done:
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(b), free(out);
}

/* st_gather_mm: Y[i, :] = X[perm[i], :] @ W (f32 out), no assume: the gathered rows of X are K
 * apart and W's E, so the loop's copying version needs K and E multiples of 8; any rows picked
 * (repeats too). */
static void run_gather(int m, int nx, int kk, int e)
{
    char desc[160];
    snprintf(desc, sizeof desc, "st_gather_mm M=%d rows of %d, K=%d E=%d", m, nx, kk, e);
    size_t sx = (size_t)nx * kk, sw = (size_t)kk * e, sy = (size_t)m * e;
    float *x = malloc(sx * 4 + 4), *w = malloc(sw * 4 + 4), *y = malloc(sy * 4 + 4);
    int32_t *perm = malloc((size_t)m * 4 + 4);
    small_ints(x, sx);
    small_ints(w, sw);
    for (int i = 0; i < m; i++)
        perm[i] = (int32_t)(rng_next() % (uint64_t)nx);
    CUdeviceptr dp = gpu_new_from(perm, (size_t)m), dx = upload(x, sx, 2, false), dw = upload(w, sw, 2, false);
    CUdeviceptr dy = 0;
    bool ok = dp && dx && dw && gpu_alloc(&dy, sy * 4 + 16) && gpu_fill32(dy, GPU_POISON, sy);
    tilert_kernel *k = kernel_for(desc, ok, "st_gather_mm");
    if (!k)
        goto done;
    tilert_arg args[] = { tilert_ptr(dp), tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(dy), tilert_i32(m),
                          tilert_i32(nx), tilert_i32(kk), tilert_i32(e) };
    if (!launch_fetch(desc, k, args, 8, y, dy, sy * 4))
        goto done;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < sy; i++) {
        size_t r = i / e, cc = i % e;
        double want = 0;
        for (int t = 0; t < kk; t++)
            want += (double)x[(size_t)perm[r] * kk + t] * w[(size_t)t * e + cc];
        if (y[i] != (float)want && !bad++)
            first = i;
    }
    verdict(desc, bad, sy, first);
done:
    gpu_free(dp), gpu_free(dx), gpu_free(dw), gpu_free(dy);
    free(x), free(w), free(y), free(perm);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "stores versioned on alignment");
    if (rc >= 0)
        return rc;
    char path[512];
    snprintf(path, sizeof path, "%s/store_align/store_align.ptx", dir);
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        return 1;
    }
    /* M, N, K: tile multiples, neither, and smaller than a tile; K a multiple of 8 (assumed) */
    static const int mnk[][3] = { { 128, 128, 64 }, { 100, 131, 40 }, { 7, 9, 8 }, { 65, 66, 136 } };
    size_t nsizes = test_small() ? 2 : COUNT(mnk);
    for (size_t i = 0; i < nsizes; i++) {
        int m = mnk[i][0], n = mnk[i][1], kk = mnk[i][2];
        for (int shift = 0; shift <= 1; shift++) {
            run(K_F16, m, n, kk, n, 0, shift);
            run(K_FFMA, m, n, kk, n, 0, shift);
            /* a row stride even and odd, past the row length */
            run(K_BF16_LD, m, n, kk, n + (n % 2 ? 1 : 0), 0, shift);
            run(K_BF16_LD, m, n, kk, n + (n % 2 ? 0 : 1), 0, shift);
            /* columns from an offset: even and odd (C is [M, col + N]) */
            run(K_F32_OFF, m, n, kk, n + 2, 2, shift);
            run(K_F32_OFF, m, n, kk, n + 3, 3, shift);
        }
    }
    /* st_wg, no assume at all: on sm_90a the loop by TMA and the store by TMA where K, N and the
       pointers are 16-byte multiples, cp.async-free loads and registers' stores where not */
    static const int wg[][3] = { { 200, 136, 192 }, { 130, 131, 100 }, { 257, 264, 72 }, { 64, 200, 260 } };
    nsizes = test_small() ? 2 : COUNT(wg);
    for (size_t i = 0; i < nsizes; i++)
        for (int shift = 0; shift <= 1; shift++)
            run(K_WG, wg[i][0], wg[i][1], wg[i][2], wg[i][1], 0, shift);
    /* M, N, K, LDB: all multiples (the copying version), K odd, LDB odd, both */
    static const int ld[][4] = { { 200, 136, 192, 200 }, { 130, 131, 100, 104 }, { 64, 72, 128, 131 }, { 257, 264, 75, 77 } };
    nsizes = test_small() ? 2 : COUNT(ld);
    for (size_t i = 0; i < nsizes; i++)
        run_ldb(ld[i][0], ld[i][1], ld[i][2], ld[i][3], 0);
    /* M, rows of X, K, E: K and E multiples of 8 (the copying version), then not */
    static const int gm[][4] = { { 200, 300, 96, 136 }, { 130, 50, 37, 70 }, { 64, 64, 64, 66 }, { 257, 1000, 100, 64 } };
    nsizes = test_small() ? 2 : COUNT(gm);
    for (size_t i = 0; i < nsizes; i++)
        run_gather(gm[i][0], gm[i][1], gm[i][2], gm[i][3]);
    tilert_unload(mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
