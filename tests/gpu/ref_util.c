/* ref_util.c: see ref_util.h. Plain loops in double: slow and obviously right. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ref_util.h"

void ref_vecadd(const float *x, const float *y, float alpha, double *z, size_t n)
{
    for (size_t i = 0; i < n; i++)
        z[i] = (double)alpha * x[i] + y[i];
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

double ref_sum(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

void ref_rowsum(const float *x, double *y, int rows, int n)
{
    for (int r = 0; r < rows; r++)
        y[r] = ref_sum(x + (size_t)r * n, (size_t)n);
}

void ref_softmax(const float *x, double *y, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double *yr = y + (size_t)r * n, mx = -INFINITY, s = 0;
        for (int j = 0; j < n; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int j = 0; j < n; j++)
            s += yr[j] = exp(xr[j] - mx);
        for (int j = 0; j < n; j++)
            yr[j] /= s;
    }
}

void ref_layernorm(const float *x, const float *w, const float *b, float eps, double *y,
                   int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        double *yr = y + (size_t)r * n, mean = 0, var = 0;
        for (int j = 0; j < n; j++)
            mean += xr[j];
        mean /= n;
        for (int j = 0; j < n; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= n;
        double rstd = 1 / sqrt(var + eps);
        for (int j = 0; j < n; j++)
            yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
}

double rel_error(const float *out, const double *ref, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double e = out[i] - ref[i];
        d += e * e;
        r += ref[i] * ref[i];
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

size_t count_nan(const float *out, size_t n, size_t *first)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (isnan(out[i]) && c++ == 0 && first)
            *first = i;
    return c;
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

