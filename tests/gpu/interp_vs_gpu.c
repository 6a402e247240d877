/* interp_vs_gpu.c: the interpreter (compiler/interp*.c) against the GPU on the same inputs. Each
 * case loads an example's PTX module, fills every tensor with fresh random values, launches it on
 * the GPU through libtilert and runs the source the module carries (meta_source.c) in the
 * interpreter on host copies, then compares every tensor element by element: bit for bit where
 * both must agree exactly (integers, copies, Philox), else within a tolerance that covers the
 * two sides' differences the language allows (approximate exp and rsqrt, the order of sums,
 * fused multiply-adds). Without a GPU it skips; `make check-gpu` runs it. Usage: interp_vs_gpu
 * EXAMPLES_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dual_run.h"

static int passed, failed;
static tilert_context *ctx;

typedef struct {
    const char *module, *kernel;
    const char *values;        /* "NAME=VALUE ..." for every size and scalar */
    int int_hi;                /* integer tensors hold 0 .. int_hi - 1 */
    double rel, abs;           /* 0, 0: bit for bit */
} Case;

/* Tolerances: the two sides' sums are in different orders and the GPU's tensor cores truncate
 * (docs/language.md, "Accuracy": about 2K 2^-23 S for K products of magnitude sum S, 9 here
 * on average) before an f16 or bf16 store rounds (one ulp apart at most); exp, rsqrt are
 * approximate on the GPU (a few ulps); vecadd's a * x + y may be one fma there. */
static const Case cases[] = {
    { "vecadd", "vecadd", "N=1037 alpha=1.5", 1, 1e-6, 3e-7 },
    { "softmax", "softmax", "R=5 N=1000", 1, 2e-5, 1e-9 },
    { "layernorm", "layernorm", "R=3 N=777 eps=1e-5", 1, 1e-4, 1e-5 },
    { "rmsnorm", "rmsnorm_f16", "R=3 N=776 eps=1e-5", 1, 2e-3, 1e-4 },
    { "rowsum", "rowsum", "R=3 N=5001", 1, 1e-5, 1e-3 },
    { "gemv", "gemv", "N=13 K=1032", 1, 1e-5, 1e-3 },
    { "gemv", "gemv_batch", "N=70 K=1032 B=5", 1, 1e-5, 1e-3 },
    { "colsum", "colsum", "R=1000 N=264", 1, 1e-5, 1e-4 },
    { "layernorm_stats", "layernorm_stats", "R=3 N=776 eps=1e-5", 1, 1e-4, 1e-5 },
    { "matmul_f32", "matmul_f32", "M=67 K=36 N=68", 1, 1e-5, 1e-4 },
    { "matmul_tf32", "matmul_tf32", "M=67 K=36 N=68", 1, 1e-5, 5e-4 },
    { "matmul_f16", "matmul_f16", "M=67 K=40 N=72", 1, 0x1p-10, 5e-4 },
    { "matmul_bf16", "matmul_bf16", "M=67 K=40 N=72", 1, 0x1p-7, 5e-4 },
    { "attention", "attention", "BH=2 S=77 D=64 BHKV=1 scale=0.125 causal=1", 1, 1e-2, 4e-3 },
    { "dropout", "dropout_fwd", "N=3001 p=0.3 seed=42", 1, 0, 0 },
    { "gather", "embedding", "T=33 D=264 V=7", 7, 0, 0 },
    { "gather", "embedding_bwd", "T=33 D=264 V=7", 7, 1e-6, 1e-6 },
    /* kernels written as users write them (tests/gpu/kernels/user.tile), K long enough for the
       launcher to split the loop (few tiles): the bound above with K = 2100, S = K / 4 is 0.26
       (bf16 and f16 outputs: their rounding too; tanh is approximate on the GPU, 2^-10) */
    { "user/user", "mlp", "M=67 K=2100 N=200", 1, 0x1p-7, 0.26 },
    { "user/user", "linear_silu", "M=67 K=2100 N=200", 1, 0x1p-7, 0.26 },
    { "user/user", "linear_gelu", "M=67 K=2100 N=200", 1, 0x1p-7, 0.26 },
    /* one k step, two row blocks, N past the tiles: 2K 2^-23 S = 2.4e-4 (K = 64, S = 16) */
    { "user/user", "linear_silu", "M=136 K=64 N=264", 1, 0x1p-7, 1e-3 },
    { "user/user", "rowscale", "M=67 K=2100 N=300", 1, 1e-5, 0.26 },
    { "user/user", "logits_max", "M=130 K=2100 N=200 NB=2", 1, 1e-5, 0.26 },
    { "user/user", "bmm_f16", "BATCH=3 M=67 K=300 N=200", 1, 0x1p-10, 0.006 },
    /* products inside expressions: K = 100, S = 25 halved; attention as the example's case */
    { "user/user", "scaled_diff", "M=67 K=100 N=70", 1, 1e-5, 1e-3 },
    { "user/user", "attn_fwd", "BH=2 S=77 scale=0.125", 1, 1e-2, 4e-3 },
    /* one stage and a held window, the loop run 3 times and none */
    { "user/user", "held_one_stage", "M=67 K=130 n=130", 1, 0x1p-10, 0.006 },
    { "user/user", "held_one_stage", "M=67 K=130 n=0", 1, 0, 0 },
    /* two products of one window in a loop of one refilled stage, and of two stages: g and u
       within 2K 2^-23 S = 0.0024 each (K = 100, S <= 100), |g|, |u| < 12, so silu(g) u within
       2 x 12 x 0.0024 < 0.06, then its f16 rounding */
    { "user/user", "swiglu", "M=67 K=100 N=70", 1, 0x1p-10, 0.06 },
    { "user/user", "swiglu2", "M=67 K=100 N=70", 1, 0x1p-10, 0.06 },
    { "user/user", "swiglu", "M=130 K=2 N=200", 1, 0x1p-10, 0.06 },
};

static bool same(ElemType t, Elem g, Elem c, double rel, double abs_tol)
{
    if (!type_is_float(t))
        return g.i == c.i;
    if (isnan(g.f) || isnan(c.f))
        return isnan(g.f) && isnan(c.f);
    if (rel == 0 && abs_tol == 0)
        return !memcmp(&g.f, &c.f, sizeof g.f);
    return fabs((double)g.f - c.f) <= rel * fabs((double)c.f) + abs_tol;
}

/* Random inputs: floats in [-1, 1) as the type holds them, integers in 0 .. int_hi - 1. */
static Elem random_value(ElemType t, void *user)
{
    const Case *c = user;
    Elem e;
    e.i = 0;
    if (type_is_float(t)) {
        e.f = round_to_type(t, rng_uniform(-1, 1));
        /* no exact tf32 ties (the 13 bits tf32 drops exactly half its ulp): mma.sync rounds
           those away from zero, sm_90a's wgmma path to even, and the interpreter follows
           mma.sync (docs/language.md, "Tensor cores and precision"); anywhere else the two
           roundings agree */
        uint32_t u;
        memcpy(&u, &e.f, 4);
        if ((u & 0x1fffu) == 0x1000u)
            u ^= 1u;
        memcpy(&e.f, &u, 4);
    } else {
        e.i = (int64_t)(rng_next() % (uint64_t)c->int_hi);
    }
    return e;
}

static void run_case(const char *dir, const Case *c)
{
    char desc[160], path[1024];
    snprintf(desc, sizeof desc, "%s %s", c->kernel, c->values);
    snprintf(path, sizeof path, "%s/%s.ptx", dir, c->module);
    DualRun r;
    if (!dual_open(&r, ctx, path, c->kernel, desc)) {
        failed++;
        dual_close(&r);
        return;
    }
    bool ok = dual_args(&r, c->values, random_value, (void *)c, desc);
    const Kernel *k = r.k;
    InterpArg *host = r.host;
    tilert_arg *dev = r.dev;
    int n = r.n;
    if (ok) {
        tilert_status s = tilert_launch(r.gk, 0, dev, n);
        if (s != TILERT_OK || !gpu_sync()) {
            printf("FAIL %s: GPU: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
            ok = false;
        } else if (!interp_launch(r.p, r.k, host, n, NULL)) {
            printf("FAIL %s: the interpreter stopped (its error is above)\n", desc);
            ok = false;
        }
    }
    size_t worst_at = 0, bad = 0, checked = 0;
    const char *worst_name = "";
    for (int i = 0; ok && i < k->nparams; i++) {
        const Param *pa = &k->params[i];
        if (!pa->is_tensor)
            continue;
        char *g = malloc(host[i].bytes);
        if (!g || !gpu_download(g, dev[i].v.ptr, host[i].bytes)) {
            ok = false;
            free(g);
            break;
        }
        int es = type_size(pa->type);
        for (size_t j = 0; j < host[i].bytes / (size_t)es; j++) {
            Elem ge = load_elem(pa->type, g + j * es), ce = load_elem(pa->type, (char *)host[i].ptr + j * es);
            checked++;
            if (!same(pa->type, ge, ce, c->rel, c->abs) && !bad++) {
                worst_at = j;
                worst_name = pa->name;
                printf("  %s[%zu]: GPU %.9g, interpreter %.9g\n", pa->name, j,
                       type_is_float(pa->type) ? (double)ge.f : (double)ge.i,
                       type_is_float(pa->type) ? (double)ce.f : (double)ce.i);
            }
        }
        free(g);
    }
    if (ok && !bad) {
        printf("ok %s (%zu elements)\n", desc, checked);
        passed++;
    } else if (ok) {
        printf("FAIL %s: %zu of %zu elements differ, first %s[%zu]\n", desc, bad, checked, worst_name, worst_at);
        failed++;
    } else {
        failed++;
    }
    dual_close(&r);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    int rc = gpu_test_begin(&ctx, "the interpreter against the GPU");
    if (rc >= 0)
        return rc;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(dir, &cases[i]);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
