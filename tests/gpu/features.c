/* features.c: language features the examples do not exercise, on the GPU against CPU references
 * (tests/gpu/kernels/features.tile): reductions along an axis with the result broadcast back
 * (inside a warp and through shared memory), a column reduction, a bias broadcast over the FFMA
 * accumulator, atomic_max with positive and negative values. Fresh random inputs, poisoned
 * outputs, sizes that are not tile multiples; every element within its own error bound of the
 * reference (ref_util.h). TILEC_TEST_SMALL: a few small sizes of each. Usage: features EXAMPLES_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;
static tilert_module *mod;

/* h (n floats, cols to a row) against ref and its bound, and nothing left unwritten. */
static void check(const char *desc, const float *h, const double *ref, const double *bound, size_t n, size_t cols)
{
    report_outputs(desc, h, ref, bound, n, cols) ? passed++ : failed++;
}

static tilert_kernel *kernel(const char *name)
{
    tilert_kernel *k;
    if (tilert_get_kernel(mod, name, &k) != TILERT_OK) {
        printf("FAIL %s: %s\n", name, tilert_last_error());
        failed++;
        return NULL;
    }
    return k;
}

static CUdeviceptr upload(const float *h, size_t n) { return gpu_new_from(h, n); }
static CUdeviceptr poisoned(size_t n) { return gpu_new_filled(n, 0x7fc00001u); }

/* Launches, downloads n floats from out, compares with ref within bound. */
static void run(const char *desc, tilert_kernel *k, tilert_arg *a, int na, CUdeviceptr out, const double *ref,
                const double *bound, size_t n, size_t cols)
{
    float *h = malloc(n * 4 + 4);
    tilert_status s = tilert_launch(k, 0, a, na);
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(h, out, n * 4)) {
        printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        free(h);
        return;
    }
    check(desc, h, ref, bound, n, cols);
    free(h);
}

/* Fresh random A (m x kk) and B (kk x n) in [-1, 1], on the host and the device, their float64
 * product and its bound: of IEEE FFMA, or of the tensor cores on tf32 operands (the inputs
 * rounded to nearest, ties as intervals: tf32_operand). */
typedef struct { float *a, *b; double *ref, *bound; CUdeviceptr da, db; } Product;

static Product product_new(int m, int n, int kk, bool tf32)
{
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    Product p = { malloc(sa * 4 + 4), malloc(sb * 4 + 4), malloc(sc * 8 + 8), malloc(sc * 8 + 8), 0, 0 };
    float *am = malloc(sa * 4 + 4), *ar = malloc(sa * 4 + 4), *bm = malloc(sb * 4 + 4), *br = malloc(sb * 4 + 4);
    if (!p.a || !p.b || !p.ref || !p.bound || !am || !ar || !bm || !br) {
        printf("FAIL product M=%d N=%d K=%d: out of host memory\n", m, n, kk);
        failed++;
        exit(1);
    }
    rng_fill(p.a, sa, -1, 1);
    rng_fill(p.b, sb, -1, 1);
    if (tf32) {
        for (size_t i = 0; i < sa; i++)
            tf32_operand(p.a[i], &am[i], &ar[i]);
        for (size_t i = 0; i < sb; i++)
            tf32_operand(p.b[i], &bm[i], &br[i]);
        ref_matmul_bound(am, ar, bm, br, p.ref, p.bound, m, n, kk, SUM_TENSOR);
    } else
        ref_matmul_bound(p.a, NULL, p.b, NULL, p.ref, p.bound, m, n, kk, SUM_FMA);
    free(am), free(ar), free(bm), free(br);
    p.da = upload(p.a, sa);
    p.db = upload(p.b, sb);
    return p;
}

static void product_free(Product *p)
{
    gpu_free(p->da), gpu_free(p->db);
    free(p->a), free(p->b), free(p->ref), free(p->bound);
}

/* A kernel (A, B, C, M, K, N) that computes the plain product, against p's reference. */
static void plain_product(const char *name, const char *what, const Product *p, int m, int n, int kk)
{
    char desc[112];
    size_t sc = (size_t)m * n;
    CUdeviceptr dc = poisoned(sc);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(p->da), tilert_ptr(p->db), tilert_ptr(dc), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    if (k && p->da && p->db && dc) {
        snprintf(desc, sizeof desc, "%s (%s) M=%d N=%d K=%d", name, what, m, n, kk);
        run(desc, k, a, 6, dc, p->ref, p->bound, sc, (size_t)n);
    }
    gpu_free(dc);
}

static void softmax_rows(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "softmax_rows (axis=1, in a warp) R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = malloc(sz * 4 + 4);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    rng_fill(x, sz, -4, 4);
    ref_softmax(x, ref, bound, rows, n);
    CUdeviceptr dx = upload(x, sz), dy = poisoned(sz);
    tilert_kernel *k = kernel("softmax_rows");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy)
        run(desc, k, a, 4, dy, ref, bound, sz, (size_t)n);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

/* scale 0: softmax_half (k = 1/2, a constant); else softmax_scaled with that scale */
static void softmax_scaled(int rows, int n, float scale)
{
    char desc[96];
    const char *name = scale ? "softmax_scaled" : "softmax_half";
    snprintf(desc, sizeof desc, "%s (exp(x k - max k) as one fma) k=%g R=%d N=%d", name, scale ? scale : 0.5, rows, n);
    size_t sz = (size_t)rows * n;
    float *x = malloc(sz * 4 + 4);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    rng_fill(x, sz, -40, 40);
    ref_softmax_scaled(x, scale ? scale : 0.5, ref, bound, rows, n);
    CUdeviceptr dx = upload(x, sz), dy = poisoned(sz);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_f32(scale), tilert_i32(rows), tilert_i32(n) };
    tilert_arg b[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy)
        run(desc, k, scale ? a : b, scale ? 5 : 4, dy, ref, bound, sz, (size_t)n);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void center_rows(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "center_rows (axis=1, shared memory) R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = malloc(sz * 4 + 4);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    rng_fill(x, sz, 1, 3);
    ref_center_rows(x, ref, bound, rows, n);
    CUdeviceptr dx = upload(x, sz), dy = poisoned(sz);
    tilert_kernel *k = kernel("center_rows");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy)
        run(desc, k, a, 4, dy, ref, bound, sz, (size_t)n);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void colsum(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "colsum (axis=0) R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = malloc(sz * 4 + 4), *col = malloc((size_t)rows * 4 + 4);
    double *ref = calloc((size_t)n + 1, 8), *bound = calloc((size_t)n + 1, 8);
    rng_fill(x, sz, 0, 1);
    /* a column's loop adds the sum of a window of 16 rows per step */
    for (int j = 0; j < n; j++) {
        for (int r = 0; r < rows; r++)
            col[r] = x[(size_t)r * n + j];
        ref[j] = ref_sum(col, (size_t)rows, sum_depth(rows, 16, ceil(rows / 16.0), 0), &bound[j]);
    }
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)n);
    tilert_kernel *k = kernel("colsum");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy)
        run(desc, k, a, 4, dy, ref, bound, (size_t)n, 0);
    gpu_free(dx), gpu_free(dy), free(x), free(col), free(ref), free(bound);
}

static void gemm_bias_relu(int m, int n, int kk)
{
    char desc[96];
    snprintf(desc, sizeof desc, "gemm_bias_relu_f32 (bias in registers) M=%d N=%d K=%d", m, n, kk);
    size_t sc = (size_t)m * n;
    Product p = product_new(m, n, kk, false);
    float *bias = malloc((size_t)n * 4 + 4);
    rng_fill(bias, (size_t)n, -2, 2);
    bound_affine(p.ref, p.bound, (size_t)m, (size_t)n, 1, bias);
    bound_relu(p.ref, sc);
    CUdeviceptr dbias = upload(bias, (size_t)n), dc = poisoned(sc);
    tilert_kernel *k = kernel("gemm_bias_relu_f32");
    tilert_arg a[] = { tilert_ptr(p.da), tilert_ptr(p.db), tilert_ptr(dbias), tilert_ptr(dc),
                       tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    if (k && p.da && p.db && dbias && dc)
        run(desc, k, a, 7, dc, p.ref, p.bound, sc, (size_t)n);
    gpu_free(dbias), gpu_free(dc);
    free(bias);
    product_free(&p);
}

/* mma_staged_a: f16(A) @ B on tensor cores in a pipelined loop where only B has stage buffers.
 * The reference takes A rounded to f16 as the kernel does (cvt.rn, like to_f16); products of f16
 * values are exact, so the error is the f32 accumulation's. */
static void mma_staged_a(int m, int n, int kk)
{
    char desc[96];
    snprintf(desc, sizeof desc, "mma_staged_a (A staged, B pipelined) M=%d N=%d K=%d", m, n, kk);
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4), *ha16 = malloc(sa * 4 + 4);
    uint16_t *hb16 = malloc(sb * 2 + 2);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    rng_fill(ha, sa, -1, 1);
    rng_fill(hb, sb, -1, 1);
    for (size_t i = 0; i < sa; i++)
        ha16[i] = from_f16(to_f16(ha[i]));
    for (size_t i = 0; i < sb; i++) {
        hb16[i] = to_f16(hb[i]);
        hb[i] = from_f16(hb16[i]);
    }
    ref_matmul_bound(ha16, NULL, hb, NULL, ref, bound, m, n, kk, SUM_TENSOR);
    CUdeviceptr da = upload(ha, sa), db = 0, dc = poisoned(sc);
    if (gpu_alloc(&db, sb * 2 + 16) && sb && !gpu_upload(db, hb16, sb * 2))
        db = 0;
    tilert_kernel *k = kernel("mma_staged_a");
    tilert_arg a[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    if (k && da && db && dc)
        run(desc, k, a, 6, dc, ref, bound, sc, (size_t)n);
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(ha), free(hb), free(ha16), free(hb16), free(ref), free(bound);
}

/* tf32_epilogue, tf32_staged: on sm_90a the swapped tf32 product (transposed accumulator layout)
 * with an epilogue, a sum along its rows and no pipeline; elsewhere mma.sync. Against the float64
 * product of the inputs rounded to tf32, within the bounds of docs/language.md. */
static void tf32_products(int m, int n, int kk)
{
    char desc[112];
    size_t sc = (size_t)m * n;
    int ns = (n + 127) / 128;
    size_t ss = (size_t)m * ns;
    Product p = product_new(m, n, kk, true);
    float *bias = malloc((size_t)n * 4 + 4);
    double *yref = malloc(sc * 8 + 8), *ybound = malloc(sc * 8 + 8);
    double *sref = malloc(ss * 8 + 8), *sbound = malloc(ss * 8 + 8);
    rng_fill(bias, (size_t)n, -2, 2);
    memcpy(yref, p.ref, sc * 8);
    memcpy(ybound, p.bound, sc * 8);
    bound_affine(yref, ybound, (size_t)m, (size_t)n, 0.5, bias);
    bound_relu(yref, sc);
    /* S[i][b] sums row i of y over block b's 128 columns (those past N are 0) */
    bound_window_sums(yref, ybound, (size_t)m, (size_t)n, 128, sref, sbound);
    CUdeviceptr dbias = upload(bias, (size_t)n), dc = poisoned(sc), ds = poisoned(ss);
    tilert_kernel *k = kernel("tf32_epilogue");
    tilert_arg a[] = { tilert_ptr(p.da), tilert_ptr(p.db), tilert_ptr(dbias), tilert_ptr(dc), tilert_ptr(ds),
                       tilert_i32(m), tilert_i32(kk), tilert_i32(n), tilert_i32(ns) };
    if (k && p.da && p.db && dbias && dc && ds) {
        snprintf(desc, sizeof desc, "tf32_epilogue (scale, bias, ReLU) M=%d N=%d K=%d", m, n, kk);
        run(desc, k, a, 9, dc, yref, ybound, sc, (size_t)n);
        float *h = malloc(ss * 4 + 4);
        snprintf(desc, sizeof desc, "tf32_epilogue (row sums) M=%d N=%d K=%d", m, n, kk);
        if (gpu_download(h, ds, ss * 4)) {
            check(desc, h, sref, sbound, ss, (size_t)ns);
        } else {
            printf("FAIL %s: download\n", desc);
            failed++;
        }
        free(h);
    }
    plain_product("tf32_staged", "no pipeline", &p, m, n, kk);
    gpu_free(dbias), gpu_free(dc), gpu_free(ds);
    free(bias), free(yref), free(ybound), free(sref), free(sbound);
    product_free(&p);
}

/* tf32_unaligned: the pipelined tf32 product in 4-byte pieces (any K, any N). */
static void tf32_unaligned(int m, int n, int kk)
{
    Product p = product_new(m, n, kk, true);
    plain_product("tf32_unaligned", "4-byte pieces", &p, m, n, kk);
    product_free(&p);
}

/* atomic_max: |x| (positive values) and x itself over all-negative inputs (the other bit path). */
static void maxes(int n, bool negative)
{
    char desc[96];
    snprintf(desc, sizeof desc, "%s N=%d", negative ? "atomic_max of negatives" : "atomic_max of |x|", n);
    float *x = malloc((size_t)n * 4 + 4);
    rng_fill(x, (size_t)n, negative ? -5 : -3, negative ? -0.5f : 3);
    double ref = negative ? -INFINITY : 0;
    for (int i = 0; i < n; i++) {
        double v = negative ? x[i] : fabs(x[i]);
        ref = v > ref ? v : ref;
    }
    float init = negative ? -INFINITY : 0;
    CUdeviceptr dx = upload(x, (size_t)n), dout = upload(&init, 1);
    tilert_kernel *k = kernel(negative ? "maxval" : "absmax");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dout), tilert_i32(n) };
    double exact = 0;                 /* a maximum is one of the inputs */
    if (k && dx && dout)
        run(desc, k, a, 3, dout, &ref, &exact, 1, 0);
    gpu_free(dx), gpu_free(dout), free(x);
}

/* loop_sums: per row, the sum, the sum of squares, the i32 sum and the sum of both that a loop
 * over windows of 512 accumulates (deferred past the loop), and the running sum stored at each step (reduced each
 * step). Sums of n terms with the order the kernel's text fixes in part: depth W - 1 + S. Columns
 * of P past the last step stay unwritten. */
static void loop_sums(int rows, int n)
{
    enum { W = 512, PW = 64 };
    int steps = (n + W - 1) / W;
    size_t sz = (size_t)rows * n;
    char desc[96];
    float *x = malloc(sz * 4 + 4), *sq = malloc((size_t)n * 4 + 4), *hs = malloc((size_t)rows * 4 * 4 + 4);
    float *hp = malloc((size_t)rows * PW * 4 + 4);
    int32_t *iv = malloc(sz * 4 + 4);
    double *ref = malloc((size_t)rows * 4 * 8 + 8), *bound = malloc((size_t)rows * 4 * 8 + 8);
    double *pref = malloc((size_t)rows * PW * 8 + 8), *pbound = malloc((size_t)rows * PW * 8 + 8);
    rng_fill(x, sz, -2, 2);
    for (size_t i = 0; i < sz; i++)
        iv[i] = (int32_t)(rng_next() % 201) - 100;   /* |sum| < 2^24: exact as f32 */
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double depth = sum_depth(n, W, steps, 0), exact_sq = 0;
        ref[r * 4] = ref_sum(xr, (size_t)n, depth, &bound[r * 4]);
        double abs_x = 0;
        for (int i = 0; i < n; i++) {
            sq[i] = xr[i] * xr[i];                /* the products as the kernel rounds them */
            exact_sq += (double)xr[i] * xr[i];
            abs_x += fabs(xr[i]);
        }
        double bsq;
        ref_sum(sq, (size_t)n, depth, &bsq);
        ref[r * 4 + 1] = exact_sq;
        bound[r * 4 + 1] = bsq + U_F32 * exact_sq;   /* plus each product's rounding */
        int64_t isum = 0;
        for (int i = 0; i < n; i++)
            isum += iv[(size_t)r * n + i];
        ref[r * 4 + 2] = (double)isum;               /* exact, and exact as an f32 (|sum| < 2^24) */
        bound[r * 4 + 2] = 0;
        /* b: the 2n terms of both, each through at most twice the additions of one, plus one */
        double d2 = 2 * depth + 1 < 2.0 * n - 1 ? 2 * depth + 1 : (n ? 2.0 * n - 1 : 0);
        ref[r * 4 + 3] = ref[r * 4] + exact_sq;
        bound[r * 4 + 3] = gamma_n(d2, U_F32) * (abs_x + exact_sq * (1 + U_F32)) + U_F32 * exact_sq +
                           1e-12 * (abs_x + exact_sq);   /* the reference's own rounding, generously */
        for (int k = 0; k < PW; k++) {
            int len = k < steps ? ((k + 1) * W < n ? (k + 1) * W : n) : 0;
            pref[r * PW + k] = k < steps ? ref_sum(xr, (size_t)len, sum_depth(len, W, k + 1, 0), &pbound[r * PW + k]) : 0;
            if (k >= steps)
                pbound[r * PW + k] = -1;
        }
    }
    CUdeviceptr dx = upload(x, sz), di = gpu_new_from(iv, sz), ds = poisoned((size_t)rows * 4),
                dp = poisoned((size_t)rows * PW);
    tilert_kernel *k = kernel("loop_sums");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(di), tilert_ptr(ds), tilert_ptr(dp), tilert_i32(rows), tilert_i32(n) };
    tilert_status st = k && dx && di && ds && dp ? tilert_launch(k, 0, a, 6) : TILERT_ERR_BAD_ARGS;
    snprintf(desc, sizeof desc, "loop sums R=%d N=%d", rows, n);
    if (st != TILERT_OK || !gpu_sync() || !gpu_download(hs, ds, (size_t)rows * 4 * 4) ||
        !gpu_download(hp, dp, (size_t)rows * PW * 4)) {
        printf("FAIL %s: %s\n", desc, st ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    check(desc, hs, ref, bound, (size_t)rows * 4, 4);
    /* the running sums: written steps within their bounds, the rest still the poison */
    size_t bad = 0, first = 0;
    for (int r = 0; r < rows; r++)
        for (int kk = 0; kk < PW; kk++) {
            size_t i = (size_t)r * PW + kk;
            uint32_t bits;
            memcpy(&bits, &hp[i], 4);
            bool ok = kk < steps ? fabs(hp[i] - pref[i]) <= pbound[i] : bits == 0x7fc00001u;
            if (!ok && !bad++)
                first = i;
        }
    snprintf(desc, sizeof desc, "running sums stored each step R=%d N=%d", rows, n);
    if (bad) {
        printf("FAIL %s: %zu wrong, first [%zu][%zu] = %.9g, reference %.9g\n", desc, bad, first / PW,
               first % PW, hp[first], pref[first]);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
done:
    gpu_free(dx), gpu_free(di), gpu_free(ds), gpu_free(dp);
    free(x), free(sq), free(hs), free(hp), free(iv), free(ref), free(bound), free(pref), free(pbound);
}

/* block_sum512: every block adds its 4 windows of 2048 with one atomic: depth W - 1 + 4 + G. */
static void block_sum512(int n)
{
    char desc[64];
    snprintf(desc, sizeof desc, "block sum over 16 warps N=%d", n);
    float *x = malloc((size_t)n * 4 + 4), zero = 0;
    rng_fill(x, (size_t)n, -1, 1);
    double bound, ref = ref_sum(x, (size_t)n, sum_depth(n, 2048, 4, (n + 8191) / 8192), &bound);
    CUdeviceptr dx = upload(x, (size_t)n), dout = upload(&zero, 1);
    tilert_kernel *k = kernel("block_sum512");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dout), tilert_i32(n) };
    if (k && dx && dout)
        run(desc, k, a, 3, dout, &ref, &bound, 1, 0);
    gpu_free(dx), gpu_free(dout), free(x);
}

/* bitops: every result exact, against C with PTX's clamped shift counts. */
static uint32_t ushr32(uint32_t x, int c) { return c >= 32 ? 0 : x >> c; }
static uint32_t ushl32(uint32_t x, int c) { return c >= 32 ? 0 : x << c; }
static int32_t sshr32(int32_t x, int c) { return c >= 32 ? (x < 0 ? -1 : 0) : (x < 0 ? ~(~x >> c) : x >> c); }
static int64_t sshr64(int64_t x, int c) { return c >= 64 ? (x < 0 ? -1 : 0) : (x < 0 ? ~(~x >> c) : x >> c); }

static void bitops(int n)
{
    char desc[64];
    snprintf(desc, sizeof desc, "bit operations u32/i32/i64 N=%d", n);
    uint32_t *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 16 + 4);
    int32_t *sv = malloc((size_t)n * 4 + 4), *cv = malloc((size_t)n * 4 + 4), *z = malloc((size_t)n * 12 + 4);
    int64_t *l = malloc((size_t)n * 8 + 8), *w = malloc((size_t)n * 16 + 8);
    for (int i = 0; i < n; i++) {
        x[i] = (uint32_t)rng_next();
        sv[i] = (int32_t)(uint32_t)rng_next();
        l[i] = (int64_t)rng_next();
        cv[i] = (int32_t)(rng_next() % 41);
    }
    CUdeviceptr dx = 0, ds = 0, dl = 0, dc = 0, dy = 0, dz = 0, dw = 0;
    bool ok = gpu_alloc(&dx, (size_t)n * 4 + 16) && gpu_upload(dx, x, (size_t)n * 4) &&
              gpu_alloc(&ds, (size_t)n * 4 + 16) && gpu_upload(ds, sv, (size_t)n * 4) &&
              gpu_alloc(&dl, (size_t)n * 8 + 16) && gpu_upload(dl, l, (size_t)n * 8) &&
              gpu_alloc(&dc, (size_t)n * 4 + 16) && gpu_upload(dc, cv, (size_t)n * 4) &&
              gpu_alloc(&dy, (size_t)n * 16 + 16) && gpu_check(cuMemsetD8(dy, 0xa5, (size_t)n * 16), "cuMemsetD8") &&
              gpu_alloc(&dz, (size_t)n * 12 + 16) && gpu_check(cuMemsetD8(dz, 0xa5, (size_t)n * 12), "cuMemsetD8") &&
              gpu_alloc(&dw, (size_t)n * 16 + 16) && gpu_check(cuMemsetD8(dw, 0xa5, (size_t)n * 16), "cuMemsetD8");
    tilert_kernel *k = kernel("bitops");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(ds), tilert_ptr(dl), tilert_ptr(dc), tilert_ptr(dy),
                       tilert_ptr(dz), tilert_ptr(dw), tilert_i32(n) };
    tilert_status st = ok && k ? tilert_launch(k, 0, a, 8) : TILERT_ERR_BAD_ARGS;
    ok = st == TILERT_OK && gpu_sync() && gpu_download(y, dy, (size_t)n * 16) &&
         gpu_download(z, dz, (size_t)n * 12) && gpu_download(w, dw, (size_t)n * 16);
    size_t bad = 0, first = 0;
    for (int i = 0; ok && i < n; i++) {
        uint32_t xi = x[i];
        int32_t si = sv[i];
        int64_t li = l[i];
        int c = cv[i];
        uint32_t ry[4] = { xi ^ (xi >> 3) ^ (xi << 7), (xi & 0xffffu) | (~xi & (1u << 20)), ushr32(xi, c),
                           ushl32(xi, c) };
        int32_t rz[3] = { sshr32(si, c), (int32_t)((uint32_t)si << 3) ^ ~si, (si & -8) | 5 };
        int64_t rw[2] = { sshr64(li, c),
                          (int64_t)((uint64_t)li << 13) ^ (sshr64(li, 7) & INT64_C(0xffffffffff)) };
        bool good = true;
        for (int j = 0; j < 4; j++)
            good &= y[(size_t)j * n + i] == ry[j];
        for (int j = 0; j < 3; j++)
            good &= z[(size_t)j * n + i] == rz[j];
        for (int j = 0; j < 2; j++)
            good &= w[(size_t)j * n + i] == rw[j];
        if (!good && !bad++)
            first = (size_t)i;
    }
    if (!ok) {
        printf("FAIL %s: %s\n", desc, st ? tilert_last_error() : "device error");
        failed++;
    } else if (bad) {
        printf("FAIL %s: %zu elements wrong, first at %zu (x %08x s %d l %lld c %d)\n", desc, bad, first,
               x[first], sv[first], (long long)l[first], cv[first]);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
    gpu_free(dx), gpu_free(ds), gpu_free(dl), gpu_free(dc), gpu_free(dy), gpu_free(dz), gpu_free(dw);
    free(x), free(y), free(sv), free(cv), free(z), free(l), free(w);
}

/* squeeze_store: row sums into Y[R] (sums of C terms in any order), column maxima into Z[C]
 * (exact; Z starts at -inf). */
static void squeeze_store(int rows, int cols)
{
    char desc[64];
    snprintf(desc, sizeof desc, "reductions stored without their axis R=%d C=%d", rows, cols);
    size_t sz = (size_t)rows * cols;
    float *x = malloc(sz * 4 + 4), *out = malloc(((size_t)rows + cols) * 4 + 4), *zinit = malloc((size_t)cols * 4 + 4);
    double *ref = malloc(((size_t)rows + cols) * 8 + 8), *bound = malloc(((size_t)rows + cols) * 8 + 8);
    rng_fill(x, sz, -4, 4);
    for (int r = 0; r < rows; r++)
        ref[r] = ref_sum(x + (size_t)r * cols, (size_t)cols, sum_depth(cols, cols, 0, 0), &bound[r]);
    for (int j = 0; j < cols; j++) {
        double m = -INFINITY;
        for (int r = 0; r < rows; r++)
            m = x[(size_t)r * cols + j] > m ? x[(size_t)r * cols + j] : m;
        ref[rows + j] = m;
        bound[rows + j] = 0;
        zinit[j] = -INFINITY;
    }
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)rows), dz = upload(zinit, (size_t)cols);
    tilert_kernel *k = kernel("squeeze_store");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dz), tilert_i32(rows), tilert_i32(cols) };
    tilert_status st = k && dx && dy && dz ? tilert_launch(k, 0, a, 5) : TILERT_ERR_BAD_ARGS;
    if (st != TILERT_OK || !gpu_sync() || !gpu_download(out, dy, (size_t)rows * 4) ||
        !gpu_download(out + rows, dz, (size_t)cols * 4)) {
        printf("FAIL %s: %s\n", desc, st ? tilert_last_error() : "");
        failed++;
    } else {
        check(desc, out, ref, bound, (size_t)rows + cols, 0);
    }
    gpu_free(dx), gpu_free(dy), gpu_free(dz);
    free(x), free(out), free(zinit), free(ref), free(bound);
}

/* slices: each output against X and W gathered on the host, exactly (moved elements; sums of
 * products of small integers, exact in f32). Rows past R read 0. */
static void slices(int rows)
{
    char desc[64];
    snprintf(desc, sizeof desc, "slices and reshapes of tiles R=%d", rows);
    int nb = (rows + 15) / 16;
    size_t sx = (size_t)rows * 64;
    float *x = malloc(sx * 4 + 4), *w = malloc(64 * 64 * 4);
    for (size_t i = 0; i < sx; i++)
        x[i] = (float)((int)(rng_next() % 9) - 4);
    for (int i = 0; i < 64 * 64; i++)
        w[i] = (float)((int)(rng_next() % 9) - 4);
    /* the outputs, one after another: A B C D E G Q P */
    static const int cols[] = { 32, 16, 1, 64, 32, 1, 16, 64 };
    size_t n[8], off[9] = { 0 };
    for (int o = 0; o < 8; o++) {
        n[o] = (size_t)(o == 5 ? nb : rows) * cols[o];
        off[o + 1] = off[o] + n[o];
    }
    double *ref = calloc(off[8] + 1, 8), *bound = calloc(off[8] + 1, 8);
    float *out = malloc(off[8] * 4 + 4);
#define XV(r, c) ((r) < rows ? (double)x[(size_t)(r) * 64 + (c)] : 0.0)
    for (int r = 0; r < rows; r++) {
        int t0 = r / 16 * 16, i = r % 16;
        for (int j = 0; j < 32; j++) {
            ref[off[0] + (size_t)r * 32 + j] = XV(r, 32 + j) + XV(r, j);
            /* E: rows 16.. of t as 32 x 32: t's element 512 + 32 i + j */
            int e = 512 + 32 * i + j;
            ref[off[4] + (size_t)r * 32 + j] = XV(t0 + e / 64, e % 64);
        }
        for (int j = 0; j < 16; j++) {
            ref[off[1] + (size_t)r * 16 + j] = XV(r, 5 + j);
            ref[off[6] + (size_t)r * 16 + j] = XV(t0 + 2, 48 + j);
        }
        ref[off[2] + r] = XV(r, 63);
        for (int j = 0; j < 64; j++) {
            ref[off[3] + (size_t)r * 64 + j] = 2 * XV(r, j);
            double acc = 0;
            for (int k = 0; k < 64; k++)
                acc += XV(r, k) * w[k * 64 + (j + 32) % 64];
            ref[off[7] + (size_t)r * 64 + j] = acc;
        }
    }
    for (int b = 0; b < nb; b++)
        ref[off[5] + b] = XV(b * 16 + 3, 7);
#undef XV
    CUdeviceptr dx = upload(x, sx), dw = upload(w, 64 * 64), d[8];
    bool ok = dx && dw;
    for (int o = 0; o < 8; o++)
        ok &= (d[o] = poisoned(n[o])) != 0;
    tilert_kernel *k = kernel("slices");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(d[0]), tilert_ptr(d[1]), tilert_ptr(d[2]),
                       tilert_ptr(d[3]), tilert_ptr(d[4]), tilert_ptr(d[5]), tilert_ptr(d[6]), tilert_ptr(d[7]),
                       tilert_i32(rows), tilert_i32(nb) };
    tilert_status st = k && ok ? tilert_launch(k, 0, a, 12) : TILERT_ERR_BAD_ARGS;
    ok = st == TILERT_OK && gpu_sync();
    for (int o = 0; ok && o < 8; o++)
        ok = gpu_download(out + off[o], d[o], n[o] * 4);
    if (!ok) {
        printf("FAIL %s: %s\n", desc, st ? tilert_last_error() : "device error");
        failed++;
    } else {
        check(desc, out, ref, bound, off[8], 0);
    }
    gpu_free(dx), gpu_free(dw);
    for (int o = 0; o < 8; o++)
        gpu_free(d[o]);
    free(x), free(w), free(ref), free(bound), free(out);
}

/* conv_taps: Y = sum over three taps dy of X[m + dy, :] @ W[dy K .. dy K + K - 1, :], exactly
 * (small integers in f16, sums well inside f32's integers); rows of X past M read 0. */
static void conv_taps(int m, int kk, int n)
{
    char desc[80];
    snprintf(desc, sizeof desc, "three pipelined taps sharing stage buffers M=%d K=%d N=%d", m, kk, n);
    size_t sx = (size_t)m * kk, sw = (size_t)3 * kk * n, sy = (size_t)m * n;
    uint16_t *x = malloc(sx * 2 + 4), *w = malloc(sw * 2 + 4);
    float *xf = malloc(sx * 4 + 4), *wf = malloc(sw * 4 + 4);
    double *ref = calloc(sy + 1, 8), *bound = calloc(sy + 1, 8);
    for (size_t i = 0; i < sx; i++)
        x[i] = to_f16(xf[i] = (float)((int)(rng_next() % 5) - 2));
    for (size_t i = 0; i < sw; i++)
        w[i] = to_f16(wf[i] = (float)((int)(rng_next() % 5) - 2));
    for (int r = 0; r < m; r++)
        for (int dy = 0; dy < 3 && r + dy < m; dy++)
            for (int k = 0; k < kk; k++) {
                double a = xf[(size_t)(r + dy) * kk + k];
                for (int j = 0; j < n; j++)
                    ref[(size_t)r * n + j] += a * wf[((size_t)dy * kk + k) * n + j];
            }
    CUdeviceptr dx = gpu_new_from(x, (sx + 1) / 2), dw = gpu_new_from(w, (sw + 1) / 2), dy = poisoned(sy);
    tilert_kernel *k = kernel("conv_taps");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(dy), tilert_i32(m), tilert_i32(kk),
                       tilert_i32(3 * kk), tilert_i32(n) };
    if (k && dx && dw && dy)
        run(desc, k, a, 7, dy, ref, bound, sy, (size_t)n);
    else
        failed++;
    gpu_free(dx), gpu_free(dw), gpu_free(dy);
    free(x), free(w), free(xf), free(wf), free(ref), free(bound);
}

/* wide_rows: Z = c t - d s + a per row, c = a b, d = a + b, s and t their sums over the row's
 * first 16384 elements (those past N read 0); exact: small integers, every value below 2^24. */
static void wide_rows(int m, int n)
{
    char desc[80];
    snprintf(desc, sizeof desc, "rows of 16384 with lets in shared memory M=%d N=%d", m, n);
    size_t sz = (size_t)m * n;
    float *x = malloc(sz * 4 + 4), *y = malloc(sz * 4 + 4);
    double *ref = calloc(sz + 1, 8), *bound = calloc(sz + 1, 8);
    for (size_t i = 0; i < sz; i++) {
        x[i] = (float)((int)(rng_next() % 9) - 4);
        y[i] = (float)((int)(rng_next() % 9) - 4);
    }
    int w = n;   /* n <= 16384: the kernel's window covers the row */
    for (int r = 0; r < m; r++) {
        const float *a = x + (size_t)r * n, *b = y + (size_t)r * n;
        double s = 0, t = 0;
        for (int j = 0; j < w; j++) {
            s += (double)a[j] * b[j];
            t += (double)a[j] + b[j];
        }
        for (int j = 0; j < w; j++)
            ref[(size_t)r * n + j] = (double)a[j] * b[j] * t - ((double)a[j] + b[j]) * s + a[j];
    }
    CUdeviceptr dx = upload(x, sz), dy = upload(y, sz), dz = poisoned(sz);
    tilert_kernel *k = kernel("wide_rows");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dz), tilert_i32(m), tilert_i32(n) };
    if (k && dx && dy && dz)
        run(desc, k, a, 5, dz, ref, bound, sz, (size_t)n);
    else
        failed++;
    gpu_free(dx), gpu_free(dy), gpu_free(dz);
    free(x), free(y), free(ref), free(bound);
}

/* element_gathers: every output exact (moved elements, counts); X holds indices from -3 to
 * T + 2, so some fall outside [0, T) and are masked. */
static void element_gathers(int n, int t)
{
    char desc[80];
    snprintf(desc, sizeof desc, "element gathers, scatter and histogram N=%d T=%d", n, t);
    enum { C = 5 };
    int32_t *x = malloc((size_t)n * 4 + 4), *q = malloc((size_t)n * 4 + 4), *h = calloc((size_t)t + 1, 4);
    int32_t *hout = malloc((size_t)t * 4 + 4);
    float *v = malloc((size_t)t * 4 + 4), *mx = malloc((size_t)t * C * 4 + 4), *out = malloc((size_t)n * 12 + 4);
    double *ref = malloc((size_t)n * 24 + 8), *bound = calloc((size_t)n * 3 + 1, 8);
    int64_t *href = calloc((size_t)t + 1, 8);
    for (int i = 0; i < n; i++) {
        x[i] = (int32_t)(rng_next() % (uint64_t)(t + 6)) - 3;
        q[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {   /* a random permutation */
        int j = (int)(rng_next() % (uint64_t)(i + 1));
        int32_t tmp = q[i];
        q[i] = q[j];
        q[j] = tmp;
    }
    rng_fill(v, (size_t)t, -8, 8);
    rng_fill(mx, (size_t)t * C, -8, 8);
    for (int i = 0; i < n; i++) {
        bool in = x[i] >= 0 && x[i] < t;
        ref[i] = in ? v[x[i]] : -1.0;
        ref[n + i] = in ? mx[(size_t)x[i] * C + 3] : 0.0;
        ref[2 * (size_t)n + q[i]] = i;
        if (in)
            href[x[i]]++;
    }
    CUdeviceptr dx = gpu_new_from(x, (size_t)n), dh = gpu_new_from(h, (size_t)t), dv = upload(v, (size_t)t),
                dg = poisoned((size_t)n), dm = upload(mx, (size_t)t * C), dp = poisoned((size_t)n),
                dq = gpu_new_from(q, (size_t)n), ds = poisoned((size_t)n);
    tilert_kernel *k = kernel("element_gathers");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dh), tilert_ptr(dv), tilert_ptr(dg), tilert_ptr(dm), tilert_ptr(dp),
                       tilert_ptr(dq), tilert_ptr(ds), tilert_i32(n), tilert_i32(t), tilert_i32(C) };
    tilert_status st = k && dx && dh && dv && dg && dm && dp && dq && ds ? tilert_launch(k, 0, a, 11) : TILERT_ERR_BAD_ARGS;
    bool ok = st == TILERT_OK && gpu_sync() && gpu_download(out, dg, (size_t)n * 4) &&
              gpu_download(out + n, dp, (size_t)n * 4) && gpu_download(out + 2 * (size_t)n, ds, (size_t)n * 4) &&
              gpu_download(hout, dh, (size_t)t * 4);
    if (!ok) {
        printf("FAIL %s: %s\n", desc, st ? tilert_last_error() : "device error");
        failed++;
    } else {
        int wrong = -1;
        for (int i = 0; i < t && wrong < 0; i++)
            if (hout[i] != href[i])
                wrong = i;
        if (wrong >= 0) {
            printf("FAIL %s: histogram bin %d holds %d, expected %lld\n", desc, wrong, hout[wrong], (long long)href[wrong]);
            failed++;
        } else {
            check(desc, out, ref, bound, 3 * (size_t)n, 0);
        }
    }
    gpu_free(dx), gpu_free(dh), gpu_free(dv), gpu_free(dg), gpu_free(dm), gpu_free(dp), gpu_free(dq), gpu_free(ds);
    free(x), free(q), free(h), free(hout), free(v), free(mx), free(out), free(ref), free(bound), free(href);
}

/* bitcasts: bits compared exactly (F's inputs are masked to finite, non-NaN patterns). */
static void bitcasts(int n)
{
    char desc[64];
    snprintf(desc, sizeof desc, "bitcast f32/u32/i32 N=%d", n);
    float *x = malloc((size_t)n * 4 + 4);
    int32_t *sv = malloc((size_t)n * 4 + 4);
    uint32_t *out = malloc((size_t)n * 12 + 4);
    rng_fill(x, (size_t)n, -1e6f, 1e6f);
    for (int i = 0; i < n; i++)
        sv[i] = (int32_t)(uint32_t)rng_next();
    CUdeviceptr dx = upload(x, (size_t)n), ds = gpu_new_from(sv, (size_t)n), db = poisoned((size_t)n),
                da = poisoned((size_t)n), df = poisoned((size_t)n);
    tilert_kernel *k = kernel("bitcasts");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(ds), tilert_ptr(db), tilert_ptr(da), tilert_ptr(df), tilert_i32(n) };
    tilert_status st = k && dx && ds && db && da && df ? tilert_launch(k, 0, a, 6) : TILERT_ERR_BAD_ARGS;
    bool ok = st == TILERT_OK && gpu_sync() && gpu_download(out, db, (size_t)n * 4) &&
              gpu_download(out + n, da, (size_t)n * 4) && gpu_download(out + 2 * (size_t)n, df, (size_t)n * 4);
    size_t bad = 0, first = 0;
    for (int i = 0; ok && i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        bool good = out[i] == bits && out[n + i] == (bits & 0x7fffffffu) &&
                    out[2 * (size_t)n + i] == ((uint32_t)sv[i] & 0x3fffffffu);
        if (!good && !bad++)
            first = (size_t)i;
    }
    if (!ok || bad) {
        printf("FAIL %s: %s%zu wrong, first at %zu\n", desc, ok ? "" : "launch or copy failed; ", bad, first);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
    gpu_free(dx), gpu_free(ds), gpu_free(db), gpu_free(da), gpu_free(df);
    free(x), free(sv), free(out);
}

/* Each builtin against libm in double, every element within the bound docs/language.md states for
 * it (math_bound). */
static void mathfns(int n)
{
    static const char *names[8] = { "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid" };
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 8 * 4 + 4);
    double *ref = malloc((size_t)n * 8 + 8), *bound = malloc((size_t)n * 8 + 8);
    rng_fill(x, (size_t)n, -8, 8);
    CUdeviceptr dx = upload(x, (size_t)n), dy = poisoned((size_t)n * 8);
    tilert_kernel *k = kernel("mathfns");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(n) };
    tilert_status st = k && dx && dy ? tilert_launch(k, 0, a, 3) : TILERT_ERR_BAD_ARGS;
    if (st != TILERT_OK || !gpu_sync() || !gpu_download(y, dy, (size_t)n * 8 * 4)) {
        printf("FAIL mathfns N=%d: %s\n", n, st ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    for (int f = 0; f < 8; f++) {
        for (int i = 0; i < n; i++) {
            double v = x[i], av = fabs(v) + 0.5;
            double r[8] = { exp(v), exp2(v), log(av), log2(av), sqrt(av), 1 / sqrt(av), tanh(v), 1 / (1 + exp(-v)) };
            bool on_a = f >= FN_LOG && f <= FN_RSQRT;
            ref[i] = r[f];
            bound[i] = math_bound((MathFn)f, on_a ? av : v, ref[i]);
        }
        char desc[64];
        snprintf(desc, sizeof desc, "%s N=%d", names[f], n);
        check(desc, y + (size_t)f * n, ref, bound, (size_t)n, 0);
    }
done:
    gpu_free(dx), gpu_free(dy), free(x), free(y), free(ref), free(bound);
}

/* Widening of a bound for the reference's own error (long double libm, within an ulp of double). */
#define REF_SLACK2 (1 + 0x1p-10)
#define PI 3.14159265358979323846

/* erf, expm1, log1p: the bound docs/language.md states, 1 ulp, taken as 2^-23 |ref| (at least the
 * smallest subnormal step, 2^-149); found by running the kernel's sequence over every f32 input
 * on the host (erf with ex2.approx at both ends of its 2 ulp). */
static double ulp_bound(double ref, double ulps) { return ulps * fmax(0x1p-23 * fabs(ref), 0x1p-149) * REF_SLACK2; }

/* pow: ex2(y lg2 |x|): lg2's error e_L (2^-22 absolute for |x| in [0.5, 2], else 2 ulp), the
 * product's rounding, then ex2's 2 ulp and its flush below 2^-126. */
static double pow_bound(double x, double y, double ref)
{
    double a = fabs(x), l2 = log2(a);
    double el = a >= 0.5 && a <= 2 ? 0x1p-22 : 0x1p-22 * fabs(l2);
    double d = (fabs(y) * el + 0x1p-24 * fabs(y * l2)) * (1 + 0x1p-23);
    return (fabs(ref) * (exp2(d) * (1 + 0x1p-22) - 1) + 0x1p-126) * REF_SLACK2;
}

/* Inputs reaching each function's cases: X for erf, expm1, floor, ceil, round and pow's base
 * (moderate values, tiny ones of both signs, halves for round's ties); P above -1 for log1p
 * (near 0, near -1, large); B for pow's exponent (integers, fractions, 0). */
static void mathfns2_inputs(float *x, float *p, float *b, int n)
{
    for (int i = 0; i < n; i++) {
        float sgn = rng_next() & 1 ? -1.0f : 1.0f;
        switch (i % 4) {
        case 0: x[i] = rng_uniform(-5, 5); break;
        case 1: x[i] = sgn * exp2f(rng_uniform(-30, 4)); break;
        case 2: x[i] = rng_uniform(-20, 20); break;
        default: x[i] = (float)((int)(rng_next() % 81) - 40) * 0.5f; break;
        }
        if (x[i] == 0)
            x[i] = 0.25f;
        switch (i % 3) {
        case 0: p[i] = rng_uniform(-0.999f, 1); break;
        case 1: p[i] = sgn * exp2f(rng_uniform(-30, -1)); break;
        default: p[i] = exp2f(rng_uniform(0, 40)); break;
        }
        switch (i % 5) {
        case 0: case 1: b[i] = (float)((int)(rng_next() % 9) - 4); break;
        case 2: case 3: b[i] = rng_uniform(-4, 4); break;
        default: b[i] = i % 2 ? 0.5f : 0.0f; break;
        }
    }
}

static void mathfns2(int n)
{
    static const char *names[8] = { "erf", "expm1", "log1p", "floor", "ceil", "round", "fma", "pow" };
    float *x = malloc((size_t)n * 4 + 4), *p = malloc((size_t)n * 4 + 4), *b = malloc((size_t)n * 4 + 4);
    float *y = malloc((size_t)n * 8 * 4 + 4);
    mathfns2_inputs(x, p, b, n);
    CUdeviceptr dx = upload(x, (size_t)n), dp = upload(p, (size_t)n), db = upload(b, (size_t)n);
    CUdeviceptr dy = poisoned((size_t)n * 8);
    tilert_kernel *k = kernel("mathfns2");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dp), tilert_ptr(db), tilert_ptr(dy), tilert_i32(n) };
    tilert_status st = k && dx && dp && db && dy ? tilert_launch(k, 0, a, 5) : TILERT_ERR_BAD_ARGS;
    if (st != TILERT_OK || !gpu_sync() || !gpu_download(y, dy, (size_t)n * 8 * 4)) {
        printf("FAIL mathfns2 N=%d: %s\n", n, st ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    for (int f = 0; f < 8; f++) {
        size_t bad = 0, first = 0;
        double worst = 0;
        for (int i = 0; i < n; i++) {
            double v = x[i], ref, bound = 0;
            float out = y[(size_t)f * n + i];
            switch (f) {
            case 0: ref = (double)erfl(v); bound = ulp_bound(ref, 1); break;
            case 1: ref = (double)expm1l(v); bound = ulp_bound(ref, 1); break;
            case 2: ref = (double)log1pl(p[i]); bound = ulp_bound(ref, 1); break;
            case 3: ref = floorf(x[i]); break;
            case 4: ref = ceilf(x[i]); break;
            case 5: ref = rintf(x[i]); break;       /* ties to even */
            case 6: ref = fmaf(x[i], p[i], b[i]); break;
            default:
                ref = pow(v, b[i]);
                bound = isfinite(ref) ? pow_bound(v, b[i], ref) : 0;
                break;
            }
            bool ok = isnan(ref) ? isnan(out) : isinf(ref) ? out == ref : fabs(out - ref) <= bound;
            if (!ok && !bad++)
                first = (size_t)i;
            if (ok && bound > 0 && fabs(out - ref) / bound > worst)
                worst = fabs(out - ref) / bound;
        }
        char desc[64];
        snprintf(desc, sizeof desc, "%s N=%d", names[f], n);
        if (bad) {
            printf("FAIL %s: %zu outside their bound, first at %zu (x %a p %a b %a: %a)\n", desc, bad, first,
                   x[first], p[first], b[first], y[(size_t)f * n + first]);
            failed++;
        } else {
            printf("ok %s (worst %.3f of the bound)\n", desc, worst);
            passed++;
        }
    }
done:
    gpu_free(dx), gpu_free(dp), gpu_free(db), gpu_free(dy), free(x), free(p), free(b), free(y);
}

/* Philox-4x32-10 as docs/language.md defines the stream: counter (lo, hi, 0, 0) of the offset,
 * key (lo, hi) of the seed; the first two output words. */
static void philox(uint64_t seed, uint64_t off, uint32_t out[2])
{
    uint32_t c[4] = { (uint32_t)off, (uint32_t)(off >> 32), 0, 0 }, k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = { (uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k1, (uint32_t)p0 };
        memcpy(c, n, sizeof c);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c[0];
    out[1] = c[1];
}

static float unit_of(uint32_t x) { return (float)(x >> 8) * 0x1p-24f; }

/* randint bit for bit, rand exactly, randn within its bound: sqrt(-2 ln u1) with log1p's 1 ulp and
 * sqrt's rounding, cos.approx's 2^-20.5 absolute on [-pi, pi) and the angle's roundings (pi
 * 2^-23), the product's rounding. Then the moments of rand and randn, within 5 sigma. */
static void randoms(int n)
{
    char desc[64];
    snprintf(desc, sizeof desc, "rand, randn, randint N=%d", n);
    int32_t seed = (int32_t)0xdeadbeefu;
    int64_t seed64 = INT64_C(0x0123456789abcdef);
    uint32_t *iv = malloc((size_t)n * 4 + 4);
    float *u = malloc((size_t)n * 4 + 4), *g = malloc((size_t)n * 4 + 4), *v = malloc((size_t)n * 4 + 4);
    CUdeviceptr di = poisoned((size_t)n), du = poisoned((size_t)n), dg = poisoned((size_t)n), dv = poisoned((size_t)n);
    tilert_kernel *k = kernel("randoms");
    tilert_arg s64;
    s64.kind = TILERT_ARG_I64;
    s64.v.i64 = seed64;
    tilert_arg a[] = { tilert_ptr(di), tilert_ptr(du), tilert_ptr(dg), tilert_ptr(dv), tilert_i32(seed), s64, tilert_i32(n) };
    tilert_status st = k && di && du && dg && dv ? tilert_launch(k, 0, a, 7) : TILERT_ERR_BAD_ARGS;
    bool ok = st == TILERT_OK && gpu_sync() && gpu_download(iv, di, (size_t)n * 4) && gpu_download(u, du, (size_t)n * 4) &&
              gpu_download(g, dg, (size_t)n * 4) && gpu_download(v, dv, (size_t)n * 4);
    size_t bad[4] = { 0 }, first[4] = { 0 };
    double su = 0, su2 = 0, sg = 0, sg2 = 0;
    for (int i = 0; ok && i < n; i++) {
        uint32_t w[2], w64[2], wb[2];
        philox((uint32_t)seed, (uint32_t)i, w);
        philox((uint64_t)seed64, (uint64_t)i + (UINT64_C(1) << 32), w64);
        philox((uint32_t)seed, (uint32_t)(i / 1024), wb);
        double u1 = ((w[0] >> 8) + 1) * 0x1p-24, u2 = (w[1] >> 8) * 0x1p-24;
        double rad = sqrt(-2 * log(u1)), cs = cos(2 * PI * u2), ref = rad * cs;
        double bound = (rad * ((0x1p-24 + 0x1p-24) * fabs(cs) + exp2(-20.5) + PI * 0x1p-23) + 0x1p-24 * fabs(ref)) * 1.01;
        bool good[4] = { iv[i] == w[0], u[i] == unit_of(w[0]), fabs(g[i] - ref) <= bound,
                         v[i] == unit_of(w64[0]) + unit_of(wb[0]) };
        for (int j = 0; j < 4; j++)
            if (!good[j] && !bad[j]++)
                first[j] = (size_t)i;
        su += u[i], su2 += (double)u[i] * u[i], sg += g[i], sg2 += (double)g[i] * g[i];
    }
    if (!ok || bad[0] || bad[1] || bad[2] || bad[3]) {
        printf("FAIL %s: %s wrong randint %zu (first %zu), rand %zu (%zu), randn %zu (%zu), 64-bit %zu (%zu)\n",
               desc, ok ? "" : "launch or copy failed;", bad[0], first[0], bad[1], first[1], bad[2], first[2],
               bad[3], first[3]);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
    if (ok && n >= 100000) {
        double mu = su / n, vu = su2 / n - mu * mu, mg = sg / n, vg = sg2 / n - mg * mg;
        bool st_ok = fabs(mu - 0.5) <= 5 * sqrt(1.0 / 12 / n) && fabs(vu - 1.0 / 12) <= 5 * sqrt((1.0 / 80 - 1.0 / 144) / n) &&
                     fabs(mg) <= 5 / sqrt(n) && fabs(vg - 1) <= 5 * sqrt(2.0 / n);
        printf("%s moments N=%d: rand mean %.6f var %.6f, randn mean %.6f var %.6f\n", st_ok ? "ok" : "FAIL", n, mu, vu,
               mg, vg);
        st_ok ? passed++ : failed++;
    }
    gpu_free(di), gpu_free(du), gpu_free(dg), gpu_free(dv), free(iv), free(u), free(g), free(v);
}

static int32_t ints_ref_y(int32_t x, float f, int mode)
{
    if (mode > 0) {
        int32_t v = x * 3 - x / 7 + x % 5;
        return (v > -1000 ? v : -1000) + (int32_t)f;
    }
    return (x < 0 ? -x : x) / 3;
}

static void ints(int n, int mode)
{
    char desc[64];
    snprintf(desc, sizeof desc, "ints mode=%d N=%d", mode, n);
    int32_t *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    float *f = malloc((size_t)n * 4 + 4), *z = malloc((size_t)n * 4 + 4);
    for (int i = 0; i < n; i++) {
        x[i] = (int32_t)(rng_next() % 20001) - 10000;
        f[i] = rng_uniform(-50, 50);
    }
    CUdeviceptr dx = upload((float *)x, (size_t)n), df = upload(f, (size_t)n);
    CUdeviceptr dy = poisoned((size_t)n), dz = poisoned((size_t)n);
    tilert_kernel *k = kernel("ints");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(df), tilert_ptr(dy), tilert_ptr(dz), tilert_i32(mode), tilert_i32(n) };
    tilert_status st = k && dx && df && dy && dz ? tilert_launch(k, 0, a, 6) : TILERT_ERR_BAD_ARGS;
    bool ok = st == TILERT_OK && gpu_sync() && gpu_download(y, dy, (size_t)n * 4) && gpu_download(z, dz, (size_t)n * 4);
    size_t bad = 0;
    for (int i = 0; ok && i < n; i++) {
        float zr = mode > 0 ? (float)x[i] * 0.5f + f[i] : (float)(x[i] < 100 ? x[i] : 100);
        bad += y[i] != ints_ref_y(x[i], f[i], mode) || fabsf(z[i] - zr) > 1e-6f * fabsf(zr) + 1e-6f;
    }
    printf("%s %s (%zu wrong)%s\n", ok && !bad ? "ok" : "FAIL", desc, bad, ok ? "" : tilert_last_error());
    ok && !bad ? passed++ : failed++;
    gpu_free(dx), gpu_free(df), gpu_free(dy), gpu_free(dz), free(x), free(y), free(f), free(z);
}

/* i64, u32, bool, f16, bf16 tensors through loads, arithmetic, casts and stores. The reference
 * mirrors the kernel's element rules: f16/bf16 values are computed in f32 and rounded once when
 * narrowed (a cast or a store). */
static void types(int n)
{
    char desc[64];
    snprintf(desc, sizeof desc, "types i64/u32/bool/f16/bf16 N=%d", n);
    int64_t *a = malloc((size_t)n * 8 + 8), *o = malloc((size_t)n * 8 + 8);
    uint32_t *b = malloc((size_t)n * 4 + 4), *p = malloc((size_t)n * 4 + 4);
    uint8_t *cb = malloc((size_t)n + 1), *q = malloc((size_t)n + 1);
    uint16_t *d = malloc((size_t)n * 2 + 2), *e = malloc((size_t)n * 2 + 2), *r = malloc((size_t)n * 2 + 2),
             *s = malloc((size_t)n * 2 + 2);
    int64_t k = -123456789012LL;
    uint16_t h = to_f16(1.5f);
    for (int i = 0; i < n; i++) {
        a[i] = (int64_t)(rng_next() >> 1) - (INT64_C(1) << 61);
        b[i] = (uint32_t)(rng_next() % 40);
        cb[i] = (uint8_t)(rng_next() & 1);
        d[i] = to_f16(rng_uniform(-4, 4));
        e[i] = to_bf16(rng_uniform(-4, 4));
    }
    CUdeviceptr da = 0, db = 0, dc = 0, dd = 0, de = 0, dout[5] = { 0 };
    size_t osz[5] = { 8, 4, 1, 2, 2 };
    bool ok = gpu_alloc(&da, (size_t)n * 8 + 16) && gpu_upload(da, a, (size_t)n * 8) &&
              gpu_alloc(&db, (size_t)n * 4 + 16) && gpu_upload(db, b, (size_t)n * 4) &&
              gpu_alloc(&dc, (size_t)n + 16) && gpu_upload(dc, cb, (size_t)n) &&
              gpu_alloc(&dd, (size_t)n * 2 + 16) && gpu_upload(dd, d, (size_t)n * 2) &&
              gpu_alloc(&de, (size_t)n * 2 + 16) && gpu_upload(de, e, (size_t)n * 2);
    for (int j = 0; j < 5 && ok; j++)   /* poison: 0xff bytes are never a right answer here */
        ok = gpu_alloc(&dout[j], (size_t)n * osz[j] + 16) &&
             gpu_check(cuMemsetD8(dout[j], 0xff, (size_t)n * osz[j]), "cuMemsetD8");
    tilert_kernel *kt = kernel("types");
    tilert_arg args[13] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_ptr(dd), tilert_ptr(de),
                            tilert_ptr(dout[0]), tilert_ptr(dout[1]), tilert_ptr(dout[2]), tilert_ptr(dout[3]),
                            tilert_ptr(dout[4]) };
    args[10].kind = TILERT_ARG_I64;
    args[10].v.i64 = k;
    args[11].kind = TILERT_ARG_F16BITS;
    args[11].v.bits16 = h;
    args[12] = tilert_i32(n);
    tilert_status st = ok && kt ? tilert_launch(kt, 0, args, 13) : TILERT_ERR_BAD_ARGS;
    ok = st == TILERT_OK && gpu_sync() && gpu_download(o, dout[0], (size_t)n * 8) &&
         gpu_download(p, dout[1], (size_t)n * 4) && gpu_download(q, dout[2], (size_t)n) &&
         gpu_download(r, dout[3], (size_t)n * 2) && gpu_download(s, dout[4], (size_t)n * 2);
    size_t bad = 0;
    for (int i = 0; ok && i < n; i++) {
        float df = from_f16(d[i]), ef = from_bf16(e[i]);
        /* i64 arithmetic wraps on the GPU: the same here, without signed overflow */
        int64_t ro = cb[i] ? (int64_t)((uint64_t)a[i] * 2 + (uint64_t)k) : (int64_t)((uint64_t)a[i] - (uint64_t)b[i]);
        uint32_t rp = (b[i] > 7 ? b[i] : 7) / 3 + (uint32_t)(int32_t)df;
        uint8_t rq = (uint8_t)(((df > 0.5f) && !cb[i]) || b[i] == 3);
        uint16_t rr = to_f16(df * from_f16(h) + 1.0f);
        uint16_t rs = to_bf16(from_bf16(to_bf16(ef * 2.0f)) - ef);
        bad += o[i] != ro || p[i] != rp || q[i] != rq || r[i] != rr || s[i] != rs;
    }
    printf("%s %s (%zu wrong)%s%s\n", ok && !bad ? "ok" : "FAIL", desc, bad, ok ? "" : " ", ok ? "" : tilert_last_error());
    ok && !bad ? passed++ : failed++;
    gpu_free(da), gpu_free(db), gpu_free(dc), gpu_free(dd), gpu_free(de);
    for (int j = 0; j < 5; j++)
        gpu_free(dout[j]);
    free(a), free(o), free(b), free(p), free(cb), free(q), free(d), free(e), free(r), free(s);
}

/* head_proj_f32 / _f16: X is [S, H, D] and Y [S, H, E] in memory, each kernel sees head h as
 * [S, D] through strides that are expressions of the sizes (H * D); W is [D, E]. Per head, the
 * float64 product of the inputs (rounded to f16 for the f16 kernel) within its bound; every
 * element of Y written. */
static void head_proj(int h, int sq, int d, int e, bool f16)
{
    char desc[112];
    const char *name = f16 ? "head_proj_f16" : "head_proj_f32";
    snprintf(desc, sizeof desc, "%s (strides(D, H * D, 1)) H=%d S=%d D=%d E=%d", name, h, sq, d, e);
    size_t sx = (size_t)sq * h * d, sw = (size_t)d * e, sy = (size_t)sq * h * e;
    float *x = malloc(sx * 4 + 4), *w = malloc(sw * 4 + 4), *xh = malloc((size_t)sq * d * 4 + 4);
    uint16_t *x16 = malloc(sx * 2 + 2), *w16 = malloc(sw * 2 + 2);
    double *ref = malloc(sy * 8 + 8), *bound = malloc(sy * 8 + 8);
    double *rh = malloc((size_t)sq * e * 8 + 8), *bh = malloc((size_t)sq * e * 8 + 8);
    rng_fill(x, sx, -1, 1);
    rng_fill(w, sw, -1, 1);
    for (size_t i = 0; f16 && i < sx; i++)
        x[i] = from_f16(x16[i] = to_f16(x[i]));
    for (size_t i = 0; f16 && i < sw; i++)
        w[i] = from_f16(w16[i] = to_f16(w[i]));
    for (int hh = 0; hh < h; hh++) {
        for (int r = 0; r < sq; r++)
            memcpy(&xh[(size_t)r * d], &x[((size_t)r * h + hh) * d], (size_t)d * 4);
        ref_matmul_bound(xh, NULL, w, NULL, rh, bh, sq, e, d, f16 ? SUM_TENSOR : SUM_FMA);
        for (int r = 0; r < sq; r++)
            for (int j = 0; j < e; j++) {
                ref[((size_t)r * h + hh) * e + j] = rh[(size_t)r * e + j];
                bound[((size_t)r * h + hh) * e + j] = bh[(size_t)r * e + j];
            }
    }
    CUdeviceptr dx = 0, dw = 0, dy = poisoned(sy);
    if (f16) {
        if (!gpu_alloc(&dx, sx * 2 + 16) || !gpu_upload(dx, x16, sx * 2))
            dx = 0;
        if (!gpu_alloc(&dw, sw * 2 + 16) || !gpu_upload(dw, w16, sw * 2))
            dw = 0;
    } else {
        dx = upload(x, sx);
        dw = upload(w, sw);
    }
    tilert_kernel *k = kernel(name);
    /* arguments, then the sizes in order of first appearance: H, S, D, E */
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(dy), tilert_i32(h), tilert_i32(sq), tilert_i32(d),
                       tilert_i32(e) };
    if (k && dx && dw && dy)
        run(desc, k, a, 7, dy, ref, bound, sy, (size_t)e);
    gpu_free(dx), gpu_free(dw), gpu_free(dy);
    free(x), free(w), free(xh), free(x16), free(w16), free(ref), free(bound), free(rh), free(bh);
}

/* f16 (bf16 when bf) values from [-1, 1]: x keeps the rounded values, h the bits. */
static void half_values(float *x, uint16_t *h, size_t n, bool bf)
{
    rng_fill(x, n, -1, 1);
    for (size_t i = 0; i < n; i++) {
        h[i] = bf ? to_bf16(x[i]) : to_f16(x[i]);
        x[i] = bf ? from_bf16(h[i]) : from_f16(h[i]);
    }
}

static void f16_values(float *x, uint16_t *h, size_t n) { half_values(x, h, n, false); }

static CUdeviceptr upload_f16(const uint16_t *h, size_t n)
{
    CUdeviceptr p = 0;
    if (!gpu_alloc(&p, n * 2 + 16) || !gpu_upload(p, h, n * 2)) {
        gpu_free(p);
        return 0;
    }
    return p;
}

/* A reference and its bound, m x n, replaced by their transposes (n x m), for a kernel that
 * stores its result transposed. */
static void transpose_ref(double **ref, double **bound, int m, int n)
{
    size_t sz = (size_t)m * n;
    double *rt = malloc(sz * 8 + 8), *bt = malloc(sz * 8 + 8);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            rt[(size_t)j * m + i] = (*ref)[(size_t)i * n + j];
            bt[(size_t)j * m + i] = (*bound)[(size_t)i * n + j];
        }
    free(*ref), free(*bound);
    *ref = rt, *bound = bt;
}

/* chain: O = f16(X Y^T) Z (D, E <= 64); chain_t (kname) the same written f16(Y X^T)^T Z; chain_same
 * (same, bf false): Z = Y, E = D. The reference:
 * s = X Y^T in float64 with the tensor-core bound, then s rounded to f16 (bound_store), which the
 * second product takes as operands known to within their radius (the float midpoint's own
 * distance added). */
static void chain_as(bool bf, bool same, const char *kname, int m, int n, int d, int e)
{
    char desc[112];
    const char *name = kname ? kname : same ? "chain_same" : bf ? "chain_bf16" : "chain";
    if (same)
        e = d;
    snprintf(desc, sizeof desc, "%s (%s(X @ Y^T) @ Z, A from registers) M=%d N=%d D=%d E=%d", name, bf ? "bf16" : "f16",
             m, n, d, e);
    size_t sx = (size_t)m * d, sy = (size_t)n * d, sz = (size_t)n * e, ss = (size_t)m * n, so = (size_t)m * e;
    float *x = malloc(sx * 4 + 4), *y = malloc(sy * 4 + 4), *yt = malloc(sy * 4 + 4), *z = malloc(sz * 4 + 4);
    float *mid = malloc(ss * 4 + 4), *rad = malloc(ss * 4 + 4);
    uint16_t *x16 = malloc(sx * 2 + 2), *y16 = malloc(sy * 2 + 2), *z16 = malloc(sz * 2 + 2);
    double *sref = malloc(ss * 8 + 8), *sbound = malloc(ss * 8 + 8), *ref = malloc(so * 8 + 8), *bound = malloc(so * 8 + 8);
    half_values(x, x16, sx, bf);
    half_values(y, y16, sy, bf);
    half_values(z, z16, sz, bf);
    if (same) {
        memcpy(z, y, sy * 4);
        memcpy(z16, y16, sy * 2);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            yt[(size_t)j * n + i] = y[(size_t)i * d + j];
    ref_matmul_bound(x, NULL, yt, NULL, sref, sbound, m, n, d, SUM_TENSOR);
    bound_store(sref, sbound, ss, bf ? U_BF16 : U_F16, bf ? 0x1p-134 : 0x1p-25);
    for (size_t i = 0; i < ss; i++) {
        mid[i] = (float)sref[i];
        rad[i] = (float)((sbound[i] + fabs(sref[i] - mid[i])) * (1 + 0x1p-20));
    }
    ref_matmul_bound(mid, rad, z, NULL, ref, bound, m, e, n, SUM_TENSOR);
    CUdeviceptr dx = upload_f16(x16, sx), dy = upload_f16(y16, sy), dz = upload_f16(z16, sz), dout = poisoned(so);
    tilert_kernel *k = kernel(name);
    /* arguments, then the sizes in order of first appearance: M, D, N, E */
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dz), tilert_ptr(dout), tilert_i32(m), tilert_i32(d),
                       tilert_i32(n), tilert_i32(e) };
    /* chain_same: X, Y, O, then M, D, N */
    tilert_arg as[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dout), tilert_i32(m), tilert_i32(d), tilert_i32(n) };
    if (k && dx && dy && dz && dout)
        run(desc, k, same ? as : a, same ? 6 : 8, dout, ref, bound, so, (size_t)e);
    gpu_free(dx), gpu_free(dy), gpu_free(dz), gpu_free(dout);
    free(x), free(y), free(yt), free(z), free(mid), free(rad), free(x16), free(y16), free(z16);
    free(sref), free(sbound), free(ref), free(bound);
}

static void chain(bool bf, int m, int n, int d, int e) { chain_as(bf, false, NULL, m, n, d, e); }

/* mask_steps, mask_lets: P = X Y^T where column j < N and j <= i + off, else -1 (lower_mask.c's
 * uniform test: blocks wholly inside take the scores unmasked; mask_lets with the mask's index
 * tiles in lets made where they are read; mask_t with P^T stored, computed transposed). The kept
 * elements carry the tensor-core bound, the masked ones are exact. */
static void mask_steps(const char *name, int m, int n, int d, int off)
{
    char desc[112];
    snprintf(desc, sizeof desc, "%s (a mask of index tiles, tested once a block) M=%d N=%d D=%d off=%d",
             name, m, n, d, off);
    size_t sx = (size_t)m * d, sy = (size_t)n * d, ss = (size_t)m * n;
    float *x = malloc(sx * 4 + 4), *y = malloc(sy * 4 + 4), *yt = malloc(sy * 4 + 4);
    uint16_t *x16 = malloc(sx * 2 + 2), *y16 = malloc(sy * 2 + 2);
    double *ref = malloc(ss * 8 + 8), *bound = malloc(ss * 8 + 8);
    half_values(x, x16, sx, false);
    half_values(y, y16, sy, false);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            yt[(size_t)j * n + i] = y[(size_t)i * d + j];
    ref_matmul_bound(x, NULL, yt, NULL, ref, bound, m, n, d, SUM_TENSOR);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            if (!((long)j <= (long)i + off)) {
                ref[(size_t)i * n + j] = -1;
                bound[(size_t)i * n + j] = 0;
            }
    bool tr = !strcmp(name, "mask_t");       /* P^T stored: [N, M] */
    if (tr)
        transpose_ref(&ref, &bound, m, n);
    CUdeviceptr dx = upload_f16(x16, sx), dy = upload_f16(y16, sy), dout = poisoned(ss);
    tilert_kernel *k = kernel(name);
    /* X, Y, P, off, then the sizes in order of first appearance: M, D, N */
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dout), tilert_i32(off), tilert_i32(m),
                       tilert_i32(d), tilert_i32(n) };
    if (k && dx && dy && dout)
        run(desc, k, a, 7, dout, ref, bound, ss, (size_t)(tr ? m : n));
    gpu_free(dx), gpu_free(dy), gpu_free(dout);
    free(x), free(y), free(yt), free(x16), free(y16), free(ref), free(bound);
}

/* attn: O = softmax(scale Q K^T) V per batch-head, rows of 128 (attn_next: 64), keys in blocks of 64
 * (D <= 64).
 *
 * The bound. With exact logits t_n, M = max t, p_n = exp(t_n - M), l = sum p_n, the kernel's
 * numerator sum_n f16(p'_n) V_n and denominator sum_n p'_n carry each term scaled by the same
 * product of running-max corrections as exact arithmetic would, so each term is off by a relative
 * theta_n at most: the logit's error d_n (the scores' tensor-core bound times scale, plus the
 * product's rounding: exp(d) - 1 <= 1.01 d), exp's own (2 + 1.7 |x|) ulp at |x| <= M - t_n
 * (math_bound's figure with the subtraction's rounding), the nb corrections' exp errors (their
 * arguments sum to at most max t - min t), the product of the running maximum by log2 e in each
 * (exp(a - b) is one fma: u |b| relative, nb + 1 times), two f32 roundings per block (the rescale and the add)
 * and the tensor-core sum of each block; the numerator also has f16's 2^-11 and, below f16's
 * normal range, 2^-25 absolute per term. Then |o' - o| <= (thN S + thD |o| + a)/(1 - thD) plus
 * the division's rounding, with S = sum w_n |V_n|, w_n = p_n / l, a the absolute parts over l >= 1. */
static void attn(const char *name, int bh, int sq, int d)
{
    char desc[112];
    snprintf(desc, sizeof desc, "%s (online softmax, P from registers) BH=%d S=%d D=%d", name, bh, sq, d);
    const float scale = 0.125f;
    size_t per = (size_t)sq * d, sz = (size_t)bh * per, ss = (size_t)sq * sq;
    float *q = malloc(sz * 4 + 4), *k = malloc(sz * 4 + 4), *v = malloc(sz * 4 + 4), *kt = malloc(per * 4 + 4);
    uint16_t *q16 = malloc(sz * 2 + 2), *k16 = malloc(sz * 2 + 2), *v16 = malloc(sz * 2 + 2);
    double *t = malloc(ss * 8 + 8), *tb = malloc(ss * 8 + 8), *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    f16_values(q, q16, sz);
    f16_values(k, k16, sz);
    f16_values(v, v16, sz);
    int nb = (sq + 63) / 64;
    const double ulp = 0x1p-23, u = 0x1p-24, u16 = 0x1p-11;
    for (int h = 0; h < bh; h++) {
        const float *qh = q + (size_t)h * per, *kh = k + (size_t)h * per, *vh = v + (size_t)h * per;
        for (int i = 0; i < sq; i++)
            for (int j = 0; j < d; j++)
                kt[(size_t)j * sq + i] = kh[(size_t)i * d + j];
        ref_matmul_bound(qh, NULL, kt, NULL, t, tb, sq, sq, d, SUM_TENSOR);
        for (int m = 0; m < sq; m++) {
            double *tr = t + (size_t)m * sq, *br = tb + (size_t)m * sq, M = -INFINITY, lo = INFINITY, l = 0;
            for (int n = 0; n < sq; n++) {
                tr[n] *= scale;
                br[n] = br[n] * scale + u * fabs(tr[n]);
                M = fmax(M, tr[n]);
                lo = fmin(lo, tr[n]);
            }
            double th = 0, absn = 0;
            for (int n = 0; n < sq; n++) {
                double x = M - tr[n], e = 1.01 * br[n] + (2 + 1.7 * x) * ulp;
                th = fmax(th, e);
                l += exp(-x);
            }
            double bmax = 0;
            for (int n = 0; n < sq; n++)
                bmax = fmax(bmax, br[n]);
            th += (2 * nb + 1.7 * (M - lo)) * ulp + (2 * nb + 2) * u + sum_rel_bound(SUM_TENSOR, 64) +
                  (nb + 1) * 1.01 * u * (fmax(fabs(M), fabs(lo)) + bmax);
            double thn = th + u16;
            for (int e = 0; e < d; e++) {
                double o = 0, s = 0;
                absn = 0;
                for (int n = 0; n < sq; n++) {
                    double w = exp(tr[n] - M) / l, ve = vh[(size_t)n * d + e];
                    o += w * ve;
                    s += w * fabs(ve);
                    absn += (0x1p-25 + 0x1p-126) * fabs(ve);
                }
                size_t at = (size_t)h * per + (size_t)m * d + e;
                ref[at] = o;
                bound[at] = (thn * s + th * fabs(o) + absn) / (1 - th) + u * (fabs(o) + s);
            }
        }
    }
    CUdeviceptr dq = upload_f16(q16, sz), dk = upload_f16(k16, sz), dv = upload_f16(v16, sz), dout = poisoned(sz);
    tilert_kernel *kk = kernel(name);
    /* arguments, then the sizes in order of first appearance: BH, S, D */
    tilert_arg a[] = { tilert_ptr(dq), tilert_ptr(dk), tilert_ptr(dv), tilert_ptr(dout), tilert_f32(scale),
                       tilert_i32(bh), tilert_i32(sq), tilert_i32(d) };
    if (kk && dq && dk && dv && dout)
        run(desc, kk, a, 8, dout, ref, bound, sz, (size_t)d);
    gpu_free(dq), gpu_free(dk), gpu_free(dv), gpu_free(dout);
    free(q), free(k), free(v), free(kt), free(q16), free(k16), free(v16), free(t), free(tb), free(ref), free(bound);
}

/* held_f32: C = A[:, :16] @ sum of B's 16-row blocks, the products summed one k at a time by FMA:
 * the reference is the plain product of A repeated along k (A's column j at k = 16 b + j) and B. */
static void held_f32(int m, int d, int n, int e)
{
    char desc[96];
    snprintf(desc, sizeof desc, "held_f32 (a window the loop does not move) M=%d D=%d N=%d E=%d", m, d, n, e);
    int nk = (n + 15) / 16 * 16;
    size_t sa = (size_t)m * d, sb = (size_t)n * e, sc = (size_t)m * e;
    float *a = malloc(sa * 4 + 4), *b = malloc(sb * 4 + 4), *ax = calloc((size_t)m * nk + 1, 4), *bx = calloc((size_t)nk * e + 1, 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    rng_fill(a, sa, -1, 1);
    rng_fill(b, sb, -1, 1);
    for (int i = 0; i < m; i++)
        for (int k = 0; k < nk; k++)
            ax[(size_t)i * nk + k] = k % 16 < d ? a[(size_t)i * d + k % 16] : 0;
    memcpy(bx, b, sb * 4);
    ref_matmul_bound(ax, NULL, bx, NULL, ref, bound, m, e, nk, SUM_FMA);
    CUdeviceptr da = upload(a, sa), db = upload(b, sb), dc = poisoned(sc);
    tilert_kernel *k = kernel("held_f32");
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(d), tilert_i32(n),
                          tilert_i32(e) };
    if (k && da && db && dc)
        run(desc, k, args, 7, dc, ref, bound, sc, (size_t)e);
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(b), free(ax), free(bx), free(ref), free(bound);
}

/* outer_relu: C[i][j] = sum_k max(A[k][i] B[k][j], 0). Each term is one rounded product (ReLU is
 * exact), summed in order by K additions: |error| <= gamma(K + 1, 2^-24) sum_k max(a b, 0). */
static void outer_relu(const char *name, int m, int kk, int n)
{
    char desc[112];
    snprintf(desc, sizeof desc, "%s (outer-product update, layout plan) M=%d K=%d N=%d", name, m, kk, n);
    size_t sa = (size_t)kk * m, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *a = malloc(sa * 4 + 4), *b = malloc(sb * 4 + 4);
    double *ref = calloc(sc + 1, 8), *bound = calloc(sc + 1, 8);
    rng_fill(a, sa, -1, 1);
    rng_fill(b, sb, -1, 1);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < kk; k++) {
                double t = (double)a[(size_t)k * m + i] * b[(size_t)k * n + j];
                s += t > 0 ? t : 0;
            }
            ref[(size_t)i * n + j] = s;
            bound[(size_t)i * n + j] = gamma_n(kk + 1, 0x1p-24) * s;
        }
    CUdeviceptr da = upload(a, sa), db = upload(b, sb), dc = poisoned(sc);
    tilert_kernel *k = kernel(name);
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(kk), tilert_i32(m), tilert_i32(n) };
    if (k && da && db && dc)
        run(desc, k, args, 6, dc, ref, bound, sc, (size_t)n);
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(b), free(ref), free(bound);
}

/* value_a: C = A @ B with A loaded into registers by a let before the product (f16, exact inputs,
 * the tensor-core sum's bound); value_t: the same product of transposed values, C^T stored. */
static void value_a_as(const char *name, int m, int k, int n)
{
    bool tr = !strcmp(name, "value_t");
    char desc[96];
    snprintf(desc, sizeof desc, "%s (%s) M=%d K=%d N=%d", name,
             tr ? "transposed values as the operands of @, C^T stored" : "a let as the A of @", m, k, n);
    size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    float *a = malloc(sa * 4 + 4), *b = malloc(sb * 4 + 4);
    uint16_t *a16 = malloc(sa * 2 + 2), *b16 = malloc(sb * 2 + 2);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    f16_values(a, a16, sa);
    f16_values(b, b16, sb);
    ref_matmul_bound(a, NULL, b, NULL, ref, bound, m, n, k, SUM_TENSOR);
    if (tr)             /* the kernel stores C^T: [N, M] */
        transpose_ref(&ref, &bound, m, n);
    CUdeviceptr da = upload_f16(a16, sa), db = upload_f16(b16, sb), dc = poisoned(sc);
    tilert_kernel *kk = kernel(name);
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(k), tilert_i32(n) };
    if (kk && da && db && dc)
        run(desc, kk, args, 6, dc, ref, bound, sc, (size_t)(tr ? m : n));
    gpu_free(da), gpu_free(db), gpu_free(dc);
    free(a), free(b), free(a16), free(b16), free(ref), free(bound);
}

/* transpose_add: Y = X^T + 1, exact (one rounding of a sum with 1), every element written. */
static void transpose_add(int rows, int cols)
{
    char desc[96];
    snprintf(desc, sizeof desc, "transpose_add (a .T window) R=%d C=%d", rows, cols);
    size_t sz = (size_t)rows * cols;
    float *x = malloc(sz * 4 + 4);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    rng_fill(x, sz, -1, 1);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double v = (double)x[(size_t)r * cols + c] + 1.0;
            ref[(size_t)c * rows + r] = v;
            bound[(size_t)c * rows + r] = fabs(v) * 0x1p-24;   /* f32 addition: half an ulp */
        }
    CUdeviceptr dx = upload(x, sz), dy = poisoned(sz);
    tilert_kernel *k = kernel("transpose_add");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(cols) };
    if (k && dx && dy)
        run(desc, k, a, 4, dy, ref, bound, sz, (size_t)rows);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "language features");
    if (rc >= 0)
        return rc;
    char path[512];
    snprintf(path, sizeof path, "%s/features/features.ptx", dir);
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        return 1;
    }
    /* Each kernel's sizes, and their small subset for TILEC_TEST_SMALL (x_small): smaller than
       the kernel's tile, a tile multiple, neither. */
    bool small = test_small();
    const int *r;
    static const int rs[][2] = { { 1, 1 }, { 33, 64 }, { 100, 50 }, { 257, 7 } };
    static const int rs_small[][2] = { { 1, 1 }, { 32, 64 }, { 33, 50 } };
    for (size_t i = 0; i < (small ? COUNT(rs_small) : COUNT(rs)); i++) {
        r = small ? rs_small[i] : rs[i];
        softmax_rows(r[0], r[1]);
        softmax_scaled(r[0], r[1], 0.37f);
        softmax_scaled(r[0], r[1], 0);
    }
    static const int cs[][2] = { { 1, 1 }, { 3, 2048 }, { 7, 1000 } };
    static const int cs_small[][2] = { { 1, 1 }, { 2, 2048 }, { 3, 1000 } };
    for (size_t i = 0; i < (small ? COUNT(cs_small) : COUNT(cs)); i++) {
        r = small ? cs_small[i] : cs[i];
        center_rows(r[0], r[1]);
    }
    static const int ss[][2] = { { 1, 1 }, { 17, 100 }, { 1000, 129 } };
    static const int ss_small[][2] = { { 1, 1 }, { 16, 64 }, { 17, 100 } };
    for (size_t i = 0; i < (small ? COUNT(ss_small) : COUNT(ss)); i++) {
        r = small ? ss_small[i] : ss[i];
        colsum(r[0], r[1]);
    }
    static const int gs[][3] = { { 1, 1, 1 }, { 65, 70, 9 }, { 200, 129, 100 } };
    static const int gs_small[][3] = { { 1, 1, 1 }, { 64, 64, 16 }, { 65, 70, 9 } };
    for (size_t i = 0; i < (small ? COUNT(gs_small) : COUNT(gs)); i++) {
        r = small ? gs_small[i] : gs[i];
        gemm_bias_relu(r[0], r[1], r[2]);
    }
    static const int ms[][3] = { { 1, 8, 8 }, { 33, 38, 45 }, { 100, 72, 200 }, { 130, 136, 264 } };
    static const int ms_small[][3] = { { 1, 8, 8 }, { 64, 64, 96 }, { 33, 38, 45 } };
    for (size_t i = 0; i < (small ? COUNT(ms_small) : COUNT(ms)); i++) {
        r = small ? ms_small[i] : ms[i];
        mma_staged_a(r[0], r[1], r[2]);
    }
    static const int ts[][3] = { { 5, 12, 16 }, { 70, 132, 36 }, { 129, 260, 100 }, { 200, 384, 260 } };
    static const int ts_small[][3] = { { 5, 12, 16 }, { 64, 128, 96 }, { 70, 132, 36 } };
    for (size_t i = 0; i < (small ? COUNT(ts_small) : COUNT(ts)); i++) {
        r = small ? ts_small[i] : ts[i];
        tf32_products(r[0], r[1], r[2]);
    }
    static const int us[][3] = { { 3, 7, 5 }, { 65, 131, 37 }, { 130, 257, 101 } };
    static const int us_small[][3] = { { 3, 7, 5 }, { 64, 128, 64 }, { 65, 131, 37 } };
    for (size_t i = 0; i < (small ? COUNT(us_small) : COUNT(us)); i++) {
        r = small ? us_small[i] : us[i];
        tf32_unaligned(r[0], r[1], r[2]);
    }
    /* heads seen through stride expressions: H, S, D, E */
    static const int hs[][4] = { { 1, 1, 8, 8 }, { 3, 70, 24, 72 }, { 4, 129, 72, 136 } };
    static const int hs_small[][4] = { { 1, 1, 8, 8 }, { 2, 64, 32, 64 }, { 3, 70, 24, 72 } };
    for (size_t i = 0; i < (small ? COUNT(hs_small) : COUNT(hs)); i++) {
        r = small ? hs_small[i] : hs[i];
        head_proj(r[0], r[1], r[2], r[3], false);
        head_proj(r[0], r[1], r[2], r[3], true);
    }
    /* M, N, D, E: tiles of 128 rows, 64-row blocks of Y and Z, D and E at most 64 */
    static const int ch[][4] = { { 1, 1, 8, 8 }, { 100, 130, 64, 64 }, { 257, 64, 40, 24 }, { 128, 1000, 64, 64 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(ch)); i++)
        for (int bf = 0; bf < 2; bf++)
            chain(bf, ch[i][0], ch[i][1], ch[i][2], ch[i][3]);
    for (size_t i = 0; i < (small ? 2 : COUNT(ch)); i++)
        chain_as(false, false, "chain_t", ch[i][0], ch[i][1], ch[i][2], ch[i][3]);
    /* M, N, D: Y's 32-row windows read twice from one copy */
    static const int cy[][3] = { { 1, 1, 8 }, { 100, 130, 64 }, { 257, 33, 40 }, { 64, 1000, 64 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(cy)); i++)
        chain_as(false, true, NULL, cy[i][0], cy[i][1], cy[i][2], 0);
    /* M, N, D, off: 64-row blocks, 64-column steps; interior blocks, edges past N, a diagonal
       through blocks, every element masked, none but past N */
    static const int mk[][4] = { { 1, 1, 8, 0 }, { 100, 130, 64, 0 }, { 200, 77, 64, -5 }, { 129, 300, 48, 40 },
                                 { 70, 500, 64, -1000 }, { 130, 200, 64, 1000 } };
    for (size_t i = 0; i < (small ? 3 : COUNT(mk)); i++)
        mask_steps("mask_steps", mk[i][0], mk[i][1], mk[i][2], mk[i][3]);
    for (size_t i = 0; i < (small ? 3 : COUNT(mk)); i++)
        mask_steps("mask_lets", mk[i][0], mk[i][1], mk[i][2], mk[i][3]);
    for (size_t i = 0; i < (small ? 3 : COUNT(mk)); i++)
        mask_steps("mask_t", mk[i][0], mk[i][1], mk[i][2], mk[i][3]);
    /* M, K, N: K and N multiples of 8 */
    static const int va[][3] = { { 1, 8, 8 }, { 129, 200, 136 }, { 300, 64, 256 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(va)); i++)
        value_a_as("value_a", va[i][0], va[i][1], va[i][2]);
    for (size_t i = 0; i < (small ? 2 : COUNT(va)); i++)
        value_a_as("value_t", va[i][0], va[i][1], va[i][2]);
    /* BH, S, D: query rows in tiles of 128, keys in blocks of 64 */
    static const int at[][3] = { { 1, 1, 8 }, { 2, 100, 64 }, { 3, 129, 64 }, { 1, 1000, 40 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(at)); i++)
        attn("attn", at[i][0], at[i][1], at[i][2]);
    for (size_t i = 0; i < (small ? 2 : COUNT(at)); i++)
        attn("attn_next", at[i][0], at[i][1], at[i][2]);
    static const int at128[][3] = { { 1, 1, 8 }, { 2, 100, 128 }, { 1, 300, 72 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(at128)); i++)
        attn("attn_d128", at128[i][0], at128[i][1], at128[i][2]);
    /* M, D, N, E */
    static const int hf[][4] = { { 1, 4, 1, 4 }, { 100, 12, 70, 68 }, { 129, 16, 300, 128 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(hf)); i++)
        held_f32(hf[i][0], hf[i][1], hf[i][2], hf[i][3]);
    /* M, K, N: multiples of 4 for outer_relu (assumed), anything for outer_relu_wide */
    static const int orl[][3] = { { 4, 1, 4 }, { 100, 37, 68 }, { 132, 300, 260 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(orl)); i++)
        outer_relu("outer_relu", orl[i][0], orl[i][1], orl[i][2]);
    static const int orw[][3] = { { 1, 1, 1 }, { 33, 7, 129 }, { 70, 100, 300 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(orw)); i++)
        outer_relu("outer_relu_wide", orw[i][0], orw[i][1], orw[i][2]);
    transpose_add(1, 1);
    transpose_add(33, 70);
    if (!small)
        transpose_add(129, 1000);
    maxes(1, false);
    maxes(small ? 5000 : 100000, false);
    maxes(small ? 5001 : 100001, true);
    mathfns(1);
    mathfns(small ? 1000 : 5000);
    mathfns2(1);
    mathfns2(small ? 1001 : 70001);
    randoms(1);
    randoms(small ? 5000 : 1000003);
    /* R, N: N = 0 runs no step; 512 one; 32768 fills P's 64 columns */
    static const int ls[][2] = { { 1, 0 }, { 3, 1 }, { 2, 512 }, { 5, 1000 }, { 4, 32768 } };
    for (size_t i = 0; i < (small ? 3 : COUNT(ls)); i++)
        loop_sums(ls[i][0], ls[i][1]);
    squeeze_store(1, 1);
    squeeze_store(100, 70);
    if (!small)
        squeeze_store(1000, 128);
    /* M, K, N: K and N multiples of 8 */
    static const int ct[][3] = { { 1, 8, 8 }, { 130, 72, 136 }, { 300, 200, 264 } };
    for (size_t i = 0; i < (small ? 2 : COUNT(ct)); i++)
        conv_taps(ct[i][0], ct[i][1], ct[i][2]);
    element_gathers(1, 1);
    element_gathers(1000, 37);
    if (!small)
        element_gathers(100003, 4099);
    wide_rows(1, 16384);
    wide_rows(3, small ? 5000 : 10001);
    slices(1);
    slices(37);
    if (!small)
        slices(1000);
    bitcasts(1);
    bitcasts(small ? 1000 : 70001);
    bitops(1);
    bitops(small ? 1000 : 70001);
    block_sum512(1);
    block_sum512(small ? 9000 : 100001);
    ints(1, 1);
    ints(1000, 1);
    ints(1000, 0);
    ints(4097, -3);
    types(1);
    types(1000);
    if (!small)
        types(70000);
    tilert_unload(mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
