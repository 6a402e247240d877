/* reductions.c: the kernels of tests/gpu/kernels/reductions.tile against float64 references:
 * reductions along an axis that spans several warps (shuffles, then a word per warp), sums along
 * an axis that a loop adds into a var (per-thread partials reduced after the loop; two statements
 * into one var; integers exact; a var the loop also reads, summed every step), and f16/bf16 rows
 * moved 16 bytes a thread, with and without the alignment assume; expand_dims and squeeze;
 * argmax and argmin; cumsum; atomic_add on f16. Fresh random inputs, poisoned
 * outputs, sizes that are not tile multiples; every element within its bound (ref_util.h).
 * TILEC_TEST_SMALL: fewer sizes. Usage: reductions EXAMPLES_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;
static tilert_module *mod;

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

static void fail(const char *desc, const char *why)
{
    printf("FAIL %s: %s\n", desc, why);
    failed++;
}

/* Launches k, downloads n words of out (as floats) into h. */
static bool run(const char *desc, tilert_kernel *k, tilert_arg *a, int na, CUdeviceptr out, void *h, size_t n)
{
    tilert_status s = tilert_launch(k, 0, a, na);
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(h, out, n * 4)) {
        printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        return false;
    }
    return true;
}

static void verdict(const char *desc, const float *h, const double *ref, const double *bound, size_t n, size_t cols)
{
    report_outputs(desc, h, ref, bound, n, cols) ? passed++ : failed++;
}

/* Row (or column, when by_col) sums or maxima of x [rows, n]: sums in any order (n - 1
 * additions a term), maxima exact. */
static void ref_lines(const float *x, int rows, int n, bool by_col, bool is_max, double *ref, double *bound)
{
    int lines = by_col ? n : rows, len = by_col ? rows : n;
    float *v = malloc((size_t)len * 4 + 4);
    for (int i = 0; i < lines; i++) {
        for (int j = 0; j < len; j++)
            v[j] = by_col ? x[(size_t)j * n + i] : x[(size_t)i * n + j];
        if (is_max) {
            double m = -INFINITY;
            for (int j = 0; j < len; j++)
                m = v[j] > m ? v[j] : m;
            ref[i] = m;
            bound[i] = 0;
        } else
            ref[i] = ref_sum(v, (size_t)len, len > 1 ? len - 1 : 0, &bound[i]);
    }
    free(v);
}

/* rowblock_sum, rowblock_max (rows of at most `cap`), colsum_loop: one input, one output line. */
static void lines(const char *name, int rows, int n, bool by_col, bool is_max)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s R=%d N=%d", name, rows, n);
    size_t sx = (size_t)rows * n, sy = by_col ? (size_t)n : (size_t)rows;
    float *x = malloc(sx * 4 + 4), *h = malloc(sy * 4 + 4);
    double *ref = malloc(sy * 8 + 8), *bound = malloc(sy * 8 + 8);
    rng_fill(x, sx, is_max ? -4 : 0, is_max ? -1 : 1);   /* maxima all negative: 0 is no answer */
    ref_lines(x, rows, n, by_col, is_max, ref, bound);
    CUdeviceptr dx = gpu_new_from(x, sx), dy = gpu_new_filled(sy, GPU_POISON);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 4, dy, h, sy))
        verdict(desc, h, ref, bound, sy, 0);
    gpu_free(dx), gpu_free(dy);
    free(x), free(h), free(ref), free(bound);
}

/* rowsum_two: Y = rowsum(X) + rowsum(2 Z), each sum in any order, then the two added. */
static void rowsum_two(int rows, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "rowsum_two (two partials into one var) R=%d N=%d", rows, n);
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *z = malloc(sx * 4 + 4), *both = malloc(2 * (size_t)n * 4 + 4), *h = malloc((size_t)rows * 4 + 4);
    double *ref = malloc((size_t)rows * 8 + 8), *bound = malloc((size_t)rows * 8 + 8);
    rng_fill(x, sx, 0, 1);
    rng_fill(z, sx, 0, 1);
    for (int r = 0; r < rows; r++) {
        /* the terms x and 2z (exact doublings) summed in any order: 2n - 1 additions at most */
        for (int j = 0; j < n; j++) {
            both[j] = x[(size_t)r * n + j];
            both[n + j] = 2 * z[(size_t)r * n + j];
        }
        ref[r] = ref_sum(both, 2 * (size_t)n, 2 * n - 1, &bound[r]);
    }
    CUdeviceptr dx = gpu_new_from(x, sx), dz = gpu_new_from(z, sx), dy = gpu_new_filled((size_t)rows, GPU_POISON);
    tilert_kernel *k = kernel("rowsum_two");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dz), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dz && dy && run(desc, k, a, 5, dy, h, (size_t)rows))
        verdict(desc, h, ref, bound, (size_t)rows, 0);
    gpu_free(dx), gpu_free(dz), gpu_free(dy);
    free(x), free(z), free(both), free(h), free(ref), free(bound);
}

/* rowsum_i32: exact, with values of both signs. */
static void rowsum_i32(int rows, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "rowsum_i32 R=%d N=%d", rows, n);
    size_t sx = (size_t)rows * n;
    int32_t *x = malloc(sx * 4 + 4), *h = malloc((size_t)rows * 4 + 4);
    for (size_t i = 0; i < sx; i++)
        x[i] = (int32_t)(rng_next() % 2001) - 1000;
    CUdeviceptr dx = gpu_new_from(x, sx), dy = gpu_new_filled((size_t)rows, GPU_POISON);
    tilert_kernel *k = kernel("rowsum_i32");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 4, dy, h, (size_t)rows)) {
        int bad = -1;
        int64_t want = 0;
        for (int r = 0; r < rows && bad < 0; r++) {
            want = 0;
            for (int j = 0; j < n; j++)
                want += x[(size_t)r * n + j];
            if (h[r] != want)
                bad = r;
        }
        if (bad < 0) {
            printf("ok %s\n", desc);
            passed++;
        } else {
            char why[96];
            snprintf(why, sizeof why, "Y[%d] = %d, want %lld", bad, h[bad], (long long)want);
            fail(desc, why);
        }
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(h);
}

/* rowsum_read: the loop reads acc (peak = max over steps of the running sum), so acc is summed
 * every step: after step s the running sum is the windows' sums added in order. */
static void rowsum_read(int rows, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "rowsum_read (var read in the loop) R=%d N=%d", rows, n);
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *h = malloc((size_t)rows * 4 + 4);
    double *ref = malloc((size_t)rows * 8 + 8), *bound = malloc((size_t)rows * 8 + 8);
    double *pref = malloc((size_t)rows * 8 + 8), *pbound = malloc((size_t)rows * 8 + 8);
    rng_fill(x, sx, 0, 1);   /* non-negative: the running sum only grows, so peak = the total */
    for (int r = 0; r < rows; r++) {
        int steps = (n + 1023) / 1024;
        ref[r] = ref_sum(x + (size_t)r * n, (size_t)n, sum_depth(n, 1024, steps, 0), &bound[r]);
        pref[r] = ref[r];
        pbound[r] = bound[r];
    }
    CUdeviceptr dx = gpu_new_from(x, sx), dy = gpu_new_filled((size_t)rows, GPU_POISON), dp = gpu_new_filled((size_t)rows, GPU_POISON);
    tilert_kernel *k = kernel("rowsum_read");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dp), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && dp && run(desc, k, a, 5, dy, h, (size_t)rows)) {
        verdict(desc, h, ref, bound, (size_t)rows, 0);
        char pdesc[160];
        snprintf(pdesc, sizeof pdesc, "%s: peak", desc);
        if (gpu_download(h, dp, (size_t)rows * 4))
            verdict(pdesc, h, pref, pbound, (size_t)rows, 0);
        else
            fail(pdesc, "cannot read the output back");
    }
    gpu_free(dx), gpu_free(dy), gpu_free(dp);
    free(x), free(h), free(ref), free(bound), free(pref), free(pbound);
}

/* The verdict of an exact elementwise check: the first wrong element (bad < n; `got` and `want`
 * say its value and the expected one), else any of `past` units written past the end. */
static void exact_verdict(const char *desc, size_t bad, size_t n, int cols, const char *got_want, size_t past,
                          const char *unit)
{
    char why[160];
    if (bad < n) {
        snprintf(why, sizeof why, "Y[%zu][%zu] = %s", bad / (size_t)cols, bad % (size_t)cols, got_want);
        fail(desc, why);
    } else if (past) {
        snprintf(why, sizeof why, "%zu %s written past the end", past, unit);
        fail(desc, why);
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
}

/* scale_f16, scale_bf16, scale_f16_any: Y = half(float(X) * s), exactly the host's rounding of
 * the f32 product (one f32 multiplication, then round to nearest even). */
static void scale(const char *name, bool bf, int rows, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s R=%d N=%d", name, rows, n);
    size_t sx = (size_t)rows * n, words = (sx + 1) / 2 + 4;
    uint16_t *x = calloc(words, 4), *h = malloc(words * 4);
    float s = rng_uniform(0.5f, 2);
    for (size_t i = 0; i < sx; i++) {
        float v = rng_uniform(-8, 8);
        x[i] = bf ? to_bf16(v) : to_f16(v);
    }
    CUdeviceptr dx = gpu_new_from(x, words), dy = gpu_new_filled(words, 0x7fff7fffu);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_f32(s), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 5, dy, h, words)) {
        size_t bad = sx;
        uint16_t want = 0;
        for (size_t i = 0; i < sx && bad == sx; i++) {
            float v = (bf ? from_bf16(x[i]) : from_f16(x[i])) * s;
            want = bf ? to_bf16(v) : to_f16(v);
            if (h[i] != want)
                bad = i;
        }
        size_t past = 0;
        for (size_t i = sx; i < words * 2; i++)
            past += h[i] != 0x7fff;
        char gw[64] = "";
        if (bad < sx)
            snprintf(gw, sizeof gw, "0x%04x, want 0x%04x", h[bad], want);
        exact_verdict(desc, bad, sx, n, gw, past, "halves");
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(h);
}

/* widen_f16, widen_bf16_rows: Y = float(X) * s in f32, exactly the host's one f32 product;
 * outputs poisoned, every element of the poison past the end checked untouched. */
static void widen(const char *name, bool bf, int rows, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s R=%d N=%d", name, rows, n);
    size_t sx = (size_t)rows * n;
    uint16_t *x = calloc(sx + 8, 2);
    float *h = malloc((sx + 8) * 4), s = rng_uniform(0.5f, 2);
    for (size_t i = 0; i < sx; i++) {
        float v = rng_uniform(-8, 8);
        x[i] = bf ? to_bf16(v) : to_f16(v);
    }
    CUdeviceptr dx = gpu_new_from(x, (sx + 8) / 2), dy = gpu_new_filled(sx + 8, GPU_POISON);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_f32(s), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 5, dy, h, sx + 8)) {
        size_t bad = sx;
        float want = 0;
        for (size_t i = 0; i < sx && bad == sx; i++) {
            want = (bf ? from_bf16(x[i]) : from_f16(x[i])) * s;
            if (memcmp(&h[i], &want, 4))
                bad = i;
        }
        size_t past = 0;
        for (size_t i = sx; i < sx + 8; i++) {
            uint32_t w;
            memcpy(&w, &h[i], 4);
            past += w != GPU_POISON;
        }
        char gw[64] = "";
        if (bad < sx)
            snprintf(gw, sizeof gw, "%.9g, want %.9g", (double)h[bad], (double)want);
        exact_verdict(desc, bad, sx, n, gw, past, "words");
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(h);
}

/* tril: Y = X where column <= row, else 0 (exact); rowmax_plus: Y[r] = max of row r + r (one
 * rounding of the addition). */
static void rank_changes(int rows, int cols)
{
    char desc[128];
    size_t sx = (size_t)rows * cols;
    float *x = malloc(sx * 4 + 4), *h = malloc(sx * 4 + 4);
    double *ref = malloc(sx * 8 + 8), *bound = malloc(sx * 8 + 8);
    rng_fill(x, sx, -4, 4);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            ref[(size_t)r * cols + j] = j <= r ? x[(size_t)r * cols + j] : 0;
            bound[(size_t)r * cols + j] = 0;
        }
    CUdeviceptr dx = gpu_new_from(x, sx), dy = gpu_new_filled(sx, GPU_POISON);
    tilert_kernel *k = kernel("tril");
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(cols) };
    snprintf(desc, sizeof desc, "tril (expand_dims) R=%d C=%d", rows, cols);
    if (k && dx && dy && run(desc, k, a, 4, dy, h, sx))
        verdict(desc, h, ref, bound, sx, (size_t)cols);
    gpu_free(dy);
    if (cols <= 32) {
        dy = gpu_new_filled((size_t)rows, GPU_POISON);
        for (int r = 0; r < rows; r++) {
            double m = -INFINITY;
            for (int j = 0; j < cols; j++)
                m = x[(size_t)r * cols + j] > m ? x[(size_t)r * cols + j] : m;
            ref[r] = m + r;
            bound[r] = fabs(ref[r]) * 0x1p-24;
        }
        k = kernel("rowmax_plus");
        tilert_arg b[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(cols) };
        snprintf(desc, sizeof desc, "rowmax_plus (squeeze) R=%d C=%d", rows, cols);
        if (k && dx && dy && run(desc, k, b, 4, dy, h, (size_t)rows))
            verdict(desc, h, ref, bound, (size_t)rows, 0);
        gpu_free(dy);
    }
    gpu_free(dx);
    free(x), free(h), free(ref), free(bound);
}

/* argmax_rows, argmin_small (f32 rows, values on a grid of eighths so that ties happen),
 * argmax_cols (i32 columns of values 0..9): the first position of the extreme value, exactly. */
static void arg_case(const char *name, int rows, int n, bool cols, bool is_min, bool ints)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s R=%d N=%d", name, rows, n);
    size_t sx = (size_t)rows * n, sy = cols ? (size_t)n : (size_t)rows;
    float *x = malloc(sx * 4 + 4);
    int32_t *xi = malloc(sx * 4 + 4), *h = malloc(sy * 4 + 4), *want = malloc(sy * 4 + 4);
    for (size_t i = 0; i < sx; i++) {
        xi[i] = (int32_t)(rng_next() % 10);
        x[i] = floorf(rng_uniform(-4, 4) * 8) / 8;
    }
    for (size_t l = 0; l < sy; l++) {
        int len = cols ? rows : n, best = 0;
        for (int j = 0; j < len; j++) {
            size_t at = cols ? (size_t)j * n + l : l * n + j, bat = cols ? (size_t)best * n + l : l * n + best;
            double v = ints ? xi[at] : x[at], bv = ints ? xi[bat] : x[bat];
            if (is_min ? v < bv : v > bv)
                best = j;
        }
        want[l] = best;
    }
    CUdeviceptr dx = gpu_new_from(ints ? (const void *)xi : (const void *)x, sx), dy = gpu_new_filled(sy, GPU_POISON);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 4, dy, h, sy)) {
        size_t bad = sy;
        for (size_t l = 0; l < sy && bad == sy; l++)
            if (h[l] != want[l])
                bad = l;
        if (bad == sy) {
            printf("ok %s\n", desc);
            passed++;
        } else {
            char why[96];
            snprintf(why, sizeof why, "Y[%zu] = %d, want %d", bad, h[bad], want[bad]);
            fail(desc, why);
        }
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(xi), free(h), free(want);
}

/* cumsum_rows, cumsum_cols (f32: each running sum within the bound of a sum in any order of its
 * terms), cumsum_small (i32, exact). */
static void scan_case(const char *name, int rows, int n, bool cols, bool ints)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s R=%d N=%d", name, rows, n);
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *h = malloc(sx * 4 + 4);
    int32_t *xi = malloc(sx * 4 + 4);
    double *ref = malloc(sx * 8 + 8), *bound = malloc(sx * 8 + 8);
    rng_fill(x, sx, -1, 1);
    for (size_t i = 0; i < sx; i++)
        xi[i] = (int32_t)(rng_next() % 2001) - 1000;
    int lines = cols ? n : rows, len = cols ? rows : n;
    for (int l = 0; l < lines; l++) {
        double acc = 0, mag = 0;
        for (int j = 0; j < len; j++) {
            size_t at = cols ? (size_t)j * n + l : (size_t)l * n + j;
            acc += ints ? (double)xi[at] : (double)x[at];
            mag += fabs(ints ? (double)xi[at] : (double)x[at]);
            ref[at] = acc;
            bound[at] = ints ? 0 : gamma_n(j, U_F32) * mag * (1 + 0x1p-10);
        }
    }
    CUdeviceptr dx = gpu_new_from(ints ? (const void *)xi : (const void *)x, sx), dy = gpu_new_filled(sx, GPU_POISON);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    if (k && dx && dy && run(desc, k, a, 4, dy, h, sx)) {
        if (ints) {
            const int32_t *hi = (const int32_t *)h;
            size_t bad = sx;
            for (size_t i = 0; i < sx && bad == sx; i++)
                if (hi[i] != (int32_t)ref[i])
                    bad = i;
            if (bad == sx) {
                printf("ok %s\n", desc);
                passed++;
            } else {
                char why[96];
                snprintf(why, sizeof why, "Y[%zu][%zu] = %d, want %d", bad / (size_t)n, bad % (size_t)n, hi[bad], (int32_t)ref[bad]);
                fail(desc, why);
            }
        } else
            verdict(desc, h, ref, bound, sx, (size_t)n);
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(xi), free(h), free(ref), free(bound);
}

/* add_f16: Y[j] = y0[j] + the f16-rounded X[b * 1024 + j] of every block b, each add rounded
 * to f16 in some order: within blocks * 2^-11 of the largest partial sum (bounded by the sum of
 * magnitudes), plus half the smallest subnormal step a rounding. */
static void add_half_case(const char *name, bool bf, int n, int m);
static void add_f16_case(int n, int m) { add_half_case("add_f16", false, n, m); }

static void add_half_case(const char *name, bool bf, int n, int m)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s (atomic_add on %s%s) N=%d M=%d", name, bf ? "bf16" : "f16",
             strstr(name, "pairs") ? " pairs" : "", n, m);
    int blocks = (n + 1023) / 1024, cols = m < 1024 ? m : 1024;
    size_t words = ((size_t)m + 1) / 2 + 4;
    float *x = malloc((size_t)n * 4 + 4), *h = malloc(words * 4 * 2 + 8);
    uint16_t *y0 = calloc(words, 4), *got = malloc(words * 4);
    double *ref = malloc((size_t)m * 8 + 8), *bound = malloc((size_t)m * 8 + 8);
    rng_fill(x, (size_t)n, -1, 1);
    for (int j = 0; j < m; j++) {
        y0[j] = bf ? to_bf16(rng_uniform(-1, 1)) : to_f16(rng_uniform(-1, 1));
        double acc = bf ? from_bf16(y0[j]) : from_f16(y0[j]), mag = fabs(acc);
        int adds = 0;
        for (int b = 0; b < blocks && j < cols; b++) {
            size_t i = (size_t)b * 1024 + j;
            if (i < (size_t)n) {
                double v = bf ? from_bf16(to_bf16(x[i])) : from_f16(to_f16(x[i]));
                acc += v;
                mag += fabs(v);
                adds++;
            }
        }
        ref[j] = acc;
        bound[j] = adds * ((bf ? 0x1p-8 : 0x1p-11) * mag + (bf ? 0x1p-134 : 0x1p-25));
    }
    CUdeviceptr dx = gpu_new_from(x, (size_t)n), dy = gpu_new_from(y0, words);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(n), tilert_i32(m) };
    if (k && dx && dy && run(desc, k, a, 4, dy, got, words)) {
        for (int j = 0; j < m; j++)
            h[j] = bf ? from_bf16(got[j]) : from_f16(got[j]);
        verdict(desc, h, ref, bound, (size_t)m, 0);
    }
    gpu_free(dx), gpu_free(dy);
    free(x), free(h), free(y0), free(got), free(ref), free(bound);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "reductions");
    if (rc >= 0)
        return rc;
    char path[512];
    snprintf(path, sizeof path, "%s/reductions/reductions.ptx", dir);
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        return 1;
    }
    bool small = test_small();
    static const int rb[][2] = { { 1, 1 }, { 5, 2048 }, { 7, 1000 }, { 130, 1999 } };
    static const int rb_small[][2] = { { 1, 1 }, { 4, 2048 }, { 7, 1000 } };
    for (size_t i = 0; i < (small ? COUNT(rb_small) : COUNT(rb)); i++) {
        const int *r = small ? rb_small[i] : rb[i];
        lines("rowblock_sum", r[0], r[1], false, false);
        lines("rowblock_max", r[0], r[1] > 1024 ? 1024 : r[1], false, true);
    }
    static const int cs[][2] = { { 1, 1 }, { 31, 300 }, { 100, 257 }, { 1000, 600 } };
    static const int cs_small[][2] = { { 1, 1 }, { 32, 256 }, { 33, 300 } };
    for (size_t i = 0; i < (small ? COUNT(cs_small) : COUNT(cs)); i++) {
        const int *r = small ? cs_small[i] : cs[i];
        lines("colsum_loop", r[0], r[1], true, false);
    }
    static const int rs[][2] = { { 1, 1 }, { 5, 512 }, { 9, 1500 }, { 100, 4099 } };
    static const int rs_small[][2] = { { 1, 1 }, { 4, 512 }, { 9, 1500 } };
    for (size_t i = 0; i < (small ? COUNT(rs_small) : COUNT(rs)); i++) {
        const int *r = small ? rs_small[i] : rs[i];
        rowsum_two(r[0], r[1]);
        rowsum_i32(r[0], r[1]);
        rowsum_read(r[0], r[1]);
    }
    static const int ss[][2] = { { 1, 8 }, { 3, 2048 }, { 5, 1000 }, { 17, 4104 } };
    static const int ss_small[][2] = { { 1, 8 }, { 2, 2048 }, { 3, 1000 } };
    for (size_t i = 0; i < (small ? COUNT(ss_small) : COUNT(ss)); i++) {
        const int *r = small ? ss_small[i] : ss[i];
        scale("scale_f16", false, r[0], r[1]);
        scale("scale_bf16", true, r[0], r[1]);
        scale("scale_f16_any", false, r[0], r[1] + 1);
        widen("widen_f16", false, r[0], r[1]);
        widen("widen_bf16_rows", true, r[0] + 2, r[1]);
    }
    static const int rk[][2] = { { 1, 1 }, { 70, 30 }, { 129, 200 }, { 64, 32 } };
    static const int rk_small[][2] = { { 1, 1 }, { 64, 32 }, { 70, 30 } };
    for (size_t i = 0; i < (small ? COUNT(rk_small) : COUNT(rk)); i++) {
        const int *r = small ? rk_small[i] : rk[i];
        rank_changes(r[0], r[1]);
    }
    static const int am[][2] = { { 1, 1 }, { 5, 1024 }, { 7, 1000 }, { 130, 333 } };
    static const int am_small[][2] = { { 1, 1 }, { 4, 1024 }, { 7, 1000 } };
    for (size_t i = 0; i < (small ? COUNT(am_small) : COUNT(am)); i++) {
        const int *r = small ? am_small[i] : am[i];
        arg_case("argmax_rows", r[0], r[1], false, false, false);
        arg_case("argmin_small", r[0], r[1] > 32 ? 32 : r[1], false, true, false);
        arg_case("argmax_cols", r[0] > 64 ? 64 : r[0], r[1], true, false, true);
    }
    for (size_t i = 0; i < (small ? COUNT(am_small) : COUNT(am)); i++) {
        const int *r = small ? am_small[i] : am[i];
        scan_case("cumsum_rows", r[0], r[1], false, false);
        scan_case("cumsum_small", r[0], r[1] > 32 ? 32 : r[1], false, true);
        scan_case("cumsum_cols", r[0] > 64 ? 64 : r[0], r[1], true, false);
    }
    static const int af[][2] = { { 1, 1 }, { 3000, 1000 }, { 4096, 1024 }, { 5000, 1500 } };
    static const int af_small[][2] = { { 1, 1 }, { 3000, 1000 }, { 4096, 1024 } };
    for (size_t i = 0; i < (small ? COUNT(af_small) : COUNT(af)); i++) {
        const int *r = small ? af_small[i] : af[i];
        add_f16_case(r[0], r[1]);
        add_half_case("add_bf16_any", true, r[0], r[1]);
    }
    /* packed pairs: N a multiple of 4, M even */
    static const int ap[][2] = { { 4, 2 }, { 3000, 1000 }, { 4096, 1024 }, { 5000, 1500 } };
    for (size_t i = 0; i < (small ? 3 : COUNT(ap)); i++)
        add_half_case("add_f16_pairs", false, ap[i][0], ap[i][1]);
    tilert_unload(mod);
    /* sm_90-only kernels, from their own module */
    if (tilert_device_arch(ctx) >= 90) {
        snprintf(path, sizeof path, "%s/reductions/reductions_sm90.ptx", dir);
        if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
            printf("FAIL load %s: %s\n", path, tilert_last_error());
            failed++;
        } else {
            for (size_t i = 0; i < (small ? COUNT(af_small) : COUNT(af)); i++) {
                const int *r = small ? af_small[i] : af[i];
                add_half_case("add_bf16", true, r[0], r[1]);
            }
            for (size_t i = 0; i < (small ? 3 : COUNT(ap)); i++)
                add_half_case("add_bf16_pairs", true, ap[i][0], ap[i][1]);
            tilert_unload(mod);
        }
    } else
        printf("skipped: add_bf16 needs sm_90 or later\n");
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
