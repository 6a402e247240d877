/* ref_util.h: CPU references for the GPU tests, computed in double from the f32 inputs, and the
 * bound each output element must be within. Semantics follow examples/NAME.tile.
 *
 * Every test compares each element with its own bound, |out - ref| <= bound (NaN never passes):
 * worst-case rounding-error analysis, so a correct kernel passes on any input and any seed, and
 * a bound is tight where the computation is short. The derivations are beside the code in
 * ref_util.c; docs/language.md ("Accuracy") states them per precision. */
#ifndef REF_UTIL_H
#define REF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Unit roundoffs: the largest relative error of one rounding to nearest. */
#define U_F32  0x1p-24
#define U_TF32 0x1p-11      /* 10 stored mantissa bits */
#define U_F16  0x1p-11
#define U_BF16 0x1p-8

/* gamma(n, u) = n u / (1 - n u): |prod of n factors (1 + d_i)^(+-1) - 1| <= gamma(n, u) when every
 * |d_i| <= u. Infinity when n u >= 1. */
double gamma_n(double n, double u);

/* ---------------------------------------------------------------- products */

/* How a product's f32 accumulator is summed. */
typedef enum {
    SUM_FMA,        /* f32 @ f32: IEEE fma.rn, any order */
    SUM_TENSOR,     /* f16, bf16, tf32: the tensor cores (or FFMA on exact products) */
} SumModel;

/* Bound on the accumulation error of a K-term product relative to sum |a||b|. */
double sum_rel_bound(SumModel s, int k);

/* An f32 value as a tf32 operand: rounded to nearest. At an exact tie the rule depends on the
 * instruction (ties away on mma.sync, to even on wgmma), so a tie yields the value itself, the
 * midpoint of the two candidates, with radius half a tf32 unit; any other value yields its
 * rounding with radius 0. */
void tf32_operand(float x, float *mid, float *rad);

/* C = A[m,k] @ B[k,n] (row-major) in double and the bound on each computed element. An operand
 * may be an interval: the kernel uses some value within rad of the one given (rad NULL: exactly
 * the value given). */
void ref_matmul(const float *a, const float *b, double *c, int m, int n, int k);
void ref_matmul_bound(const float *a, const float *a_rad, const float *b, const float *b_rad,
                      double *c, double *bound, int m, int n, int k, SumModel s);

/* Epilogue steps on (ref, bound) pairs, in place, each adding its own rounding:
 *   bound_affine: v = c * scale + bias[j] in f32 (scale a power of two; bias NULL: none) over a
 *                 rows x cols matrix
 *   bound_relu:   max(v, 0), which never moves two values further apart
 *   bound_store:  rounding to a narrower type for the store: u_out (U_F16, U_BF16) and half
 *                 its smallest subnormal step, sub_half (0x1p-25 for f16, 0x1p-134 for bf16) */
void bound_affine(double *ref, double *bound, size_t rows, size_t cols, double scale,
                  const float *bias);
void bound_relu(double *ref, size_t n);
void bound_store(const double *ref, double *bound, size_t n, double u_out, double sub_half);
/* The sums of a rows x cols matrix of computed values (ref, bound) over windows of `window`
 * columns, added in any order: sref and sbound are rows x cdiv(cols, window). */
void bound_window_sums(const double *ref, const double *bound, size_t rows, size_t cols, size_t window,
                       double *sref, double *sbound);

/* ---------------------------------------------------------------- reductions */

/* A sum of n f32 terms computed by IEEE additions in which each term passes through at most
 * `depth` of them: n - 1 in any order; less where the kernel's text fixes part of the order (a
 * loop of S steps, each adding the sum of a window of W, then G partial sums added atomically:
 * W - 1 + S + G). ref_sum returns the sum and sets *bound; ref_rowsum sums each row. */
double sum_depth(double n, double window, double steps, double atomics);
double ref_sum(const float *x, size_t n, double depth, double *bound);
void ref_rowsum(const float *x, double *y, double *bound, int rows, int n, double depth);

/* Row softmax (exp as ex2.approx of x * log2 e, the sum in any order, an IEEE division) and
 * row layernorm (mean and variance by sums in any order, rsqrt.approx, then d * rstd * w + b),
 * and x - mean(row), with the bound per element. */
void ref_softmax(const float *x, double *y, double *bound, int rows, int n);
void ref_softmax_scaled(const float *x, double k, double *y, double *bound, int rows, int n);
void ref_layernorm(const float *x, const float *w, const float *b, float eps, double *y,
                   double *bound, int rows, int n);
void ref_center_rows(const float *x, double *y, double *bound, int rows, int n);
/* The per-row mean and 1 / sqrt(var + eps) that layernorm computes on the way (what
 * examples/layernorm_stats.tile stores), with their bounds. */
void ref_layernorm_stats(const float *x, float eps, double *mean, double *mean_bound, double *rstd,
                         double *rstd_bound, int rows, int n);
/* x / sqrt(mean(x^2) + eps) * w per row (rsqrt.approx), with the bound per element. */
void ref_rmsnorm(const float *x, const float *w, float eps, double *y, double *bound, int rows, int n);

/* ---------------------------------------------------------------- elementwise */

void ref_vecadd(const float *x, const float *y, float alpha, double *z, double *bound, size_t n);

/* The float builtins, in this order. */
typedef enum { FN_EXP, FN_EXP2, FN_LOG, FN_LOG2, FN_SQRT, FN_RSQRT, FN_TANH, FN_SIGMOID } MathFn;
/* The bound on |fn(arg) - ref| for the value arg the kernel gets, ref = fn(arg) in double; for
 * log, log2, sqrt and rsqrt the kernel's argument is fl(|x| + 0.5) and arg is |x| + 0.5 exactly. */
double math_bound(MathFn fn, double arg, double ref);

/* ---------------------------------------------------------------- checks */

/* Every element against its bound. n: the elements checked; bad: those outside their bound (NaN
 * included); first: the first of them; worst: the element of largest |out - ref| / bound, ratio
 * that ratio (infinite for NaN, or an error where the bound is 0). */
typedef struct {
    size_t n, bad, first, worst;
    double ratio;
} BoundCheck;

BoundCheck check_bounds(const float *out, const double *ref, const double *bound, size_t n);
/* One line for a report: on failure the first element outside its bound (index as [row][col]
 * when cols > 0), its value, reference and bound; on success the worst ratio. */
void bound_text(char *buf, size_t size, const BoundCheck *c, const float *out, const double *ref,
                const double *bound, size_t cols);

/* Elements that are NaN (unwritten: still the poison, or computed as NaN). Index of the first in
 * *first when there is one. */
size_t count_nan(const float *out, size_t n, size_t *first);
/* The verdict on n outputs (cols to a row) against ref and their bounds: none NaN or unwritten,
 * every one within its bound. Prints one line, `ok DESC (worst ratio)` or `FAIL DESC: why`, and
 * returns whether it passed. */
bool report_outputs(const char *desc, const float *out, const double *ref, const double *bound,
                    size_t n, size_t cols);
/* Words of guard that no longer hold `pattern` (a store out of bounds). */
size_t count_changed(const float *guard, size_t n, unsigned pattern);

/* 16-bit floats on the host, rounding to nearest even like the device. */
uint16_t to_f16(float x);
float from_f16(uint16_t h);
uint16_t to_bf16(float x);
float from_bf16(uint16_t h);
/* An fp8 code's value, exactly: e4m3 (bias 7, no infinity, NaN S.1111.111), e5m2 (bias 15). */
double from_e4m3(unsigned c);
double from_e5m2(unsigned c);

#endif
