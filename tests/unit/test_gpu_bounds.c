/* test_gpu_bounds.c: the error bounds of the GPU tests (tests/gpu/ref_util.c) on the CPU. Each
 * kernel is modelled in f32 the way the bound's derivation says the GPU may compute it, at the
 * worst the derivation allows (truncating tensor-core blocks, approximate functions off by their
 * full documented error): every modelled result must be within its bound. And the bounds must be
 * tight enough to matter: a product that drops a k term of typical size, or skips the tf32
 * rounding, a softmax that drops an element, a layernorm that divides by N - 1, must fail.
 *
 * One case is the one that made per-element bounds necessary: `matmul_tf32 M=1 N=4 K=132` of
 * run_examples under TILEC_TEST_SEED=1795446859782987936, whose correct result failed the old
 * norm-ratio tolerance (0.00432 over 2e-3). */
#include <math.h>
#include <stdlib.h>

#include "../gpu/gpu_util.h"
#include "../gpu/ref_util.h"
#include "unit.h"

/* ---------------------------------------------------------------- models of the GPU */

/* x truncated toward zero to a multiple of q (a power of two). */
static double chop(double x, double q)
{
    return trunc(x / q) * q;
}

/* x truncated to 24 significant bits. */
static double chop24(double x)
{
    return x == 0 ? 0 : chop(x, ldexp(1, ilogb(x) - 23));
}

/* The pessimistic tensor core of ref_util.c's derivation: blocks of nb exact products added to
 * the accumulator, every addend cut to 24 bits below the largest one's leading bit, the sum cut
 * to 24 bits. */
static float tc_dot(const float *a, size_t as, const float *b, size_t bs, int k, int nb)
{
    double c = 0;
    for (int p0 = 0; p0 < k; p0 += nb) {
        double t[65];
        int n = 0;
        t[n++] = c;
        for (int p = p0; p < p0 + nb && p < k; p++)
            t[n++] = (double)a[p * as] * b[p * bs];
        int emax = -10000;
        for (int i = 0; i < n; i++)
            if (t[i] != 0 && ilogb(t[i]) > emax)
                emax = ilogb(t[i]);
        if (emax == -10000)
            continue;
        double s = 0;
        for (int i = 0; i < n; i++)
            s += chop(t[i], ldexp(1, emax - 23));
        c = chop24(s);
    }
    return (float)c;
}

/* IEEE FFMA in k order. */
static float fma_dot(const float *a, size_t as, const float *b, size_t bs, int k)
{
    float c = 0;
    for (int p = 0; p < k; p++)
        c = fmaf(a[p * as], b[p * bs], c);
    return c;
}

typedef enum { M_FMA, M_TC1, M_TC4, M_TC8, M_TC16 } Model;
static const int model_nb[] = { 0, 1, 4, 8, 16 };

static void model_matmul(Model md, const float *a, const float *b, float *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            c[(size_t)i * n + j] = md == M_FMA ? fma_dot(a + (size_t)i * k, 1, b + j, (size_t)n, k)
                                               : tc_dot(a + (size_t)i * k, 1, b + j, (size_t)n, k, model_nb[md]);
}

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* tf32 roundings of mma.sync (ties away), wgmma (ties to even), and none (the tensor core's own
 * truncation, what a kernel that forgot the rounding gets). */
static float tf32_rna(float x) { return float_of((bits_of(x) + 0x1000) & ~0x1fffu); }
static float tf32_rne(float x) { return float_of((bits_of(x) + 0xfff + (bits_of(x) >> 13 & 1)) & ~0x1fffu); }
static float tf32_trunc(float x) { return float_of(bits_of(x) & ~0x1fffu); }

static bool within(const float *out, const double *ref, const double *bound, size_t n, BoundCheck *c)
{
    *c = check_bounds(out, ref, bound, n);
    return c->bad == 0;
}

/* ---------------------------------------------------------------- products */

/* Every model of every precision within the bound, on random products. */
static void products_sound(void)
{
    static const int shapes[][3] = { { 1, 1, 1 }, { 3, 5, 2 }, { 4, 3, 8 }, { 2, 7, 31 }, { 3, 4, 132 }, { 2, 3, 1000 } };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
        float *a = malloc(sa * 4), *b = malloc(sb * 4), *ar = malloc(sa * 4), *br = malloc(sb * 4);
        float *am = malloc(sa * 4), *bm = malloc(sb * 4), *c = malloc(sc * 4);
        double *ref = malloc(sc * 8), *bound = malloc(sc * 8);
        char name[160];
        BoundCheck ck;
        for (int prec = 0; prec < 4; prec++) {         /* f32, f16, bf16, tf32 */
            static const char *pn[] = { "f32", "f16", "bf16", "tf32" };
            rng_fill(a, sa, -1, 1);
            rng_fill(b, sb, -1, 1);
            if (prec == 1 || prec == 2)
                for (size_t i = 0; i < sa + sb; i++) {
                    float *x = i < sa ? &a[i] : &b[i - sa];
                    *x = prec == 1 ? from_f16(to_f16(*x)) : from_bf16(to_bf16(*x));
                }
            if (prec == 3)                               /* some exact ties */
                for (size_t i = 0; i < sa + sb; i += 3) {
                    float *x = i < sa ? &a[i] : &b[i - sa];
                    *x = float_of((bits_of(*x) & ~0x1fffu) | 0x1000);
                }
            for (int md = prec == 0 ? M_FMA : M_TC1; md <= (prec == 0 ? M_FMA : M_TC16); md++)
                for (int rule = 0; rule < (prec == 3 ? 2 : 1); rule++) {
                    if (prec == 3) {
                        for (size_t i = 0; i < sa; i++)
                            am[i] = rule ? tf32_rne(a[i]) : tf32_rna(a[i]);
                        for (size_t i = 0; i < sb; i++)
                            bm[i] = rule ? tf32_rne(b[i]) : tf32_rna(b[i]);
                        model_matmul((Model)md, am, bm, c, m, n, k);
                        float *ma = malloc(sa * 4), *mb = malloc(sb * 4);
                        for (size_t i = 0; i < sa; i++)
                            tf32_operand(a[i], &ma[i], &ar[i]);
                        for (size_t i = 0; i < sb; i++)
                            tf32_operand(b[i], &mb[i], &br[i]);
                        ref_matmul_bound(ma, ar, mb, br, ref, bound, m, n, k, SUM_TENSOR);
                        free(ma), free(mb);
                    } else {
                        model_matmul((Model)md, a, b, c, m, n, k);
                        ref_matmul_bound(a, NULL, b, NULL, ref, bound, m, n, k, prec ? SUM_TENSOR : SUM_FMA);
                        if (prec) {                          /* C stored in 16 bits */
                            for (size_t i = 0; i < sc; i++)
                                c[i] = prec == 1 ? from_f16(to_f16(c[i])) : from_bf16(to_bf16(c[i]));
                            bound_store(ref, bound, sc, prec == 1 ? U_F16 : U_BF16, prec == 1 ? 0x1p-25 : 0x1p-134);
                        }
                    }
                    snprintf(name, sizeof name, "%s product M=%d N=%d K=%d, model %d%s within its bound", pn[prec], m,
                             n, k, md, prec == 3 ? (rule ? " (ties to even)" : " (ties away)") : "");
                    within(c, ref, bound, sc, &ck);
                    unit_check(ck.bad == 0, name, "element %zu = %.9g, reference %.9g, bound %.3g", ck.first,
                               c[ck.first], ref[ck.first], bound[ck.first]);
                }
        }
        free(a), free(b), free(ar), free(br), free(am), free(bm), free(c), free(ref), free(bound);
    }
}

/* The truncation's bias adds up when nothing cancels: positive operands, K large, blocks of one.
 * The bound must hold there too. It is less than 16 times that error: a cut loses half a unit on
 * average, not the whole one the bound charges, of an accumulator that is half the final sum on
 * average, and the sum's own cut rarely loses anything. */
static void products_worst_accumulation(void)
{
    enum { K = 4096 };
    static float a[K], b[K];
    for (int nb = 1; nb <= 16; nb *= 4) {
        for (int i = 0; i < K; i++) {
            a[i] = rng_uniform(0.5f, 1);
            b[i] = rng_uniform(0.5f, 1);
        }
        double ref, bound;
        ref_matmul_bound(a, NULL, b, NULL, &ref, &bound, 1, 1, K, SUM_TENSOR);
        float c = tc_dot(a, 1, b, 1, K, nb);
        double err = fabs(c - ref);
        char name[96];
        snprintf(name, sizeof name, "truncating blocks of %d over K=%d of positive terms within the bound", nb, K);
        unit_check(err <= bound, name, "error %.3g, bound %.3g", err, bound);
        if (nb == 1) {
            snprintf(name, sizeof name, "that bound within 16x of the error (K=%d, blocks of 1)", K);
            unit_check(bound < 16 * err, name, "error %.3g, bound %.3g", err, bound);
        }
    }
}

/* A bias, a ReLU and the store to f16 after the product (gemm_bias_relu). */
static void products_epilogue(void)
{
    enum { M = 5, N = 24, K = 64 };
    static float a[M * K], b[K * N], bias[N], c[M * N];
    static double ref[M * N], bound[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = from_f16(to_f16(rng_uniform(-1, 1)));
    for (int i = 0; i < K * N; i++)
        b[i] = from_f16(to_f16(rng_uniform(-1, 1)));
    for (int j = 0; j < N; j++)
        bias[j] = from_f16(to_f16(rng_uniform(-1, 1)));
    model_matmul(M_TC8, a, b, c, M, N, K);
    for (int i = 0; i < M * N; i++) {
        float v = c[i] + bias[i % N];
        c[i] = from_f16(to_f16(v > 0 ? v : 0));
    }
    ref_matmul_bound(a, NULL, b, NULL, ref, bound, M, N, K, SUM_TENSOR);
    bound_affine(ref, bound, M, N, 1, bias);
    bound_relu(ref, M * N);
    bound_store(ref, bound, M * N, U_F16, 0x1p-25);
    BoundCheck ck;
    bool in;
    in = within(c, ref, bound, M * N, &ck);
    unit_check(in, "f16(max(A @ B + bias, 0)) within its bound", "element %zu", ck.first);
    /* and the sums of 8-column windows of a 0.5 x (A @ B) + bias (tf32_epilogue's row sums) */
    double sref[M * 3], sbound[M * 3];
    float s[M * 3];
    model_matmul(M_TC4, a, b, c, M, N, K);
    ref_matmul_bound(a, NULL, b, NULL, ref, bound, M, N, K, SUM_TENSOR);
    for (int i = 0; i < M * N; i++) {
        float v = c[i] * 0.5f + bias[i % N];
        c[i] = v > 0 ? v : 0;
    }
    bound_affine(ref, bound, M, N, 0.5, bias);
    bound_relu(ref, M * N);
    bound_window_sums(ref, bound, M, N, 8, sref, sbound);
    for (int i = 0; i < M; i++)
        for (int w = 0; w < 3; w++) {
            float t = 0;
            for (int j = 7; j >= 0; j--)
                t += c[i * N + w * 8 + j];
            s[i * 3 + w] = t;
        }
    in = within(s, sref, sbound, M * 3, &ck);
    unit_check(in, "window sums of a ReLU epilogue within their bounds", "element %zu",
               ck.first);
}

/* The case of the seed: A 1 x 132, B 132 x 4, drawn after the 7795649 draws run_examples makes
 * before it. */
static void seed_case(void)
{
    enum { K = 132, N = 4 };
    static float a[K], b[K * N], am[K], ar[K], bm[K * N], br[K * N], c[N];
    double ref[N], bound[N], exact[N], absab[N];
    rng_seed(1795446859782987936ull);
    for (long i = 0; i < 7795649; i++)
        (void)rng_uniform(-1, 1);
    rng_fill(a, K, -1, 1);
    rng_fill(b, (size_t)K * N, -1, 1);
    for (int i = 0; i < K; i++)
        tf32_operand(a[i], &am[i], &ar[i]);
    for (int i = 0; i < K * N; i++)
        tf32_operand(b[i], &bm[i], &br[i]);
    ref_matmul_bound(am, ar, bm, br, ref, bound, 1, N, K, SUM_TENSOR);
    ref_matmul(a, b, exact, 1, N, K);
    BoundCheck ck;
    bool in;

    /* the correct result, as wgmma (ties to even) and mma.sync (ties away) round */
    for (int rule = 0; rule < 2; rule++) {
        float ra[K], rb[K * N];
        for (int i = 0; i < K; i++)
            ra[i] = rule ? tf32_rna(a[i]) : tf32_rne(a[i]);
        for (int i = 0; i < K * N; i++)
            rb[i] = rule ? tf32_rna(b[i]) : tf32_rne(b[i]);
        for (int md = M_FMA; md <= M_TC16; md++) {
            model_matmul((Model)md, ra, rb, c, 1, N, K);
            char name[128];
            snprintf(name, sizeof name, "seed case: the correct tf32 result (ties %s, model %d) within its bounds",
                     rule ? "away" : "to even", md);
            in = within(c, ref, bound, N, &ck);
            unit_check(in, name, "element %zu = %.9g, reference %.9g, bound %.3g",
                       ck.first, c[ck.first], ref[ck.first], bound[ck.first]);
            if (md == M_FMA && rule == 0) {
                double d = 0, r = 0;
                for (int j = 0; j < N; j++) {
                    d += (c[j] - exact[j]) * (c[j] - exact[j]);
                    r += exact[j] * exact[j];
                }
                unit_check(sqrt(d / r) > 2e-3, "seed case: that result fails the old norm ratio (0.00432 > 2e-3)",
                           "norm ratio %.3g", sqrt(d / r));
            }
        }
    }

    /* what a wrong kernel gets: dropping any one term of at least 2^-8 (a typical |a b| is 1/4)
       puts its element outside the bound */
    float ra[K], rb[K * N];
    for (int i = 0; i < K; i++)
        ra[i] = tf32_rne(a[i]);
    for (int i = 0; i < K * N; i++)
        rb[i] = tf32_rne(b[i]);
    model_matmul(M_FMA, ra, rb, c, 1, N, K);
    int dropped = 0, caught = 0;
    for (int j = 0; j < N; j++) {
        absab[j] = 0;
        for (int p = 0; p < K; p++) {
            double t = (double)ra[p] * rb[p * N + j];
            absab[j] += fabs(t);
            if (fabs(t) < 0x1p-8)
                continue;
            float wrong = (float)(c[j] - t);
            dropped++;
            caught += !(fabs(wrong - ref[j]) <= bound[j]);
        }
    }
    unit_check(dropped > 400 && caught == dropped, "seed case: dropping any k term of at least 2^-8 fails",
               "%d of %d caught", caught, dropped);
    for (int j = 0; j < N; j++) {
        char name[96];
        snprintf(name, sizeof name, "seed case: bound of C[0][%d] below 2^-9 (sum |a||b| = %.1f)", j, absab[j]);
        unit_check(bound[j] < 0x1p-9, name, "bound %.3g", bound[j]);
    }

    /* and skipping the rounding, or letting the tensor core truncate, fails too */
    model_matmul(M_FMA, a, b, c, 1, N, K);
    in = within(c, ref, bound, N, &ck);
    unit_check(!in, "seed case: a product that skips the tf32 rounding fails", "all within");
    for (int i = 0; i < K; i++)
        ra[i] = tf32_trunc(a[i]);
    for (int i = 0; i < K * N; i++)
        rb[i] = tf32_trunc(b[i]);
    model_matmul(M_TC8, ra, rb, c, 1, N, K);
    in = within(c, ref, bound, N, &ck);
    unit_check(!in, "seed case: a product that truncates to tf32 fails", "all within");
}

/* A short product catches a wrong rounding for sure: K = 8, every element. */
static void short_product_rounding(void)
{
    enum { M = 4, N = 8, K = 8 };
    float a[M * K], b[K * N], ar[M * K], br[K * N], am[M * K], bm[K * N], c[M * N];
    double ref[M * N], bound[M * N];
    rng_fill(a, M * K, -1, 1);
    rng_fill(b, K * N, -1, 1);
    for (int i = 0; i < M * K; i++)
        tf32_operand(a[i], &am[i], &ar[i]);
    for (int i = 0; i < K * N; i++)
        tf32_operand(b[i], &bm[i], &br[i]);
    ref_matmul_bound(am, ar, bm, br, ref, bound, M, N, K, SUM_TENSOR);
    model_matmul(M_FMA, a, b, c, M, N, K);
    BoundCheck ck;
    within(c, ref, bound, M * N, &ck);
    unit_check(ck.bad > M * N / 2, "K=8: skipping the tf32 rounding fails most elements", "%zu of %d", ck.bad, M * N);
}

/* ---------------------------------------------------------------- reductions */

/* examples/sum.tile's order: windows of 4096 summed pairwise, 8 windows a block in a loop, the
 * blocks' sums added in block order (any order the atomics take is covered the same way). */
static float sum_kernel(const float *x, size_t n, size_t skip_window)
{
    static float w[4096];
    float out = 0;
    for (size_t b0 = 0; b0 < n; b0 += 4096 * 8) {
        float s = 0;
        for (size_t i0 = b0; i0 < b0 + 4096 * 8 && i0 < n; i0 += 4096) {
            size_t len = 4096;
            for (size_t i = 0; i < len; i++)
                w[i] = i0 + i < n && i0 != skip_window ? x[i0 + i] : 0;
            for (; len > 1; len /= 2)
                for (size_t i = 0; i < len / 2; i++)
                    w[i] = w[2 * i] + w[2 * i + 1];
            s += w[0];
        }
        out += s;
    }
    return out;
}

static void sums(void)
{
    enum { N = (1 << 20) + 3 };
    float *x = malloc(N * sizeof *x);
    rng_fill(x, N, 0, 1);
    double bound, blocks = ceil(N / 32768.0);
    double ref = ref_sum(x, N, sum_depth(N, 4096, 8, blocks), &bound);
    float got = sum_kernel(x, N, (size_t)-1), seq = 0;
    unit_check(fabs(got - ref) <= bound, "sum of 2^20 + 3 in sum.tile's order within its bound", "error %.3g, bound %.3g",
               fabs(got - ref), bound);
    for (size_t i = 0; i < N; i++)
        seq += x[i];
    double any;
    ref_sum(x, N, sum_depth(N, N, 0, 0), &any);
    unit_check(fabs(seq - ref) <= any, "sum of 2^20 + 3 in sequence within the any-order bound", "error %.3g, bound %.3g",
               fabs(seq - ref), any);
    got = sum_kernel(x, N, 4096 * 37);
    unit_check(!(fabs(got - ref) <= bound), "a sum that drops one window of 4096 fails", "error %.3g, bound %.3g",
               fabs(got - ref), bound);
    free(x);
}

/* softmax in f32 with e = ex2(t * log2 e) off by the full relative error the bound allows. */
static void softmax_model(const float *x, float *y, int n, int drop)
{
    const float l2e = 1.44269504f;
    float mx = -INFINITY, s = 0;
    static float e[8192];
    for (int j = 0; j < n; j++)
        mx = x[j] > mx ? x[j] : mx;
    for (int j = 0; j < n; j++) {
        float t = x[j] - mx, z = t * l2e;
        double err = (2 + 1.173 * fabs(t)) * 0x1p-23 * 0.99 * (j % 2 ? 1 : -1);
        e[j] = (float)(exp2((double)z) * (1 + err));
        if (j != drop)
            s += e[j];
    }
    for (int j = 0; j < n; j++)
        y[j] = e[j] / s;
}

static void softmaxes(void)
{
    static const int ns[] = { 1, 64, 1000, 8192 };
    static float x[8192], y[8192];
    static double ref[8192], bound[8192];
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int n = ns[i];
        rng_fill(x, (size_t)n, -4, 4);
        ref_softmax(x, ref, bound, 1, n);
        softmax_model(x, y, n, -1);
        BoundCheck ck;
    bool in;
        char name[96];
        snprintf(name, sizeof name, "softmax N=%d within its bounds", n);
        in = within(y, ref, bound, (size_t)n, &ck);
        unit_check(in, name, "element %zu = %.9g, reference %.9g, bound %.3g",
                   ck.first, y[ck.first], ref[ck.first], bound[ck.first]);
        if (n == 1000) {
            int big = 0;
            for (int j = 0; j < n; j++)
                big = x[j] > x[big] ? j : big;
            softmax_model(x, y, n, big);
            in = within(y, ref, bound, (size_t)n, &ck);
            unit_check(!in, "softmax N=1000 that leaves its largest term out of the sum fails",
                       "all within");
        }
    }
}

/* layernorm in f32: sums in sequence, rsqrt off by its full 2 ulp, an explicit d * r * w + b. */
static void layernorm_model(const float *x, const float *w, const float *b, float eps, float *y, int n, int div)
{
    float s = 0, q = 0;
    for (int j = 0; j < n; j++)
        s += x[j];
    float mean = s / (float)n;
    for (int j = 0; j < n; j++) {
        float d = x[j] - mean;
        q = fmaf(d, d, q);
    }
    float v = q / (float)div + eps;
    float r = (float)(1 / sqrt((double)v) * (1 - 0x1p-22 * 0.99));
    for (int j = 0; j < n; j++)
        y[j] = (x[j] - mean) * r * w[j] + b[j];
}

static void layernorms(void)
{
    static const int ns[] = { 1, 3, 1000, 8192 };
    static float x[8192], w[8192], b[8192], y[8192];
    static double ref[8192], bound[8192];
    const float eps = 1e-5f;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int n = ns[i];
        rng_fill(x, (size_t)n, -2, 2);
        rng_fill(w, (size_t)n, 0.5f, 1.5f);
        rng_fill(b, (size_t)n, -1, 1);
        ref_layernorm(x, w, b, eps, ref, bound, 1, n);
        layernorm_model(x, w, b, eps, y, n, n);
        BoundCheck ck;
    bool in;
        char name[96];
        snprintf(name, sizeof name, "layernorm N=%d within its bounds", n);
        in = within(y, ref, bound, (size_t)n, &ck);
        unit_check(in, name, "element %zu = %.9g, reference %.9g, bound %.3g",
                   ck.first, y[ck.first], ref[ck.first], bound[ck.first]);
        if (n == 1000) {
            layernorm_model(x, w, b, eps, y, n, n - 1);
            in = within(y, ref, bound, (size_t)n, &ck);
            unit_check(!in, "layernorm N=1000 with the variance over N - 1 fails",
                       "all within");
        }
    }
    /* x - mean(row) (features' center_rows) */
    rng_fill(x, 2048, 1, 3);
    ref_center_rows(x, ref, bound, 1, 2048);
    float s = 0;
    for (int j = 0; j < 2048; j++)
        s += x[j];
    for (int j = 0; j < 2048; j++)
        y[j] = x[j] - s / 2048.0f;
    BoundCheck ck;
    bool in;
    in = within(y, ref, bound, 2048, &ck);
    unit_check(in, "x - mean(x) over 2048 within its bounds", "element %zu", ck.first);
}

/* ---------------------------------------------------------------- elementwise */

static void elementwise(void)
{
    enum { N = 1000 };
    static float x[N], y[N], z[N];
    static double ref[N], bound[N];
    rng_fill(x, N, -1, 1);
    rng_fill(y, N, -1, 1);
    float alpha = rng_uniform(-2, 2);
    ref_vecadd(x, y, alpha, ref, bound, N);
    for (int i = 0; i < N; i++)
        z[i] = alpha * x[i] + y[i];
    BoundCheck ck;
    bool in;
    in = within(z, ref, bound, N, &ck);
    unit_check(in, "alpha x + y (mul, add) within its bounds", "element %zu", ck.first);
    for (int i = 0; i < N; i++)
        z[i] = fmaf(alpha, x[i], y[i]);
    in = within(z, ref, bound, N, &ck);
    unit_check(in, "alpha x + y (fma) within its bounds", "element %zu", ck.first);

    /* the builtins, modelled as an f32 result off by their whole documented error (which
       includes the result's own rounding: the model keeps half an ulp, 2^-24, of it for that) */
    int bad = 0, caught = 0;
    for (int i = 0; i < N; i++) {
        double v = rng_uniform(-8, 8), a = fabs(v) + 0.5;
        double af = (float)a, e = exp(-v) * (1 + (2 + 1.173 * fabs(v)) * 0x1p-23 * 0.99);
        bool near1 = af >= 0.5 && af <= 2;
        double r[8] = { exp(v), exp2(v), log(a), log2(a), sqrt(a), 1 / sqrt(a), tanh(v), 1 / (1 + exp(-v)) };
        double doc[8] = {       /* the documented error of the value the hardware computes on */
            (2 + 1.173 * fabs(v)) * 0x1p-23 * exp(v),
            2 * 0x1p-23 * exp2(v),
            near1 ? exp2(-21.41) : 3 * 0x1p-23 * fabs(log(af)),
            near1 ? 0x1p-22 : 2 * 0x1p-23 * fabs(log2(af)),
            0x1p-24 * sqrt(af),
            2 * 0x1p-23 / sqrt(af),
            exp2(-10.987),
            0x1p-24 / (1 + e),  /* sigmoid: its model below is the f32 recipe itself */
        };
        double on[8] = { exp(v), exp2(v), log(af), log2(af), sqrt(af), 1 / sqrt(af), tanh(v),
                         1 / (double)(float)(1 + (float)e) };
        for (int f = 0; f < 8; f++) {
            double arg = f >= FN_LOG && f <= FN_RSQRT ? a : v, bd = math_bound((MathFn)f, arg, r[f]);
            double off = doc[f] * 0.99 - 0x1p-24 * fabs(on[f]);
            float m = (float)(on[f] + (i % 2 ? off : -off));
            bad += !(fabs(m - r[f]) <= bd);
            caught += !(fabs((float)(r[f] * (1 + 0x1p-15)) - r[f]) <= bd) || f == FN_TANH || fabs(r[f]) < 0x1p-5;
        }
    }
    unit_check(bad == 0, "the builtins at their documented error within their bounds", "%d outside", bad);
    unit_check(caught == 8 * N, "the builtins (but tanh) off by 2^-15 of the value fail", "%d of %d", caught, 8 * N);
}

/* ---------------------------------------------------------------- the check itself */

static void checks(void)
{
    float out[4] = { 1.0f, NAN, -0.0f, INFINITY };
    double ref[4] = { 1.0, 2.0, 0.0, 1e30 }, bound[4] = { 0, 1e30, 0, 1e30 };
    BoundCheck c = check_bounds(out, ref, bound, 4);
    unit_check(c.bad == 2 && c.first == 1, "NaN and infinity fail, exact values with bound 0 pass", "bad %zu first %zu",
               c.bad, c.first);
    char text[256];
    bound_text(text, sizeof text, &c, out, ref, bound, 2);
    unit_check(strstr(text, "[0][1]") && strstr(text, "nan") && strstr(text, "reference 2") && strstr(text, "bound 1e+30"),
               "a failure names the element, its value, reference and bound", "\"%s\"", text);
    float ok[2] = { 1.5f, 2.0f };
    double r2[2] = { 1.5, 2.25 }, b2[2] = { 0.1, 0.5 };
    c = check_bounds(ok, r2, b2, 2);
    bound_text(text, sizeof text, &c, ok, r2, b2, 0);
    unit_check(c.bad == 0 && c.worst == 1 && strstr(text, "0.5") && strstr(text, "[1]"),
               "a pass names the largest error relative to its bound", "\"%s\"", text);
    float t;
    float mid, rad;
    tf32_operand(float_of(0x3f801000u), &mid, &rad);    /* 1 + 2^-11: a tie */
    t = float_of(0x3f801000u);
    unit_check(mid == t && rad == 0x1p-11f, "a tf32 tie is its midpoint, radius half a unit", "mid %.9g rad %.3g", mid, rad);
    tf32_operand(float_of(0x3f801001u), &mid, &rad);
    unit_check(bits_of(mid) == 0x3f802000u && rad == 0, "a value above a tie rounds up, exactly", "mid 0x%08x rad %.3g",
               bits_of(mid), rad);
    unit_check(sum_depth(1000, 4096, 8, 1) == 999 && sum_depth(1 << 20, 4096, 8, 32) == 4095 + 8 + 32 &&
                   sum_depth(1, 2048, 1, 0) == 0,
               "a sum's depth: n - 1, or what the kernel's loop fixes when less", "%g %g %g",
               sum_depth(1000, 4096, 8, 1), sum_depth(1 << 20, 4096, 8, 32), sum_depth(1, 2048, 1, 0));
}

int main(void)
{
    rng_seed(42);
    products_sound();
    products_worst_accumulation();
    products_epilogue();
    seed_case();
    rng_seed(7);
    short_product_rounding();
    sums();
    softmaxes();
    layernorms();
    elementwise();
    checks();
    return unit_exit();
}
