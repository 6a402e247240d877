/* ref_util.h: CPU references for the example kernels, computed in double from f32 inputs, and
 * the comparisons the GPU tests apply. Semantics follow examples/NAME.tile. */
#ifndef REF_UTIL_H
#define REF_UTIL_H

#include <stddef.h>
#include <stdint.h>

void ref_vecadd(const float *x, const float *y, float alpha, double *z, size_t n);
/* C[M,N] = A[M,K] @ B[K,N], row-major. */
void ref_matmul(const float *a, const float *b, double *c, int m, int n, int k);
double ref_sum(const float *x, size_t n);
void ref_rowsum(const float *x, double *y, int rows, int n);
void ref_softmax(const float *x, double *y, int rows, int n);
void ref_layernorm(const float *x, const float *w, const float *b, float eps, double *y,
                   int rows, int n);

/* ||out - ref|| / ||ref|| (the plain norm of the difference when ref is all zero). */
double rel_error(const float *out, const double *ref, size_t n);
/* Elements that are NaN (unwritten: still the poison, or computed as NaN). Index of the first in
 * *first when there is one. */
size_t count_nan(const float *out, size_t n, size_t *first);
/* Words of guard that no longer hold `pattern` (a store out of bounds). */
size_t count_changed(const float *guard, size_t n, unsigned pattern);

/* 16-bit floats on the host, rounding to nearest even like the device. */
uint16_t to_f16(float x);
float from_f16(uint16_t h);
uint16_t to_bf16(float x);
float from_bf16(uint16_t h);

#endif
