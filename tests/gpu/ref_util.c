/* ref_util.c: see ref_util.h. References are plain loops in double: slow and obviously right.
 *
 * The bounds are worst-case rounding-error analysis (N. J. Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., chapters 2-3): every rounding to nearest in precision u is a
 * factor (1 + d) with |d| <= u, n such factors stay within gamma(n, u) = n u / (1 - n u) of 1,
 * and a sum in which each term passes through at most d additions is off by at most
 * gamma(d, u) sum |x_i|, whatever the order. The approximate instructions are taken at the
 * accuracy NVIDIA documents for them (the CUDA C++ Programming Guide's tables of mathematical
 * functions: exp2f and rsqrtf, which are ex2.approx and rsqrt.approx, 2 ulp; __expf, which is
 * ex2.approx(x * log2 e) as tilec's exp, 2 + floor(1.173 |x|) ulp; __log2f, lg2.approx, 2^-22
 * absolute on [0.5, 2] and 2 ulp elsewhere; __logf, tilec's log, 2^-21.41 and 3 ulp; PTX's
 * tanh.approx.f32 2^-10.987), an ulp being at most 2^-23 of the value. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_util.h"

/* The double references have rounding errors of their own: at most about n 2^-53 relative to
 * the same magnitudes on which every f32 bound below charges at least 2^-24 (n terms), so below
 * n 2^-29 of the bound. Sums and products add them explicitly (ref_err); the composite bounds
 * (softmax, layernorm, ...) over rows of at most 2^19 elements are widened by REF_SLACK. */
#define REF_U     0x1p-53
#define REF_SLACK (1 + 0x1p-10)

/* An f32 that flushes to zero (ex2.approx.ftz) is off by less than the smallest normal. */
#define FTZ_ABS 0x1p-126

static double ref_err(double n, double abs_sum)
{
    return gamma_n(n, REF_U) * abs_sum;
}

double gamma_n(double n, double u)
{
    return n * u < 1 ? n * u / (1 - n * u) : INFINITY;
}

/* ---------------------------------------------------------------- products */

/* SUM_FMA: each fma.rn rounds once, and a product passes through at most K of them, in any
 * order: gamma(K, 2^-24).
 *
 * SUM_TENSOR: the tensor cores are not IEEE adders. Measurements (Fasi, Higham, Mikaitis and
 * Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021, on V100 to A100) show exact
 * products, then each block of n_b products and the accumulator c aligned to the largest of them,
 * the bits below the 24 of f32 cut off (truncation, not rounding), summed, and the sum truncated
 * to 24 bits. We take that as the worst case on every GPU: that Hopper keeps no fewer bits is an
 * assumption, which the GPU runs test. Per block, with T the sum of the magnitudes entering it:
 * each of the n_b terms that is not the largest loses
 * less than 2^-23 of the largest <= 2^-23 T, and the final truncation less than 2^-23 T, so at most
 * (n_b + 1) 2^-23 T. T <= S + E (S = sum |a||b| over all of K, E the error so far), and the
 * blocks' n_b + 1 add up to at most 2K (each block holds at least one product; zeros padding a
 * block lose nothing), so S + E grows by at most a factor (1 + 2^-23)^(2K): E <= gamma(2K, 2^-23) S.
 * That is also at least the FMA bound, so it covers a 16-bit or tf32 product on the FFMA path. */
double sum_rel_bound(SumModel s, int k)
{
    return s == SUM_FMA ? gamma_n(k, U_F32) : gamma_n(2.0 * k, 0x1p-23);
}

static uint32_t tf32_rne(uint32_t bits)
{
    return (bits + 0xfff + (bits >> 13 & 1)) & ~0x1fffu;
}

void tf32_operand(float x, float *mid, float *rad)
{
    uint32_t bits, r;
    memcpy(&bits, &x, 4);
    *mid = x;
    *rad = 0;
    if (!isfinite(x))
        return;
    r = tf32_rne(bits);
    if ((bits & 0x1fff) == 0x1000) {          /* a tie: x is the midpoint */
        float lower;
        uint32_t lo = bits & ~0x1fffu;
        memcpy(&lower, &lo, 4);
        *rad = fabsf(x - lower);              /* exact: same exponent, 0x1000 units */
        return;
    }
    memcpy(mid, &r, 4);
}

void ref_matmul(const float *a, const float *b, double *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++) {
        double *row = c + (size_t)i * n;
        for (int j = 0; j < n; j++)
            row[j] = 0;
        for (int p = 0; p < k; p++) {
            double aip = a[(size_t)i * k + p];
            const float *brow = b + (size_t)p * n;
            for (int j = 0; j < n; j++)
                row[j] += aip * brow[j];
        }
    }
}

/* The kernel multiplies operands a' and b' with |a' - a| <= ra, |b' - b| <= rb, so its exact
 * product is within spread = sum (ra |b| + |a| rb + ra rb) of the reference, and its accumulation
 * error is at most sum_rel_bound * mag with mag = sum (|a| + ra)(|b| + rb) >= sum |a'||b'|.
 * spread is mag - sum |a||b|: both positive sums of the same terms, so the difference loses
 * nothing that matters against the 2^-23 mag of the accumulation. */
void ref_matmul_bound(const float *a, const float *a_rad, const float *b, const float *b_rad,
                      double *c, double *bound, int m, int n, int k, SumModel s)
{
    size_t sc = (size_t)m * n;
    double *plain = a_rad || b_rad ? calloc(sc + 1, sizeof *plain) : NULL;
    double rel = sum_rel_bound(s, k);
    for (size_t i = 0; i < sc; i++)
        c[i] = bound[i] = 0;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            size_t ia = (size_t)i * k + p;
            double av = a[ia], am = fabs(av) + (a_rad ? a_rad[ia] : 0);
            for (int j = 0; j < n; j++) {
                size_t ib = (size_t)p * n + j, ic = (size_t)i * n + j;
                double bv = b[ib], bm = fabs(bv) + (b_rad ? b_rad[ib] : 0);
                c[ic] += av * bv;                 /* products of floats are exact in double */
                bound[ic] += am * bm;
                if (plain)
                    plain[ic] += fabs(av * bv);
            }
        }
    for (size_t i = 0; i < sc; i++) {
        /* without the memory for sum |a||b|, mag itself is a (loose) bound on the spread */
        double mag = bound[i], spread = plain ? mag - plain[i] : a_rad || b_rad ? mag : 0;
        bound[i] = spread + rel * mag + ref_err(k, mag);
    }
    free(plain);
}

/* v = c * scale + bias in f32: c * scale is exact (a power of two), the addition (or an fma of
 * the two) rounds once: |v' - v| <= |scale| B + u (|v| + |scale| B). */
void bound_affine(double *ref, double *bound, size_t rows, size_t cols, double scale,
                  const float *bias)
{
    for (size_t i = 0; i < rows * cols; i++) {
        double v = ref[i] * scale, b = fabs(scale) * bound[i];
        if (bias) {
            v += bias[i % cols];
            b += U_F32 * (fabs(v) + b);
        }
        ref[i] = v;
        bound[i] = b;
    }
}

/* |max(x, 0) - max(y, 0)| <= |x - y|: the bound stays. */
void bound_relu(double *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ref[i] = ref[i] > 0 ? ref[i] : 0;
}

/* Rounding v' (|v'| <= |v| + B) to nearest in the output type: u_out |v'| for normal results,
 * at most half a subnormal step below them. */
void bound_store(const double *ref, double *bound, size_t n, double u_out, double sub_half)
{
    for (size_t i = 0; i < n; i++)
        bound[i] += u_out * (fabs(ref[i]) + bound[i]) + sub_half;
}

/* Each value is within its B of the reference; their exact sum within sum B; the additions of a
 * window of W values, in any order, add gamma(W - 1) sum |value'| <= gamma(W - 1) sum (|v| + B). */
void bound_window_sums(const double *ref, const double *bound, size_t rows, size_t cols, size_t window,
                       double *sref, double *sbound)
{
    size_t nw = (cols + window - 1) / window;
    double g = gamma_n((double)window - 1, U_F32);
    for (size_t r = 0; r < rows; r++)
        for (size_t w = 0; w < nw; w++) {
            double s = 0, b = 0, mag = 0;
            for (size_t j = w * window; j < cols && j < (w + 1) * window; j++) {
                s += ref[r * cols + j];
                b += bound[r * cols + j];
                mag += fabs(ref[r * cols + j]) + bound[r * cols + j];
            }
            sref[r * nw + w] = s;
            sbound[r * nw + w] = b + g * mag + ref_err((double)window, mag);
        }
}

/* ---------------------------------------------------------------- reductions */

double sum_depth(double n, double window, double steps, double atomics)
{
    double any = n > 1 ? n - 1 : 0, w = window < n ? window : n;
    double fixed = (w > 1 ? w - 1 : 0) + steps + atomics;
    return fixed < any ? fixed : any;
}

double ref_sum(const float *x, size_t n, double depth, double *bound)
{
    double s = 0, abs_sum = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        abs_sum += fabs(x[i]);
    }
    *bound = gamma_n(depth, U_F32) * abs_sum + ref_err((double)n, abs_sum);
    return s;
}

void ref_rowsum(const float *x, double *y, double *bound, int rows, int n, double depth)
{
    for (int r = 0; r < rows; r++)
        y[r] = ref_sum(x + (size_t)r * n, (size_t)n, depth, &bound[r]);
}

/* Softmax of a row, e_j = exp(t_j), t_j = x_j - max (exact in double), y_j = e_j / S.
 *   t'_j = fl(x_j - max) = t_j (1 + d), so exp(t'_j) = e_j exp(t_j d): within exp(|t_j| u) - 1;
 *   e'_j = ex2.approx(t'_j * log2 e), the __expf recipe: (2 + 1.173 |t'_j|) ulp, plus FTZ_ABS
 *     (tilec computes exp(x - max) as ex2(fma(x, log2 e, -(max log2 e))), whose exponent also
 *     carries the rounding of max log2 e: exp(1.01 |max| u) - 1 more, counted with the first)
 *     where it flushes: |e'_j - e_j| <= a_j e_j + FTZ_ABS;
 *   S' sums the e'_j in any order (depth n - 1): |S' - S| <= E = sum (a_j e_j + FTZ_ABS)
 *     + gamma(n - 1) (S + that); sigma = E / S;
 *   y'_j = fl(e'_j / S') (div.rn): y'_j / y_j lies within (1 + a_j)(1 + u) / (1 - sigma) of 1
 *     either way, plus the flushed part FTZ_ABS (1 + u) / (S (1 - sigma)) and a subnormal y'. */
void ref_softmax(const float *x, double *y, double *bound, int rows, int n)
{
    ref_softmax_scaled(x, 1, y, bound, rows, n);
}

/* softmax(k x) for k > 0 as a kernel writes it, exp(x * k - max(x) * k) / sum: with k != 1 the
 * exponent is fma(x, fl(k log2 e), -fl(fl(max k) log2 e)) (docs/language.md's precision table),
 * k log2 e rounded twice (the constant, the product), max k and its product by log2 e likewise
 * and the fma once: with M = |max k| and |x k| <= |t| + M, the argument is off by at most
 * (3 |t| + 5.05 M) u, t = (x - max) k. */
void ref_softmax_scaled(const float *x, double k, double *y, double *bound, int rows, int n)
{
    double g = gamma_n(n - 1, U_F32);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double *yr = y + (size_t)r * n, *br = bound + (size_t)r * n, mx = -INFINITY, s = 0, e_err = 0;
        for (int j = 0; j < n; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int j = 0; j < n; j++) {
            double t = ((double)xr[j] - mx) * k;
            double arg = k == 1 ? fabs(t) + 1.01 * fabs(mx) : 3 * fabs(t) + 5.05 * fabs(mx * k);
            double a = (1 + (2 + 1.173 * fabs(t) * (1 + U_F32)) * 0x1p-23) * exp(arg * U_F32) - 1;
            s += yr[j] = exp(t);
            br[j] = a;                            /* the relative error of e'_j, for now */
            e_err += a * yr[j] + FTZ_ABS;
        }
        double sigma = (e_err + g * (s + e_err)) / s;
        for (int j = 0; j < n; j++) {
            yr[j] /= s;
            br[j] = sigma < 1 ? yr[j] * ((1 + br[j]) * (1 + U_F32) / (1 - sigma) - 1) +
                                FTZ_ABS * (1 + U_F32) / (s * (1 - sigma)) + 0x1p-150
                              : INFINITY;
            br[j] *= REF_SLACK;
        }
    }
}

/* The mean of a row as the kernels compute it, sum(x) / f32(N): the sum in any order (depth
 * n - 1) is off by at most gamma(n - 1) A N (A the mean of |x|), the division rounds once:
 * |mean' - mean| <= gamma(n - 1) A + u (|mean| + gamma(n - 1) A). */
static double mean_error(double mean, double abs_mean, int n)
{
    double e = gamma_n(n - 1, U_F32) * abs_mean;
    return e + U_F32 * (fabs(mean) + e);
}

static void row_mean(const float *x, int n, double *mean, double *abs_mean)
{
    double s = 0, a = 0;
    for (int j = 0; j < n; j++) {
        s += x[j];
        a += fabs(x[j]);
    }
    *mean = s / n;
    *abs_mean = a / n;
}

/* y = x - mean: |y' - y| <= Em + u (|y| + Em), one rounding of the subtraction. */
void ref_center_rows(const float *x, double *y, double *bound, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double mean, abs_mean;
        row_mean(xr, n, &mean, &abs_mean);
        double em = mean_error(mean, abs_mean, n);
        for (int j = 0; j < n; j++) {
            double v = xr[j] - mean;
            y[(size_t)r * n + j] = v;
            bound[(size_t)r * n + j] = (em + U_F32 * (fabs(v) + em)) * REF_SLACK;
        }
    }
}

/* Layernorm of a row as examples/layernorm.tile computes it, with d_j = x_j - mean, Q = sum d_j^2,
 * V = Q / N + eps, r = V^-1/2, y_j = d_j r w_j + b_j:
 *   mean' within Em (mean_error); d'_j = fl(x_j - mean') within e_j = Em + u (|d_j| + Em);
 *   Q' = sum of fl(d'_j d'_j) in any order (one rounding per product and n - 1 additions):
 *     |Q' - Q| <= EQ = sum e_j (2 |d_j| + e_j) + gamma(n) sum (|d_j| + e_j)^2;
 *   V' = fl(fl(Q' / N) + eps): |V' - V| <= EV = (EQ / N)(1 + gamma(2)) + gamma(2) Q / N + u eps;
 *   r' = rsqrt.approx(V'), 2 ulp: r' / r within rho = (1 + 2^-22)(1 - EV / V)^-1/2 - 1 of 1;
 *   p'_j = fl(fl(d'_j r') w_j): |p' - p| <= P_j = |w| (e_j r + (|d_j| + e_j) rho r
 *     + gamma(2) (|d_j| + e_j)(1 + rho) r);
 *   y'_j = fl(p'_j + b_j) (or an fma): |y' - y| <= P_j + u (|y_j| + P_j).
 * layernorm_row computes a row's mean, Em, r and rho. */
static void layernorm_row(const float *xr, float eps, int n, double *mean, double *em, double *rstd,
                          double *rho)
{
    double g2 = gamma_n(2, U_F32), gn = gamma_n(n, U_F32);
    double abs_mean, q = 0, eq = 0, mag = 0;
    row_mean(xr, n, mean, &abs_mean);
    *em = mean_error(*mean, abs_mean, n);
    for (int j = 0; j < n; j++) {
        double d = xr[j] - *mean, e = *em + U_F32 * (fabs(d) + *em);
        q += d * d;
        eq += e * (2 * fabs(d) + e);
        mag += (fabs(d) + e) * (fabs(d) + e);
    }
    eq += gn * mag;
    double v = q / n + eps, ev = eq / n * (1 + g2) + g2 * q / n + U_F32 * eps;
    double nu = ev / v;
    *rstd = 1 / sqrt(v);
    *rho = nu < 1 ? (1 + 0x1p-22) / sqrt(1 - nu) - 1 : INFINITY;
}

void ref_layernorm(const float *x, const float *w, const float *b, float eps, double *y,
                   double *bound, int rows, int n)
{
    double g2 = gamma_n(2, U_F32);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double *yr = y + (size_t)r * n, *br = bound + (size_t)r * n;
        double mean, em, rstd, rho;
        layernorm_row(xr, eps, n, &mean, &em, &rstd, &rho);
        for (int j = 0; j < n; j++) {
            double d = xr[j] - mean, e = em + U_F32 * (fabs(d) + em), aw = fabs(w[j]);
            double p = aw * (e * rstd + (fabs(d) + e) * rho * rstd + g2 * (fabs(d) + e) * (1 + rho) * rstd);
            yr[j] = d * rstd * w[j] + b[j];
            br[j] = (p + U_F32 * (fabs(yr[j]) + p)) * REF_SLACK;
        }
    }
}

/* The statistics the kernel stores are the mean' and r' above: within Em and rho r. */
void ref_layernorm_stats(const float *x, float eps, double *mean, double *mean_bound, double *rstd,
                         double *rstd_bound, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        double em, rho;
        layernorm_row(x + (size_t)r * n, eps, n, &mean[r], &em, &rstd[r], &rho);
        mean_bound[r] = em * REF_SLACK;
        rstd_bound[r] = rho * rstd[r] * REF_SLACK;
    }
}

/* RMSNorm: q = sum of x^2 in any order (each square rounded, then n - 1 additions), q / n + eps,
 * rsqrt.approx (2^-22 relative), then x * rstd * w: two roundings. */
void ref_rmsnorm(const float *x, const float *w, float eps, double *y, double *bound, int rows, int n)
{
    double g2 = gamma_n(2, U_F32), gn = gamma_n(n + 1, U_F32);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double *yr = y + (size_t)r * n, *br = bound + (size_t)r * n;
        double q = 0;
        for (int j = 0; j < n; j++)
            q += (double)xr[j] * xr[j];
        double v = q / n + eps, ev = gn * q / n * (1 + g2) + g2 * (q / n + eps);
        double rstd = 1 / sqrt(v), nu = ev / v;
        double rho = nu < 1 ? (1 + 0x1p-22) / sqrt(1 - nu) - 1 : INFINITY;
        for (int j = 0; j < n; j++) {
            yr[j] = xr[j] * rstd * w[j];
            double a = fabs(yr[j]);
            br[j] = (a * rho * (1 + g2) + g2 * a) * REF_SLACK;
        }
    }
}

/* ---------------------------------------------------------------- elementwise */

/* fl(fl(alpha x) + y), or an fma: within gamma(2) (|alpha x| + |y|). */
void ref_vecadd(const float *x, const float *y, float alpha, double *z, double *bound, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double ax = (double)alpha * x[i];
        z[i] = ax + y[i];
        bound[i] = gamma_n(2, U_F32) * (fabs(ax) + fabs(y[i])) * REF_SLACK;
    }
}

/* ulp(v) <= 2^-23 |v| for a normal f32 v. For log, log2, sqrt and rsqrt the kernel's argument is
 * arg' = fl(|x| + 0.5), within a relative u of arg: that moves log by at most |ln(1 + u)| <= 1.01 u,
 * log2 by 1.01 u log2 e, sqrt and rsqrt by 0.51 u relative; which side of [0.5, 2] the documented
 * figure applies to is a question about arg'. */
double math_bound(MathFn fn, double arg, double ref)
{
    const double ulp = 0x1p-23, u = U_F32, log2e = 1.4426950408889634;
    double a = fabs(ref), b = 0, argf = (float)arg;
    bool near1 = argf >= 0.5 && argf <= 2;
    switch (fn) {
    case FN_EXP:        /* __expf */
        b = (2 + 1.173 * fabs(arg)) * ulp * a + FTZ_ABS;
        break;
    case FN_EXP2:
        b = 2 * ulp * a + FTZ_ABS;
        break;
    case FN_LOG:        /* fl(lg2.approx(arg') * ln 2), which is __logf */
        b = (near1 ? exp2(-21.41) : 3 * ulp * (a + 1.01 * u)) + 1.01 * u;
        break;
    case FN_LOG2:
        b = (near1 ? 0x1p-22 : 2 * ulp * (a + 1.01 * u * log2e)) + 1.01 * u * log2e;
        break;
    case FN_SQRT:       /* sqrt.rn */
        b = (0.51 * u + 1.01 * u) * a;
        break;
    case FN_RSQRT:
        b = (0.51 * u + 1.01 * 2 * ulp) * a;
        break;
    case FN_TANH:       /* |tanh| <= 1: the figure read as absolute covers it read as relative */
        b = exp2(-10.987);
        break;
    case FN_SIGMOID: {  /* fl(rcp.rn(fl(1 + __expf(-x)))) */
        double ee = (2 + 1.173 * fabs(arg)) * ulp, s = (1 + ee) * (1 + u) - 1;
        b = ((1 + u) / (1 - s) - 1) * a;
        break;
    }
    }
    return b * REF_SLACK;
}

/* ---------------------------------------------------------------- checks */

BoundCheck check_bounds(const float *out, const double *ref, const double *bound, size_t n)
{
    BoundCheck c = {n, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)out[i] - ref[i]);
        bool ok = !isnan(out[i]) && err <= bound[i];
        double ratio = bound[i] > 0 ? err / bound[i] : err > 0 ? INFINITY : 0;
        if (!ok) {
            if (c.bad++ == 0)
                c.first = i;
            if (!(ratio > 1))
                ratio = INFINITY;             /* NaN, or a bound that is NaN or negative */
        }
        if (ratio > c.ratio) {
            c.ratio = ratio;
            c.worst = i;
        }
    }
    return c;
}

static void where(char *buf, size_t size, size_t i, size_t cols)
{
    if (cols)
        snprintf(buf, size, "[%zu][%zu]", i / cols, i % cols);
    else
        snprintf(buf, size, "[%zu]", i);
}

void bound_text(char *buf, size_t size, const BoundCheck *c, const float *out, const double *ref,
                const double *bound, size_t cols)
{
    char at[64];
    if (c->bad) {
        size_t i = c->first;
        where(at, sizeof at, i, cols);
        snprintf(buf, size, "element %s = %.9g, reference %.9g, |error| %.3g over its bound %.3g (%zu outside their bounds)",
                 at, out[i], ref[i], fabs((double)out[i] - ref[i]), bound[i], c->bad);
        return;
    }
    if (c->n == 0) {
        snprintf(buf, size, "no elements");
        return;
    }
    where(at, sizeof at, c->worst, cols);
    snprintf(buf, size, "largest |error| / bound %.2g, at %s", c->ratio, at);
}

size_t count_nan(const float *out, size_t n, size_t *first)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (isnan(out[i]) && c++ == 0 && first)
            *first = i;
    return c;
}

bool report_outputs(const char *desc, const float *out, const double *ref, const double *bound,
                    size_t n, size_t cols)
{
    size_t first = 0, nan = count_nan(out, n, &first);
    BoundCheck c = check_bounds(out, ref, bound, n);
    char text[256];
    bound_text(text, sizeof text, &c, out, ref, bound, cols);
    bool ok = nan == 0 && c.bad == 0;
    if (nan)
        printf("FAIL %s: %zu of %zu outputs NaN or never written (first at %zu)\n", desc, nan, n, first);
    else
        printf("%s %s%s%s%s\n", ok ? "ok" : "FAIL", desc, ok ? " (" : ": ", text, ok ? ")" : "");
    return ok;
}

size_t count_changed(const float *guard, size_t n, unsigned pattern)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &guard[i], 4);
        c += bits != pattern;
    }
    return c;
}

uint16_t to_f16(float x)
{
    uint32_t sign = x < 0 ? 0x8000 : 0;
    double a = fabs((double)x);
    if (a < ldexp(1, -14))                        /* subnormal (or zero) */
        return (uint16_t)(sign | (uint32_t)nearbyint(a / ldexp(1, -24)));
    int e;
    frexp(a, &e);                                 /* a = f * 2^e, f in [0.5, 1) */
    e -= 1;
    double mant = nearbyint(a / ldexp(1, e - 10));
    if (mant == 2048)
        mant = 1024, e++;
    if (e > 15)
        return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint32_t)(e + 15) << 10 | ((uint32_t)mant - 1024));
}

float from_f16(uint16_t h)
{
    int e = h >> 10 & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)(h & 0x8000 ? -v : v);
}

uint16_t to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fff + (u >> 16 & 1);
    return (uint16_t)(u >> 16);
}

float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

double from_e4m3(unsigned c)
{
    int e = (c >> 3) & 15, m = c & 7;
    double v = e == 15 && m == 7 ? NAN : e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return c & 0x80 ? -v : v;
}

double from_e5m2(unsigned c)
{
    int e = (c >> 2) & 31, m = c & 3;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -16) : ldexp(4 + m, e - 17);
    return c & 0x80 ? -v : v;
}
