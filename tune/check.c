/* check.c: a candidate must compute what the defaults compute. A faster wrong answer is no winner:
 * before the timing, each candidate runs once on the same inputs as the file's own consts and
 * every tensor the defaults wrote (its outputs) is compared with theirs.
 *
 * Tiles change the order of sums, so floats are compared with a tolerance relative to the
 * largest value of the tensor: 1e-3 for f32, 2e-2 for f16 and bf16 (one rounding of the result is
 * 2^-11 and 2^-8 of it). Integers must be equal. 8-bit float tensors are not compared (one
 * rounding step is an eighth of the value). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static float half_to_float(uint16_t h, bool bf16)
{
    uint32_t u;
    if (bf16) {
        u = (uint32_t)h << 16;
    } else {
        uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
        if (exp == 0x1f) {
            u = sign | 0x7f800000 | mant << 13;
        } else if (exp) {
            u = sign | (exp + 112) << 23 | mant << 13;
        } else {
            float f = (float)mant * (1.0f / 16777216.0f);   /* subnormal: mant * 2^-24 */
            return sign ? -f : f;
        }
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double element(const void *p, int64_t i, ElemType t)
{
    const unsigned char *b = p;
    switch (t) {
    case TY_F32: case TY_TF32: { float f; memcpy(&f, b + 4 * i, 4); return f; }
    case TY_F16: case TY_BF16: { uint16_t h; memcpy(&h, b + 2 * i, 2); return half_to_float(h, t == TY_BF16); }
    default: return 0;
    }
}

bool same_result(const void *got, const void *want, int64_t n, ElemType t, char *why, size_t why_size)
{
    if (type_is_f8(t))
        return true;
    if (!type_is_float(t)) {
        size_t bytes = (size_t)n * (size_t)type_size(t);
        if (memcmp(got, want, bytes) == 0)
            return true;
        size_t at = 0;
        while (((const unsigned char *)got)[at] == ((const unsigned char *)want)[at])
            at++;
        snprintf(why, why_size, "element %zu differs", at / (size_t)type_size(t));
        return false;
    }
    double tol = t == TY_F32 || t == TY_TF32 ? 1e-3 : 2e-2;
    double scale = 0, worst = 0;
    int64_t worst_at = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = element(want, i, t);
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    for (int64_t i = 0; i < n; i++) {
        double g = element(got, i, t), w = element(want, i, t);
        if (isnan(g) != isnan(w) || (isinf(w) && g != w) || (isinf(g) && g != w)) {
            snprintf(why, why_size, "element %lld is %g, the defaults' %g", (long long)i, g, w);
            return false;
        }
        if (isfinite(w) && fabs(g - w) > worst) {
            worst = fabs(g - w);
            worst_at = i;
        }
    }
    if (worst <= tol * scale)
        return true;
    snprintf(why, why_size, "element %lld is %g, the defaults' %g (largest |value| %g)",
             (long long)worst_at, element(got, worst_at, t), element(want, worst_at, t), scale);
    return false;
}
