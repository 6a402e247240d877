/* test_interp.c: the CPU interpreter (compiler/interp*.c) through its C API, against host
 * references written here from docs/language.md: the examples at small, odd sizes (masked
 * edges, several blocks), the number formats' roundings, Philox bit for bit, reductions,
 * shifts and casts, atomics, and the errors it must report with their source locations. */
#include <math.h>
#include <stdlib.h>

#include "interp.h"
#include "unit.h"

/* ---------------------------------------------------------------- helpers */

typedef struct { Arena *a; Program *p; char *src; FILE *msgs; } Prog;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s)
        s[n] = 0;
    *len = (size_t)n;
    return s;
}

/* A program from a file (is_file) or from text; messages go to P->msgs. */
static bool prog_open(Prog *P, const char *what, bool is_file)
{
    memset(P, 0, sizeof *P);
    size_t len = strlen(what);
    if (is_file) {
        P->src = slurp(what, &len);
    } else if ((P->src = malloc(len + 1))) {
        memcpy(P->src, what, len + 1);
    }
    if (!P->src)
        return false;
    P->msgs = tmpfile();
    diag.out = P->msgs;
    P->a = arena_new();
    P->p = compile_front(P->a, is_file ? what : "t.tile", P->src, len, NULL, 0);
    return P->p != NULL;
}

static void prog_close(Prog *P)
{
    if (P->a)
        arena_free(P->a);
    free(P->src);
    if (P->msgs)
        fclose(P->msgs);
    diag.out = NULL;
}

static Kernel *kernel_of(Prog *P, const char *name)
{
    for (int i = 0; P->p && i < P->p->nkernels; i++)
        if (!strcmp(P->p->kernels[i]->name, name))
            return P->p->kernels[i];
    return NULL;
}

/* The messages written so far. */
static const char *messages(Prog *P)
{
    static char text[8192];
    fflush(P->msgs);
    long n = ftell(P->msgs);
    rewind(P->msgs);
    size_t got = fread(text, 1, n > 0 && n < (long)sizeof text ? (size_t)n : sizeof text - 1, P->msgs);
    text[got] = 0;
    return text;
}

static bool run(Prog *P, const char *kname, InterpArg *args, int n)
{
    Kernel *k = kernel_of(P, kname);
    return k && interp_launch(P->p, k, args, n, NULL);
}

static InterpArg T(void *p, size_t bytes) { InterpArg a = { p, bytes, 0, 0 }; return a; }
static InterpArg I(int64_t v) { InterpArg a = { NULL, 0, v, 0 }; return a; }
static InterpArg F(double v) { InterpArg a = { NULL, 0, 0, v }; return a; }

static uint64_t rng = 12345;
static float uniform(void)   /* in [-1, 1), 24 bits */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) * 0x1p-23f - 1.0f;
}

/* ---------------------------------------------------------------- number formats */

static void test_formats(void)
{
    /* f16: 1 + 2^-11 is a tie (to even: 1), 1 + 3 * 2^-11 rounds up; 65520 overflows; the
       smallest subnormal 2^-24 and half of it (a tie to 0) */
    unit_check(round_to_type(TY_F16, 1.0f + 0x1p-11f) == 1.0f, "f16 tie to even", "%g",
               (double)round_to_type(TY_F16, 1.0f + 0x1p-11f));
    unit_check(round_to_type(TY_F16, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f, "f16 rounds up", "");
    unit_check(isinf(round_to_type(TY_F16, 65520.0f)) && round_to_type(TY_F16, 65519.0f) == 65504.0f,
               "f16 overflow at 65520", "");
    unit_check(round_to_type(TY_F16, 0x1p-24f) == 0x1p-24f && round_to_type(TY_F16, 0x1p-25f) == 0,
               "f16 subnormals", "");
    unit_check(f32_to_f16_bits(1.0f) == 0x3c00 && f32_to_f16_bits(-2.0f) == 0xc000 &&
               f32_to_f16_bits(0x1p-24f) == 0x0001 && f32_to_f16_bits(65504.0f) == 0x7bff &&
               f16_bits_to_f32(0x3555) == 0x1.554p-2f, "f16 bits", "");
    unit_check(f32_to_bf16_bits(1.0f + 0x1p-8f) == 0x3f80 && f32_to_bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3f82 &&
               bf16_bits_to_f32(0x4049) == 3.140625f, "bf16 bits", "");
    /* fp8: e4m3 saturates at 448 (inf too), e5m2 at 57344, NaN stays */
    Elem x, r;
    x.f = 500.0f;
    r = convert_elem(TY_F8E4M3, TY_F32, x);
    unit_check(r.f == 448.0f, "f8e4m3 saturates", "%g", (double)r.f);
    x.f = INFINITY;
    r = convert_elem(TY_F8E5M2, TY_F32, x);
    unit_check(r.f == 57344.0f, "f8e5m2(inf) is 57344", "%g", (double)r.f);
    x.f = 0.3f;
    r = convert_elem(TY_F8E4M3, TY_F32, x);
    unit_check(r.f == 0.3125f, "f8e4m3 rounds to nearest", "%g", (double)r.f);
    x.f = NAN;
    unit_check(isnan(convert_elem(TY_F8E4M3, TY_F32, x).f), "f8e4m3 keeps NaN", "");
    /* tf32: ties away from zero */
    float t = 1.0f + 0x1p-11f;
    unit_check(round_to_type(TY_TF32, t) == 1.0f + 0x1p-10f, "tf32 ties away", "");
    /* float to integer: truncated, clamped, NaN to 0; i8 wraps from integers */
    x.f = -3.7f;
    unit_check(convert_elem(TY_I32, TY_F32, x).i == -3, "f32 to i32 truncates", "");
    x.f = 3e9f;
    unit_check(convert_elem(TY_I32, TY_F32, x).i == INT32_MAX, "f32 to i32 clamps", "");
    x.f = NAN;
    unit_check(convert_elem(TY_U32, TY_F32, x).i == 0, "NaN to u32 is 0", "");
    x.i = 200;
    unit_check(convert_elem(TY_I8, TY_I32, x).i == -56, "i8(200) wraps to -56", "");
    x.f = 300.0f;
    unit_check(convert_elem(TY_U8, TY_F32, x).i == 255, "u8 of a float saturates", "");
}

/* Philox-4x32-10 written out again from docs/language.md, to compare with the interpreter's. */
static void philox_ref(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t *o0)
{
    uint32_t c[4] = { c0, c1, 0, 0 };
    for (int r = 0; r < 10; r++) {
        uint64_t a = (uint64_t)0xCD9E8D57u * c[2], b = (uint64_t)0xD2511F53u * c[0];
        uint32_t n[4] = { (uint32_t)(a >> 32) ^ c[1] ^ k0, (uint32_t)a, (uint32_t)(b >> 32) ^ c[3] ^ k1,
                          (uint32_t)b };
        memcpy(c, n, sizeof c);
        if (r < 9) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
    }
    *o0 = c[0];
}

/* ---------------------------------------------------------------- the examples */

static void test_vecadd(void)
{
    Prog P;
    enum { N = 2085 };   /* three blocks, the last partly outside */
    float x[N], y[N], z[N + 4];
    for (int i = 0; i < N; i++)
        x[i] = uniform(), y[i] = uniform();
    for (int i = 0; i < N + 4; i++)
        z[i] = -7.0f;
    bool ok = prog_open(&P, "examples/vecadd.tile", true);
    InterpArg a[] = { T(x, sizeof x), T(y, sizeof y), T(z, N * 4), F(1.5), I(N) };
    ok = ok && run(&P, "vecadd", a, 5);
    int bad = -1;
    for (int i = 0; i < N && ok && bad < 0; i++)
        if (z[i] != 1.5f * x[i] + y[i])
            bad = i;
    unit_check(ok && bad < 0 && z[N] == -7.0f, "vecadd", "ok %d, element %d, %s", ok, bad, messages(&P));
    prog_close(&P);
}

static void test_softmax_layernorm(void)
{
    enum { R = 3, N = 77 };
    float x[R * N], y[R * N], w[N], b[N];
    for (int i = 0; i < R * N; i++)
        x[i] = 4 * uniform();
    for (int i = 0; i < N; i++)
        w[i] = uniform(), b[i] = uniform();
    Prog P;
    bool ok = prog_open(&P, "examples/softmax.tile", true);
    InterpArg a[] = { T(x, sizeof x), T(y, sizeof y), I(R), I(N) };
    ok = ok && run(&P, "softmax", a, 4);
    double worst = 0;
    for (int r = 0; r < R && ok; r++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < N; j++)
            m = fmax(m, x[r * N + j]);
        for (int j = 0; j < N; j++)
            s += exp(x[r * N + j] - m);
        for (int j = 0; j < N; j++)
            worst = fmax(worst, fabs(y[r * N + j] - exp(x[r * N + j] - m) / s) / (exp(x[r * N + j] - m) / s));
    }
    unit_check(ok && worst < 1e-5, "softmax", "ok %d, relative error %g %s", ok, worst, messages(&P));
    prog_close(&P);

    ok = prog_open(&P, "examples/layernorm.tile", true);
    InterpArg l[] = { T(x, sizeof x), T(w, sizeof w), T(b, sizeof b), T(y, sizeof y), F(1e-5), I(R), I(N) };
    ok = ok && run(&P, "layernorm", l, 7);
    worst = 0;
    for (int r = 0; r < R && ok; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < N; j++)
            mean += x[r * N + j] / (double)N;
        for (int j = 0; j < N; j++)
            var += (x[r * N + j] - mean) * (x[r * N + j] - mean) / N;
        for (int j = 0; j < N; j++) {
            double want = (x[r * N + j] - mean) / sqrt(var + 1e-5) * w[j] + b[j];
            worst = fmax(worst, fabs(y[r * N + j] - want));
        }
    }
    unit_check(ok && worst < 1e-5, "layernorm", "ok %d, error %g %s", ok, worst, messages(&P));
    prog_close(&P);
}

/* C = A @ B of the example `name` (f16, bf16 via round, tf32 or f32 operands) against double. */
static void test_matmul(const char *file, const char *name, ElemType t, int M, int N, int K)
{
    int es = type_size(t);
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    char *da = malloc((size_t)(M * K * es)), *db = malloc((size_t)(K * N * es)), *dc = malloc((size_t)(M * N * es));
    for (int i = 0; i < M * K; i++) {
        Elem e = { .i = 0 };
        e.f = round_to_type(t, uniform());
        a[i] = e.f;
        store_elem(t, da + i * es, e);
    }
    for (int i = 0; i < K * N; i++) {
        Elem e = { .i = 0 };
        e.f = round_to_type(t, uniform());
        b[i] = e.f;
        store_elem(t, db + i * es, e);
    }
    Prog P;
    bool ok = prog_open(&P, file, true);
    InterpArg args[] = { T(da, (size_t)(M * K * es)), T(db, (size_t)(K * N * es)), T(dc, (size_t)(M * N * es)),
                         I(M), I(K), I(N) };
    ok = ok && run(&P, name, args, 6);
    double worst = 0;
    for (int i = 0; i < M && ok; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double ak = a[i * K + k], bk = b[k * N + j];
                if (!strcmp(name, "matmul_tf32"))
                    ak = round_to_type(TY_TF32, (float)ak), bk = round_to_type(TY_TF32, (float)bk);
                s += ak * bk;
                mag += fabs(ak * bk);
            }
            double got = load_elem(t, dc + (i * N + j) * es).f;
            /* f32 accumulation (K roundings) and the store's rounding to the output type */
            double u = t == TY_F16 ? 0x1p-11 : t == TY_BF16 ? 0x1p-8 : 0;
            double bound = K * 0x1p-24 * mag * 1.01 + u * fabs(s) * 1.01 + 0x1p-24;
            worst = fmax(worst, fabs(got - s) / bound);
        }
    unit_check(ok && worst <= 1, name, "ok %d, error/bound %g %s", ok, worst, messages(&P));
    prog_close(&P);
    free(a), free(b), free(da), free(db), free(dc);
}

static void test_attention(void)
{
    enum { BH = 2, S = 37, D = 64 };
    static uint16_t q[BH * S * D], k[S * D], v[S * D], o[BH * S * D];
    static float l[BH * S];
    for (int i = 0; i < BH * S * D; i++)
        q[i] = f32_to_f16_bits(uniform());
    for (int i = 0; i < S * D; i++)
        k[i] = f32_to_f16_bits(uniform()), v[i] = f32_to_f16_bits(uniform());
    for (int causal = 0; causal < 2; causal++) {
        Prog P;
        bool ok = prog_open(&P, "examples/attention.tile", true);
        InterpArg a[] = { T(q, sizeof q), T(k, sizeof k), T(v, sizeof v), T(o, sizeof o), T(l, sizeof l),
                          F(0.125), I(causal), I(BH), I(S), I(D), I(1) };
        ok = ok && run(&P, "attention", a, 11);
        double worst = 0;
        for (int h = 0; h < BH && ok; h++)
            for (int i = 0; i < S; i++) {
                double sc[S], m = -INFINITY, sum = 0;
                int n = causal ? i + 1 : S;
                for (int j = 0; j < n; j++) {
                    sc[j] = 0;
                    for (int d = 0; d < D; d++)
                        sc[j] += (double)f16_bits_to_f32(q[(h * S + i) * D + d]) * f16_bits_to_f32(k[j * D + d]);
                    sc[j] *= 0.125;
                    m = fmax(m, sc[j]);
                }
                for (int j = 0; j < n; j++)
                    sum += exp(sc[j] - m);
                for (int d = 0; d < D; d++) {
                    double want = 0;
                    for (int j = 0; j < n; j++)
                        want += exp(sc[j] - m) / sum * f16_bits_to_f32(v[j * D + d]);
                    worst = fmax(worst, fabs(f16_bits_to_f32(o[(h * S + i) * D + d]) - want));
                }
                worst = fmax(worst, fabs(l[h * S + i] - (m + log(sum))) / 8);
            }
        /* p rounds to f16 before the second product: a few f16 ulps of values below 1 */
        unit_check(ok && worst < 4e-3, causal ? "attention causal" : "attention", "ok %d, error %g %s",
                   ok, worst, messages(&P));
        prog_close(&P);
    }
}

static void test_gather_dropout_sum(void)
{
    enum { T_ = 45, V = 7, D = 300 };
    static int32_t ids[T_];
    static float dy[T_ * D], de[V * D], want[V * D];
    for (int t = 0; t < T_; t++)
        ids[t] = t % 9 == 8 ? -1 : (t * 5) % V;   /* repeated rows add up; -1 is dropped */
    for (int i = 0; i < T_ * D; i++)
        dy[i] = uniform();
    for (int t = 0; t < T_; t++)
        for (int d = 0; d < D && ids[t] >= 0; d++)
            want[ids[t] * D + d] += dy[t * D + d];
    Prog P;
    bool ok = prog_open(&P, "examples/gather.tile", true);
    InterpArg a[] = { T(ids, sizeof ids), T(dy, sizeof dy), T(de, sizeof de), I(T_), I(D), I(V) };
    ok = ok && run(&P, "embedding_bwd", a, 6);
    double worst = 0;
    for (int i = 0; i < V * D && ok; i++)
        worst = fmax(worst, fabs(de[i] - want[i]));
    unit_check(ok && worst < 1e-5, "embedding_bwd (atomic scatter)", "ok %d, error %g %s", ok, worst, messages(&P));
    prog_close(&P);

    enum { N = 3001 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = uniform();
    ok = prog_open(&P, "examples/dropout.tile", true);
    InterpArg d[] = { T(x, sizeof x), T(y, sizeof y), F(0.25), I(1234), I(N) };
    ok = ok && run(&P, "dropout_fwd", d, 5);
    int bad = -1;
    for (int i = 0; i < N && ok && bad < 0; i++) {
        uint32_t r;
        philox_ref(1234, 0, (uint32_t)i, 0, &r);
        float u = (float)(r >> 8) * 0x1p-24f;
        float w = u < 0.25f ? 0.0f : x[i] / (1.0f - 0.25f);
        if (y[i] != w)
            bad = i;
    }
    unit_check(ok && bad < 0, "dropout: rand bit for bit", "ok %d, element %d %s", ok, bad, messages(&P));
    prog_close(&P);

    /* sum: G blocks add into out[0] with atomic_add */
    enum { NS = 70001 };
    static float xs[NS];
    float out = 0;
    double s = 0, mag = 0;
    for (int i = 0; i < NS; i++)
        xs[i] = uniform(), s += xs[i], mag += fabs(xs[i]);
    ok = prog_open(&P, "examples/sum.tile", true);
    InterpArg su[] = { T(xs, sizeof xs), T(&out, 4), I(NS) };
    ok = ok && run(&P, "sum", su, 3);
    unit_check(ok && fabs(out - s) <= NS * 0x1p-24 * mag, "sum (atomic over blocks)", "ok %d, %g vs %g %s",
               ok, (double)out, s, messages(&P));
    prog_close(&P);
}

/* ---------------------------------------------------------------- features */

static const char features[] =
    "kernel feat(X: f32[R, C], AM: i32[R], CS: f32[R, C], SH: i32[8], RB: u32[4], SQ: f32[R])\n"
    "    grid(1) threads(64)\n"
    "{\n"
    "    let x = X[0 +: 4, 0 +: 8];\n"
    "    AM[0 +: 4] = squeeze(argmax(x, axis=1), 1);\n"
    "    CS[0 +: 4, 0 +: 8] = cumsum(x, axis=1);\n"
    "    let v = -100 + arange(8) * 33;\n"
    "    SH[0 +: 8] = (v >> 2) + (v << 28) + i32(u32(v) >> 30);\n"
    "    RB[0 +: 4] = randint(0xdeadbeef, i64(-1) + i64(arange(4)));\n"
    "    SQ[0 +: 4] = squeeze(max(x, axis=1), 1) - squeeze(min(x, axis=1), 1);\n"
    "}\n";

static void test_features(void)
{
    enum { R = 4, C = 8 };
    float x[R * C], cs[R * C], sq[R];
    int32_t am[R], sh[8];
    uint32_t rb[4];
    for (int i = 0; i < R * C; i++)
        x[i] = uniform();
    x[1 * C + 3] = x[1 * C + 6] = 5.0f;   /* ties: the first wins */
    Prog P;
    bool ok = prog_open(&P, features, false);
    InterpArg a[] = { T(x, sizeof x), T(am, sizeof am), T(cs, sizeof cs), T(sh, sizeof sh), T(rb, sizeof rb),
                      T(sq, sizeof sq), I(R), I(C) };
    ok = ok && run(&P, "feat", a, 8);
    unit_check(ok, "features kernel runs", "%s", messages(&P));
    bool good = ok;
    for (int r = 0; r < R && ok; r++) {
        int best = 0;
        float run_sum = 0, mx = x[r * C], mn = x[r * C];
        for (int c = 0; c < C; c++) {
            if (x[r * C + c] > x[r * C + best])
                best = c;
            run_sum += x[r * C + c];
            good &= cs[r * C + c] == run_sum;
            mx = fmaxf(mx, x[r * C + c]), mn = fminf(mn, x[r * C + c]);
        }
        good &= am[r] == best && sq[r] == mx - mn;
    }
    unit_check(good && am[1] == 3, "argmax, cumsum, max, min along axes", "argmax %d %d %d %d", am[0], am[1],
               am[2], am[3]);
    good = ok;
    for (int i = 0; i < 8 && ok; i++) {
        int32_t v = -100 + i * 33;
        int32_t want = (int32_t)((uint32_t)(v < 0 ? ~(~(uint32_t)v >> 2) : (uint32_t)v >> 2) +
                                 ((uint32_t)v << 28) + ((uint32_t)v >> 30));
        good &= sh[i] == want;
    }
    unit_check(good, "shifts: arithmetic, logical, wrapping", "sh[0] %d", sh[0]);
    good = ok;
    for (int i = 0; i < 4 && ok; i++) {
        uint64_t off = (uint64_t)(int64_t)(-1 + i);
        uint32_t want;
        philox_ref(0xdeadbeefu, 0, (uint32_t)off, (uint32_t)(off >> 32), &want);
        good &= rb[i] == want;
    }
    unit_check(good, "randint with an i64 offset and a u32 seed", "rb[0] %u", rb[0]);
    prog_close(&P);
}

/* Integer division by zero and wrapping, f16 arithmetic rounded only where narrowed, a shared
 * tile rounded to its type, 8-bit stores. */
static const char arith[] =
    "kernel arith(I: i32[8], H: f16[4], F: f32[8], E: f8e4m3[4], B: i8[4])\n"
    "    grid(1) threads(32)\n"
    "{\n"
    "    let i = I[0 +: 8];\n"
    "    I[0 +: 8] = where(arange(8) < 4, i / (i - i), i * 0x40000000);\n"
    "    let h = H[0 +: 4];\n"
    "    var s: shared f16[4];\n"
    "    s = h * h;\n"
    "    F[0 +: 4] = f32(h * h);\n"
    "    F[4 +: 4] = f32(s);\n"
    "    E[0 +: 4] = f8e4m3(f32(h) * 300.0);\n"
    "    B[0 +: 4] = i8(i32(f32(h) * 200.0));\n"
    "}\n";

static void test_arith(void)
{
    int32_t iv[8] = { 5, -7, 0, 3, 1, 2, 3, -5 };
    uint16_t h[4];
    float hv[4] = { 1.0f + 0x1p-10f, 0.75f, -1.5f, 1.0f };
    for (int i = 0; i < 4; i++)
        h[i] = f32_to_f16_bits(hv[i]);
    float f[8];
    uint8_t e[4];
    int8_t b[4];
    Prog P;
    bool ok = prog_open(&P, arith, false);
    InterpArg a[] = { T(iv, sizeof iv), T(h, sizeof h), T(f, sizeof f), T(e, sizeof e), T(b, sizeof b) };
    ok = ok && run(&P, "arith", a, 5);
    unit_check(ok && iv[0] == -1 && iv[1] == -1 && iv[2] == -1 && iv[4] == 0x40000000 &&
               iv[5] == INT32_MIN && iv[6] == (int32_t)0xc0000000 && iv[7] == (int32_t)0xc0000000,
               "integer x / 0 is -1, products wrap", "%d %d %d %d %s", iv[0], iv[5], iv[6], iv[7], messages(&P));
    /* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: f32 keeps it, f16 rounds it to 1 + 2^-9 */
    unit_check(ok && f[0] == 1.0f + 0x1p-9f + 0x1p-20f && f[4] == 1.0f + 0x1p-9f && f[1] == 0.5625f &&
               f[5] == 0.5625f, "f16 arithmetic is f32 until a shared tile narrows it", "%a %a", (double)f[0],
               (double)f[4]);
    Elem x = load_elem(TY_F8E4M3, &e[0]), y = load_elem(TY_F8E4M3, &e[2]);
    unit_check(ok && x.f == 288.0f && y.f == -448.0f && b[0] == -56 && b[1] == -106 && b[2] == -44,
               "fp8 and i8 stores", "%g %g %d %d %d", (double)x.f, (double)y.f, b[0], b[1], b[2]);
    prog_close(&P);

    /* the launcher's checks: argument count, null pointers, sizes, the grid */
    ok = prog_open(&P, "examples/vecadd.tile", true);
    float z[4];
    InterpArg neg[] = { T(z, 16), T(z, 16), T(z, 16), F(1), I(-1) };
    bool ran = ok && run(&P, "vecadd", neg, 5);
    unit_check(ok && !ran && strstr(messages(&P), "size N of kernel vecadd is -1"), "a negative size is refused",
               "%s", messages(&P));
    InterpArg few[] = { T(z, 16), T(z, 16) };
    ran = ok && run(&P, "vecadd", few, 2);
    unit_check(ok && !ran && strstr(messages(&P), "takes 5 arguments, got 2"), "a wrong argument count is refused",
               "%s", messages(&P));
    InterpArg null[] = { T(z, 16), T(NULL, 16), T(z, 16), F(1), I(4) };
    ran = ok && run(&P, "vecadd", null, 5);
    unit_check(ok && !ran && strstr(messages(&P), "argument 'Y' of kernel vecadd is a null pointer"),
               "a null tensor is refused", "%s", messages(&P));
    prog_close(&P);
    ok = prog_open(&P, "kernel g(X: f32[N]) grid(1, N) threads(32) { X[block.y] = 1.0; }\n", false);
    InterpArg big[] = { T(z, 16), I(70000) };
    ran = ok && run(&P, "g", big, 2);
    unit_check(ok && !ran && strstr(messages(&P), "grid dimension y is 70000 blocks (allowed 0..65535)"),
               "a grid past its limit is refused", "%s", messages(&P));
    prog_close(&P);
}

/* ---------------------------------------------------------------- errors and print */

static void test_errors(void)
{
    Prog P;
    enum { N = 100 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = 1;
    /* the tensor says N elements, the memory holds fewer: an out-of-bounds read at its line */
    bool ok = prog_open(&P, "examples/vecadd.tile", true);
    InterpArg a[] = { T(x, 50 * 4), T(y, sizeof y), T(y, sizeof y), F(1), I(N) };
    bool ran = ok && run(&P, "vecadd", a, 5);
    const char *m = messages(&P);
    unit_check(ok && !ran && strstr(m, "vecadd.tile:") && strstr(m, "out-of-bounds read of 'X' at [50]") &&
               strstr(m, "^"), "out-of-bounds read reported at its source", "%s", m);
    prog_close(&P);

    ok = prog_open(&P, "examples/matmul_f16.tile", true);
    uint16_t h[64];
    InterpArg b[] = { T(h, sizeof h), T(h, sizeof h), T(h, sizeof h), I(4), I(8), I(3) };
    ran = ok && run(&P, "matmul_f16", b, 6);
    m = messages(&P);
    unit_check(ok && !ran && strstr(m, "assume(N % 8 == 0) is false") && strstr(m, "matmul_f16.tile:"),
               "a false assume is refused with its location", "%s", m);
    prog_close(&P);

    ok = prog_open(&P, "kernel k(X: f32[N]) grid(2) threads(32) {\n"
                       "    let v = X[block.x * 4 +: 4] * 2.0;\n"
                       "    print(v);\n"
                       "    print(sum(v));\n"
                       "}\n", false);
    float xs[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    FILE *out = tmpfile();
    InterpOptions o = { out, false };
    InterpArg c[] = { T(xs, sizeof xs), I(8) };
    Kernel *k = kernel_of(&P, "k");
    ran = ok && k && interp_launch(P.p, k, c, 2, &o);
    char text[512] = "";
    fflush(out);
    rewind(out);
    size_t got = fread(text, 1, sizeof text - 1, out);
    text[got] = 0;
    unit_check(ran && !strcmp(text, "t.tile:3: block (0, 0, 0): v = f32[4] [2, 4, 6, 8]\n"
                                   "t.tile:4: block (0, 0, 0): sum(v) = f32 20\n"),
               "print shows block (0, 0, 0)", "got '%s'", text);
    fclose(out);
    prog_close(&P);
}

/* ---------------------------------------------------------------- the source in the module */

static void test_meta_source(void)
{
    static const char src[] =
        "// caf\xc3\xa9 \\ a backslash,\ta tab\r\n"
        "const B = 64;\n"
        "const S = 0.5;\n"
        "\n"
        "kernel k(X: f32[N]) grid(cdiv(N, B)) threads(32) { X[block.x * B +: B] = S; }";
    Define defs[] = { { "B", "128", false }, { "S", "0.25", false } };
    CompileJob j;
    memset(&j, 0, sizeof j);
    j.file = "dir\\odd name.tile";
    j.src = src;
    j.len = strlen(src);
    j.defs = defs;
    j.ndefs = 2;
    j.opt.arch = "sm_80";
    j.opt.no_ptxas = true;
    CompileOutput o;
    memset(&o, 0, sizeof o);
    bool ok = compile_buffer(&j, &o) == COMPILE_OK;
    bool ascii = ok;
    for (size_t i = 0; ok && i < o.ptx.len; i++)
        ascii &= (o.ptx.s[i] >= 0x20 && o.ptx.s[i] <= 0x7e) || o.ptx.s[i] == '\n' || o.ptx.s[i] == '\t';
    unit_check(ascii && !strstr(o.ptx.s, "backslash"), "the module with its source is printable ASCII, "
               "the source's words not in it", "ok %d", ok);
    Buf file = { 0 }, text = { 0 }, names = { 0 };
    Define got[META_MAX_DEFINES];
    int n = 0;
    bool all = true;
    bool read = ok && meta_source_read(o.ptx.s, &file, &text, got, &n, &names, &all);
    unit_check(read && text.len == strlen(src) && !memcmp(text.s, src, strlen(src)) &&
               !strcmp(file.s, j.file) && n == 2 && !strcmp(got[0].name, "B") &&
               !strcmp(got[0].value, "128") && !strcmp(got[1].name, "S") && strtod(got[1].value, NULL) == 0.25 &&
               !all, "the source, its name and the -D values read back", "read %d, n %d, file '%s'", read, n,
               file.s ? file.s : "");
    unit_check(!meta_source_read("//@tilec 1\n//$source 1\n//$ x\n", &file, &text, got, &n, &names, NULL),
               "a source block without its end is refused", "");
    /* --print-all-blocks goes with the module, for the interpreter that runs it */
    compile_output_free(&o);
    j.opt.print_all_blocks = true;
    ok = compile_buffer(&j, &o) == COMPILE_OK;
    buf_free(&file);
    buf_free(&text);
    buf_free(&names);
    read = ok && meta_source_read(o.ptx.s, &file, &text, got, &n, &names, &all);
    unit_check(read && all && text.len == strlen(src), "--print-all-blocks read back", "read %d, all %d", read, all);
    buf_free(&file);
    buf_free(&text);
    buf_free(&names);
    compile_output_free(&o);
}

int main(void)
{
    test_formats();
    test_vecadd();
    test_softmax_layernorm();
    test_matmul("examples/matmul_f16.tile", "matmul_f16", TY_F16, 37, 48, 40);
    test_matmul("examples/matmul_bf16.tile", "matmul_bf16", TY_BF16, 130, 264, 72);
    test_matmul("examples/matmul_tf32.tile", "matmul_tf32", TY_F32, 33, 36, 20);
    test_matmul("examples/matmul_f32.tile", "matmul_f32", TY_F32, 29, 36, 44);
    test_attention();
    test_gather_dropout_sum();
    test_features();
    test_arith();
    test_errors();
    test_meta_source();
    return unit_exit();
}
