/* matmul8.c: products of 8-bit operands (tests/gpu/kernels/matmul8.tile) against references
 * computed here. i8 and u8 products summed in i32 must be exact (the sizes keep every sum within
 * i32). fp8 products are checked two ways: operands that are small integers (-4 .. 4, exact in
 * both formats) must give the exact sum, since every partial sum is an integer below 2^13 in
 * magnitude (K <= 512, |a b| <= 16), which even the tensor cores' reduced-precision fp8
 * accumulation (about 13 bits kept on sm_90) holds exactly; operands drawn from every finite code,
 * or positive ones over a long K (where an accumulation that is not promoted loses most of the
 * sum), must lie within docs/language.md's bound of the float64 sum: (min(K, W) 33/32 2^-13 +
 * (K / W + 1) 2^-23) sum |a b|, W = 128 (the windows' K). The scaled product's bf16 result must be within one
 * bf16 unit (2^-8 relative) of the exact value. Each kernel in its layout (nt, nn, tn, tt), on
 * each path (ldmatrix and wgmma for K-major operands, byte loads, staged values, windows loaded
 * in each iteration, the SIMT fallback), at sizes that are not tile multiples, outputs poisoned
 * and every element checked. The module is built for sm_89 (mma.sync) and sm_90a (wgmma where the
 * product is K-major); on a GPU older than sm_89 the test skips. The examples matmul_int8 and
 * matmul_fp8 (with per-row and per-column or block scales) are checked the same way, from
 * EXAMPLES_DIR. TILEC_TEST_SMALL: fewer sizes.
 * Usage: matmul8 EXAMPLES_DIR */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;

static void fail(const char *desc, const char *why)
{
    printf("FAIL %s: %s\n", desc, why);
    failed++;
}

/* A case's outcome: `bad` of n elements wrong, `why` describing the first. */
static void verdict(const char *desc, int bad, size_t n, const char *why)
{
    if (!bad) {
        passed++;
        return;
    }
    char m[320];
    snprintf(m, sizeof m, "%d of %zu wrong; first: %s", bad, n, why);
    fail(desc, m);
}

/* Launches kernel kname of mod on args and downloads `bytes` of out into host; false after a FAIL
 * line (a buffer that could not be made is a null pointer among the args). */
static bool launch_fetch(const char *desc, tilert_module *mod, const char *kname, const tilert_arg *args, int n,
                         CUdeviceptr out, void *host, size_t bytes)
{
    tilert_kernel *k;
    if (tilert_get_kernel(mod, kname, &k) != TILERT_OK) {
        fail(desc, tilert_last_error());
        return false;
    }
    bool made = true;
    for (int i = 0; i < n; i++)
        made &= args[i].kind != TILERT_ARG_PTR || args[i].v.ptr;
    tilert_status s = made ? tilert_launch(k, 0, args, n) : TILERT_ERR_CUDA;
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(host, out, bytes)) {
        fail(desc, s ? tilert_last_error() : "allocation, launch, synchronisation or download failed");
        return false;
    }
    return true;
}

/* ---- the element types */

typedef enum { T_I8, T_U8, T_E4M3, T_E5M2 } etype;
static const char *const tname[] = { "i8", "u8", "e4m3", "e5m2" };

static double value(etype t, uint8_t c)
{
    switch (t) {
    case T_I8: return (int8_t)c;
    case T_U8: return c;
    case T_E4M3: return from_e4m3(c);
    default: return from_e5m2(c);
    }
}

/* The code of the small integer v (-4 .. 4) in an fp8 format. */
static uint8_t fp8_code(etype t, int v)
{
    for (unsigned c = 0; c < 256; c++)
        if (value(t, (uint8_t)c) == v)
            return (uint8_t)c;
    return 0;
}

/* A random operand byte: any value for integers; for fp8 a small integer (exact), any finite
 * code (wide), or a code of 0.5 .. 1.5 (positive). */
typedef enum { V_EXACT, V_WIDE, V_POSITIVE } values;
static uint8_t random_code(etype t, values how)
{
    if (t == T_I8 || t == T_U8)
        return (uint8_t)rng_next();
    if (how == V_EXACT)
        return fp8_code(t, (int)(rng_next() % 9) - 4);
    if (how == V_POSITIVE)
        for (;;) {
            uint8_t c = (uint8_t)(rng_next() & 0x7f);
            if (value(t, c) >= 0.5 && value(t, c) <= 1.5)
                return c;
        }
    for (;;) {
        uint8_t c = (uint8_t)rng_next();
        if (isfinite(value(t, c)))
            return c;
    }
}

/* ---- the kernels */

/* once: acc = A @ B^T with '=' over K <= 64; shared: A through a shared var */
typedef enum { L_NT, L_NN, L_TN, L_TT, L_LOOSE, L_VALUES, L_ONCE, L_SHARED, L_SIMT } layout;
static const char *const lname[] = { "nt", "nn", "tn", "tt", "loose", "values", "once", "shared", "simt" };
/* A stored [K, M] (transposed), B stored [N, K] (transposed) */
static const bool a_trans[] = { false, false, true, true, true, false, false, false, false };
static const bool b_trans[] = { true, false, false, true, true, false, true, false, false };
/* the dimensions each kernel's assume() wants multiples of 16: M, N, K */
static const bool mult16[][3] = {
    { false, false, true }, { false, true, true }, { true, true, false }, { true, false, true },
    { false, false, false }, { false, false, false }, { false, false, false }, { false, false, false },
    { false, false, false },
};

static int up16(int x) { return (x + 15) / 16 * 16; }

/* Runs one case; returns whether it ran (the kernel exists and launched). */
/* The fp8 bound of docs/language.md ("Accuracy"): windows of W = 128 products (the kernels' k
 * step) summed in a fresh accumulator keeping 13 bits, then added in f32. */
static double fp8_bound(int K, double S)
{
    double W = 128, n = K < W ? K : W;
    return (n * 33 / 32 * ldexp(1, -13) + (ceil(K / W) + 1) * ldexp(1, -23)) * S;
}

/* One product of kernel mm_{A's type}[{B's, where it differs}]_{layout}. */
static void product_case(tilert_module *mod, const char *arch, etype t, etype tb, layout l, int M, int N, int K,
                         values how)
{
    char desc[160], kname[64];
    snprintf(kname, sizeof kname, "mm_%s%s_%s", tname[t], tb != t ? tname[tb] : "", lname[l]);
    snprintf(desc, sizeof desc, "%s %s M=%d N=%d K=%d%s", arch, kname, M, N, K,
             how == V_WIDE ? " wide" : how == V_POSITIVE ? " positive" : "");
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    uint8_t *a = malloc(na + 1), *b = malloc(nb + 1);
    uint32_t *c = malloc(4 * nc + 4);
    for (size_t i = 0; i < na; i++)
        a[i] = random_code(t, how);
    for (size_t i = 0; i < nb; i++)
        b[i] = random_code(tb, how);
    /* bytes: gpu_new_from counts 32-bit words */
    CUdeviceptr da = gpu_new_from(a, (na + 3) / 4), db = gpu_new_from(b, (nb + 3) / 4);
    CUdeviceptr dc = gpu_new_filled(nc, GPU_POISON);
    tilert_arg args[] = { tilert_ptr(dc), tilert_ptr(da), tilert_ptr(db), tilert_i32(M), tilert_i32(N), tilert_i32(K) };
    if (!launch_fetch(desc, mod, kname, args, 6, dc, c, 4 * nc))
        goto done;
    bool integer = t == T_I8 || t == T_U8;
    int bad = 0;
    char why[256] = "";
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (int kk = 0; kk < K; kk++) {
                uint8_t x = a_trans[l] ? a[(size_t)kk * M + i] : a[(size_t)i * K + kk];
                uint8_t y = b_trans[l] ? b[(size_t)j * K + kk] : b[(size_t)kk * N + j];
                double p = value(t, x) * value(tb, y);
                sum += p;
                mag += fabs(p);
            }
            uint32_t w = c[(size_t)i * N + j];
            double got;
            if (integer) {
                got = (int32_t)w;
            } else {
                float f;
                memcpy(&f, &w, 4);
                got = f;
            }
            double tol = integer || how == V_EXACT ? 0 : fp8_bound(K, mag);
            if (w == GPU_POISON || !(fabs(got - sum) <= tol)) {
                if (bad++ == 0)
                    snprintf(why, sizeof why, "C[%d, %d] = %.9g (0x%08x), want %.9g (within %.3g)", i, j, got,
                             (unsigned)w, sum, tol);
            }
        }
    verdict(desc, bad, nc, why);
done:
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(b), free(c);
}

/* ---- the examples: examples/matmul_int8.tile and examples/matmul_fp8.tile, K-major operands */

/* and matmul8.tile's mm_e4m3_scaled, matmul_fp8's product in another tile and argument order
 * (C first, then M, N, K) */
typedef enum { X_INT8, X_INT8_DEQUANT, X_FP8, X_FP8_BLOCK, X_SCALED } example;
static const char *const xname[] = { "matmul_int8", "matmul_int8_dequant", "matmul_fp8", "matmul_fp8_block",
                                     "mm_e4m3_scaled" };

/* One example at M x N x K: operands any i8 value, or fp8 small integers (exact sums); scales
 * random. Outputs: i32 exact; f16 within 2^-10 of the value (its rounding, the f32 products'
 * well below); bf16 within 2^-8, plus for block scales 2^-20 of the sum of the scaled blocks'
 * magnitudes (f32 additions of the scaled partial sums). */
static void example_case(tilert_module *mod, const char *arch, example x, int M, int N, int K)
{
    char desc[160];
    snprintf(desc, sizeof desc, "%s %s M=%d N=%d K=%d", arch, xname[x], M, N, K);
    etype t = x <= X_INT8_DEQUANT ? T_I8 : T_E4M3;
    int KB = (K + 127) / 128, NB = (N + 127) / 128;
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    size_t nsa = x == X_FP8_BLOCK ? (size_t)M * KB : (size_t)M, nsb = x == X_FP8_BLOCK ? (size_t)NB * KB : (size_t)N;
    uint8_t *a = malloc(na + 1), *b = malloc(nb + 1);
    uint32_t *c = malloc(4 * nc + 4);
    float *sa = malloc(4 * nsa + 4), *sb = malloc(4 * nsb + 4);
    for (size_t i = 0; i < na; i++)
        a[i] = random_code(t, V_EXACT);
    for (size_t i = 0; i < nb; i++)
        b[i] = random_code(t, V_EXACT);
    /* i8 sums reach millions: dequantizing scales keep the f16 results finite */
    float lo = x == X_INT8_DEQUANT ? 0.001f : 0.01f, hi = x == X_INT8_DEQUANT ? 0.01f : 2.0f;
    rng_fill(sa, nsa, lo, hi);
    rng_fill(sb, nsb, lo, hi);
    int esz = x == X_INT8 ? 4 : 2;
    CUdeviceptr da = gpu_new_from(a, (na + 3) / 4), db = gpu_new_from(b, (nb + 3) / 4);
    CUdeviceptr dsa = gpu_new_from(sa, nsa), dsb = gpu_new_from(sb, nsb);
    CUdeviceptr dc = gpu_new_filled((nc * esz + 3) / 4, GPU_POISON);
    tilert_arg args[10];
    int n = 0;
    if (x == X_SCALED)
        args[n++] = tilert_ptr(dc);
    args[n++] = tilert_ptr(da), args[n++] = tilert_ptr(db);
    if (x != X_INT8)
        args[n++] = tilert_ptr(dsa), args[n++] = tilert_ptr(dsb);
    if (x == X_SCALED) {
        args[n++] = tilert_i32(M), args[n++] = tilert_i32(N), args[n++] = tilert_i32(K);
    } else {
        args[n++] = tilert_ptr(dc);
        args[n++] = tilert_i32(M), args[n++] = tilert_i32(K), args[n++] = tilert_i32(N);
    }
    if (x == X_FP8_BLOCK)
        args[n++] = tilert_i32(KB), args[n++] = tilert_i32(NB);
    if (!launch_fetch(desc, mod, xname[x], args, n, dc, c, nc * esz))
        goto done;
    int bad = 0;
    char why[256] = "";
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0, part = 0;
            for (int kk = 0; kk < K; kk++) {
                part += value(t, a[(size_t)i * K + kk]) * value(t, b[(size_t)j * K + kk]);
                if (x == X_FP8_BLOCK && (kk % 128 == 127 || kk == K - 1)) {
                    double scaled = part * sa[(size_t)i * KB + kk / 128] * sb[(size_t)(j / 128) * KB + kk / 128];
                    want += scaled, mag += fabs(scaled), part = 0;
                }
            }
            if (x != X_FP8_BLOCK)
                want = x == X_INT8 ? part : part * sa[i] * sb[j];
            size_t e = (size_t)i * N + j;
            double got, tol;
            if (x == X_INT8) {
                got = (int32_t)c[e], tol = c[e] == GPU_POISON ? -1 : 0;
            } else {
                uint16_t h;
                memcpy(&h, (const char *)c + 2 * e, 2);
                got = x == X_INT8_DEQUANT ? from_f16(h) : from_bf16(h);
                tol = x == X_INT8_DEQUANT ? ldexp(fabs(want), -10) + ldexp(1, -24)
                                          : ldexp(fabs(want), -8) + ldexp(mag, -20);
            }
            if (!(fabs(got - want) <= tol) && bad++ == 0)
                snprintf(why, sizeof why, "C[%d, %d] = %.9g, want %.9g", i, j, got, want);
        }
    verdict(desc, bad, nc, why);
done:
    gpu_free(da), gpu_free(db), gpu_free(dc), gpu_free(dsa), gpu_free(dsb);
    free(a), free(b), free(c), free(sa), free(sb);
}

static void run_examples(tilert_context *ctx, const char *dir)
{
    /* k loops of 1, 2, 4 and 3 windows of 128 (fp8 adds each window's sums in the next
       iteration, and the last at the loop's exit); N = 136, a multiple of 8, stores the 16-bit
       results by TMA (clipped at the edges), the odd ones from registers (lower_tma_store.c) */
    static const int sizes[][3] = { { 1, 1, 16 }, { 200, 136, 256 }, { 100, 37, 144 }, { 300, 260, 400 }, { 130, 129, 384 } };
    int nsizes = test_small() ? 2 : (int)COUNT(sizes);
    for (int f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.ptx", dir, f ? "matmul_fp8" : "matmul_int8");
        tilert_module *mod;
        if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
            fail(path, tilert_last_error());
            continue;
        }
        for (int x = 2 * f; x < 2 * f + 2; x++)
            for (int z = 0; z < nsizes; z++)
                example_case(mod, "example", (example)x, sizes[z][0], sizes[z][1], sizes[z][2]);
        /* the K loop split over blocks (compiler/lower_split.c): these loops are too short for
           the launcher to split by itself, so forced, into slices of one or two windows (fp8's
           scales reach the epilogue through shared memory, which the sum's cluster allows) */
        static const char *const forced[] = { "2", "3" };
        for (size_t s = 0; s < COUNT(forced); s++) {
            setenv("TILERT_SPLIT", forced[s], 1);
            for (int x = 2 * f; x < 2 * f + 2; x++)
                for (int z = 1; z < nsizes; z += 2)
                    example_case(mod, s ? "example split=3" : "example split=2", (example)x, sizes[z][0],
                                 sizes[z][1], sizes[z][2]);
        }
        unsetenv("TILERT_SPLIT");
        tilert_unload(mod);
    }
}

static void run_module(tilert_module *mod, const char *arch)
{
    /* M, N, K before the kernels' multiples of 16: smaller than a tile, neither, several tiles */
    static const int sizes[][3] = { { 1, 1, 1 }, { 7, 33, 100 }, { 130, 129, 272 }, { 257, 200, 500 } };
    int nsizes = test_small() ? 2 : (int)COUNT(sizes);
    for (int t = T_I8; t <= T_E5M2; t++)
        for (int l = L_NT; l <= L_SIMT; l++)
            for (int z = 0; z < nsizes; z++) {
                int d[3];
                for (int i = 0; i < 3; i++)
                    d[i] = mult16[l][i] ? up16(sizes[z][i]) : sizes[z][i];
                if (l == L_ONCE && d[2] > 64)
                    d[2] = 64;      /* one product of the first 64 k */
                product_case(mod, arch, (etype)t, (etype)t, (layout)l, d[0], d[1], d[2], V_EXACT);
                if (t >= T_E4M3 && z == 1)
                    product_case(mod, arch, (etype)t, (etype)t, (layout)l, d[0], d[1], d[2], V_WIDE);
            }
    /* mixed types: i8 x u8, e4m3 x e5m2, K-major and A^T */
    for (int z = 0; z < nsizes; z++)
        for (int l = L_NT; l <= L_TN; l += L_TN - L_NT)
            for (int t = T_I8; t <= T_E4M3; t += T_E4M3 - T_I8) {
                int d[3];
                for (int i = 0; i < 3; i++)
                    d[i] = mult16[l][i] ? up16(sizes[z][i]) : sizes[z][i];
                product_case(mod, arch, (etype)t, (etype)(t + 1), (layout)l, d[0], d[1], d[2], V_EXACT);
            }
    /* long sums of positive terms: lost without the promotion (0.07 of the sum at K = 4096) */
    if (!test_small())
        for (int t = T_E4M3; t <= T_E5M2; t++)
            product_case(mod, arch, (etype)t, (etype)t, L_NT, 130, 200, 4096, V_POSITIVE);
    for (int z = 0; z < nsizes; z++)
        example_case(mod, arch, X_SCALED, sizes[z][0], sizes[z][1], up16(sizes[z][2]));
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "matmul8");
    if (rc >= 0)
        return rc;
    int arch = tilert_device_arch(ctx);
    if (arch < 89) {
        printf("skip: 8-bit products need sm_89 (this GPU is sm_%d)\n0 passed, 0 failed, 1 skipped\n", arch);
        gpu_close(ctx);
        return 0;
    }
    static const char *const archs[] = { "sm_89", "sm_90a" };
    for (int i = 0; i < 2; i++) {
        if (i == 1 && arch != 90)     /* sm_90a code runs on sm_90 alone */
            break;
        char path[512];
        snprintf(path, sizeof path, "%s/matmul8/matmul8_%s.ptx", dir, archs[i]);
        tilert_module *mod;
        if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
            fail(path, tilert_last_error());
            continue;
        }
        run_module(mod, archs[i]);
        tilert_unload(mod);
    }
    run_examples(ctx, dir);
    printf("%d passed, %d failed\n", passed, failed);
    gpu_close(ctx);
    return failed != 0;
}
