/* test_tune_check.c: tilec-tune's inputs and result check (tune/inputs.c, tune/check.c) without a
 * GPU: f16/bf16 rounding, the random fill (reproducible, in range), the comparison with the
 * defaults' outputs and its tolerances, and tensor sizes from a kernel's parameters. */
#include "../../tune/check.c"
#include "../../tune/inputs.c"
#include "unit.h"

static void expect_bits(float f, bool bf16, uint16_t want)
{
    char name[80];
    snprintf(name, sizeof name, "%s(%g) = 0x%04x", bf16 ? "bf16" : "f16", f, want);
    uint16_t got = half_bits(f, bf16);
    unit_check(got == want, name, "got 0x%04x", got);
    float back = half_to_float(got, bf16);
    snprintf(name, sizeof name, "%s 0x%04x reads back", bf16 ? "bf16" : "f16", want);
    float tol = fabsf(f) * (bf16 ? 1.0f / 256 : 1.0f / 2048);
    unit_check(fabsf(back - f) <= (tol > 3e-8f ? tol : 3e-8f), name, "%g", back);   /* subnormal: 2^-25 */
}

int main(void)
{
    expect_bits(1.0f, false, 0x3c00);
    expect_bits(-2.0f, false, 0xc000);
    expect_bits(0.5f, false, 0x3800);
    expect_bits(1.0f + 1.0f / 2048, false, 0x3c00);        /* a tie: to even */
    expect_bits(1.0f + 3.0f / 2048, false, 0x3c02);        /* a tie: to even, upwards */
    expect_bits(1e-6f, false, 0x0011);                     /* subnormal */
    expect_bits(1.0f, true, 0x3f80);
    expect_bits(-0.75f, true, 0xbf40);

    enum { N = 4096 };
    static float a[N], b[N];
    static int32_t ia[N];
    fill_host(a, N, TY_F32, 42, 1);
    fill_host(b, N, TY_F32, 42, 1);
    bool in_range = true;
    for (int i = 0; i < N; i++)
        in_range = in_range && a[i] >= -1.0f && a[i] < 1.0f;
    unit_check(!memcmp(a, b, sizeof a) && in_range, "fill: the same seed, the same values in [-1, 1)", "");
    fill_host(b, N, TY_F32, 43, 1);
    unit_check(memcmp(a, b, sizeof a) != 0, "fill: another seed, other values", "");
    fill_host(ia, N, TY_I32, 7, 100);
    bool ints = true;
    for (int i = 0; i < N; i++)
        ints = ints && ia[i] >= 0 && ia[i] < 100;
    unit_check(ints, "fill: integers in [0, bound)", "");

    char why[200];
    memcpy(b, a, sizeof a);
    unit_check(same_result(b, a, N, TY_F32, why, sizeof why), "same f32 values agree", "%s", why);
    b[17] += 0.0005f;   /* within 1e-3 of the largest |value| (about 1) */
    unit_check(same_result(b, a, N, TY_F32, why, sizeof why), "f32 within the tolerance", "%s", why);
    b[17] += 0.01f;
    unit_check(!same_result(b, a, N, TY_F32, why, sizeof why) && strstr(why, "element 17 "),
               "f32 beyond the tolerance names the element", "%s", why);
    memcpy(b, a, sizeof a);
    b[3] = NAN;
    unit_check(!same_result(b, a, N, TY_F32, why, sizeof why) && strstr(why, "element 3 is nan"),
               "a NaN where the defaults have a number", "%s", why);
    static uint16_t h[N], g[N];
    fill_host(h, N, TY_F16, 5, 1);
    memcpy(g, h, sizeof h);
    g[100] = half_bits(half_to_float(g[100], false) + 0.01f, false);
    unit_check(same_result(g, h, N, TY_F16, why, sizeof why), "f16 within 2e-2", "%s", why);
    g[100] = half_bits(half_to_float(g[100], false) + 0.05f, false);
    unit_check(!same_result(g, h, N, TY_F16, why, sizeof why), "f16 beyond 2e-2", "");
    static int32_t ib[N];
    memcpy(ib, ia, sizeof ia);
    ib[9]++;
    unit_check(!same_result(ib, ia, N, TY_I32, why, sizeof why) && strstr(why, "element 9 "),
               "integers must be equal", "%s", why);

    /* tensor sizes: row-major, and a strided view addressing the rows of a wider tensor */
    static const char src[] =
        "const BN = 256;\n"
        "kernel k(X: f32[R, N], Y: f16[R, D] strides(2 * D + 8, 1), W: f32[R, BN], s: f32)\n"
        "    grid(R) threads(64)\n"
        "{\n"
        "    let x = X[block.x, 0 +: BN] else 0.0;\n"
        "    Y[block.x, 0 +: 64] = f16(X[block.x, 0 +: 64] * s);\n"
        "    W[block.x, 0 +: BN] = x;\n"
        "}\n";
    Arena *ar = arena_new();
    diag_reset("k.tile", src, strlen(src));
    Source s;
    memset(&s, 0, sizeof s);
    s.p = compile_front(ar, "k.tile", src, strlen(src), NULL, 0);
    unit_check(s.p != NULL, "the test kernel compiles", "");
    if (s.p) {
        s.k = s.p->kernels[0];
        TuneArgs ta;
        memset(&ta, 0, sizeof ta);
        ta.nscalars = 1;
        ta.scalars[0] = (ScalarArg){ "s", "0.25" };
        SizeSet set = { 3, { "R", "N", "D" }, { 10, 300, 64 }, "R=10,N=300,D=64" };
        Input in[MAX_KARGS];
        int n = 0;
        bool ok = kernel_inputs(&ta, &s, &set, in, &n, why, sizeof why);
        unit_check(ok && n == 7, "arguments in ABI order: X Y W s R N D", "%d: %s", n, why);
        if (ok && n == 7) {
            unit_check(in[0].elems == 3000, "X: R x N elements", "%lld", (long long)in[0].elems);
            unit_check(in[1].elems == 9 * 136 + 64, "Y: its strided rows, the last one short",
                       "%lld", (long long)in[1].elems);
            unit_check(in[2].elems == 2560, "W: a const extent", "%lld", (long long)in[2].elems);
            unit_check(in[3].kind == IN_SCALAR && in[3].fval == 0.25, "s from --arg", "%g", in[3].fval);
            unit_check(in[4].kind == IN_SIZE && in[4].ival == 10 && in[6].ival == 64, "sizes",
                       "%lld", (long long)in[4].ival);
        }
        ta.scalars[0].value = "x";
        unit_check(!kernel_inputs(&ta, &s, &set, in, &n, why, sizeof why) && strstr(why, "--arg s=x"),
                   "a scalar that is not a number", "%s", why);
    }
    arena_free(ar);
    return unit_exit();
}
