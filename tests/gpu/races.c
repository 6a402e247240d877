/* races.c: the kernels of tests/gpu/kernels/races.tile, whose shared memory is written again in
 * later loop iterations, on both sides of a branch, and across layouts, against float64
 * references on fresh random inputs at sizes that are not tile multiples. A missing barrier shows
 * here as a wrong element only now and then; under `make check-sanitize` racecheck sees it every
 * time. Every output element is compared with its own error bound (below), poisoned outputs catch
 * unwritten elements. Usage: races EXAMPLES_DIR */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

/* f32 unit roundoff. A sum of n f32 terms, in any order, is within n u sum |terms| of the exact
 * sum (the standard bound gamma_n, first order); each elementwise operation adds u relative, and
 * exp/log/rsqrt as the PTX approximations do a few ulps: the bounds below count those generously
 * (a factor 4 over the first-order terms) but stay far below the size of one lost term. */
static const double U = 0x1p-24;

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

static CUdeviceptr upload(const float *h, size_t n) { return gpu_new_from(h, n); }
static CUdeviceptr poisoned(size_t n) { return gpu_new_filled(n, GPU_POISON); }

static float *fresh(size_t n, float lo, float hi)
{
    float *x = malloc(n * 4 + 4);
    rng_fill(x, n, lo, hi);
    return x;
}

/* Launches k, then checks every one of the n outputs against ref within bound. */
static void run(const char *desc, tilert_kernel *k, tilert_arg *a, int na, CUdeviceptr out, const double *ref,
                const double *bound, size_t n)
{
    float *h = malloc(n * 4 + 4);
    tilert_status s = k ? tilert_launch(k, 0, a, na) : TILERT_ERR_BAD_ARGS;
    if (!k || !out || s != TILERT_OK || !gpu_sync() || !gpu_download(h, out, n * 4)) {
        printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        free(h);
        return;
    }
    size_t bad = 0, first = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)h[i] - ref[i]);
        if (!(e <= bound[i])) {     /* NaN (unwritten or computed) fails too */
            if (!bad++)
                first = i;
        } else if (bound[i] > 0 && e / bound[i] > worst) {
            worst = e / bound[i];
        }
    }
    if (bad)
        printf("FAIL %s: %zu of %zu outside their bound; first [%zu] = %.9g, reference %.9g, bound %.3g\n", desc, bad,
               n, first, h[first], ref[first], bound[first]);
    else
        printf("ok %s (largest error %.2f of its bound)\n", desc, worst);
    bad ? failed++ : passed++;
    free(h);
}

static void loop_rowsum(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "loop_rowsum R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, -1, 1);
    double *ref = calloc((size_t)rows + 1, 8), *bound = calloc((size_t)rows + 1, 8);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) {
            ref[r] += x[(size_t)r * n + j];
            bound[r] += fabs(x[(size_t)r * n + j]);
        }
    for (int r = 0; r < rows; r++)
        bound[r] *= 4 * n * U;
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)rows);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("loop_rowsum"), a, 4, dy, ref, bound, (size_t)rows);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void loop_logsumexp(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "loop_logsumexp R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, -8, 8);
    double *ref = malloc((size_t)rows * 8 + 8), *bound = malloc((size_t)rows * 8 + 8);
    for (int r = 0; r < rows; r++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < n; j++)
            m = fmax(m, x[(size_t)r * n + j]);
        for (int j = 0; j < n; j++)
            s += exp(x[(size_t)r * n + j] - m);
        ref[r] = m + log(s);
        /* the sum of exps relative (n u, and each rescaling and exp a few u), log of it absolute;
           the final m + log adds u |ref| */
        bound[r] = 4 * ((n + 64) * U + fabs(ref[r]) * U) + 1e-6;
    }
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)rows);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("loop_logsumexp"), a, 4, dy, ref, bound, (size_t)rows);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void branchy(int rows, int n, int mode)
{
    char desc[96];
    snprintf(desc, sizeof desc, "branchy (%s) R=%d N=%d", mode > 0 ? "sum of squares" : "max |x| per chunk", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, -1, 1);
    double *ref = calloc((size_t)rows + 1, 8), *bound = calloc((size_t)rows + 1, 8);
    for (int r = 0; r < rows; r++) {
        for (int j0 = 0; j0 < n; j0 += 256) {
            double m = 0;
            for (int j = j0; j < n && j < j0 + 256; j++) {
                double v = x[(size_t)r * n + j];
                m = fmax(m, fabs(v));
                if (mode > 0) {
                    ref[r] += v * v;
                    bound[r] += v * v;
                }
            }
            if (mode <= 0) {
                ref[r] += m;
                bound[r] += m;
            }
        }
        bound[r] *= 4 * (n + 1) * U;
    }
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)rows);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(mode), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("branchy"), a, 5, dy, ref, bound, (size_t)rows);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void center_chunks(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "center_chunks R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, 1, 3);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    for (int r = 0; r < rows; r++)
        for (int j0 = 0; j0 < n; j0 += 1024) {
            double s = 0, sa = 0;
            for (int j = j0; j < n && j < j0 + 1024; j++) {
                s += x[(size_t)r * n + j];
                sa += fabs(x[(size_t)r * n + j]);
            }
            for (int j = j0; j < n && j < j0 + 1024; j++) {
                size_t i = (size_t)r * n + j;
                ref[i] = x[i] - s / 1024;
                bound[i] = 4 * U * (fabs(x[i]) + fabs(s / 1024) + 1024 * sa / 1024);
            }
        }
    CUdeviceptr dx = upload(x, sz), dy = poisoned(sz);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("center_chunks"), a, 4, dy, ref, bound, sz);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void shared_tile(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "shared_tile R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, -1, 1);
    double *ref = calloc((size_t)rows + 1, 8), *bound = calloc((size_t)rows + 1, 8);
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < n; j++)
            ref[r] += (double)x[(size_t)r * n + j] * x[(size_t)r * n + j];
        bound[r] = 4 * (n + 1) * U * ref[r];
    }
    CUdeviceptr dx = upload(x, sz), dy = poisoned((size_t)rows);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("shared_tile"), a, 4, dy, ref, bound, (size_t)rows);
    gpu_free(dx), gpu_free(dy), free(x), free(ref), free(bound);
}

static void ln_backward(int rows, int n)
{
    char desc[96];
    snprintf(desc, sizeof desc, "ln_backward R=%d N=%d", rows, n);
    size_t sz = (size_t)rows * n;
    float *x = fresh(sz, -2, 2), *dy = fresh(sz, -1, 1), *w = fresh((size_t)n, 0.5f, 1.5f);
    float *mean = fresh((size_t)rows, -0.5f, 0.5f), *rstd = fresh((size_t)rows, 0.5f, 2);
    double *ref = malloc(sz * 8 + 8), *bound = malloc(sz * 8 + 8);
    for (int r = 0; r < rows; r++) {
        double a = 0, b = 0, sa = 0, sb = 0, rs = rstd[r];
        for (int j = 0; j < n; j++) {
            size_t i = (size_t)r * n + j;
            double xh = (x[i] - (double)mean[r]) * rs, g = (double)dy[i] * w[j];
            a += g * xh, b += g, sa += fabs(g * xh), sb += fabs(g);
        }
        double c1 = a / n, c2 = b / n;
        for (int j = 0; j < n; j++) {
            size_t i = (size_t)r * n + j;
            double xh = (x[i] - (double)mean[r]) * rs, g = (double)dy[i] * w[j];
            ref[i] = (g - xh * c1 - c2) * rs;
            /* each term's own rounding, xh's (which c1 multiplies), and the sums' n u */
            bound[i] = 4 * U * rs * (fabs(g) + fabs(xh * c1) + fabs(c2) + fabs(c1) * (fabs(x[i]) + fabs(mean[r])) * rs +
                                     fabs(xh) * (n + 2) * sa / n + (n + 2) * sb / n);
        }
    }
    CUdeviceptr dx = upload(x, sz), ddy = upload(dy, sz), dw = upload(w, (size_t)n), dm = upload(mean, (size_t)rows),
                drs = upload(rstd, (size_t)rows), ddx = poisoned(sz);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(ddy), tilert_ptr(dw), tilert_ptr(ddx), tilert_ptr(dm),
                       tilert_ptr(drs), tilert_i32(rows), tilert_i32(n) };
    run(desc, kernel("ln_backward"), a, 8, ddx, ref, bound, sz);
    gpu_free(dx), gpu_free(ddy), gpu_free(dw), gpu_free(dm), gpu_free(drs), gpu_free(ddx);
    free(x), free(dy), free(w), free(mean), free(rstd), free(ref), free(bound);
}

/* C = A @ B in f32 (FFMA), each element within K u sum_k |a_ik b_kj| (4x for margin). */
static void product_bound(const float *a, const float *b, double *ref, double *bound, int m, int n, int kk)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < kk; k++) {
                double p = (double)a[(size_t)i * kk + k] * b[(size_t)k * n + j];
                s += p, sa += fabs(p);
            }
            ref[(size_t)i * n + j] = s;
            bound[(size_t)i * n + j] = 4 * (kk + 1) * U * sa;
        }
}

static void staged_matmul(int m, int n, int kk)
{
    char desc[96];
    snprintf(desc, sizeof desc, "staged_matmul M=%d N=%d K=%d", m, n, kk);
    size_t sc = (size_t)m * n;
    float *a = fresh((size_t)m * kk, -1, 1), *b = fresh((size_t)kk * n, -1, 1);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    product_bound(a, b, ref, bound, m, n, kk);
    CUdeviceptr da = upload(a, (size_t)m * kk), db = upload(b, (size_t)kk * n), dc = poisoned(sc);
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    run(desc, kernel("staged_matmul"), args, 6, dc, ref, bound, sc);
    gpu_free(da), gpu_free(db), gpu_free(dc), free(a), free(b), free(ref), free(bound);
}

/* Y[i] = sum over the first min(N, 64) columns of (A @ B)[i, :]. */
static void matmul_rowsum(int m, int n, int kk)
{
    char desc[96];
    snprintf(desc, sizeof desc, "matmul_rowsum (pipelined, then a row sum) M=%d N=%d K=%d", m, n, kk);
    size_t sc = (size_t)m * n;
    int cols = n < 64 ? n : 64;
    float *a = fresh((size_t)m * kk, -1, 1), *b = fresh((size_t)kk * n, -1, 1);
    double *c = malloc(sc * 8 + 8), *cb = malloc(sc * 8 + 8);
    double *ref = calloc((size_t)m + 1, 8), *bound = calloc((size_t)m + 1, 8);
    product_bound(a, b, c, cb, m, n, kk);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < cols; j++) {
            ref[i] += c[(size_t)i * n + j];
            /* each product's bound, and the row sum's own 64 u over |C| */
            bound[i] += cb[(size_t)i * n + j] + 4 * 65 * U * fabs(c[(size_t)i * n + j]);
        }
    }
    CUdeviceptr da = upload(a, (size_t)m * kk), db = upload(b, (size_t)kk * n), dy = poisoned((size_t)m);
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dy), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    run(desc, kernel("matmul_rowsum"), args, 6, dy, ref, bound, (size_t)m);
    gpu_free(da), gpu_free(db), gpu_free(dy), free(a), free(b), free(c), free(cb), free(ref), free(bound);
}

static void cross_entropy(int rows, int v)
{
    char desc[96];
    snprintf(desc, sizeof desc, "cross_entropy R=%d V=%d", rows, v);
    size_t sz = (size_t)rows * v;
    float *x = fresh(sz, -8, 8);
    int *t = malloc((size_t)rows * 4 + 4);
    double *ref = malloc((size_t)rows * 8 + 8), *bound = malloc((size_t)rows * 8 + 8);
    for (int r = 0; r < rows; r++) {
        t[r] = (int)(rng_next() % (uint64_t)v);
        double m = -INFINITY, s = 0;
        for (int j = 0; j < v; j++)
            m = fmax(m, x[(size_t)r * v + j]);
        for (int j = 0; j < v; j++)
            s += exp(x[(size_t)r * v + j] - m);
        double lse = m + log(s), xt = x[(size_t)r * v + t[r]];
        ref[r] = lse - xt;
        /* logsumexp as in loop_logsumexp, the picked logit exact, the difference u relative */
        bound[r] = 4 * ((v + 64) * U + (fabs(lse) + fabs(xt)) * U) + 1e-6;
    }
    CUdeviceptr dx = upload(x, sz), dt = upload((const float *)t, (size_t)rows), dl = poisoned((size_t)rows);
    tilert_arg a[] = { tilert_ptr(dx), tilert_ptr(dt), tilert_ptr(dl), tilert_i32(rows), tilert_i32(v) };
    run(desc, kernel("cross_entropy"), a, 5, dl, ref, bound, (size_t)rows);
    gpu_free(dx), gpu_free(dt), gpu_free(dl), free(x), free(t), free(ref), free(bound);
}

/* O = softmax(scale Q K^T) V, row by row. A score's error (64 products, f32) moves each
 * probability by about that much relative, so an output by twice it times max |V|; the weighted
 * sum of V adds its own NK u. */
static void attention(int nq, int nk)
{
    char desc[96];
    snprintf(desc, sizeof desc, "attention (f32, staged P) NQ=%d NK=%d", nq, nk);
    const int D = 64;
    const double scale = 0.125;
    float *q = fresh((size_t)nq * D, -1, 1), *kt = fresh((size_t)D * nk, -1, 1), *v = fresh((size_t)nk * D, -1, 1);
    size_t so = (size_t)nq * D;
    double *ref = calloc(so + 1, 8), *bound = malloc(so * 8 + 8), *p = malloc((size_t)nk * 8 + 8);
    double vmax = 0;
    for (size_t i = 0; i < (size_t)nk * D; i++)
        vmax = fmax(vmax, fabs(v[i]));
    for (int i = 0; i < nq; i++) {
        double m = -INFINITY, l = 0, serr = 0;
        for (int j = 0; j < nk; j++) {
            double s = 0, sa = 0;
            for (int d = 0; d < D; d++) {
                s += (double)q[(size_t)i * D + d] * kt[(size_t)d * nk + j];
                sa += fabs((double)q[(size_t)i * D + d] * kt[(size_t)d * nk + j]);
            }
            p[j] = s * scale;
            m = fmax(m, p[j]);
            serr = fmax(serr, (D + 4) * U * sa * scale);
        }
        for (int j = 0; j < nk; j++)
            l += p[j] = exp(p[j] - m);
        for (int j = 0; j < nk; j++)
            for (int d = 0; d < D; d++)
                ref[(size_t)i * D + d] += p[j] / l * v[(size_t)j * D + d];
        for (int d = 0; d < D; d++)
            bound[(size_t)i * D + d] = 4 * (2 * serr * vmax + (nk + 40) * U * vmax) + 1e-6;
    }
    CUdeviceptr dq = upload(q, (size_t)nq * D), dk = upload(kt, (size_t)D * nk), dv = upload(v, (size_t)nk * D),
                dout = poisoned(so);
    tilert_arg a[] = { tilert_ptr(dq), tilert_ptr(dk), tilert_ptr(dv), tilert_ptr(dout), tilert_f32((float)scale),
                       tilert_i32(nq), tilert_i32(nk) };
    run(desc, kernel("attention"), a, 7, dout, ref, bound, so);
    gpu_free(dq), gpu_free(dk), gpu_free(dv), gpu_free(dout);
    free(q), free(kt), free(v), free(ref), free(bound), free(p);
}

int main(int argc, char **argv)
{
    tilert_context *ctx;
    int rc = gpu_test_begin(&ctx, "races");
    if (rc >= 0)
        return rc;
    char path[512];
    snprintf(path, sizeof path, "%s/races/races.ptx", argc > 1 ? argv[1] : "build/examples");
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        gpu_close(ctx);
        return 1;
    }
    static const int rows[] = { 1, 37 }, cols[] = { 1, 300, 1000, 2500 };
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++) {
            loop_rowsum(rows[r], cols[c]);
            loop_logsumexp(rows[r], cols[c]);
            branchy(rows[r], cols[c], 1);
            branchy(rows[r], cols[c], 0);
            center_chunks(rows[r], cols[c]);
            shared_tile(rows[r], cols[c]);
            ln_backward(rows[r], cols[c]);
        }
    static const int mm[][3] = { { 1, 1, 1 }, { 33, 47, 29 }, { 70, 64, 100 }, { 65, 130, 257 } };
    for (int i = 0; i < 4; i++) {
        staged_matmul(mm[i][0], mm[i][1], mm[i][2]);
        matmul_rowsum(mm[i][0], mm[i][1], mm[i][2]);
    }
    static const int vocab[] = { 1, 1000, 5000 };
    for (int i = 0; i < 3; i++) {
        cross_entropy(1, vocab[i]);
        cross_entropy(37, vocab[i]);
    }
    static const int keys[] = { 1, 45, 200 };
    for (int i = 0; i < 3; i++) {
        attention(1, keys[i]);
        attention(37, keys[i]);
    }
    tilert_unload(mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
