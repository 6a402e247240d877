/* types8.c: the kernels of tests/gpu/kernels/types8.tile against references computed here: every
 * 8-bit value (i8, u8, f8e4m3, f8e5m2) widened to f32 exactly; f32 converted to each (fp8 to
 * nearest even and saturating to the largest finite value, NaN kept; integers truncated toward
 * zero and saturating, NaN to 0; through i32, wrapped), bit for bit; e4m3 to e5m2 through f32; an
 * i8 tile selected with where(). Fresh random inputs with every byte value, the specials (NaN,
 * infinities, signed zeros, halfway cases, the fp8 subnormals and limits) and wide random values;
 * outputs poisoned; sizes that are and are not multiples of 4 (and 16: rows moved as four words
 * a thread) and of the tile. The fp8 kernels
 * need sm_89: on an older GPU the test skips. TILEC_TEST_SMALL: fewer sizes.
 * Usage: types8 EXAMPLES_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;
static tilert_module *mod;

static void fail(const char *desc, const char *why)
{
    printf("FAIL %s: %s\n", desc, why);
    failed++;
}

/* A case's outcome: `bad` elements wrong, `why` describing the first. */
static void verdict(const char *desc, int bad, const char *why)
{
    if (!bad) {
        passed++;
        return;
    }
    char m[384];
    snprintf(m, sizeof m, "%d wrong; first: %s", bad, why);
    fail(desc, m);
}

/* ---- the formats: rounding an f32 to the nearest code (ref_util.c decodes them) */

/* x to the format whose positive finite codes are 0 .. top in increasing order: the nearest,
 * ties to the even code (the even mantissa); past the largest finite value, that value
 * (satfinite, infinities too); NaN to a NaN. Returns the value, which is what is compared. */
static double round_fp8(double (*value)(unsigned), unsigned top, float x)
{
    if (isnan(x))
        return NAN;
    double a = fabs((double)x), r = value(top);
    if (a < r) {
        unsigned lo = 0;
        while (lo + 1 <= top && value(lo + 1) <= a)
            lo++;
        double vl = value(lo), vh = value(lo + 1);
        r = a - vl < vh - a ? vl : a - vl > vh - a ? vh : (lo % 2 == 0 ? vl : vh);
    }
    return signbit(x) ? -r : r;
}

static double to_e4m3(float x) { return round_fp8(from_e4m3, 0x7e, x); }
static double to_e5m2(float x) { return round_fp8(from_e5m2, 0x7b, x); }

/* f32 to an integer of [lo, hi] as cvt.rzi does: toward zero, saturating, NaN to 0 */
static long to_int_sat(float x, long lo, long hi)
{
    if (isnan(x))
        return 0;
    double t = trunc((double)x);
    return t < (double)lo ? lo : t > (double)hi ? hi : (long)t;
}

/* the same value, NaN equal to NaN, zeros by sign */
static bool same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* ---- device buffers of bytes and words */

/* n bytes in whole words, and 16 bytes beyond */
static size_t words_of(size_t n) { return (n + 3) / 4 + 4; }

static CUdeviceptr bytes_from(const uint8_t *h, size_t n)
{
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, 4 * words_of(n)) || (n && !gpu_upload(d, h, n)))
        return 0;
    return d;
}

static CUdeviceptr bytes_poisoned(size_t n)
{
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, 4 * words_of(n)) || !gpu_fill32(d, GPU_POISON, words_of(n)))
        return 0;
    return d;
}

static tilert_kernel *kernel(const char *name)
{
    tilert_kernel *k;
    if (tilert_get_kernel(mod, name, &k) != TILERT_OK) {
        fail(name, tilert_last_error());
        return NULL;
    }
    return k;
}

static bool launch(const char *desc, tilert_kernel *k, tilert_arg *a, int na)
{
    tilert_status s = tilert_launch(k, 0, a, na);
    if (s != TILERT_OK || !gpu_sync()) {
        fail(desc, s ? tilert_last_error() : "launch or synchronisation failed");
        return false;
    }
    return true;
}

/* Every byte value, then random bytes: the widened f32 of each type. */
static void widen_case(const char *name, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s N=%d", name, n);
    uint8_t *src = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++)
        src[i] = i < 256 ? (uint8_t)i : (uint8_t)rng_next();
    CUdeviceptr in = bytes_from(src, (size_t)n), out[4];
    for (int t = 0; t < 4; t++)
        out[t] = gpu_new_filled((size_t)n, GPU_POISON);
    tilert_kernel *k = kernel(name);
    tilert_arg a[] = { tilert_ptr(in), tilert_ptr(in), tilert_ptr(in), tilert_ptr(in), tilert_ptr(out[0]),
                       tilert_ptr(out[1]), tilert_ptr(out[2]), tilert_ptr(out[3]), tilert_i32(n) };
    float *h = malloc((size_t)n * 4 + 4);
    static const char *const what[4] = { "f8e4m3", "f8e5m2", "i8", "u8" };
    if (k && in && out[0] && out[1] && out[2] && out[3] && launch(desc, k, a, 9)) {
        for (int t = 0; t < 4; t++) {
            int bad = 0;
            char why[256] = "";
            if (!gpu_download(h, out[t], (size_t)n * 4)) {
                fail(desc, "download");
                continue;
            }
            for (int i = 0; i < n; i++) {
                unsigned c = src[i];
                double want = t == 0 ? from_e4m3(c) : t == 1 ? from_e5m2(c) : t == 2 ? (double)(int8_t)c : (double)c;
                if (!same(h[i], want) && bad++ == 0)
                    snprintf(why, sizeof why, "%s of byte 0x%02x (element %d): got %.9g, want %.9g", what[t], c, i,
                             (double)h[i], want);
            }
            verdict(desc, bad, why);
        }
    }
    for (int t = 0; t < 4; t++)
        gpu_free(out[t]);
    gpu_free(in);
    free(src), free(h);
}

/* An input value: specials first, then halfway and boundary cases of both formats, then random
 * values over a wide range of magnitudes. */
static float input(int i)
{
    static const float special[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 448, -448, 464, 463.9f,
        480, 1e9f, -1e9f, 57344, 61440, 61439, 65536, 0x1p-9f, 0x1p-10f, 0x1.8p-10f, 0x1p-16f, 0x1p-17f,
        0x1.8p-17f, 0x1.2p0f, 0x1.3p0f, 0x1.1p0f, 0x1.28p0f, 127.5f, 128, -128.5f, -129, 255.9f, 256, -0.9f,
        2147483648.0f, -2147483904.0f, 300, -300 };
    if (i < (int)COUNT(special))
        return special[i];
    switch (rng_next() % 4) {
    case 0: return (float)ldexp(rng_uniform(-1, 1), (int)(rng_next() % 40) - 20);
    case 1: return rng_uniform(-300, 300);
    case 2: {   /* exactly halfway between two e4m3 or e5m2 neighbours */
        unsigned c = (unsigned)(rng_next() % 0x7e);
        double (*v)(unsigned) = rng_next() % 2 ? from_e4m3 : from_e5m2;
        return (float)((v(c) + v(c + 1)) / 2 * (rng_next() % 2 ? 1 : -1));
    }
    default: return rng_uniform(-60000, 60000);
    }
}

static void narrow_case(const char *name, int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s N=%d", name, n);
    float *x = malloc((size_t)n * 4 + 4);
    for (int i = 0; i < n; i++)
        x[i] = input(i);
    CUdeviceptr dx = gpu_new_from(x, (size_t)n), out[7];
    for (int t = 0; t < 7; t++)
        out[t] = bytes_poisoned((size_t)n);
    tilert_kernel *k = kernel(name);
    tilert_arg a[9] = { tilert_ptr(dx) };
    for (int t = 0; t < 7; t++)
        a[1 + t] = tilert_ptr(out[t]);
    a[8] = tilert_i32(n);
    uint8_t *h = malloc((size_t)n + 1);
    static const char *const what[7] = { "f8e4m3(x)", "f8e5m2(x)", "i8(x)", "u8(x)", "i8(i32(x))", "u8(i32(x))",
                                         "f8e5m2(f8e4m3(x))" };
    bool ok = k && dx;
    for (int t = 0; t < 7; t++)
        ok = ok && out[t];
    if (ok && launch(desc, k, a, 9)) {
        for (int t = 0; t < 7; t++) {
            int bad = 0;
            char why[256] = "";
            if (!gpu_download(h, out[t], (size_t)n)) {
                fail(desc, "download");
                continue;
            }
            for (int i = 0; i < n; i++) {
                double got, want;
                long w32 = to_int_sat(x[i], -2147483647L - 1, 2147483647L);
                switch (t) {
                case 0: got = from_e4m3(h[i]), want = to_e4m3(x[i]); break;
                case 1: got = from_e5m2(h[i]), want = to_e5m2(x[i]); break;
                case 2: got = (int8_t)h[i], want = (double)to_int_sat(x[i], -128, 127); break;
                case 3: got = h[i], want = (double)to_int_sat(x[i], 0, 255); break;
                case 4: got = (int8_t)h[i], want = (double)(int8_t)(uint8_t)((unsigned long)w32 & 0xff); break;
                case 5: got = h[i], want = (double)((unsigned long)w32 & 0xff); break;
                default: got = from_e5m2(h[i]), want = to_e5m2((float)to_e4m3(x[i])); break;
                }
                if (!same(got, want) && bad++ == 0)
                    snprintf(why, sizeof why, "%s of %.9g (element %d): got %.9g (byte 0x%02x), want %.9g", what[t],
                             (double)x[i], i, got, h[i], want);
            }
            verdict(desc, bad, why);
        }
    }
    for (int t = 0; t < 7; t++)
        gpu_free(out[t]);
    gpu_free(dx);
    free(x), free(h);
}

/* select8: S = where(a < 0, 0, a) over rows of 64 of an [M, K] i8 tensor, K <= 64; the rest
 * of S (columns K..63 of the window fall outside) untouched */
static void select_case(int m, int kk)
{
    char desc[128];
    snprintf(desc, sizeof desc, "select8 M=%d K=%d", m, kk);
    size_t n = (size_t)m * kk;
    uint8_t *src = malloc(n + 1), *h = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)rng_next();
    CUdeviceptr da = bytes_from(src, n), ds = bytes_poisoned(n);
    tilert_kernel *k = kernel("select8");
    tilert_arg a[] = { tilert_ptr(da), tilert_ptr(ds), tilert_i32(m), tilert_i32(kk) };
    if (k && da && ds && launch(desc, k, a, 4) && gpu_download(h, ds, n)) {
        int bad = 0;
        char why[160] = "";
        for (size_t i = 0; i < n; i++) {
            int want = (int8_t)src[i] < 0 ? 0 : (int8_t)src[i];
            if ((int8_t)h[i] != want && bad++ == 0)
                snprintf(why, sizeof why, "element %zu: got %d, want %d", i, (int8_t)h[i], want);
        }
        verdict(desc, bad, why);
    }
    gpu_free(da), gpu_free(ds);
    free(src), free(h);
}

/* copy8_wide: A2 = A (i8, bytes as they are), E2 = E (e4m3 through f32: every value kept, a NaN
 * as a NaN) */
static void copy_case(int n)
{
    char desc[128];
    snprintf(desc, sizeof desc, "copy8_wide N=%d", n);
    uint8_t *a = malloc((size_t)n + 1), *e = malloc((size_t)n + 1), *ha = malloc((size_t)n + 1), *he = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++)
        a[i] = (uint8_t)rng_next(), e[i] = i < 256 ? (uint8_t)i : (uint8_t)rng_next();
    CUdeviceptr da = bytes_from(a, (size_t)n), de = bytes_from(e, (size_t)n);
    CUdeviceptr da2 = bytes_poisoned((size_t)n), de2 = bytes_poisoned((size_t)n);
    tilert_kernel *k = kernel("copy8_wide");
    tilert_arg args[] = { tilert_ptr(da), tilert_ptr(de), tilert_ptr(da2), tilert_ptr(de2), tilert_i32(n) };
    if (k && da && de && da2 && de2 && launch(desc, k, args, 5) && gpu_download(ha, da2, (size_t)n) &&
        gpu_download(he, de2, (size_t)n)) {
        int bad = 0;
        char why[160] = "";
        for (int i = 0; i < n; i++) {
            bool ok = ha[i] == a[i] && same(from_e4m3(he[i]), from_e4m3(e[i]));
            if (!ok && bad++ == 0)
                snprintf(why, sizeof why, "element %d: i8 0x%02x (want 0x%02x), e4m3 0x%02x (want 0x%02x)", i, ha[i],
                         a[i], he[i], e[i]);
        }
        verdict(desc, bad, why);
    }
    gpu_free(da), gpu_free(de), gpu_free(da2), gpu_free(de2);
    free(a), free(e), free(ha), free(he);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "types8");
    if (rc >= 0)
        return rc;
    if (tilert_device_arch(ctx) < 89) {
        printf("skipped: fp8 needs sm_89 or later\n0 passed, 0 failed, 1 skipped\n");
        gpu_close(ctx);
        return 0;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/types8/types8.ptx", dir);
    if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
        printf("FAIL load %s: %s\n0 passed, 1 failed\n", path, tilert_last_error());
        gpu_close(ctx);
        return 1;
    }
    bool small = test_small();
    static const int aligned[] = { 4, 256, 516, 4096, 65540 };
    static const int any[] = { 1, 5, 255, 1001, 4099, 65537 };
    for (size_t i = 0; i < (small ? 3 : COUNT(aligned)); i++) {
        widen_case("widen8", aligned[i]);
        narrow_case("narrow8", aligned[i]);
    }
    for (size_t i = 0; i < (small ? 3 : COUNT(any)); i++) {
        widen_case("widen8_any", any[i]);
        narrow_case("narrow8_any", any[i]);
    }
    static const int wide[] = { 16, 2048, 4112, 65552 };
    for (size_t i = 0; i < (small ? 2 : COUNT(wide)); i++) {
        widen_case("widen8_wide", wide[i]);
        narrow_case("narrow8_wide", wide[i]);
        copy_case(wide[i]);
    }
    static const int sel[][2] = { { 1, 1 }, { 17, 64 }, { 100, 33 } };
    for (size_t i = 0; i < COUNT(sel); i++)
        select_case(sel[i][0], sel[i][1]);
    tilert_unload(mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
