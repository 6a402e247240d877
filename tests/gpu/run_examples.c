/* run_examples.c: runs every example kernel (build/examples/NAME.ptx, made by tilec from
 * examples/NAME.tile) through libtilert on the GPU, over sizes that are tile multiples, not
 * multiples and smaller than one tile, and compares with a CPU reference in double.
 *
 * Every case: fresh random inputs (the seed is printed; TILEC_TEST_SEED=S repeats a run),
 * outputs poisoned with a NaN pattern before the launch plus a poisoned guard zone after them, then
 * three checks: no output left unwritten (no NaN), the guard untouched (no store out of bounds),
 * and every element within its own error bound of the reference (ref_util.h). Cases that violate
 * an assume() must be refused with TILERT_ERR_ASSUME.
 *
 * usage: run_examples [DIR]    (DIR defaults to build/examples; DIR/mma_shapes/SHAPE/ holds the
 *                              tensor-core examples at other tile shapes, when built)
 * Without a CUDA driver or device: prints that it skipped and succeeds. With TILEC_TEST_SMALL
 * set, every kernel runs at a few small sizes: smaller than its tile, a tile multiple, neither. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref_util.h"
#include "tilert_internal.h"   /* the kernels' metadata: to check the argument order */

enum { GUARD = 1024 };          /* poisoned floats after every output */
#define COUNT(a) (sizeof (a) / sizeof *(a))

static const char *ex_dir = "build/examples";
static int passed, failed;

/* ---------------------------------------------------------------- reporting */

static void result(bool ok, const char *desc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %s", ok ? "ok" : "FAIL", desc);
    if (fmt && *fmt) {
        printf(ok ? " (" : ": ");
        vprintf(fmt, ap);
        if (ok)
            printf(")");
    }
    printf("\n");
    fflush(stdout);
    va_end(ap);
    ok ? passed++ : failed++;
}

/* ---------------------------------------------------------------- device memory per case */

static CUdeviceptr bufs[16];
static int nbufs;

/* n floats plus the guard, all poisoned. 0 on failure (already reported by gpu_util). */
static CUdeviceptr dev_floats(size_t n)
{
    CUdeviceptr p;
    if (nbufs == (int)(sizeof bufs / sizeof bufs[0]) || !gpu_alloc(&p, (n + GUARD) * 4))
        return 0;
    bufs[nbufs++] = p;
    if (!gpu_fill32(p, GPU_POISON, n + GUARD))
        return 0;
    return p;
}

static CUdeviceptr dev_input(const float *x, size_t n)
{
    CUdeviceptr p = dev_floats(n);
    return p && gpu_upload(p, x, n * 4) ? p : 0;
}

static void free_case(void)
{
    while (nbufs)
        gpu_free(bufs[--nbufs]);
}

/* Downloads out (n floats and its guard) and checks every element against ref within its bound
 * (cols: the row length, for the element's index in a message; 0 for a vector). */
static void check_output(const char *desc, CUdeviceptr out, size_t n, const double *ref, const double *bound,
                         size_t cols)
{
    float *h = malloc((n + GUARD) * sizeof *h);
    if (!h || !gpu_download(h, out, (n + GUARD) * 4)) {
        result(false, desc, "cannot read the output back");
        free(h);
        return;
    }
    size_t first = 0, nan = count_nan(h, n, &first);
    size_t oob = count_changed(h + n, GUARD, GPU_POISON);
    BoundCheck c = check_bounds(h, ref, bound, n);
    char text[256];
    bound_text(text, sizeof text, &c, h, ref, bound, cols);
    if (nan)
        result(false, desc, "%zu of %zu outputs NaN or never written (first at %zu)", nan, n,
               first);
    else if (oob)
        result(false, desc, "%zu words written past the end of the output", oob);
    else
        result(c.bad == 0, desc, "%s", text);
    free(h);
}

/* ---------------------------------------------------------------- kernels */

typedef struct {
    const char *name;
    const char *args;          /* the ABI order the example's source implies */
    tilert_module *mod;
    tilert_kernel *k;
    bool tried;
    const char *file;          /* the example's file when it is not named after the kernel */
} Example;

static Example examples[] = {
    {"vecadd", "X Y Z alpha N", NULL, NULL, false, NULL},
    {"matmul_f32", "A B C M K N", NULL, NULL, false, NULL},
    {"sum", "X out N", NULL, NULL, false, NULL},
    {"rowsum", "X Y R N", NULL, NULL, false, NULL},
    {"softmax", "X Y R N", NULL, NULL, false, NULL},
    {"layernorm", "X W B Y eps R N", NULL, NULL, false, NULL},
    {"matmul_f16", "A B C M K N", NULL, NULL, false, NULL},
    {"matmul_bf16", "A B C M K N", NULL, NULL, false, NULL},
    {"matmul_tf32", "A B C M K N", NULL, NULL, false, NULL},
    {"matmul_splitk", "A B C M K N", NULL, NULL, false, NULL},
    {"gemm_bias_relu", "A B bias C M K N", NULL, NULL, false, NULL},
    {"linear", "X W bias Y M K N", NULL, NULL, false, NULL},
    {"linear_bf16", "X W bias Y M K N", NULL, NULL, false, "linear"},
    {"bmm", "A B C Bt M K N", NULL, NULL, false, NULL},
    {"scores", "Q K S scale Bt H T D", NULL, NULL, false, "bmm"},
    {"lse_bwd", "GO O X W Bi DX B CO HW CI", NULL, NULL, false, NULL},
    {"lse_bwd_conv", "GO O X W Bi DX IW B CO HW CI", NULL, NULL, false, "lse_bwd"},
    {"gemv", "W x y N K", NULL, NULL, false, NULL},
    {"gemv_bf16", "W x y N K", NULL, NULL, false, "gemv"},
    {"rmsnorm", "X W Y eps R N", NULL, NULL, false, NULL},
    {"rmsnorm_f16", "X W Y eps R N", NULL, NULL, false, "rmsnorm"},
    {"colsum", "X Y R N", NULL, NULL, false, NULL},
    {"layernorm_stats", "X W B Y Mean Rstd eps R N", NULL, NULL, false, NULL},
    {"gemv_batch", "W X Y N K B", NULL, NULL, false, "gemv"},
    {"gemv_batch_bf16", "W X Y N K B", NULL, NULL, false, "gemv"},
    {"attention", "Q K V O L scale causal BH S D BHKV", NULL, NULL, false, NULL},
    {"attention_d128", "Q K V O L scale causal BH S D BHKV", NULL, NULL, false, "attention"},
    {"attention_bf16", "Q K V O L scale causal BH S D BHKV", NULL, NULL, false, "attention"},
    {"attention_bf16_d128", "Q K V O L scale causal BH S D BHKV", NULL, NULL, false, "attention"},
    {"attention_bwd_rowdot", "O dO Dl BH S D", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dkdv", "Q K V dO L Dl dK dV scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dq", "Q K V dO L Dl dQ scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_rowdot_d128", "O dO Dl BH S D", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dkdv_d128", "Q K V dO L Dl dK dV scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dq_d128", "Q K V dO L Dl dQ scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_rowdot_bf16", "O dO Dl BH S D", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dkdv_bf16", "Q K V dO L Dl dK dV scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dq_bf16", "Q K V dO L Dl dQ scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_rowdot_bf16_d128", "O dO Dl BH S D", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dkdv_bf16_d128", "Q K V dO L Dl dK dV scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"attention_bwd_dq_bf16_d128", "Q K V dO L Dl dQ scale causal BH S D BHKV", NULL, NULL, false, "attention_bwd"},
    {"embedding", "ids E Y T V D", NULL, NULL, false, "gather"},
    {"embedding_bwd", "ids DY DE T D V", NULL, NULL, false, "gather"},
    {"moe_gather_mm", "perm X W Y M N K E", NULL, NULL, false, "gather"},
    {"moe_scatter", "perm X gate Y M D N", NULL, NULL, false, "gather"},
    {"dropout_fwd", "X Y p seed N", NULL, NULL, false, "dropout"},
    {"dropout_bwd", "DY DX p seed N", NULL, NULL, false, "dropout"},
};

/* The example's kernel, loaded on first use; NULL (after one FAIL line) when it cannot be. */
static tilert_kernel *kernel(tilert_context *ctx, const char *name)
{
    Example *e = NULL;
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        if (!strcmp(examples[i].name, name))
            e = &examples[i];
    if (!e || e->tried)
        return e ? e->k : NULL;
    e->tried = true;
    char path[1024], desc[1100];
    snprintf(path, sizeof path, "%s/%s.ptx", ex_dir, e->file ? e->file : name);
    snprintf(desc, sizeof desc, "%s load %s", name, path);
    tilert_status s = tilert_load_ptx_file(ctx, path, &e->mod);
    if (s == TILERT_OK)
        s = tilert_get_kernel(e->mod, name, &e->k);
    if (s != TILERT_OK) {
        result(false, desc, "%s: %s", tilert_status_name(s), tilert_last_error());
        e->k = NULL;
        return NULL;
    }
    /* The argument order is the ABI: parameters as declared, then sizes by first appearance. */
    char got[256] = "";
    size_t len = 0;
    for (int i = 0; i < e->k->meta->nargs && len < sizeof got; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", i ? " " : "",
                                e->k->meta->args[i].name);
    if (strcmp(got, e->args)) {
        result(false, desc, "metadata argument order \"%s\", the ABI says \"%s\"", got, e->args);
        e->k = NULL;
    }
    return e->k;
}

/* Launches and waits; false after a FAIL line. */
static bool launch(const char *desc, tilert_kernel *k, const tilert_arg *args, int nargs)
{
    tilert_status s = tilert_launch(k, 0, args, nargs);
    if (s != TILERT_OK) {
        result(false, desc, "launch: %s: %s", tilert_status_name(s), tilert_last_error());
        return false;
    }
    if (!gpu_sync()) {
        result(false, desc, "the kernel failed while running (see above)");
        return false;
    }
    return true;
}

/* A launch that must be refused because an assume() is false. */
static void refused(const char *desc, tilert_kernel *k, const tilert_arg *args, int nargs)
{
    tilert_status s = tilert_launch(k, 0, args, nargs);
    if (s == TILERT_ERR_ASSUME)
        result(true, desc, "refused: %s", tilert_last_error());
    else
        result(false, desc, "expected TILERT_ERR_ASSUME, got %s %s", tilert_status_name(s),
               s ? tilert_last_error() : "");
    if (s == TILERT_OK)
        gpu_sync();
}

/* ---------------------------------------------------------------- cases */

static void case_vecadd(tilert_context *ctx, int n)
{
    tilert_kernel *k = kernel(ctx, "vecadd");
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "vecadd N=%d", n);
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    double *ref = malloc((size_t)n * 8 + 8), *bound = malloc((size_t)n * 8 + 8);
    float alpha = rng_uniform(-2, 2);
    CUdeviceptr dx, dy, dz;
    if (!x || !y || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(x, (size_t)n, -1, 1);
    rng_fill(y, (size_t)n, -1, 1);
    ref_vecadd(x, y, alpha, ref, bound, (size_t)n);
    if (!(dx = dev_input(x, (size_t)n)) || !(dy = dev_input(y, (size_t)n)) ||
        !(dz = dev_floats((size_t)n))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dz), tilert_f32(alpha),
                      tilert_i32(n)};
    if (launch(desc, k, a, 5))
        check_output(desc, dz, (size_t)n, ref, bound, 0);
done:
    free_case();
    free(x), free(y), free(ref), free(bound);
}

/* rand(seed, i) as docs/language.md defines it: the top 24 bits of the first output word of
 * Philox-4x32-10 on counter (i, 0, 0, 0) with key (seed, 0), times 2^-24. */
static float philox_uniform(uint32_t seed, uint32_t i)
{
    uint32_t c[4] = {i, 0, 0, 0}, k0 = seed, k1 = 0;
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k1,
                         (uint32_t)p0};
        memcpy(c, n, sizeof c);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (float)(c[0] >> 8) * 0x1p-24f;
}

/* examples/dropout.tile: forward and backward exactly (one IEEE division each), with the mask the
 * host draws from the same stream; the backward pass takes the forward's output as dY, so the
 * two passes must drop the same elements. */
static void case_dropout(tilert_context *ctx, int n, float p)
{
    tilert_kernel *kf = kernel(ctx, "dropout_fwd"), *kb = kernel(ctx, "dropout_bwd");
    if (!kf || !kb)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "dropout N=%d p=%g", n, p);
    int32_t seed = (int32_t)(rng_next() & 0x7fffffff);
    float *x = malloc((size_t)n * 4 + 4);
    double *ref = malloc((size_t)n * 8 + 8), *ref2 = malloc((size_t)n * 8 + 8), *bound = calloc((size_t)n + 1, 8);
    CUdeviceptr dx, dy, dg;
    if (!x || !ref || !ref2 || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(x, (size_t)n, -1, 1);
    for (int i = 0; i < n; i++) {
        bool drop = philox_uniform((uint32_t)seed, (uint32_t)i) < p;
        float y = drop ? 0.0f : x[i] / (1.0f - p);
        ref[i] = y;
        ref2[i] = drop ? 0.0f : y / (1.0f - p);
    }
    if (!(dx = dev_input(x, (size_t)n)) || !(dy = dev_floats((size_t)n)) || !(dg = dev_floats((size_t)n))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dy), tilert_f32(p), tilert_i32(seed), tilert_i32(n)};
    tilert_arg b[] = {tilert_ptr(dy), tilert_ptr(dg), tilert_f32(p), tilert_i32(seed), tilert_i32(n)};
    if (launch(desc, kf, a, 5) && launch(desc, kb, b, 5)) {
        check_output(desc, dy, (size_t)n, ref, bound, 0);
        check_output(desc, dg, (size_t)n, ref2, bound, 0);
    }
done:
    free_case();
    free(x), free(ref), free(ref2), free(bound);
}

static void case_matmul(tilert_context *ctx, int m, int n, int kk, bool expect_refusal)
{
    tilert_kernel *k = kernel(ctx, "matmul_f32");
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "matmul_f32 M=%d N=%d K=%d%s", m, n, kk,
             expect_refusal ? " refused by assume" : "");
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    CUdeviceptr da, db, dc;
    if (!ha || !hb || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(ha, sa, -1, 1);
    rng_fill(hb, sb, -1, 1);
    if (!(da = dev_input(ha, sa)) || !(db = dev_input(hb, sb)) || !(dc = dev_floats(sc))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m),
                      tilert_i32(kk), tilert_i32(n)};
    if (expect_refusal) {
        refused(desc, k, a, 6);
        goto done;
    }
    ref_matmul_bound(ha, NULL, hb, NULL, ref, bound, m, n, kk, SUM_FMA);
    if (launch(desc, k, a, 6))
        check_output(desc, dc, sc, ref, bound, (size_t)n);
done:
    free_case();
    free(ha), free(hb), free(ref), free(bound);
}

static void case_sum(tilert_context *ctx, int n)
{
    tilert_kernel *k = kernel(ctx, "sum");
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "sum N=%d", n);
    float *x = malloc((size_t)n * 4 + 4);
    CUdeviceptr dx, dout;
    if (!x) {
        result(false, desc, "out of host memory");
        goto done;
    }
    /* Non-negative inputs: the sum does not cancel, so its bound is small against it. A term
       passes through the sum of its window of BLOCK, the STEPS additions of the loop and the
       blocks' atomic adds (examples/sum.tile: BLOCK = 4096, STEPS = 8). */
    rng_fill(x, (size_t)n, 0, 1);
    double blocks = ceil(n / (4096.0 * 8)), bound;
    double ref = ref_sum(x, (size_t)n, sum_depth(n, 4096, 8, blocks), &bound);
    /* out[0] accumulates (atomic_add): it starts at 0, its guard stays poisoned. */
    if (!(dx = dev_input(x, (size_t)n)) || !(dout = dev_floats(1)) || !gpu_fill32(dout, 0, 1)) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dout), tilert_i32(n)};
    if (launch(desc, k, a, 3))
        check_output(desc, dout, 1, &ref, &bound, 0);
done:
    free_case();
    free(x);
}

typedef enum { ROWSUM, SOFTMAX, LAYERNORM } RowKind;

static void case_rows(tilert_context *ctx, RowKind kind, int rows, int n, bool expect_refusal)
{
    static const char *names[] = {"rowsum", "softmax", "layernorm"};
    tilert_kernel *k = kernel(ctx, names[kind]);
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "%s R=%d N=%d%s", names[kind], rows, n,
             expect_refusal ? " refused by assume" : "");
    size_t sx = (size_t)rows * n, sy = kind == ROWSUM ? (size_t)rows : sx;
    float *x = malloc(sx * 4 + 4), *w = malloc((size_t)n * 4 + 4), *b = malloc((size_t)n * 4 + 4);
    double *ref = malloc(sy * 8 + 8), *bound = malloc(sy * 8 + 8);
    float eps = 1e-5f;
    CUdeviceptr dx, dy, dw = 0, db = 0;
    if (!x || !w || !b || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (kind == ROWSUM)
        rng_fill(x, sx, 0, 1);
    else
        rng_fill(x, sx, kind == SOFTMAX ? -4 : -2, kind == SOFTMAX ? 4 : 2);
    rng_fill(w, (size_t)n, 0.5f, 1.5f);
    rng_fill(b, (size_t)n, -1, 1);
    if (!(dx = dev_input(x, sx)) || !(dy = dev_floats(sy)) ||
        (kind == LAYERNORM && (!(dw = dev_input(w, (size_t)n)) || !(db = dev_input(b, (size_t)n))))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[7];
    int na;
    if (kind == LAYERNORM) {
        tilert_arg l[] = {tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(db), tilert_ptr(dy),
                          tilert_f32(eps), tilert_i32(rows), tilert_i32(n)};
        memcpy(a, l, sizeof l);
        na = 7;
    } else {
        tilert_arg l[] = {tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n)};
        memcpy(a, l, sizeof l);
        na = 4;
    }
    if (expect_refusal) {
        refused(desc, k, a, na);
        goto done;
    }
    /* rowsum's loop adds a window of BN = 2048 per step (examples/rowsum.tile) */
    if (kind == ROWSUM)
        ref_rowsum(x, ref, bound, rows, n, sum_depth(n, 2048, ceil(n / 2048.0), 0));
    else if (kind == SOFTMAX)
        ref_softmax(x, ref, bound, rows, n);
    else
        ref_layernorm(x, w, b, eps, ref, bound, rows, n);
    if (launch(desc, k, a, na))
        check_output(desc, dy, sy, ref, bound, kind == ROWSUM ? 0 : (size_t)n);
done:
    free_case();
    free(x), free(w), free(b), free(ref), free(bound);
}

/* ---------------------------------------------------------------- tensor-core matmuls */

/* 16-bit floats on the host: ref_util.h (round to nearest even, like the device). */
typedef enum { T_F16, T_BF16, T_TF32 } MmaType;

static bool half_bad(MmaType t, uint16_t h)   /* NaN or infinity: never a computed output here */
{
    return t == T_BF16 ? (h & 0x7f80) == 0x7f80 : (h & 0x7c00) == 0x7c00;
}

enum { HALF_POISON = 0x7fff7fff };   /* NaN as f16 and as bf16 */

/* n 16-bit elements plus the guard (2 * GUARD halves), poisoned. */
static CUdeviceptr dev_halves(size_t n)
{
    CUdeviceptr p;
    size_t words = (n + 1) / 2 + GUARD;
    if (nbufs == (int)(sizeof bufs / sizeof bufs[0]) || !gpu_alloc(&p, words * 4))
        return 0;
    bufs[nbufs++] = p;
    return gpu_fill32(p, HALF_POISON, words) ? p : 0;
}

/* Random inputs in [-1, 1]; for f16/bf16 rounded to the type, x keeps the rounded values (so the
 * double reference sees exactly what the GPU sees) and the 16-bit copy goes to the device. */
static CUdeviceptr mma_input(MmaType t, float *x, size_t n)
{
    rng_fill(x, n, -1, 1);
    if (t == T_TF32)
        return dev_input(x, n);
    uint16_t *h = malloc(n * 2 + 2);
    CUdeviceptr p = 0;
    if (!h)
        return 0;
    for (size_t i = 0; i < n; i++) {
        h[i] = t == T_F16 ? to_f16(x[i]) : to_bf16(x[i]);
        x[i] = t == T_F16 ? from_f16(h[i]) : from_bf16(h[i]);
    }
    if ((p = dev_halves(n)) && !gpu_upload(p, h, n * 2))
        p = 0;
    free(h);
    return p;
}

/* The 16-bit output against ref: unwritten (still NaN), guard, then every element within its
 * bound. */
static void check_halves(const char *desc, MmaType t, CUdeviceptr out, size_t n, const double *ref,
                         const double *bound, size_t cols)
{
    size_t halves = ((n + 1) / 2 + GUARD) * 2;
    uint16_t *h = malloc(halves * 2);
    float *x = malloc(n * 4 + 4);
    if (!h || !x || !gpu_download(h, out, halves * 2)) {
        result(false, desc, "cannot read the output back");
        goto done;
    }
    size_t nan = 0, first = 0, oob = 0;
    for (size_t i = 0; i < n; i++) {
        if (half_bad(t, h[i]) && !nan++)
            first = i;
        x[i] = t == T_F16 ? from_f16(h[i]) : from_bf16(h[i]);
    }
    for (size_t i = n; i < halves; i++)
        oob += h[i] != 0x7fff;
    BoundCheck c = check_bounds(x, ref, bound, n);
    char text[256];
    bound_text(text, sizeof text, &c, x, ref, bound, cols);
    if (nan)
        result(false, desc, "%zu of %zu outputs NaN or never written (first at %zu)", nan, n, first);
    else if (oob)
        result(false, desc, "%zu halves written past the end of the output", oob);
    else
        result(c.bad == 0, desc, "%s", text);
done:
    free(h);
    free(x);
}

/* The reference and bound of a tensor-core product (docs/language.md, "Accuracy"). f16 and bf16
 * operands are exact in the reference (it reads the rounded values): the bound is the f32
 * accumulation's, then the rounding of C to 16 bits. tf32 operands are the inputs rounded to
 * nearest (tf32_operand: exactly, but for ties, which the instruction paths break differently):
 * the bound is the accumulation's plus the ties' spread, which is tight enough to catch a kernel
 * that skips the rounding of a small product. */
static void mma_reference(MmaType t, const float *ha, const float *hb, const float *hbias, bool relu,
                          double *ref, double *bound, int m, int n, int kk)
{
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    if (t == T_TF32) {
        float *am = malloc(sa * 4 + 4), *ar = malloc(sa * 4 + 4), *bm = malloc(sb * 4 + 4), *br = malloc(sb * 4 + 4);
        if (am && ar && bm && br) {
            for (size_t i = 0; i < sa; i++)
                tf32_operand(ha[i], &am[i], &ar[i]);
            for (size_t i = 0; i < sb; i++)
                tf32_operand(hb[i], &bm[i], &br[i]);
            ref_matmul_bound(am, ar, bm, br, ref, bound, m, n, kk, SUM_TENSOR);
        } else {                          /* no bound: every element fails, saying so */
            for (size_t i = 0; i < sc; i++)
                ref[i] = 0, bound[i] = -1;
        }
        free(am), free(ar), free(bm), free(br);
        return;
    }
    ref_matmul_bound(ha, NULL, hb, NULL, ref, bound, m, n, kk, SUM_TENSOR);
    if (hbias) {                          /* f16(acc + f32(bias)), with relu: f16(max(..., 0)) */
        bound_affine(ref, bound, (size_t)m, (size_t)n, 1, hbias);
        if (relu)
            bound_relu(ref, sc);
    }
    if (t == T_F16)
        bound_store(ref, bound, sc, U_F16, 0x1p-25);
    else
        bound_store(ref, bound, sc, U_BF16, 0x1p-134);
}

/* x (n rows of k, as a B stored [N, K] holds them) in place as the k x n matrix it is the
 * transpose of, for the reference. */
static bool transpose_b(float *x, int k, int n)
{
    size_t sz = (size_t)k * n;
    float *t = malloc(sz * 4 + 4);
    if (!t)
        return false;
    memcpy(t, x, sz * 4);
    for (int r = 0; r < k; r++)
        for (int c = 0; c < n; c++)
            x[(size_t)r * n + c] = t[(size_t)c * k + r];
    free(t);
    return true;
}

/* matmul_f16 / matmul_bf16 / matmul_tf32, and gemm_bias_relu (f16) when bias is set; linear
 * (B stored [N, K]: bt) with bias. */
static void case_mma_bt(tilert_context *ctx, const char *name, MmaType t, bool bias, bool bt, int m, int n,
                        int kk, bool expect_refusal);
static void case_mma(tilert_context *ctx, const char *name, MmaType t, bool bias, int m, int n, int kk,
                     bool expect_refusal)
{
    case_mma_bt(ctx, name, t, bias, false, m, n, kk, expect_refusal);
}

static void case_mma_bt(tilert_context *ctx, const char *name, MmaType t, bool bias, bool bt, int m, int n,
                        int kk, bool expect_refusal)
{
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[128];
    snprintf(desc, sizeof desc, "%s M=%d N=%d K=%d%s", name, m, n, kk, expect_refusal ? " refused by assume" : "");
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4), *hbias = malloc((size_t)n * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    CUdeviceptr da, db, dbias = 0, dc;
    if (!ha || !hb || !hbias || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(da = mma_input(t, ha, sa)) || !(db = mma_input(t, hb, sb)) || (bt && !transpose_b(hb, kk, n)) ||
        (bias && !(dbias = mma_input(t, hbias, (size_t)n))) ||
        !(dc = t == T_TF32 ? dev_floats(sc) : dev_halves(sc))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[7];
    int na = 0;
    a[na++] = tilert_ptr(da);
    a[na++] = tilert_ptr(db);
    if (bias)
        a[na++] = tilert_ptr(dbias);
    a[na++] = tilert_ptr(dc);
    a[na++] = tilert_i32(m);
    a[na++] = tilert_i32(kk);
    a[na++] = tilert_i32(n);
    if (expect_refusal) {
        refused(desc, k, a, na);
        goto done;
    }
    mma_reference(t, ha, hb, bias ? hbias : NULL, !bt, ref, bound, m, n, kk);
    if (!launch(desc, k, a, na))
        goto done;
    if (t == T_TF32)
        check_output(desc, dc, sc, ref, bound, (size_t)n);
    else
        check_halves(desc, t, dc, sc, ref, bound, (size_t)n);
done:
    free_case();
    free(ha), free(hb), free(hbias), free(ref), free(bound);
}

/* examples/matmul_splitk.tile: C (f32, zeroed; its guard poisoned) += A @ B, each tile's K loop
 * cut into slices whose blocks add their partial sums atomically: any order of the adds is
 * within the product's bound (sum_rel_bound counts two roundings a term). K small enough that
 * some slices are empty (they add zeros), and not a multiple of the slice. */
static void case_splitk(tilert_context *ctx, int m, int n, int kk)
{
    tilert_kernel *k = kernel(ctx, "matmul_splitk");
    if (!k)
        return;
    char desc[128];
    snprintf(desc, sizeof desc, "matmul_splitk M=%d N=%d K=%d", m, n, kk);
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    CUdeviceptr da, db, dc;
    if (!ha || !hb || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(da = mma_input(T_F16, ha, sa)) || !(db = mma_input(T_F16, hb, sb)) || !(dc = dev_floats(sc)) ||
        !gpu_fill32(dc, 0, sc)) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    ref_matmul_bound(ha, NULL, hb, NULL, ref, bound, m, n, kk, SUM_TENSOR);
    if (launch(desc, k, a, 6))
        check_output(desc, dc, sc, ref, bound, (size_t)n);
done:
    free_case();
    free(ha), free(hb), free(ref), free(bound);
}

static void cases_splitk(tilert_context *ctx)
{
    static const int mnk[][3] = {{1, 8, 8}, {16, 136, 264}, {7, 104, 1000}, {129, 264, 520}, {100, 8, 72}};
    for (size_t i = 0; i < COUNT(mnk); i++)
        if (!test_small() || i < 2)
            case_splitk(ctx, mnk[i][0], mnk[i][1], mnk[i][2]);
}

/* examples/bmm.tile. bmm: C[b] = A[b] @ B[b] over [nb, m, k] and [nb, k, n] f16 tensors, f16 out.
 * scores: S[b, h] = scale * Q[b, h] @ K[b, h]^T over [nb, nh, m, k] f16 tensors (n = m: T), f32
 * out, scale a power of two (exact). Each batch entry is its own product in the reference. */
static void case_batched(tilert_context *ctx, bool scores, int nb, int nh, int m, int n, int kk, bool expect_refusal)
{
    const char *name = scores ? "scores" : "bmm";
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    if (scores)
        n = m;
    int batch = nb * nh;
    char desc[128];
    snprintf(desc, sizeof desc, "%s Bt=%d%s%.0d M=%d N=%d K=%d%s", name, nb, scores ? " H=" : "", scores ? nh : 0, m,
             n, kk, expect_refusal ? " refused by assume" : "");
    size_t sa = (size_t)batch * m * kk, sb = (size_t)batch * kk * n, sc = (size_t)batch * m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    const float scale = 0.125f;
    CUdeviceptr da, db, dc;
    if (!ha || !hb || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(da = mma_input(T_F16, ha, sa)) || !(db = mma_input(T_F16, hb, sb)) ||
        !(dc = scores ? dev_floats(sc) : dev_halves(sc))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[8];
    int na = 0;
    a[na++] = tilert_ptr(da);
    a[na++] = tilert_ptr(db);
    a[na++] = tilert_ptr(dc);
    if (scores) {
        a[na++] = tilert_f32(scale);
        a[na++] = tilert_i32(nb);
        a[na++] = tilert_i32(nh);
        a[na++] = tilert_i32(m);
        a[na++] = tilert_i32(kk);
    } else {
        a[na++] = tilert_i32(nb);
        a[na++] = tilert_i32(m);
        a[na++] = tilert_i32(kk);
        a[na++] = tilert_i32(n);
    }
    if (expect_refusal) {
        refused(desc, k, a, na);
        goto done;
    }
    for (int b = 0; b < batch; b++) {
        float *bb = hb + (size_t)b * kk * n;
        double *r = ref + (size_t)b * m * n, *bd = bound + (size_t)b * m * n;
        if (scores && !transpose_b(bb, kk, n)) {     /* K[b, h] is stored [T, D]: B = its transpose */
            result(false, desc, "out of host memory");
            goto done;
        }
        ref_matmul_bound(ha + (size_t)b * m * kk, NULL, bb, NULL, r, bd, m, n, kk, SUM_TENSOR);
        if (scores)
            bound_affine(r, bd, (size_t)m, (size_t)n, scale, NULL);
        else
            bound_store(r, bd, (size_t)m * n, U_F16, 0x1p-25);
    }
    if (!launch(desc, k, a, na))
        goto done;
    if (scores)
        check_output(desc, dc, sc, ref, bound, (size_t)n);
    else
        check_halves(desc, T_F16, dc, sc, ref, bound, (size_t)n);
done:
    free_case();
    free(ha), free(hb), free(ref), free(bound);
}

static void cases_batched(tilert_context *ctx)
{
    /* bmm: N and K multiples of 8 (assumed), M anything; several batch entries, tiles not full */
    static const int bmm[][4] = {{1, 1, 8, 8}, {3, 100, 136, 72}, {2, 129, 256, 200}, {4, 128, 128, 64}};
    /* scores: D a multiple of 8, T anything (S is T x T) */
    static const int sc[][4] = {{1, 1, 1, 8}, {2, 3, 100, 64}, {1, 2, 129, 128}, {2, 2, 130, 40}};
    size_t nbmm = test_small() ? 2 : COUNT(bmm), nsc = test_small() ? 2 : COUNT(sc);
    for (size_t i = 0; i < nbmm; i++)
        case_batched(ctx, false, bmm[i][0], 1, bmm[i][1], bmm[i][2], bmm[i][3], false);
    for (size_t i = 0; i < nsc; i++)
        case_batched(ctx, true, sc[i][0], sc[i][1], sc[i][2], 0, sc[i][3], false);
    case_batched(ctx, false, 2, 1, 64, 64, 60, true);
    case_batched(ctx, true, 1, 2, 64, 0, 60, true);
}


/* examples/lse_bwd.tile: DX[b, c, p] = sum_o GO[b, o, p] exp2(W[o, c] X[b, c, p] + Bi[o, c] -
 * O[b, o, p]) W[o, c] over nb images of hh x iw pixels, co output channels and ci channels (the
 * unfolded input's), or with patches ci image channels whose 9 taps (3 x 3, padding 1) are the
 * product's channels, DX added into (from zero) at the pixels the taps read.
 * Bound of one term t = g exp2(a) w, a = w x + bi - o: a is off by at most 3 roundings of the
 * magnitudes it is made of (A = |w x| + |bi| + |o|), exp2 by 2 ulp, the two products by one
 * rounding each: |t| (ln 2 3 u A + 2^-22 + 2 u (1 + u)) with u = 2^-24; the sum of the n terms
 * of an element (co, or co x taps) in any order: gamma(n + 9) sum |t|, the 9 for the adds of
 * the taps' partial sums. */
static void case_lse(tilert_context *ctx, bool patches, int nb, int co, int ci, int hh, int iw, bool expect_refusal)
{
    const char *name = patches ? "lse_bwd_conv" : "lse_bwd";
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[128];
    snprintf(desc, sizeof desc, "%s B=%d CO=%d CI=%d HW=%dx%d%s", name, nb, co, ci, hh, iw,
             expect_refusal ? " refused by assume" : "");
    int hw = hh * iw, pc = patches ? ci * 9 : ci;          /* product channels */
    size_t no = (size_t)nb * co * hw, nx = (size_t)nb * ci * hw, nw = (size_t)co * pc;
    float *go = malloc(no * 4 + 4), *o = malloc(no * 4 + 4), *x = malloc(nx * 4 + 4);
    float *w = malloc(nw * 4 + 4), *bi = malloc(nw * 4 + 4), *zero = calloc(nx + 1, 4);
    double *ref = calloc(nx + 1, 8), *mag = calloc(nx + 1, 8), *err = calloc(nx + 1, 8);
    CUdeviceptr dgo, dout, dxin, dw, dbi, ddx;
    const double u = 0x1p-24;
    if (!go || !o || !x || !w || !bi || !zero || !ref || !mag || !err) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(go, no, -1, 1);
    rng_fill(o, no, 0, 2);
    rng_fill(x, nx, -1, 1);
    rng_fill(w, nw, -1, 1);
    rng_fill(bi, nw, -1, 1);
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < pc; c++)
            for (int p = 0; p < hw; p++) {
                /* the input element this product channel reads at position p, if any */
                int ch = c, q = p;
                if (patches) {
                    int tap = c % 9, h = p / iw + tap / 3 - 1, ww = p % iw + tap % 3 - 1;
                    if (h < 0 || h >= hh || ww < 0 || ww >= iw)
                        continue;
                    ch = c / 9;
                    q = h * iw + ww;
                }
                size_t e = ((size_t)b * ci + ch) * hw + q;
                for (int oc = 0; oc < co; oc++) {
                    size_t oi = ((size_t)b * co + oc) * hw + p;
                    double wv = w[(size_t)oc * pc + c], bv = bi[(size_t)oc * pc + c];
                    double a = wv * x[e] + bv - o[oi], t = go[oi] * exp2(a) * wv;
                    double A = fabs(wv * x[e]) + fabs(bv) + fabs(o[oi]);
                    ref[e] += t;
                    mag[e] += fabs(t);
                    err[e] += fabs(t) * (log(2) * 3 * u * A + 0x1p-22 + 2 * u * (1 + u));
                }
            }
    /* the terms' own errors, then the sum's roundings of the computed terms */
    for (size_t e = 0; e < nx; e++)
        err[e] += gamma_n((double)co * (patches ? 9 : 1) + 9, u) * (mag[e] + err[e]);
    if (!(dgo = dev_input(go, no)) || !(dout = dev_input(o, no)) || !(dxin = dev_input(x, nx)) ||
        !(dw = dev_input(w, nw)) || !(dbi = dev_input(bi, nw)) ||
        !(ddx = patches ? dev_input(zero, nx) : dev_floats(nx))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[12];
    int na = 0;
    a[na++] = tilert_ptr(dgo);
    a[na++] = tilert_ptr(dout);
    a[na++] = tilert_ptr(dxin);
    a[na++] = tilert_ptr(dw);
    a[na++] = tilert_ptr(dbi);
    a[na++] = tilert_ptr(ddx);
    if (patches)
        a[na++] = tilert_i32(iw);
    a[na++] = tilert_i32(nb);
    a[na++] = tilert_i32(co);
    a[na++] = tilert_i32(hw);
    a[na++] = tilert_i32(ci);
    if (expect_refusal)
        refused(desc, k, a, na);
    else if (launch(desc, k, a, na))
        check_output(desc, ddx, nx, ref, err, (size_t)hw);
done:
    free_case();
    free(go), free(o), free(x), free(w), free(bi), free(zero), free(ref), free(mag), free(err);
}

/* Sizes off the 64 x 64 tile in every direction (B, CO, CI, H, W): a few pixels, images narrower
 * and wider than a tile's 64 positions, channels below and across a tile, output channels not a
 * multiple of anything; the kernels assume HW % 4 == 0 (and lse_bwd CI % 4 == 0). */
static void cases_lse(tilert_context *ctx)
{
    static const int c[][5] = {{1, 1, 4, 2, 2}, {2, 7, 72, 10, 10}, {3, 5, 132, 4, 33}, {1, 16, 64, 16, 16}};
    static const int conv[][5] = {{1, 1, 1, 2, 2}, {2, 7, 8, 10, 10}, {2, 3, 15, 4, 31}, {1, 16, 7, 16, 16}};
    size_t n = test_small() ? 2 : COUNT(c);
    for (size_t i = 0; i < n; i++)
        case_lse(ctx, false, c[i][0], c[i][1], c[i][2], c[i][3], c[i][4], false);
    for (size_t i = 0; i < n; i++)
        case_lse(ctx, true, conv[i][0], conv[i][1], conv[i][2], conv[i][3], conv[i][4], false);
    case_lse(ctx, false, 1, 2, 6, 2, 2, true);
    case_lse(ctx, true, 1, 2, 3, 5, 5, true);
}

/* tf32's rounding of finite f32 (docs/language.md): to nearest, ties to even on wgmma (sm_90a),
 * ties away from zero on mma.sync. */
static uint32_t tf32_rne(uint32_t bits) { return (bits + 0xfff + (bits >> 13 & 1)) & ~0x1fffu; }
static uint32_t tf32_rna(uint32_t bits) { return (bits + 0x1000) & ~0x1fffu; }

/* Does the example's PTX compute its product with wgmma? */
static bool ptx_has_wgmma(const char *name)
{
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/%s.ptx", ex_dir, name);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, "wgmma.mma_async") != NULL;
    if (f)
        fclose(f);
    return found;
}

static bool is_nan_bits(uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; }

/* Values whose low 13 bits sit below, at and above half a tf32 unit, with tf32 units both even and
 * odd and mantissas that carry into the exponent. */
static void tf32_rounding_values(float *x, int n)
{
    static const uint32_t low[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff};
    static const uint32_t high[] = {0, 0x155, 0x3ff};
    for (int i = 0; i < n; i++) {
        uint32_t sign = (uint32_t)(rng_next() & 1) << 31, e = 124 + (uint32_t)(i % 7);
        uint32_t bits = sign | e << 23 | high[i / 6 % 3] << 13 | low[i % 6];
        memcpy(&x[i], &bits, 4);
    }
}

static void identity(float *x, int n)
{
    for (int i = 0; i < n * n; i++)
        x[i] = i / n == i % n ? 1.0f : 0.0f;
}

/* The tf32 product bit for bit, one operand the identity, so C is the other operand rounded.
 * side 0: A (M x K) holds the values, B = I; side 1: A = I, B (K x N) holds them. A few NaNs
 * (the canonical 0x7fffffff, negative ones, quiet and signalling, and ones whose mantissa would
 * carry into the sign bit if rounded carelessly) go in as well: one in A poisons its row of C
 * (NaN * 0 is NaN), one in B its column. mma.sync keeps fewer (docs/language.md): there a NaN
 * whose payload lies only in the 13 dropped bits reads as infinity, so C holds that infinity where
 * the NaN meets the identity's one, and the NaNs whose top 11 mantissa bits are all set read as
 * zeros and are left out. K spans k tiles, so the fragments loaded across the pipelined loop's
 * iterations are checked too. */
static void tf32_rounding_side(tilert_context *ctx, int side)
{
    static const uint32_t nans[] = {0x7fffffff, 0xffffffff, 0x7fc00000, 0x7f800001, 0xffffe001, 0x7ffff000};
    enum { K = 96, N = 96, NNAN = sizeof nans / sizeof nans[0] };
    const int M = side ? K : 40;
    tilert_kernel *k = kernel(ctx, "matmul_tf32");
    if (!k)
        return;
    bool even = ptx_has_wgmma("matmul_tf32");
    char desc[160];
    snprintf(desc, sizeof desc, "matmul_tf32 rounding of %s (%s: to nearest, ties %s; NaNs stay)", side ? "B" : "A",
             even ? "wgmma" : "mma.sync", even ? "to even" : "away");
    static float ha[K * K], hb[K * N];
    static uint32_t want[K * N], got[K * N];
    float *vals = side ? hb : ha;
    int rows = side ? K : M, cols = side ? N : K;
    tf32_rounding_values(vals, rows * cols);
    identity(side ? ha : hb, K);
    /* the NaNs: in A at row 7 j + 3, in B at column 13 j + 5 */
    int poisoned[NNAN], at[NNAN];
    for (int j = 0; j < NNAN; j++) {
        poisoned[j] = at[j] = -1;
        if (!even && (nans[j] & 0x007ff000u) == 0x007ff000u)
            continue;
        int r = side ? (int)(rng_next() % K) : 7 * j + 3, c = side ? 13 * j + 5 : (int)(rng_next() % K);
        memcpy(&vals[r * cols + c], &nans[j], 4);
        poisoned[j] = side ? c : r;
        at[j] = r * cols + c;
    }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            uint32_t bits;
            memcpy(&bits, &vals[m * cols + n], 4);
            want[m * N + n] = even ? tf32_rne(bits) : tf32_rna(bits);
            for (int j = 0; j < NNAN; j++)
                if (poisoned[j] == (side ? n : m))
                    want[m * N + n] = 0x7fffffff;     /* any NaN */
        }
    /* the tensor cores see an infinity where C is that value times one (C's rows are N = cols
       wide, so the NaN's index in the values is its index in C) */
    for (int j = 0; j < NNAN && !even; j++)
        if (at[j] >= 0 && (nans[j] & 0x007fe000u) == 0)
            want[at[j]] = nans[j] & 0xff800000u;
    CUdeviceptr da = dev_input(ha, (size_t)M * K), db = dev_input(hb, K * N), dc = dev_floats((size_t)M * N);
    if (!da || !db || !dc) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(M), tilert_i32(K), tilert_i32(N)};
    if (!launch(desc, k, a, 6))
        goto done;
    if (!gpu_download(got, dc, sizeof(uint32_t) * (size_t)M * N)) {
        result(false, desc, "cannot read the output back");
        goto done;
    }
    int nan_outputs = 0;
    for (int i = 0; i < M * N; i++) {
        bool nan_wanted = is_nan_bits(want[i]);
        nan_outputs += nan_wanted;
        if (nan_wanted ? !is_nan_bits(got[i]) : got[i] != want[i]) {
            uint32_t in;
            memcpy(&in, &vals[i / N * cols + i % N], 4);
            result(false, desc, "C[%d][%d] = 0x%08x, want %s0x%08x (%s = 0x%08x)", i / N, i % N, got[i],
                   nan_wanted ? "a NaN, like " : "", want[i], side ? "B" : "A", in);
            goto done;
        }
    }
    result(true, desc, "%d outputs exact, %d NaN", M * N - nan_outputs, nan_outputs);
done:
    free_case();
}

static void case_tf32_rounding(tilert_context *ctx)
{
    tf32_rounding_side(ctx, 0);
    tf32_rounding_side(ctx, 1);
}

static void cases_mma(tilert_context *ctx)
{
    /* M anything; N and K multiples of 8 (f16, bf16: the kernels assume it) or 4 (tf32) */
    static const int m_sizes[] = {1, 7, 100, 128, 129, 257};
    static const int nk16[][2] = {{8, 8}, {104, 128}, {128, 104}, {136, 264}, {256, 256}, {264, 40}};
    static const int nk32[][2] = {{4, 4}, {100, 100}, {128, 128}, {100, 4}, {4, 132}, {260, 256}};
    /* bt: B stored [N, K] (linear: Y = X W^T + bias, no relu, N need not be a multiple of 8) */
    static const struct { const char *name; MmaType t; bool bias, bt; } ks[] = {
        {"matmul_f16", T_F16, false, false}, {"matmul_bf16", T_BF16, false, false},
        {"gemm_bias_relu", T_F16, true, false}, {"matmul_tf32", T_TF32, false, false},
        {"linear", T_F16, true, true}, {"linear_bf16", T_BF16, true, true},
    };
    /* small: M N K smaller than the tile, a tile multiple over two k steps, and neither over five
       (more than the three stages: the pipeline goes round) */
    static const int small16[][3] = {{7, 8, 8}, {128, 256, 128}, {100, 136, 264}};
    static const int small32[][3] = {{7, 4, 4}, {256, 128, 64}, {100, 100, 132}};
    for (size_t e = 0; e < sizeof ks / sizeof ks[0]; e++) {
        for (size_t i = 0; test_small() && i < COUNT(small16); i++) {
            const int *mnk = ks[e].t == T_TF32 ? small32[i] : small16[i];
            case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, ks[e].bt, mnk[0], mnk[1], mnk[2], false);
        }
        for (size_t i = 0; !test_small() && i < sizeof m_sizes / sizeof m_sizes[0]; i++)
            for (size_t j = 0; j < 6; j++) {
                const int *nk = ks[e].t == T_TF32 ? nk32[j] : nk16[j];
                case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, ks[e].bt, m_sizes[i], nk[0], nk[1], false);
            }
        case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, ks[e].bt, 128, 128, ks[e].t == T_TF32 ? 7 : 100, true);
        if (ks[e].bt) {    /* any N: 12 runs, and odd ones (the epilogue's element stores) */
            case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, true, 129, 12, 128, false);
            case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, true, 129, 13, 128, false);
            if (!test_small())
                case_mma_bt(ctx, ks[e].name, ks[e].t, ks[e].bias, true, 300, 261, 72, false);
        }
        else
            case_mma(ctx, ks[e].name, ks[e].t, ks[e].bias, 129, ks[e].t == T_TF32 ? 6 : 12, 128, true);
    }
}

/* The tensor-core examples at other tile shapes (tests/gpu/mma_shapes.mk builds them into
 * DIR/mma_shapes/SHAPE/NAME.ptx): each shape lays its shared tiles out differently, so each
 * runs a few sizes that are not tile multiples (small: one). A DIR without shapes runs none. */
static int name_order(const void *a, const void *b) { return strcmp(a, b); }

static void cases_mma_shapes(tilert_context *ctx)
{
    static const int m_sizes[] = {1, 100, 257};
    static const int nk16[][2] = {{8, 8}, {136, 264}, {264, 40}};
    static const int nk4[][2] = {{4, 4}, {100, 100}, {4, 132}};   /* tf32, and f16 without the assumes */
    static const struct { const char *name; MmaType t; } ks[] = {
        {"matmul_f16", T_F16}, {"matmul_bf16", T_BF16}, {"matmul_tf32", T_TF32},
    };
    const char *saved = ex_dir;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/mma_shapes", saved);
    DIR *d = opendir(dir);
    if (!d)
        return;
    static char names[64][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;)
        if (e->d_name[0] != '.' && strlen(e->d_name) < sizeof names[0])
            strcpy(names[n++], e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], name_order);
    for (int i = 0; i < n; i++) {
        char shape_dir[sizeof dir + sizeof names[0] + 2];
        snprintf(shape_dir, sizeof shape_dir, "%s/%.255s", dir, names[i]);
        ex_dir = shape_dir;
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            char path[sizeof shape_dir + 64];
            snprintf(path, sizeof path, "%s/%s.ptx", shape_dir, ks[j].name);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            fclose(f);
            Example *ex = NULL;
            for (size_t x = 0; x < sizeof examples / sizeof examples[0]; x++)
                if (!strcmp(examples[x].name, ks[j].name))
                    ex = &examples[x];
            if (ex->mod)
                tilert_unload(ex->mod);
            ex->mod = NULL, ex->k = NULL, ex->tried = false;
            bool any = !strcmp(names[i], "anyk");
            printf("shape %s: %s\n", names[i], path);
            for (size_t a = 0; a < sizeof m_sizes / sizeof m_sizes[0]; a++)
                for (size_t b = 0; b < 3; b++) {
                    if (test_small() && (a != 1 || b != 1))
                        continue;
                    const int *nk = ks[j].t == T_TF32 || any ? nk4[b] : nk16[b];
                    case_mma(ctx, ks[j].name, ks[j].t, false, m_sizes[a], nk[0], nk[1], false);
                }
        }
    }
    ex_dir = saved;
}

/* examples/gemv.tile: y = W x, W [n, k] and x in f16 or bf16 (rounded on the host, so the
 * reference sees what the GPU reads), y in f32. Products of 16-bit values are exact in f32; the
 * sum is in any order (the per-thread partials, then the block's). */
static void case_gemv(tilert_context *ctx, bool bf, int n, int kk, bool expect_refusal)
{
    const char *name = bf ? "gemv_bf16" : "gemv";
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "%s N=%d K=%d%s", name, n, kk, expect_refusal ? " refused by assume" : "");
    MmaType t = bf ? T_BF16 : T_F16;
    size_t sw = (size_t)n * kk;
    float *hw = malloc(sw * 4 + 4), *hx = malloc((size_t)kk * 4 + 4);
    double *ref = malloc((size_t)n * 8 + 8), *bound = malloc((size_t)n * 8 + 8);
    CUdeviceptr dw, dx, dy;
    if (!hw || !hx || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(dw = mma_input(t, hw, sw)) || !(dx = mma_input(t, hx, (size_t)kk)) || !(dy = dev_floats((size_t)n))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dw), tilert_ptr(dx), tilert_ptr(dy), tilert_i32(n), tilert_i32(kk)};
    if (expect_refusal) {
        refused(desc, k, a, 5);
        goto done;
    }
    ref_matmul_bound(hw, NULL, hx, NULL, ref, bound, n, 1, kk, SUM_FMA);
    if (launch(desc, k, a, 5))
        check_output(desc, dy, (size_t)n, ref, bound, 0);
done:
    free_case();
    free(hw), free(hx), free(ref), free(bound);
}

/* examples/rmsnorm.tile: rmsnorm in f32; rmsnorm_f16 reads and writes f16 (the statistics in
 * f32), its output bound widened by the store's rounding. */
static void case_rmsnorm(tilert_context *ctx, bool half, int rows, int n, bool expect_refusal)
{
    const char *name = half ? "rmsnorm_f16" : "rmsnorm";
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "%s R=%d N=%d%s", name, rows, n, expect_refusal ? " refused by assume" : "");
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *w = malloc((size_t)n * 4 + 4);
    double *ref = malloc(sx * 8 + 8), *bound = malloc(sx * 8 + 8);
    float eps = 1e-5f;
    CUdeviceptr dx, dw, dy;
    if (!x || !w || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (half) {
        if (!(dx = mma_input(T_F16, x, sx)) || !(dw = mma_input(T_F16, w, (size_t)n)) || !(dy = dev_halves(sx))) {
            result(false, desc, "device memory setup failed");
            goto done;
        }
    } else {
        rng_fill(x, sx, -2, 2);
        rng_fill(w, (size_t)n, 0.5f, 1.5f);
        if (!(dx = dev_input(x, sx)) || !(dw = dev_input(w, (size_t)n)) || !(dy = dev_floats(sx))) {
            result(false, desc, "device memory setup failed");
            goto done;
        }
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(dy), tilert_f32(eps), tilert_i32(rows), tilert_i32(n)};
    if (expect_refusal) {
        refused(desc, k, a, 6);
        goto done;
    }
    ref_rmsnorm(x, w, eps, ref, bound, rows, n);
    if (!launch(desc, k, a, 6))
        goto done;
    if (half) {
        bound_store(ref, bound, sx, U_F16, 0x1p-25);
        check_halves(desc, T_F16, dy, sx, ref, bound, (size_t)n);
    } else
        check_output(desc, dy, sx, ref, bound, (size_t)n);
done:
    free_case();
    free(x), free(w), free(ref), free(bound);
}

/* examples/colsum.tile: Y[c] += sum of column c. Y starts at zero (its guard poisoned), so a
 * column never added to stays 0, far outside the bound of a sum of positive terms. Each column
 * is a sum in which the program fixes part of the order (docs/language.md, "Builtin functions"):
 * windows of BR = 32 rows, at most RB / BR = 16 steps a block, one atomic per block of RB = 512
 * rows. */
static void case_colsum(tilert_context *ctx, int rows, int n, bool expect_refusal)
{
    tilert_kernel *k = kernel(ctx, "colsum");
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "colsum R=%d N=%d%s", rows, n, expect_refusal ? " refused by assume" : "");
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *xt = malloc(sx * 4 + 4);
    double *ref = malloc((size_t)n * 8 + 8), *bound = malloc((size_t)n * 8 + 8);
    CUdeviceptr dx, dy;
    if (!x || !xt || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(x, sx, 0, 1);
    if (!(dx = dev_input(x, sx)) || !(dy = dev_floats((size_t)n)) || !gpu_fill32(dy, 0, (size_t)n)) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dy), tilert_i32(rows), tilert_i32(n)};
    if (expect_refusal) {
        refused(desc, k, a, 4);
        goto done;
    }
    for (int r = 0; r < rows; r++)         /* the columns as rows, for ref_rowsum */
        for (int c = 0; c < n; c++)
            xt[(size_t)c * rows + r] = x[(size_t)r * n + c];
    double steps = ceil((rows < 512 ? rows : 512) / 32.0), blocks = ceil(rows / 512.0);
    ref_rowsum(xt, ref, bound, n, rows, sum_depth(rows, 32, steps, blocks));
    if (launch(desc, k, a, 4))
        check_output(desc, dy, (size_t)n, ref, bound, 0);
done:
    free_case();
    free(x), free(xt), free(ref), free(bound);
}

/* examples/layernorm_stats.tile: Y as layernorm's, and the Mean and Rstd it computes on the way,
 * each within its own bound (ref_util.c). */
static void case_layernorm_stats(tilert_context *ctx, int rows, int n, bool expect_refusal)
{
    tilert_kernel *k = kernel(ctx, "layernorm_stats");
    if (!k)
        return;
    char desc[96], what[128];
    snprintf(desc, sizeof desc, "layernorm_stats R=%d N=%d%s", rows, n, expect_refusal ? " refused by assume" : "");
    size_t sx = (size_t)rows * n;
    float *x = malloc(sx * 4 + 4), *w = malloc((size_t)n * 4 + 4), *b = malloc((size_t)n * 4 + 4);
    double *ref = malloc(sx * 8 + 8), *bound = malloc(sx * 8 + 8);
    double *mean = malloc((size_t)rows * 8 + 8), *mean_b = malloc((size_t)rows * 8 + 8);
    double *rstd = malloc((size_t)rows * 8 + 8), *rstd_b = malloc((size_t)rows * 8 + 8);
    float eps = 1e-5f;
    CUdeviceptr dx, dw, db, dy, dm, dr;
    if (!x || !w || !b || !ref || !bound || !mean || !mean_b || !rstd || !rstd_b) {
        result(false, desc, "out of host memory");
        goto done;
    }
    rng_fill(x, sx, -2, 2);
    rng_fill(w, (size_t)n, 0.5f, 1.5f);
    rng_fill(b, (size_t)n, -1, 1);
    if (!(dx = dev_input(x, sx)) || !(dw = dev_input(w, (size_t)n)) || !(db = dev_input(b, (size_t)n)) ||
        !(dy = dev_floats(sx)) || !(dm = dev_floats((size_t)rows)) || !(dr = dev_floats((size_t)rows))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(db), tilert_ptr(dy), tilert_ptr(dm),
                      tilert_ptr(dr), tilert_f32(eps), tilert_i32(rows), tilert_i32(n)};
    if (expect_refusal) {
        refused(desc, k, a, 9);
        goto done;
    }
    ref_layernorm(x, w, b, eps, ref, bound, rows, n);
    ref_layernorm_stats(x, eps, mean, mean_b, rstd, rstd_b, rows, n);
    if (!launch(desc, k, a, 9))
        goto done;
    snprintf(what, sizeof what, "%s Y", desc);
    check_output(what, dy, sx, ref, bound, (size_t)n);
    snprintf(what, sizeof what, "%s Mean", desc);
    check_output(what, dm, (size_t)rows, mean, mean_b, 0);
    snprintf(what, sizeof what, "%s Rstd", desc);
    check_output(what, dr, (size_t)rows, rstd, rstd_b, 0);
done:
    free_case();
    free(x), free(w), free(b), free(ref), free(bound), free(mean), free(mean_b), free(rstd), free(rstd_b);
}

/* examples/gemv.tile's gemv_batch: Y = X W^T, X [batch, k] and W [n, k] in f16 or bf16 (rounded
 * on the host, so the reference sees what the GPU reads), Y [batch, n] in f32, on the tensor
 * cores: the products are exact and their accumulation within gamma(2K, 2^-23) of sum |x||w|
 * (docs/language.md, "Accuracy"). Batches past 16 take more than one block along grid y. */
static void case_gemv_batch(tilert_context *ctx, bool bf, int batch, int n, int kk, bool expect_refusal)
{
    const char *name = bf ? "gemv_batch_bf16" : "gemv_batch";
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[96];
    snprintf(desc, sizeof desc, "%s B=%d N=%d K=%d%s", name, batch, n, kk, expect_refusal ? " refused by assume" : "");
    MmaType t = bf ? T_BF16 : T_F16;
    size_t sw = (size_t)n * kk, sx = (size_t)batch * kk, sy = (size_t)batch * n;
    float *hw = malloc(sw * 4 + 4), *hx = malloc(sx * 4 + 4);
    double *ref = malloc(sy * 8 + 8), *bound = malloc(sy * 8 + 8);
    CUdeviceptr dw, dx, dy;
    if (!hw || !hx || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(dw = mma_input(t, hw, sw)) || !(dx = mma_input(t, hx, sx)) || !(dy = dev_floats(sy)) ||
        !transpose_b(hw, kk, n)) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dw), tilert_ptr(dx), tilert_ptr(dy), tilert_i32(n), tilert_i32(kk),
                      tilert_i32(batch)};
    if (expect_refusal) {
        refused(desc, k, a, 6);
        goto done;
    }
    ref_matmul_bound(hx, NULL, hw, NULL, ref, bound, batch, n, kk, SUM_TENSOR);
    if (launch(desc, k, a, 6))
        check_output(desc, dy, sy, ref, bound, (size_t)n);
done:
    free_case();
    free(hw), free(hx), free(ref), free(bound);
}

/* examples/attention.tile against float64: O = softmax(scale Q K^T, masked) V per query head,
 * K and V from head bh / G (G = BH / BHKV), L = the rows' logsumexp. The bound of each output
 * follows the kernel's arithmetic: scores by the tensor cores on exact 16-bit inputs (f32
 * accumulation: gamma(D) of sum |q||k|, then the scale's rounding), each error moving a
 * probability by at most twice the worst score error of its row (its own and the maximum's);
 * exp as ex2.approx of an argument rounded once (2^-22 + |x| u relative), and of the running
 * maximum's product by log2 e (exp(a - b) is one fma: u |b| relative, in each block's p and in
 * each rescaling, so (blocks + 1) u max |score|); P rounded to the
 * operand type for P V (u_p) while l sums the unrounded ones; P V and l accumulated in f32
 * (gamma(S)); the division; O rounded to its type (u_o). */
/* The scaled scores of query row i against keys 0..nj-1 (sc) and each one's error bound as the
 * kernels compute it (se: f32 accumulation of exact products, gamma(D) of sum |q||k|, then the
 * scale's rounding); returns the largest score. */
static double ref_scores(const float *qi, const float *kh, int nj, int d, float scale, double *sc, double *se)
{
    double gd = gamma_n(d, U_F32), m = -INFINITY;
    for (int j = 0; j < nj; j++) {
        double acc = 0, mag = 0;
        for (int x = 0; x < d; x++) {
            acc += (double)qi[x] * kh[(size_t)j * d + x];
            mag += fabs((double)qi[x] * kh[(size_t)j * d + x]);
        }
        sc[j] = acc * scale;
        se[j] = (gd * mag * scale + U_F32 * fabs(sc[j])) * (1 + 2 * U_F32);
        m = sc[j] > m ? sc[j] : m;
    }
    return m;
}

static void ref_attention(const float *q, const float *k, const float *v, int bh, int g, int s, int d,
                          float scale, bool causal, double up, double *o, double *ob, double *l, double *lb)
{
    double *sc = malloc((size_t)s * 8 + 8), *se = malloc((size_t)s * 8 + 8);
    double gs = gamma_n(s + 2, U_F32);
    for (int h = 0; h < bh; h++) {
        const float *qh = q + (size_t)h * s * d, *kh = k + (size_t)(h / g) * s * d, *vh = v + (size_t)(h / g) * s * d;
        for (int i = 0; i < s; i++) {
            int nj = causal ? i + 1 : s;
            double m = ref_scores(qh + (size_t)i * d, kh, nj, d, scale, sc, se), emax = 0, mabs = 0;
            for (int j = 0; j < nj; j++) {
                emax = se[j] > emax ? se[j] : emax;
                mabs = fabs(sc[j]) > mabs ? fabs(sc[j]) : mabs;
            }
            /* blocks of at least 32 keys: the rescalings' and p's products of the maximum */
            double rmax = ((nj + 31) / 32 + 1) * 1.01 * U_F32 * (mabs + emax);
            double lsum = 0, rel_p = 0;
            for (int j = 0; j < nj; j++) {
                double x = sc[j] - m;
                lsum += exp(x);
                double r = expm1(2 * emax) + 0x1p-22 + fabs(x) * 1.5 * U_F32 + rmax;
                rel_p = r > rel_p ? r : rel_p;
            }
            for (int x = 0; x < d; x++) {
                double acc = 0, mag = 0;
                for (int j = 0; j < nj; j++) {
                    double p = exp(sc[j] - m);
                    acc += p * vh[(size_t)j * d + x];
                    mag += p * fabs(vh[(size_t)j * d + x]);
                }
                size_t at = ((size_t)h * s + i) * d + x;
                o[at] = acc / lsum;
                /* numerator: each p within rel_p, rounded for P V (up), the sum gamma(S); l: rel_p
                   and gamma(S); the division one rounding */
                double num = mag / lsum * (rel_p + up + gs) * (1 + up);
                double den = fabs(o[at]) * (rel_p + gs) / (1 - rel_p - gs);
                ob[at] = (num + den + U_F32 * (fabs(o[at]) + num + den)) * (1 + 0x1p-10);
            }
            size_t li = (size_t)h * s + i;
            l[li] = m + log(lsum);
            /* the maximum's error, l's relative error, lg2.approx (2^-22 relative) times ln 2 */
            lb[li] = (emax + (rel_p + gs) * 1.01 + 0x1p-21 * fabs(log(lsum)) + U_F32 * fabs(l[li]) * 3) * (1 + 0x1p-10);
        }
    }
    free(sc);
    free(se);
}

static void case_attention(tilert_context *ctx, const char *name, MmaType t, int d, int bh, int g, int s, bool causal)
{
    tilert_kernel *k = kernel(ctx, name);
    if (!k)
        return;
    char desc[128];
    snprintf(desc, sizeof desc, "%s BH=%d G=%d S=%d D=%d%s", name, bh, g, s, d, causal ? " causal" : "");
    int bhkv = bh / g;
    size_t nq = (size_t)bh * s * d, nk = (size_t)bhkv * s * d, nl = (size_t)bh * s;
    float *hq = malloc(nq * 4 + 4), *hk = malloc(nk * 4 + 4), *hv = malloc(nk * 4 + 4), *hl = malloc((nl + GUARD) * 4);
    double *ref = malloc(nq * 8 + 8), *bound = malloc(nq * 8 + 8), *lref = malloc(nl * 8 + 8), *lbound = malloc(nl * 8 + 8);
    CUdeviceptr dq, dk, dv, do_, dl;
    float scale = 1 / sqrtf((float)d);
    if (!hq || !hk || !hv || !hl || !ref || !bound || !lref || !lbound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(dq = mma_input(t, hq, nq)) || !(dk = mma_input(t, hk, nk)) || !(dv = mma_input(t, hv, nk)) ||
        !(do_ = dev_halves(nq)) || !(dl = dev_floats(nl))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(dq), tilert_ptr(dk), tilert_ptr(dv), tilert_ptr(do_), tilert_ptr(dl),
                      tilert_f32(scale), tilert_i32(causal), tilert_i32(bh), tilert_i32(s), tilert_i32(d),
                      tilert_i32(bhkv)};
    ref_attention(hq, hk, hv, bh, g, s, d, scale, causal, t == T_BF16 ? U_BF16 : U_F16, ref, bound, lref, lbound);
    if (!launch(desc, k, a, 11))
        goto done;
    bound_store(ref, bound, nq, t == T_BF16 ? U_BF16 : U_F16, t == T_BF16 ? 0x1p-134 : 0x1p-25);
    check_halves(desc, t, do_, nq, ref, bound, (size_t)d);
    char ldesc[160];
    snprintf(ldesc, sizeof ldesc, "%s (logsumexp)", desc);
    check_output(ldesc, dl, nl, lref, lbound, (size_t)s);
done:
    free_case();
    free(hq), free(hk), free(hv), free(hl), free(ref), free(bound), free(lref), free(lbound);
}

static void cases_attention(tilert_context *ctx)
{
    static const struct { const char *name; MmaType t; int d; } ks[] = {
        {"attention", T_F16, 64}, {"attention_d128", T_F16, 128},
        {"attention_bf16", T_BF16, 64}, {"attention_bf16_d128", T_BF16, 128},
    };
    /* BH, G, S: sequence lengths 1, 7, 100, 129, 1000 (not multiples of the 128 x 64 blocks) */
    static const int sz[][3] = {{1, 1, 1}, {2, 1, 7}, {4, 2, 100}, {3, 3, 129}, {4, 4, 1000}, {2, 1, 256}};
    static const int sz_small[][3] = {{1, 1, 7}, {4, 2, 129}, {2, 1, 128}};
    bool small = test_small();
    for (size_t x = 0; x < COUNT(ks); x++)
        for (size_t i = 0; i < (small ? COUNT(sz_small) : COUNT(sz)); i++)
            for (int causal = 0; causal < 2; causal++) {
                const int *z = small ? sz_small[i] : sz[i];
                case_attention(ctx, ks[x].name, ks[x].t, ks[x].d, z[0], z[1], z[2], causal);
            }
}

/* examples/attention_bwd.tile against float64. The reference runs the forward pass (L, P, O)
 * and the backward recurrences exactly; the kernels get L and Dl = rowsum(O * dO) rounded to f32
 * (the rowdot kernel is checked on its own, on O rounded to the type). Bounds follow the kernels'
 * arithmetic, as ref_attention's: a score's error es (f32 accumulation of exact products, the
 * scale's rounding); p = exp(s * scale - L) within dp = expm1(es + u|L| + u|x|) + 2^-22 + 1.5 u |x|
 * + 1.01 u |L| relative (ex2.approx of one fma, whose product L log2 e is rounded); dP's error gamma(D) sum |do||v|; dS = p (dP - Dl) with Dl's rounding and
 * two roundings of its own; P and dS rounded to the operand type (up) for their products, which
 * accumulate in f32 (gamma of the number of terms); dK and dQ times the scale (one rounding). */
typedef struct { double *l, *dl, *dq, *dqb, *dk, *dkb, *dv, *dvb, *o; } BwdRef;

static void ref_attention_bwd(const float *q, const float *k, const float *v, const float *dout, int bh, int g,
                              int s, int d, float scale, bool causal, double up, BwdRef *r)
{
    int bhkv = bh / g;
    size_t nq = (size_t)bh * s * d, nk = (size_t)bhkv * s * d;
    double *sc = malloc((size_t)s * 8 + 8), *se = malloc((size_t)s * 8 + 8), *pr = malloc((size_t)s * 8 + 8);
    double *dsv = malloc((size_t)s * 8 + 8), *dse = malloc((size_t)s * 8 + 8);
    double *pe = malloc((size_t)s * 8 + 8);
    double gd = gamma_n(d, U_F32), gsq = gamma_n((double)s * g + 2, U_F32), gsk = gamma_n(s + 2, U_F32);
    double *dka = calloc(nk + 1, 8), *dkm = calloc(nk + 1, 8), *dva = calloc(nk + 1, 8), *dvm = calloc(nk + 1, 8);
    double *dke = calloc(nk + 1, 8), *dve = calloc(nk + 1, 8);
    for (int h = 0; h < bh; h++) {
        const float *qh = q + (size_t)h * s * d, *kh = k + (size_t)(h / g) * s * d, *vh = v + (size_t)(h / g) * s * d;
        const float *doh = dout + (size_t)h * s * d;
        size_t kvo = (size_t)(h / g) * s * d;
        for (int i = 0; i < s; i++) {
            int nj = causal ? i + 1 : s;
            double m = ref_scores(qh + (size_t)i * d, kh, nj, d, scale, sc, se);
            double lsum = 0;
            for (int j = 0; j < nj; j++)
                lsum += exp(sc[j] - m);
            double L = m + log(lsum), Lf = (float)L;
            size_t li = (size_t)h * s + i;
            r->l[li] = L;
            double dl = 0;
            for (int x = 0; x < d; x++) {
                double o = 0;
                for (int j = 0; j < nj; j++)
                    o += exp(sc[j] - L) * vh[(size_t)j * d + x];
                r->o[li * d + x] = o;
                dl += o * doh[(size_t)i * d + x];
            }
            r->dl[li] = dl;
            double dlf = (float)dl;
            /* the kernels see Lf and dlf: the reference is the exact function of them */
            for (int j = 0; j < nj; j++) {
                double xa = sc[j] - Lf;
                pr[j] = exp(xa);
                double ea = se[j] + U_F32 * fabs(xa) + U_F32 * (fabs(xa) + se[j]);
                pe[j] = expm1(ea) + 0x1p-22 + fabs(xa) * 1.5 * U_F32 + 1.01 * U_F32 * fabs(Lf);
                double dp = 0, dpm = 0;
                for (int x = 0; x < d; x++) {
                    dp += (double)doh[(size_t)i * d + x] * vh[(size_t)j * d + x];
                    dpm += fabs((double)doh[(size_t)i * d + x] * vh[(size_t)j * d + x]);
                }
                double a = fabs(dp - dlf), edp = gd * dpm;
                double e1 = edp + U_F32 * (a + edp);
                dsv[j] = pr[j] * (dp - dlf);
                dse[j] = pr[j] * pe[j] * (a + e1) + pr[j] * e1 + U_F32 * pr[j] * (1 + pe[j]) * (a + e1);
            }
            for (int x = 0; x < d; x++) {
                double acc = 0, err = 0, mag = 0;
                for (int j = 0; j < nj; j++) {
                    double kv = kh[(size_t)j * d + x];
                    acc += dsv[j] * kv;
                    err += fabs(kv) * (dse[j] + up * (fabs(dsv[j]) + dse[j]));
                    mag += (fabs(dsv[j]) + dse[j]) * (1 + up) * fabs(kv);
                }
                size_t at = li * d + x;
                r->dq[at] = acc * scale;
                r->dqb[at] = (scale * (err + gsk * mag) * (1 + U_F32) + U_F32 * fabs(r->dq[at])) * (1 + 0x1p-10);
            }
            for (int j = 0; j < nj; j++)
                for (int x = 0; x < d; x++) {
                    size_t at = kvo + (size_t)j * d + x;
                    double qv = qh[(size_t)i * d + x], dv = doh[(size_t)i * d + x];
                    dka[at] += dsv[j] * qv;
                    dke[at] += fabs(qv) * (dse[j] + up * (fabs(dsv[j]) + dse[j]));
                    dkm[at] += (fabs(dsv[j]) + dse[j]) * (1 + up) * fabs(qv);
                    dva[at] += pr[j] * dv;
                    dve[at] += fabs(dv) * pr[j] * (pe[j] + up * (1 + pe[j]));
                    dvm[at] += pr[j] * (1 + pe[j]) * (1 + up) * fabs(dv);
                }
        }
    }
    for (size_t at = 0; at < nk; at++) {
        r->dk[at] = dka[at] * scale;
        r->dkb[at] = (scale * (dke[at] + gsq * dkm[at]) * (1 + U_F32) + U_F32 * fabs(r->dk[at])) * (1 + 0x1p-10);
        r->dv[at] = dva[at];
        r->dvb[at] = (dve[at] + gsq * dvm[at]) * (1 + 0x1p-10);
    }
    (void)nq;
    free(sc), free(se), free(pr), free(dsv), free(dse), free(pe);
    free(dka), free(dkm), free(dva), free(dvm), free(dke), free(dve);
}

static CUdeviceptr dev_doubles_as_floats(const double *x, size_t n)
{
    float *h = malloc(n * 4 + 4);
    if (!h)
        return 0;
    for (size_t i = 0; i < n; i++)
        h[i] = (float)x[i];
    CUdeviceptr p = dev_input(h, n);
    free(h);
    return p;
}

static void case_attention_bwd(tilert_context *ctx, const char *suffix, MmaType t, int d, int bh, int g, int s,
                               bool causal)
{
    char nrow[64], nkv[64], nq_[64];
    snprintf(nrow, sizeof nrow, "attention_bwd_rowdot%s", suffix);
    snprintf(nkv, sizeof nkv, "attention_bwd_dkdv%s", suffix);
    snprintf(nq_, sizeof nq_, "attention_bwd_dq%s", suffix);
    tilert_kernel *krow = kernel(ctx, nrow), *kkv = kernel(ctx, nkv), *kq = kernel(ctx, nq_);
    if (!krow || !kkv || !kq)
        return;
    char desc[160];
    snprintf(desc, sizeof desc, "attention_bwd%s BH=%d G=%d S=%d D=%d%s", suffix, bh, g, s, d, causal ? " causal" : "");
    int bhkv = bh / g;
    size_t nq = (size_t)bh * s * d, nk = (size_t)bhkv * s * d, nl = (size_t)bh * s;
    double up = t == T_BF16 ? U_BF16 : U_F16, sub = t == T_BF16 ? 0x1p-134 : 0x1p-25;
    float scale = 1 / sqrtf((float)d);
    float *hq = malloc(nq * 4 + 4), *hk = malloc(nk * 4 + 4), *hv = malloc(nk * 4 + 4), *hdo = malloc(nq * 4 + 4);
    float *ho = malloc(nq * 4 + 4);
    BwdRef r = { malloc(nl * 8 + 8), malloc(nl * 8 + 8), malloc(nq * 8 + 8), malloc(nq * 8 + 8), malloc(nk * 8 + 8),
                 malloc(nk * 8 + 8), malloc(nk * 8 + 8), malloc(nk * 8 + 8), malloc(nq * 8 + 8) };
    double *dlr = malloc(nl * 8 + 8), *dlb = malloc(nl * 8 + 8);
    CUdeviceptr dq, dk, dv, ddo, dO, dL, dDl, dDl2, gq, gk, gv;
    if (!hq || !hk || !hv || !hdo || !ho || !r.l || !r.dl || !r.dq || !r.dqb || !r.dk || !r.dkb || !r.dv || !r.dvb ||
        !r.o || !dlr || !dlb) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (!(dq = mma_input(t, hq, nq)) || !(dk = mma_input(t, hk, nk)) || !(dv = mma_input(t, hv, nk)) ||
        !(ddo = mma_input(t, hdo, nq))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    ref_attention_bwd(hq, hk, hv, hdo, bh, g, s, d, scale, causal, up, &r);
    /* O as the forward pass would store it, for the row pass */
    uint16_t *h16 = malloc(nq * 2 + 2);
    if (!h16) {
        result(false, desc, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < nq; i++) {
        h16[i] = t == T_F16 ? to_f16((float)r.o[i]) : to_bf16((float)r.o[i]);
        ho[i] = t == T_F16 ? from_f16(h16[i]) : from_bf16(h16[i]);
    }
    dO = dev_halves(nq);
    bool up_ok = dO && gpu_upload(dO, h16, nq * 2);
    free(h16);
    if (!up_ok || !(dL = dev_doubles_as_floats(r.l, nl)) || !(dDl = dev_doubles_as_floats(r.dl, nl)) ||
        !(dDl2 = dev_floats(nl)) || !(gq = dev_halves(nq)) || !(gk = dev_halves(nk)) || !(gv = dev_halves(nk))) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    /* the row pass on the rounded O: a sum of d exact products in any order */
    for (size_t i = 0; i < nl; i++) {
        double acc = 0, mag = 0;
        for (int x = 0; x < d; x++) {
            acc += (double)ho[i * d + x] * hdo[i * d + x];
            mag += fabs((double)ho[i * d + x] * hdo[i * d + x]);
        }
        dlr[i] = acc;
        dlb[i] = (gamma_n(d, U_F32) * mag + U_F32 * fabs(acc)) * (1 + 0x1p-10);
    }
    tilert_arg ar[] = {tilert_ptr(dO), tilert_ptr(ddo), tilert_ptr(dDl2), tilert_i32(bh), tilert_i32(s), tilert_i32(d)};
    tilert_arg akv[] = {tilert_ptr(dq), tilert_ptr(dk), tilert_ptr(dv), tilert_ptr(ddo), tilert_ptr(dL), tilert_ptr(dDl),
                        tilert_ptr(gk), tilert_ptr(gv), tilert_f32(scale), tilert_i32(causal), tilert_i32(bh),
                        tilert_i32(s), tilert_i32(d), tilert_i32(bhkv)};
    tilert_arg aq[] = {tilert_ptr(dq), tilert_ptr(dk), tilert_ptr(dv), tilert_ptr(ddo), tilert_ptr(dL), tilert_ptr(dDl),
                       tilert_ptr(gq), tilert_f32(scale), tilert_i32(causal), tilert_i32(bh), tilert_i32(s),
                       tilert_i32(d), tilert_i32(bhkv)};
    char sub_desc[200];
    snprintf(sub_desc, sizeof sub_desc, "%s (row dot)", desc);
    if (launch(sub_desc, krow, ar, 6))
        check_output(sub_desc, dDl2, nl, dlr, dlb, (size_t)s);
    if (launch(desc, kkv, akv, 14) && launch(desc, kq, aq, 13)) {
        bound_store(r.dq, r.dqb, nq, up, sub);
        bound_store(r.dk, r.dkb, nk, up, sub);
        bound_store(r.dv, r.dvb, nk, up, sub);
        snprintf(sub_desc, sizeof sub_desc, "%s (dQ)", desc);
        check_halves(sub_desc, t, gq, nq, r.dq, r.dqb, (size_t)d);
        snprintf(sub_desc, sizeof sub_desc, "%s (dK)", desc);
        check_halves(sub_desc, t, gk, nk, r.dk, r.dkb, (size_t)d);
        snprintf(sub_desc, sizeof sub_desc, "%s (dV)", desc);
        check_halves(sub_desc, t, gv, nk, r.dv, r.dvb, (size_t)d);
    }
done:
    free_case();
    free(hq), free(hk), free(hv), free(hdo), free(ho), free(dlr), free(dlb);
    free(r.l), free(r.dl), free(r.dq), free(r.dqb), free(r.dk), free(r.dkb), free(r.dv), free(r.dvb), free(r.o);
}

static void cases_attention_bwd(tilert_context *ctx)
{
    static const struct { const char *suffix; MmaType t; int d; } ks[] = {
        {"", T_F16, 64}, {"_d128", T_F16, 128}, {"_bf16", T_BF16, 64}, {"_bf16_d128", T_BF16, 128},
    };
    /* BH, G, S: sequence lengths 1, 7, 100, 129, 1000 (not multiples of the 64 and 128 blocks) */
    static const int sz[][3] = {{1, 1, 1}, {2, 1, 7}, {4, 2, 100}, {3, 3, 129}, {2, 2, 1000}, {2, 1, 256}};
    static const int sz_small[][3] = {{1, 1, 7}, {4, 2, 129}};
    bool small = test_small();
    for (size_t x = 0; x < COUNT(ks); x++)
        for (size_t i = 0; i < (small ? COUNT(sz_small) : COUNT(sz)); i++)
            for (int causal = 0; causal < 2; causal++) {
                const int *z = small ? sz_small[i] : sz[i];
                case_attention_bwd(ctx, ks[x].suffix, ks[x].t, ks[x].d, z[0], z[1], z[2], causal);
            }
}

/* examples/gather.tile. Row indices: mostly in range, some out of it (negative and past the
 * end), which read zeros and whose stores and atomics are dropped. */
static int32_t *row_ids(size_t n, int range, bool with_bad)
{
    int32_t *ids = malloc(n * 4 + 4);
    for (size_t i = 0; ids && i < n; i++) {
        uint64_t r = rng_next();
        ids[i] = with_bad && r % 13 == 0 ? (r & 64 ? -1 - (int32_t)(r >> 40 & 7) : range + (int32_t)(r >> 40 & 7))
                                         : (int32_t)((r >> 8) % (uint64_t)range);
    }
    return ids;
}

static void case_gather(tilert_context *ctx, int t, int v, int d)
{
    char desc[128];
    /* embedding: f16 rows copied exactly; rows out of range give zeros */
    tilert_kernel *k = kernel(ctx, "embedding");
    snprintf(desc, sizeof desc, "embedding T=%d V=%d D=%d", t, v, d);
    int32_t *ids = row_ids((size_t)t, v, true);
    float *e = malloc((size_t)v * d * 4 + 4), *dy = malloc((size_t)t * d * 4 + 4);
    double *ref = malloc((size_t)(t > v ? t : v) * d * 8 + 8), *bound = calloc((size_t)(t > v ? t : v) * d + 1, 8);
    CUdeviceptr dids, de, dout;
    if (!ids || !e || !dy || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (k) {
        if (!(dids = dev_input((const float *)ids, (size_t)t)) || !(de = mma_input(T_F16, e, (size_t)v * d)) ||
            !(dout = dev_halves((size_t)t * d))) {
            result(false, desc, "device memory setup failed");
            goto done;
        }
        for (int i = 0; i < t; i++)
            for (int j = 0; j < d; j++)
                ref[(size_t)i * d + j] = ids[i] >= 0 && ids[i] < v ? e[(size_t)ids[i] * d + j] : 0;
        tilert_arg a[] = {tilert_ptr(dids), tilert_ptr(de), tilert_ptr(dout), tilert_i32(t), tilert_i32(v), tilert_i32(d)};
        if (launch(desc, k, a, 6))
            check_halves(desc, T_F16, dout, (size_t)t * d, ref, bound, (size_t)d);
        free_case();
    }
    /* embedding_bwd: DE starts at a random table; each in-range id adds its DY row, repeated ids
       in any order (n additions a term at most) */
    k = kernel(ctx, "embedding_bwd");
    snprintf(desc, sizeof desc, "embedding_bwd T=%d V=%d D=%d", t, v, d);
    if (k) {
        rng_fill(e, (size_t)v * d, -1, 1);
        rng_fill(dy, (size_t)t * d, -1, 1);
        int *count = calloc((size_t)v + 1, sizeof(int));
        for (size_t i = 0; i < (size_t)v * d; i++) {
            ref[i] = e[i];
            bound[i] = fabs(e[i]);
        }
        for (int i = 0; i < t; i++)
            if (ids[i] >= 0 && ids[i] < v) {
                count[ids[i]]++;
                for (int j = 0; j < d; j++) {
                    ref[(size_t)ids[i] * d + j] += dy[(size_t)i * d + j];
                    bound[(size_t)ids[i] * d + j] += fabs(dy[(size_t)i * d + j]);
                }
            }
        for (int r = 0; r < v; r++)
            for (int j = 0; j < d; j++)
                bound[(size_t)r * d + j] *= gamma_n(count[r], U_F32) * (1 + 0x1p-10);
        free(count);
        if (!(dids = dev_input((const float *)ids, (size_t)t)) || !(dout = dev_input(e, (size_t)v * d)) ||
            !(de = dev_input(dy, (size_t)t * d))) {
            result(false, desc, "device memory setup failed");
            goto done;
        }
        tilert_arg a[] = {tilert_ptr(dids), tilert_ptr(de), tilert_ptr(dout), tilert_i32(t), tilert_i32(d), tilert_i32(v)};
        if (launch(desc, k, a, 6))
            check_output(desc, dout, (size_t)v * d, ref, bound, (size_t)d);
        free_case();
    }
done:
    free_case();
    free(ids), free(e), free(dy), free(ref), free(bound);
}

/* moe_gather_mm: Y = X[perm] @ W on the tensor cores (f16 products exact, f32 sums); rows of
 * perm out of range are zero rows. moe_scatter: Y[perm[i]] = X[i] * gate[i] with perm a
 * permutation of Y's rows, so every row is written once (one rounding). */
static void case_moe(tilert_context *ctx, int m, int n, int kk, int e)
{
    char desc[128];
    snprintf(desc, sizeof desc, "moe_gather_mm M=%d N=%d K=%d E=%d", m, n, kk, e);
    tilert_kernel *k = kernel(ctx, "moe_gather_mm");
    int32_t *perm = row_ids((size_t)m, n, true);
    float *x = malloc((size_t)n * kk * 4 + 4), *w = malloc((size_t)kk * e * 4 + 4), *ga = calloc((size_t)m * kk + 1, 4);
    double *ref = malloc((size_t)m * e * 8 + 8), *bound = malloc((size_t)m * e * 8 + 8);
    CUdeviceptr dp, dx, dw, dy;
    if (!perm || !x || !w || !ga || !ref || !bound) {
        result(false, desc, "out of host memory");
        goto done;
    }
    if (k) {
        if (!(dp = dev_input((const float *)perm, (size_t)m)) || !(dx = mma_input(T_F16, x, (size_t)n * kk)) ||
            !(dw = mma_input(T_F16, w, (size_t)kk * e)) || !(dy = dev_floats((size_t)m * e))) {
            result(false, desc, "device memory setup failed");
            goto done;
        }
        for (int i = 0; i < m; i++)
            if (perm[i] >= 0 && perm[i] < n)
                memcpy(ga + (size_t)i * kk, x + (size_t)perm[i] * kk, (size_t)kk * 4);
        ref_matmul_bound(ga, NULL, w, NULL, ref, bound, m, e, kk, SUM_TENSOR);
        tilert_arg a[] = {tilert_ptr(dp), tilert_ptr(dx), tilert_ptr(dw), tilert_ptr(dy), tilert_i32(m), tilert_i32(n),
                          tilert_i32(kk), tilert_i32(e)};
        if (launch(desc, k, a, 8))
            check_output(desc, dy, (size_t)m * e, ref, bound, (size_t)e);
        free_case();
    }
    k = kernel(ctx, "moe_scatter");
    snprintf(desc, sizeof desc, "moe_scatter M=N=%d D=%d", m, kk);
    if (k) {
        int32_t *pm = malloc((size_t)m * 4 + 4);
        float *xs = malloc((size_t)m * kk * 4 + 4), *gate = malloc((size_t)m * 4 + 4);
        double *r2 = malloc((size_t)m * kk * 8 + 8), *b2 = malloc((size_t)m * kk * 8 + 8);
        for (int i = 0; i < m; i++)
            pm[i] = i;
        for (int i = m - 1; i > 0; i--) {
            int j = (int)(rng_next() % (uint64_t)(i + 1)), tmp = pm[i];
            pm[i] = pm[j];
            pm[j] = tmp;
        }
        rng_fill(xs, (size_t)m * kk, -2, 2);
        rng_fill(gate, (size_t)m, 0, 1);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < kk; j++) {
                double v = (double)xs[(size_t)i * kk + j] * gate[i];
                r2[(size_t)pm[i] * kk + j] = v;
                b2[(size_t)pm[i] * kk + j] = fabs(v) * U_F32;
            }
        CUdeviceptr q1, q2, q3, q4;
        if ((q1 = dev_input((const float *)pm, (size_t)m)) && (q2 = dev_input(xs, (size_t)m * kk)) &&
            (q3 = dev_input(gate, (size_t)m)) && (q4 = dev_floats((size_t)m * kk))) {
            tilert_arg a[] = {tilert_ptr(q1), tilert_ptr(q2), tilert_ptr(q3), tilert_ptr(q4), tilert_i32(m),
                              tilert_i32(kk), tilert_i32(m)};
            if (launch(desc, k, a, 7))
                check_output(desc, q4, (size_t)m * kk, r2, b2, (size_t)kk);
        } else
            result(false, desc, "device memory setup failed");
        free(pm), free(xs), free(gate), free(r2), free(b2);
    }
done:
    free_case();
    free(perm), free(x), free(w), free(ga), free(ref), free(bound);
}

/* vecadd with N = 0: an empty grid launches nothing, succeeds, and writes nothing. */
static void case_empty(tilert_context *ctx)
{
    tilert_kernel *k = kernel(ctx, "vecadd");
    if (!k)
        return;
    const char *desc = "vecadd N=0 (empty grid)";
    CUdeviceptr d = dev_floats(0);
    if (!d) {
        result(false, desc, "device memory setup failed");
        return;
    }
    tilert_arg a[] = {tilert_ptr(d), tilert_ptr(d), tilert_ptr(d), tilert_f32(1), tilert_i32(0)};
    if (launch(desc, k, a, 5))
        check_output(desc, d, 0, NULL, NULL, 0);
    free_case();
}

/* matmul_tf32 with K = 0: an empty sum, so C is all zeros, every element written. On sm_90a the
 * kernel takes a tensor map of A with no columns, which TMA cannot describe: the launcher
 * substitutes a zeroed 1 x 1 tensor (docs/runtime.md), so this runs that path too. */
static void case_tf32_empty_k(tilert_context *ctx)
{
    enum { M = 70, N = 36 };
    const char *desc = "matmul_tf32 K=0 (C all zeros)";
    tilert_kernel *k = kernel(ctx, "matmul_tf32");
    if (!k)
        return;
    static uint32_t got[M * N];
    CUdeviceptr da = dev_floats(4), db = dev_floats(4), dc = dev_floats(M * N);
    if (!da || !db || !dc) {
        result(false, desc, "device memory setup failed");
        goto done;
    }
    tilert_arg a[] = {tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(M), tilert_i32(0), tilert_i32(N)};
    if (!launch(desc, k, a, 6))
        goto done;
    if (!gpu_download(got, dc, sizeof got)) {
        result(false, desc, "cannot read the output back");
        goto done;
    }
    for (int i = 0; i < M * N; i++)
        if (got[i] & 0x7fffffffu) {
            result(false, desc, "C[%d][%d] = 0x%08x, want 0", i / N, i % N, got[i]);
            goto done;
        }
    result(true, desc, "%d zeros", M * N);
done:
    free_case();
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ex_dir = argv[1];
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, ex_dir);
    if (rc >= 0)
        return rc;

    /* Each list of sizes has a small subset for TILEC_TEST_SMALL: smaller than a tile, a tile
       multiple, neither. */
    bool small = test_small();
    static const int vec_n[] = {1, 1000, 1024, 4097, 1 << 20}, vec_small[] = {1, 1024, 4097};
    for (size_t i = 0; i < (small ? COUNT(vec_small) : COUNT(vec_n)); i++)
        case_vecadd(ctx, small ? vec_small[i] : vec_n[i]);
    for (size_t i = 0; i < (small ? COUNT(vec_small) : COUNT(vec_n)); i++)
        case_dropout(ctx, small ? vec_small[i] : vec_n[i], i % 2 ? 0.1f : 0.5f);
    case_empty(ctx);
    case_tf32_empty_k(ctx);

    /* K and N multiples of 4 (the kernel assumes it); M anything. Tiles of 128 x 128 x 8. */
    static const int mm_m[] = {1, 7, 100, 128, 129, 257};
    static const int mm_nk[][2] = {{4, 4}, {100, 100}, {128, 128}, {100, 4}, {4, 128},
                                   {256, 100}, {128, 256}, {256, 256}};
    static const int mm_small[][3] = {{7, 4, 4}, {128, 128, 128}, {129, 100, 100}};
    for (size_t i = 0; small && i < COUNT(mm_small); i++)
        case_matmul(ctx, mm_small[i][0], mm_small[i][1], mm_small[i][2], false);
    for (size_t i = 0; !small && i < sizeof mm_m / sizeof mm_m[0]; i++)
        for (size_t j = 0; j < sizeof mm_nk / sizeof mm_nk[0]; j++)
            case_matmul(ctx, mm_m[i], mm_nk[j][0], mm_nk[j][1], false);
    case_matmul(ctx, 128, 128, 7, true);
    case_matmul(ctx, 129, 7, 128, true);
    if (tilert_device_arch(ctx) >= 80) {   /* mma.sync, ldmatrix and cp.async need sm_80 */
        cases_mma(ctx);
        cases_splitk(ctx);
        cases_batched(ctx);
        case_tf32_rounding(ctx);
        cases_mma_shapes(ctx);
    } else
        printf("skipped: tensor-core examples need sm_80 or later\n");

    /* one block sums 4096 x 8 */
    static const int sum_n[] = {1, 1000, 32768, (1 << 22) + 3}, sum_small[] = {1, 32768, 40000};
    for (size_t i = 0; i < (small ? COUNT(sum_small) : COUNT(sum_n)); i++)
        case_sum(ctx, small ? sum_small[i] : sum_n[i]);

    static const int rows[][2] = {{1, 1}, {3, 1000}, {64, 2048}, {257, 8192}};
    static const int rows_small[][2] = {{1, 1}, {2, 1000}, {2, 8192}};
    for (RowKind kind = ROWSUM; kind <= LAYERNORM; kind++)
        for (size_t i = 0; i < (small ? COUNT(rows_small) : COUNT(rows)); i++)
            case_rows(ctx, kind, small ? rows_small[i][0] : rows[i][0], small ? rows_small[i][1] : rows[i][1], false);
    case_rows(ctx, ROWSUM, small ? 2 : 5, small ? 5000 : 10000, false);   /* several BN steps, a ragged last one */
    case_rows(ctx, SOFTMAX, 2, 8193, true);
    case_rows(ctx, LAYERNORM, 2, 8193, true);
    cases_lse(ctx);
    if (tilert_device_arch(ctx) >= 80) {
        cases_attention(ctx);
        cases_attention_bwd(ctx);
    }
    /* T, V, D: tokens and table rows not multiples of the 32-row blocks, D of the 256 columns */
    static const int gt[][3] = {{1, 1, 8}, {33, 7, 264}, {100, 1000, 512}, {1000, 50, 136}};
    static const int gt_small[][3] = {{1, 1, 8}, {33, 7, 264}, {64, 100, 256}};
    for (size_t i = 0; i < (small ? COUNT(gt_small) : COUNT(gt)); i++) {
        const int *g = small ? gt_small[i] : gt[i];
        case_gather(ctx, g[0], g[1], g[2]);
    }
    if (tilert_device_arch(ctx) >= 80) {
        static const int mt[][4] = {{1, 1, 8, 8}, {70, 50, 40, 72}, {130, 300, 136, 200}};
        static const int mt_small[][4] = {{1, 1, 8, 8}, {64, 64, 64, 64}, {70, 50, 40, 72}};
        for (size_t i = 0; i < (small ? COUNT(mt_small) : COUNT(mt)); i++) {
            const int *g = small ? mt_small[i] : mt[i];
            case_moe(ctx, g[0], g[1], g[2], g[3]);
        }
    }

    /* K a multiple of 8 (the kernels assume it); windows of 8 rows x 1024 columns */
    static const int gv[][2] = {{1, 8}, {7, 1000}, {100, 2048}, {129, 4104}, {1000, 64}};
    static const int gv_small[][2] = {{1, 8}, {8, 1024}, {13, 1032}};
    for (int bf = 0; bf < 2; bf++)
        for (size_t i = 0; i < (small ? COUNT(gv_small) : COUNT(gv)); i++)
            case_gemv(ctx, bf, small ? gv_small[i][0] : gv[i][0], small ? gv_small[i][1] : gv[i][1], false);
    case_gemv(ctx, false, 16, 1001, true);
    static const int rn[][2] = {{1, 1}, {3, 1000}, {64, 2048}, {257, 8192}};
    static const int rn_small[][2] = {{1, 1}, {2, 1000}, {2, 8192}};
    for (size_t i = 0; i < (small ? COUNT(rn_small) : COUNT(rn)); i++)
        case_rmsnorm(ctx, false, small ? rn_small[i][0] : rn[i][0], small ? rn_small[i][1] : rn[i][1], false);
    static const int rh[][2] = {{1, 8}, {3, 1000}, {64, 2048}, {257, 8192}};
    static const int rh_small[][2] = {{1, 8}, {2, 1000}, {2, 8192}};
    for (size_t i = 0; i < (small ? COUNT(rh_small) : COUNT(rh)); i++)
        case_rmsnorm(ctx, true, small ? rh_small[i][0] : rh[i][0], small ? rh_small[i][1] : rh[i][1], false);
    case_rmsnorm(ctx, false, 2, 8193, true);
    case_rmsnorm(ctx, true, 2, 1001, true);

    /* N a multiple of 4 (the kernel assumes it); blocks of 512 rows x 256 columns, 32-row windows */
    static const int cs[][2] = {{1, 4}, {3, 1000}, {100, 260}, {513, 512}, {1000, 8}, {2049, 1028}};
    static const int cs_small[][2] = {{1, 4}, {33, 260}, {600, 512}};
    for (size_t i = 0; i < (small ? COUNT(cs_small) : COUNT(cs)); i++)
        case_colsum(ctx, small ? cs_small[i][0] : cs[i][0], small ? cs_small[i][1] : cs[i][1], false);
    case_colsum(ctx, 2, 1001, true);
    /* N <= 8192 and a multiple of 4 */
    static const int ls[][2] = {{1, 4}, {3, 1000}, {64, 2048}, {5, 4100}, {257, 8192}};
    static const int ls_small[][2] = {{1, 4}, {2, 1000}, {2, 8192}};
    for (size_t i = 0; i < (small ? COUNT(ls_small) : COUNT(ls)); i++)
        case_layernorm_stats(ctx, small ? ls_small[i][0] : ls[i][0], small ? ls_small[i][1] : ls[i][1], false);
    case_layernorm_stats(ctx, 2, 8196, true);
    case_layernorm_stats(ctx, 2, 1002, true);
    /* batch, N, K: K a multiple of 8 (assumed); blocks of 16 batch rows x 32 rows of W, 128 k a
       step; batches below, at and past 16 */
    if (tilert_device_arch(ctx) >= 80) {   /* mma.sync, ldmatrix and cp.async need sm_80 */
        static const int gb[][3] = {{1, 1, 8}, {2, 100, 1000}, {3, 129, 4104}, {8, 1000, 64},
                                    {16, 33, 136}, {17, 70, 264}};
        static const int gb_small[][3] = {{1, 1, 8}, {8, 32, 256}, {5, 70, 1032}, {17, 33, 136}};
        for (int bf = 0; bf < 2; bf++)
            for (size_t i = 0; i < (small ? COUNT(gb_small) : COUNT(gb)); i++) {
                const int *g = small ? gb_small[i] : gb[i];
                case_gemv_batch(ctx, bf, g[0], g[1], g[2], false);
            }
        case_gemv_batch(ctx, false, 2, 16, 1001, true);
    }

    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        tilert_unload(examples[i].mod);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
