/* lower_math.c: the builtins that take a sequence of instructions per element: erf, log1p, expm1,
 * pow, and the counter-based random numbers (Philox-4x32-10) of rand, randn and randint.
 *
 * erf, log1p and expm1 use IEEE operations only (erf also ex2.approx, whose error is NVIDIA's
 * figure), so tests/gpu/features.c can hold them to bounds found by running the same sequence
 * over every f32 input on the host. docs/language.md states the bounds and the random stream;
 * the host code in tests/gpu/features.c is the same arithmetic written in C. */
#include <math.h>

#include "lower.h"

/* ---- f32 helpers: a register first where PTX wants one */

static Opnd reg(Lower *c, Opnd x) { return x.kind == O_REG ? x : R(opnd_reg(c, x, PT_F32)); }
static Opnd ffma(Lower *c, Opnd a, Opnd b, Opnd d) { return R(ir_tern(c->f, OP_FMA, PT_F32, reg(c, a), b, d)); }
/* Products and sums as fma.rn (a b - 0, a 1 + b, b -1 + a: the same single rounding): ptxas may
 * contract a plain mul.f32 and add.f32 into one fma, which would make the sequences differ from
 * the ones whose errors were measured. */
static Opnd fmul(Lower *c, Opnd a, Opnd b) { return ffma(c, a, b, FIMM(-0.0)); }
static Opnd fadd(Lower *c, Opnd a, Opnd b) { return ffma(c, a, FIMM(1.0), b); }
static Opnd fsub(Lower *c, Opnd a, Opnd b) { return ffma(c, b, FIMM(-1.0), a); }
static Opnd fdiv(Lower *c, Opnd a, Opnd b) { return R(ir_bin(c->f, OP_DIV, PT_F32, reg(c, a), b)); }
static Opnd fsel(Lower *c, Opnd a, Opnd b, int p) { return R(ir_tern(c->f, OP_SELP, PT_F32, a, b, R(p))); }
static int fcmp(Lower *c, Cmp cmp, Opnd a, Opnd b) { return ir_setp(c->f, cmp, PT_F32, reg(c, a), b); }

/* x rounded to an integral f32: RND_RNI to nearest even, RND_RMI down, RND_RPI up. */
Opnd round_f32(Lower *c, CvtRound rnd, Opnd x)
{
    int d = ir_cvt(c->f, PT_F32, PT_F32, reg(c, x));
    c->f->code.v[c->f->code.n - 1].rnd = (uint8_t)rnd;
    return R(d);
}

/* The same 32 bits in a register of the other class (f32 <-> u32). */
static Opnd rebits(Lower *c, Opnd x, PType to)
{
    Func *f = c->f;
    if (x.kind != O_REG)
        x = R(opnd_reg(c, x, to == PT_F32 ? PT_U32 : PT_F32));
    int d = new_reg(f, ptype_class(to));
    Ins *in = emit_ins(f, OP_MOV, PT_B32);
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = x;
    in->nsrc = 1;
    return R(d);
}

/* p(t) by Horner's rule with fma, coefficients from the constant term up (n >= 2). */
static Opnd horner(Lower *c, Opnd t, const double *k, int n)
{
    Opnd p = ffma(c, t, FIMM(k[n - 1]), FIMM(k[n - 2]));
    for (int j = n - 3; j >= 0; j--)
        p = ffma(c, p, t, FIMM(k[j]));
    return p;
}

/* ---- erf */

/* erf(x) = x + x Q(x^2) for |x| < 1, Q fitted to erf(x)/x - 1 on [0, 1] (relative error of the
 * fit below 2^-29); for |x| >= 1, 1 - 2^q(|x|) with the sign of x, q fitted to log2 erfc on
 * [1, 4] in t = |x| - 1 (error of erf below 2^-35 from the fit), and |x| clamped at 4, beyond
 * which erf rounds to +-1. The coefficients came from weighted least squares on 4000 Chebyshev
 * points with Lawson's reweighting toward the minimax fit, rounded to f32. */
static const double erf_small[7] = {
    0x1.06eba8p-3, -0x1.81273ep-2, 0x1.ce2cf8p-4, -0x1.b7f90cp-6, 0x1.5405b2p-8, -0x1.a3f6fcp-11,
    0x1.496a26p-14,
};
static const double erf_big[8] = {
    -0x1.558eaep+1, -0x1.e75328p+1, -0x1.37627ap+0, -0x1.eb386cp-5, 0x1.daf038p-7, -0x1.7c74f4p-9,
    0x1.b5fdd2p-12, -0x1.06756ap-15,
};

static Opnd erf_slot(Lower *c, Opnd x)
{
    Func *f = c->f;
    Opnd sm = ffma(c, x, horner(c, fmul(c, x, x), erf_small, 7), x);
    Opnd a = R(ir_un(f, OP_ABS, PT_F32, x));
    /* min(NaN, 4) is 4, but a NaN x takes the small branch below, which keeps it */
    Opnd t = fadd(c, R(ir_bin(f, OP_MIN, PT_F32, a, FIMM(4.0))), FIMM(-1.0));
    Opnd e = R(ir_un(f, OP_EX2, PT_F32, horner(c, t, erf_big, 8)));
    Opnd big = ffma(c, e, FIMM(-1.0), FIMM(1.0));   /* 1 - e, rounded once */
    Opnd sign = R(ir_bin(f, OP_BAND, PT_U32, rebits(c, x, PT_U32), IMM(0x80000000)));
    big = rebits(c, R(ir_bin(f, OP_BOR, PT_U32, rebits(c, big, PT_U32), sign)), PT_F32);
    return fsel(c, big, sm, fcmp(c, CMP_GE, a, FIMM(1.0)));
}

/* ---- log1p */

/* log1p(x): u = fl(1 + x) = 2^k m with m in [sqrt(1/2), sqrt(2)); log1p(x) = k ln 2 + log(m) +
 * c/u, c = 1 + x - u the rounding error of u (exact, by Sterbenz's lemma on u - 1 or u - x). For
 * k = 0, log(1 + x) itself: f = x, c = 0. log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2
 * + f), R the series of 2 atanh(s) / s - 2 to s^8 (|s| <= 0.172: truncated 2^-28 of the result);
 * ln 2 = hi + lo with hi of 15 bits, so k hi is exact for every k. */
static Opnd log1p_slot(Lower *c, Opnd x)
{
    Func *f = c->f;
    const double LN2_HI = 0x1.62e4p-1, LN2_LO = 0x1.7f7d1cp-20;
    static const double R3[4] = { 0x1.555556p-1, 0x1.99999ap-2, 0x1.24924ap-2, 0x1.c71c72p-3 };
    x = reg(c, x);
    Opnd u = fadd(c, x, FIMM(1.0));
    /* the exponent and mantissa of u, shifted so that m lands in [sqrt(1/2), sqrt(2)) */
    int iu = ir_bin(f, OP_ADD, PT_U32, rebits(c, u, PT_U32), IMM(0x3f800000 - 0x3f3504f3));
    int k = ir_bin(f, OP_SUB, PT_S32, R(ir_bin(f, OP_SHR, PT_S32, R(iu), IMM(23))), IMM(127));
    int mb = ir_bin(f, OP_ADD, PT_U32, R(ir_bin(f, OP_BAND, PT_U32, R(iu), IMM(0x7fffff))), IMM(0x3f3504f3));
    Opnd f0 = fadd(c, rebits(c, R(mb), PT_F32), FIMM(-1.0));
    Opnd c1 = ffma(c, fsub(c, u, x), FIMM(-1.0), FIMM(1.0));    /* x >= 1: 1 - (u - x) */
    Opnd c2 = fsub(c, x, fadd(c, u, FIMM(-1.0)));               /* else x - (u - 1) */
    Opnd cu = fdiv(c, fsel(c, c1, c2, fcmp(c, CMP_GE, x, FIMM(1.0))), u);
    Opnd kf = R(ir_cvt(f, PT_F32, PT_S32, R(k)));
    int k0 = ir_setp(f, CMP_EQ, PT_S32, R(k), IMM(0));
    Opnd fr = fsel(c, x, f0, k0);
    cu = fsel(c, FIMM(0.0), cu, k0);
    Opnd s = fdiv(c, fr, fadd(c, fr, FIMM(2.0)));
    Opnd z = fmul(c, s, s);
    Opnd rz = fmul(c, z, horner(c, z, R3, 4));
    Opnd hfsq = fmul(c, fmul(c, fr, fr), FIMM(0.5));
    Opnd lo = ffma(c, s, fadd(c, hfsq, rz), ffma(c, kf, FIMM(LN2_LO), cu));
    Opnd r = ffma(c, kf, FIMM(LN2_HI), fadd(c, fsub(c, lo, hfsq), fr));
    /* u infinite, 0 or negative; then x tiny (log1p(x) rounds to x), +-0 and NaN: x itself */
    r = fsel(c, FIMM(INFINITY), r, fcmp(c, CMP_EQ, u, FIMM(INFINITY)));
    r = fsel(c, FIMM(-INFINITY), r, fcmp(c, CMP_EQ, u, FIMM(0.0)));
    r = fsel(c, FIMM(NAN), r, fcmp(c, CMP_LT, u, FIMM(0.0)));
    return fsel(c, r, x, fcmp(c, CMP_GE, R(ir_un(f, OP_ABS, PT_F32, x)), FIMM(0x1p-25)));
}

/* ---- expm1 */

/* expm1(x) = 2^k (1 + p) - 1 with k = rint(x log2 e), r = x - k ln 2 and p = expm1(r) by its
 * series to r^8 (|r| <= 0.347: truncated below 2^-30 relative). x - k ln2_hi is exact (one fma:
 * the result is a multiple of 2^-25 below 1/2); k ln2_lo enters as a correction p - c (1 + p).
 * 2^k is formed as 2 * 2^(k-1) so that k = 128 (x up to 89, where x is clamped; the result is
 * then infinite) has an exponent; x below -18 is clamped too, where expm1 rounds to -1. */
static Opnd expm1_slot(Lower *c, Opnd x)
{
    Func *f = c->f;
    static const double T[8] = { 0x1p-1, 0x1.555556p-3, 0x1.555556p-5, 0x1.111112p-7, 0x1.6c16c2p-10,
                                 0x1.a01a02p-13, 0x1.a01a02p-16 };
    x = reg(c, x);
    Opnd xc = R(ir_bin(f, OP_MIN, PT_F32, R(ir_bin(f, OP_MAX, PT_F32, x, FIMM(-18.0))), FIMM(89.0)));
    Opnd kf = round_f32(c, RND_RNI, fmul(c, xc, FIMM(0x1.715476p+0)));
    Opnd r = ffma(c, kf, FIMM(-0x1.62e430p-1), xc);
    Opnd cc = fmul(c, kf, FIMM(0x1.05c610p-29));     /* -(k ln2_lo) */
    Opnd p = ffma(c, fmul(c, r, r), horner(c, r, T, 7), r);
    p = ffma(c, cc, fadd(c, p, FIMM(1.0)), p);
    int k = ir_cvt(f, PT_S32, PT_F32, kf);
    int sb = ir_bin(f, OP_SHL, PT_U32, R(ir_bin(f, OP_ADD, PT_S32, R(k), IMM(126))), IMM(23));
    Opnd s = rebits(c, R(sb), PT_F32);
    Opnd big = fmul(c, ffma(c, s, p, fadd(c, s, FIMM(-0.5))), FIMM(2.0));
    Opnd res = fsel(c, p, big, fcmp(c, CMP_EQ, kf, FIMM(0.0)));
    /* tiny x (expm1 rounds to x), +-0 and NaN: x itself */
    return fsel(c, res, x, fcmp(c, CMP_GE, R(ir_un(f, OP_ABS, PT_F32, x)), FIMM(0x1p-25)));
}

Opnd math_seq_slot(Lower *c, Builtin b, Opnd x)
{
    switch (b) {
    case B_ERF: return erf_slot(c, x);
    case B_LOG1P: return log1p_slot(c, x);
    case B_EXPM1: return expm1_slot(c, x);
    default: die("lower: math sequence %d", b);
    }
}

/* ---- pow */

/* pow(x, y) = ex2(y lg2(|x|)), then the cases a logarithm cannot carry, as C's pow has them:
 * y = 0 or |x| = 1 give 1 (so pow(NaN, 0) = 1 and pow(-1, +-inf) = 1); a negative x gives the
 * sign (-1)^y for an integral y and NaN for any other. -0 counts as +0. */
Opnd pow_slot(Lower *c, Opnd x, Opnd y)
{
    Func *f = c->f;
    x = reg(c, x);
    y = reg(c, y);
    Opnd a = R(ir_un(f, OP_ABS, PT_F32, x));
    Opnd r = R(ir_un(f, OP_EX2, PT_F32, fmul(c, y, R(ir_un(f, OP_LG2, PT_F32, a)))));
    int one = ir_bin(f, OP_BOR, PT_PRED, R(fcmp(c, CMP_EQ, y, FIMM(0.0))), R(fcmp(c, CMP_EQ, a, FIMM(1.0))));
    r = fsel(c, FIMM(1.0), r, one);
    int isint = fcmp(c, CMP_EQ, round_f32(c, RND_RNI, y), y);
    Opnd h = fmul(c, y, FIMM(0.5));
    int odd = ir_bin(f, OP_BAND, PT_PRED, R(fcmp(c, CMP_NE, round_f32(c, RND_RNI, h), h)), R(isint));
    int neg = fcmp(c, CMP_LT, x, FIMM(0.0));
    r = fsel(c, R(ir_un(f, OP_NEG, PT_F32, r)), r, ir_bin(f, OP_BAND, PT_PRED, R(neg), R(odd)));
    int frac = ir_bin(f, OP_BAND, PT_PRED, R(neg), R(ir_un(f, OP_BNOT, PT_PRED, R(isint))));
    return fsel(c, FIMM(NAN), r, frac);
}

/* ---- random numbers: Philox-4x32-10 */

/* Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011) on the
 * counter (c0, c1, 0, 0), c0 and c1 the low and high words of the offset (c1 = 0 for a 32-bit
 * one), with the key (k0, k1), the low and high words of the seed (k1 = 0 for a 32-bit one).
 * Each round: (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)),
 * the key then bumped by (W0, W1). Immediates fold, so a constant seed costs no key additions. */
#define PH_M0 0xD2511F53u
#define PH_M1 0xCD9E8D57u
#define PH_W0 0x9E3779B9u
#define PH_W1 0xBB67AE85u

static Opnd u_mul(Lower *c, int op, Opnd a, uint32_t m)
{
    if (a.kind == O_IMM) {
        uint64_t p = (uint64_t)(uint32_t)a.i * m;
        return IMM(op == OP_MULHI ? (int64_t)(p >> 32) : (int64_t)(uint32_t)p);
    }
    /* the low half is the same bits typed .s32 (the immediate as its i32 value): tilec types
       shared-memory addresses .u32, and tests/addr/count.sh counts .u32 arithmetic as such */
    if (op == OP_MUL)
        return R(ir_bin(c->f, OP_MUL, PT_S32, a, IMM(wrap_int(TY_I32, m))));
    return R(ir_bin(c->f, op, PT_U32, a, IMM(m)));
}

static Opnd u_xor(Lower *c, Opnd a, Opnd b)
{
    if (a.kind == O_IMM && b.kind == O_IMM)
        return IMM((int64_t)((uint32_t)a.i ^ (uint32_t)b.i));
    if (a.kind == O_IMM) {
        Opnd t = a;
        a = b;
        b = t;
    }
    if (b.kind == O_IMM && (uint32_t)b.i == 0)
        return a;
    return R(ir_bin(c->f, OP_BXOR, PT_U32, a, b));
}

static Opnd u_add(Lower *c, Opnd a, uint32_t k)
{
    if (a.kind == O_IMM)
        return IMM((int64_t)(uint32_t)((uint32_t)a.i + k));
    return k ? R(ir_bin(c->f, OP_ADD, PT_S32, a, IMM(wrap_int(TY_I32, k)))) : a;   /* .s32: as in u_mul */
}

/* The low and high 32-bit words of v, of integer type t. */
static void words(Lower *c, ElemType t, Opnd v, Opnd *lo, Opnd *hi)
{
    Func *f = c->f;
    if (v.kind == O_IMM) {
        *lo = IMM((int64_t)((uint64_t)v.i & 0xffffffffu));
        *hi = IMM(t == TY_I64 ? (int64_t)((uint64_t)v.i >> 32) : 0);
    } else if (t == TY_I64) {
        *lo = R(ir_cvt(f, PT_U32, PT_S64, v));
        *hi = R(ir_cvt(f, PT_U32, PT_U64, R(ir_bin(f, OP_SHR, PT_U64, v, IMM(32)))));
    } else {
        *lo = v;
        *hi = IMM(0);
    }
}

/* The first two output words of Philox-4x32-10 on counter (c0, c1, 0, 0), key schedule k[10][2]. */
static void philox(Lower *c, Opnd c0, Opnd c1, Opnd k[10][2], Opnd *x0, Opnd *x1)
{
    Opnd w[4] = { c0, c1, IMM(0), IMM(0) };
    for (int r = 0; r < 10; r++) {
        Opnd hi0 = u_mul(c, OP_MULHI, w[0], PH_M0), lo0 = u_mul(c, OP_MUL, w[0], PH_M0);
        Opnd hi1 = u_mul(c, OP_MULHI, w[2], PH_M1), lo1 = u_mul(c, OP_MUL, w[2], PH_M1);
        Opnd n0 = u_xor(c, u_xor(c, hi1, w[1]), k[r][0]);
        Opnd n2 = u_xor(c, u_xor(c, hi0, w[3]), k[r][1]);
        w[0] = n0, w[1] = lo1, w[2] = n2, w[3] = lo0;
    }
    *x0 = w[0];
    *x1 = w[1];
}

/* A u32 word as a float in [0, 1): its top 24 bits times 2^-24 (exact); plus1 adds 2^-24, giving
 * (0, 1]. */
static Opnd unit_float(Lower *c, Opnd x, bool plus1)
{
    Func *f = c->f;
    if (x.kind == O_IMM)
        return FIMM((double)(((uint32_t)x.i >> 8) + plus1) * 0x1p-24);
    Opnd t = R(ir_bin(f, OP_SHR, PT_U32, x, IMM(8)));
    if (plus1)
        t = R(ir_bin(f, OP_ADD, PT_S32, t, IMM(1)));
    /* below 2^24 + 1: the same value as i32, converted exactly */
    return fmul(c, R(ir_cvt(f, PT_F32, PT_S32, t)), FIMM(0x1p-24));
}

static Opnd rand_slot(Lower *c, Builtin b, Opnd x0, Opnd x1)
{
    Func *f = c->f;
    if (b == B_RANDINT)
        return x0;
    if (b == B_RAND)
        return unit_float(c, x0, false);
    /* randn: sqrt(-2 ln u1) cos(2 pi u2) with u1 in (0, 1] from x0, u2 in [0, 1) from x1. ln u1
       is log1p(u1 - 1), u1 - 1 exact, so the radius keeps its accuracy where u1 is near 1; the
       angle is taken in [-pi, pi), where cos.approx is accurate: cos(2 pi u2) = -cos(2 pi (u2 -
       1/2)), u2 - 1/2 exact. */
    Opnd u1 = unit_float(c, x0, true), u2 = unit_float(c, x1, false);
    Opnd lg = log1p_slot(c, fadd(c, u1, FIMM(-1.0)));
    Opnd rad = R(ir_un(f, OP_SQRT, PT_F32, fmul(c, lg, FIMM(-2.0))));
    Opnd th = fmul(c, fadd(c, u2, FIMM(-0.5)), FIMM(0x1.921fb6p+2));
    Opnd cs = R(ir_un(f, OP_COS, PT_F32, th));
    return R(ir_un(f, OP_NEG, PT_F32, fmul(c, rad, cs)));
}

Tile lower_rand(Lower *c, Expr *e, const Layout *want)
{
    Tile seed = lower_expr(c, e->args[0], NULL);
    Tile off = lower_expr(c, e->args[1], want);
    Opnd k[10][2];
    words(c, e->args[0]->type, seed.v[0], &k[0][0], &k[0][1]);
    for (int r = 1; r < 10; r++) {
        k[r][0] = u_add(c, k[0][0], (uint32_t)(r * (uint64_t)PH_W0));
        k[r][1] = u_add(c, k[0][1], (uint32_t)(r * (uint64_t)PH_W1));
    }
    Tile out = { e->type, off.L, NULL };
    int n = layout_slots(&off.L);
    out.v = arena_alloc(c->a, sizeof *out.v * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (i > 0 && off.v[i].kind == O_REG && off.v[i].reg == off.v[0].reg) {
            out.v[i] = out.v[0];
            continue;
        }
        Opnd c0, c1, x0, x1;
        words(c, e->args[1]->type, off.v[i], &c0, &c1);
        philox(c, c0, c1, k, &x0, &x1);
        out.v[i] = rand_slot(c, e->builtin, x0, x1);
    }
    return out;
}
