/* interp_value.c: the interpreter's tile values and the number formats: rounding to f16, bf16,
 * fp8 and tf32 as docs/language.md specifies them, the bit patterns in memory, run-time casts,
 * and Philox. Every conversion is computed from the exact value (a float widened to double is
 * exact; scaling by a power of two is exact), so none rounds twice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

int64_t shape_count(Shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dim[i];
    return n;
}

Value value_new(ElemType t, Shape s)
{
    Value x = { t, s, shape_count(s), NULL };
    x.v = calloc((size_t)x.n, sizeof *x.v);
    return x;
}

Value value_copy(const Value *x)
{
    Value y = *x;
    y.v = malloc(sizeof *y.v * (size_t)x->n);
    if (y.v && x->v)
        memcpy(y.v, x->v, sizeof *y.v * (size_t)x->n);
    return y;
}

void value_free(Value *x)
{
    free(x->v);
    x->v = NULL;
}

int64_t bcast_index(const Value *x, Shape out, int64_t flat)
{
    if (x->shape.rank == 0)
        return 0;
    int64_t i = 0, j = flat;
    if (out.rank == 2) {
        i = flat / out.dim[1];
        j = flat % out.dim[1];
    }
    if (x->shape.rank == 1)
        return x->shape.dim[0] == 1 ? 0 : j;
    return (x->shape.dim[0] == 1 ? 0 : i) * x->shape.dim[1] + (x->shape.dim[1] == 1 ? 0 : j);
}

int64_t wrap_to(ElemType t, int64_t v)
{
    switch (t) {
    case TY_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case TY_U32: return (uint32_t)(uint64_t)v;
    case TY_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case TY_U8: return (uint8_t)(uint64_t)v;
    case TY_BOOL: return v != 0;
    default: return v;
    }
}

/* x rounded to nearest even with mbits stored mantissa bits, numbers below 2^emin spaced as
 * subnormals; the exponent range above is the caller's (overflow, saturation). */
static double round_bits(double x, int mbits, int emin)
{
    if (x == 0 || !isfinite(x))
        return x;
    int e;
    frexp(fabs(x), &e);
    int lead = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, lead - mbits);
    return nearbyint(x / q) * q;   /* the default rounding mode: to nearest, ties to even */
}

float round_to_type(ElemType t, float x)
{
    double r;
    switch (t) {
    case TY_F16:
        r = round_bits(x, 10, -14);
        return fabs(r) > 65504.0 ? copysignf(INFINITY, x) : (float)r;
    case TY_BF16:
        if (isnan(x))
            return x;
        r = round_bits(x, 7, -126);
        return fabs(r) > 0x1.fep127 ? copysignf(INFINITY, x) : (float)r;
    case TY_F8E4M3:
        if (isnan(x))
            return x;
        r = round_bits(x, 3, -6);
        return fabs(r) > 448.0 ? copysignf(448.0f, x) : (float)r;
    case TY_F8E5M2:
        if (isnan(x))
            return x;
        r = round_bits(x, 2, -14);
        return fabs(r) > 57344.0 ? copysignf(57344.0f, x) : (float)r;
    case TY_TF32: {
        /* cvt.rna.tf32.f32: add half of the 13 dropped bits' weight, then cut them */
        if (!isfinite(x))
            return x;
        uint32_t u;
        memcpy(&u, &x, 4);
        u = (u + 0x1000u) & 0xffffe000u;
        float y;
        memcpy(&y, &u, 4);
        return y;
    }
    default:
        return x;
    }
}

/* A float to an integer type: truncated toward zero and clamped to the type's range, NaN to 0
 * (cvt.rzi's rule); i8 and u8 go through i32 and clamp again, as the lowering does. */
static int64_t float_to_int(ElemType t, float x)
{
    if (isnan(x))
        return 0;
    double v = trunc((double)x);
    double lo, hi;
    switch (t) {
    case TY_U32: lo = 0; hi = 4294967295.0; break;
    case TY_I64: lo = -0x1p63; hi = 0x1p63; break;
    default: lo = -2147483648.0; hi = 2147483647.0; break;
    }
    int64_t r;
    if (v <= lo)
        r = t == TY_I64 ? INT64_MIN : (int64_t)lo;
    else if (v >= hi)
        r = t == TY_I64 ? INT64_MAX : (int64_t)hi;
    else
        r = (int64_t)v;
    if (t == TY_I8)
        r = r < -128 ? -128 : r > 127 ? 127 : r;
    if (t == TY_U8)
        r = r < 0 ? 0 : r > 255 ? 255 : r;
    return r;
}

Elem convert_elem(ElemType to, ElemType from, Elem x)
{
    Elem r;
    r.i = 0;
    bool fto = type_is_float(to), ffrom = type_is_float(from);
    if (to == TY_BOOL) {
        /* setp.ne against zero: ordered, so NaN is false */
        r.i = ffrom ? (x.f < 0 || x.f > 0) : x.i != 0;
        return r;
    }
    if (from == TY_BOOL) {
        if (fto)
            r.f = x.i ? 1.0f : 0.0f;
        else
            r.i = x.i != 0;
        return r;
    }
    if (fto) {
        /* an integer rounds to f32 once (cvt.rn.f32.s64), then to the narrow type */
        float f = ffrom ? x.f : from == TY_U32 || from == TY_U8 ? (float)(uint64_t)x.i : (float)x.i;
        r.f = round_to_type(to, f);
        return r;
    }
    r.i = ffrom ? float_to_int(to, x.f) : wrap_to(to, x.i);
    return r;
}

uint16_t f32_to_f16_bits(float x)
{
    float r = round_to_type(TY_F16, x);
    uint16_t sign = signbit(r) ? 0x8000 : 0;
    if (isnan(r))
        return sign | 0x7e00;
    if (isinf(r))
        return sign | 0x7c00;
    double a = fabs((double)r);
    if (a < 0x1p-14)
        return sign | (uint16_t)(a * 0x1p24);
    int e;
    frexp(a, &e);
    int lead = e - 1;
    uint16_t mant = (uint16_t)(ldexp(a, 10 - lead) - 1024.0);
    return sign | (uint16_t)((lead + 15) << 10) | mant;
}

float f16_bits_to_f32(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

uint16_t f32_to_bf16_bits(float x)
{
    float r = round_to_type(TY_BF16, x);
    uint32_t u;
    memcpy(&u, &r, 4);
    if (isnan(r))
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)(u >> 16);
}

float bf16_bits_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* fp8: e4m3 (bias 7, no infinity, NaN S.1111.111) and e5m2 (bias 15, IEEE-like). */
static uint8_t f32_to_f8_bits(ElemType t, float x)
{
    bool e4 = t == TY_F8E4M3;
    int mb = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    float r = round_to_type(t, x);
    uint8_t sign = signbit(r) ? 0x80 : 0;
    if (isnan(r))
        return sign | (e4 ? 0x7f : 0x7e);
    if (isinf(r))
        return sign | 0x7c;    /* e5m2 only: conversions saturate, a loaded infinity stays */
    double a = fabs((double)r);
    if (a < ldexp(1.0, 1 - bias))
        return sign | (uint8_t)ldexp(a, bias - 1 + mb);
    int e;
    frexp(a, &e);
    int lead = e - 1;
    uint8_t mant = (uint8_t)(ldexp(a, mb - lead) - (1 << mb));
    return sign | (uint8_t)((lead + bias) << mb) | mant;
}

static float f8_bits_to_f32(ElemType t, uint8_t b)
{
    bool e4 = t == TY_F8E4M3;
    int mb = e4 ? 3 : 2, bias = e4 ? 7 : 15, emax = e4 ? 15 : 31;
    int e = (b >> mb) & (e4 ? 0xf : 0x1f), m = b & ((1 << mb) - 1);
    double v;
    if (e4 && e == emax && m == 7)
        v = NAN;
    else if (!e4 && e == emax)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, 1 - bias - mb);
    else
        v = ldexp((1 << mb) + m, e - bias - mb);
    return (float)((b & 0x80) ? -v : v);
}

Elem load_elem(ElemType t, const void *p)
{
    Elem r;
    r.i = 0;
    switch (t) {
    case TY_BOOL: { uint8_t b; memcpy(&b, p, 1); r.i = b != 0; break; }
    case TY_I8: { int8_t b; memcpy(&b, p, 1); r.i = b; break; }
    case TY_U8: { uint8_t b; memcpy(&b, p, 1); r.i = b; break; }
    case TY_I32: { int32_t x; memcpy(&x, p, 4); r.i = x; break; }
    case TY_U32: { uint32_t x; memcpy(&x, p, 4); r.i = x; break; }
    case TY_I64: { int64_t x; memcpy(&x, p, 8); r.i = x; break; }
    case TY_F32: case TY_TF32: memcpy(&r.f, p, 4); break;
    case TY_F16: { uint16_t h; memcpy(&h, p, 2); r.f = f16_bits_to_f32(h); break; }
    case TY_BF16: { uint16_t h; memcpy(&h, p, 2); r.f = bf16_bits_to_f32(h); break; }
    case TY_F8E4M3: case TY_F8E5M2: { uint8_t b; memcpy(&b, p, 1); r.f = f8_bits_to_f32(t, b); break; }
    default: break;
    }
    return r;
}

void store_elem(ElemType t, void *p, Elem x)
{
    switch (t) {
    case TY_BOOL: case TY_I8: case TY_U8: { uint8_t b = (uint8_t)(uint64_t)x.i; memcpy(p, &b, 1); break; }
    case TY_I32: case TY_U32: { uint32_t v = (uint32_t)(uint64_t)x.i; memcpy(p, &v, 4); break; }
    case TY_I64: memcpy(p, &x.i, 8); break;
    case TY_F32: case TY_TF32: memcpy(p, &x.f, 4); break;
    case TY_F16: { uint16_t h = f32_to_f16_bits(x.f); memcpy(p, &h, 2); break; }
    case TY_BF16: { uint16_t h = f32_to_bf16_bits(x.f); memcpy(p, &h, 2); break; }
    case TY_F8E4M3: case TY_F8E5M2: { uint8_t b = f32_to_f8_bits(t, x.f); memcpy(p, &b, 1); break; }
    default: break;
    }
}

void print_elem(FILE *out, ElemType t, Elem x)
{
    if (t == TY_BOOL)
        fputs(x.i ? "true" : "false", out);
    else if (type_is_float(t))
        fprintf(out, "%.9g", (double)x.f);
    else
        fprintf(out, "%lld", (long long)x.i);
}

void philox4x32_10(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t *o0, uint32_t *o1)
{
    uint32_t c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    *o0 = c0;
    *o1 = c1;
}
