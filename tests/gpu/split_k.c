/* split_k.c: products whose K loop the launcher splits over blocks (tests/gpu/kernels/split_k.tile,
 * compiler/lower_split.c). Each kernel runs at few rows, where the launcher splits by itself, and
 * with the slices forced through TILERT_SPLIT (2, 3 and 16 -- 8 where a tile's slices are one
 * cluster: slices of uneven length, and more slices than a short loop has iterations, so that
 * some are empty). Operands are small integers
 * (-1, 0, 1): every sum is an integer the f32 and i32 accumulators hold exactly in any order, so
 * the outputs must equal the reference bit for bit, whatever the slices; the gated kernel's
 * exp() is the hardware's approximation, checked within 2^-17 relative. Outputs are poisoned
 * before each launch and every element is checked; each case runs twice in a row on one stream
 * (the tile counters must be back at zero after the first) and once on a stream of its own. The
 * module is built for sm_80 (mma.sync, the tree's sum), sm_90 (mma.sync, the cluster's) and sm_90a
 * (wgmma, TMA, the cluster's); each the GPU can load is run.
 * sk_rows's epilogue (row sums) keeps the tree's sum on sm_90a, where the others take the
 * cluster's; sk_atomic's adds its tile into C (ones before the launch) by atomics, which must
 * happen once an element whatever the slices. TILEC_TEST_SMALL: fewer sizes. Usage: split_k EXAMPLES_DIR */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "ref_util.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

static int passed, failed;

typedef enum { SK_F16, SK_F32_NT, SK_GATED, SK_I8, SK_ROWS, SK_ATOMIC, SK_COUNT } Kind;
static const char *const kname[SK_COUNT] = { "sk_f16", "sk_f32_nt", "sk_gated", "sk_i8", "sk_rows", "sk_atomic" };

static void small_ints(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(rng_next() % 3) - 1);
}

/* n values as `bytes`-wide device elements: 1 (i8), 2 (f16, or bf16 when bf), 4 (f32). */
static CUdeviceptr upload(const float *x, size_t n, int bytes, bool bf)
{
    unsigned char *h = malloc(n * 4 + 16);
    for (size_t i = 0; i < n; i++) {
        if (bytes == 4)
            memcpy(h + 4 * i, &x[i], 4);
        else if (bytes == 2) {
            uint16_t v = bf ? to_bf16(x[i]) : to_f16(x[i]);
            memcpy(h + 2 * i, &v, 2);
        } else
            h[i] = (unsigned char)(signed char)x[i];
    }
    CUdeviceptr d = 0;
    if (!gpu_alloc(&d, n * (size_t)bytes + 16) || !gpu_upload(d, h, n * (size_t)bytes))
        d = 0;
    free(h);
    return d;
}

typedef struct {
    Kind kind;
    int m, n, k;
    float *a, *b, *b2, *bias;      /* b stored as the kernel reads it ([N, K] for sk_f32_nt) */
    double *ref;                   /* the exact products (and the gated one's second) */
    double *ref2;
    CUdeviceptr da, db, db2, dbias, dc, dr;
    size_t out_bytes;
    int tiles_n;                   /* sk_rows: R's columns, one a 128-column tile */
} Case;

static double dot(const Case *c, const float *b, int i, int j)
{
    double s = 0;
    for (int t = 0; t < c->k; t++)
        s += (double)c->a[(size_t)i * c->k + t] *
             (c->kind == SK_F32_NT ? b[(size_t)j * c->k + t] : b[(size_t)t * c->n + j]);
    return s;
}

static bool setup(Case *c)
{
    size_t sa = (size_t)c->m * c->k, sb = (size_t)c->k * c->n, mn = (size_t)c->m * c->n;
    c->a = malloc(sa * 4 + 4), c->b = malloc(sb * 4 + 4), c->b2 = malloc(sb * 4 + 4);
    c->bias = malloc((size_t)c->n * 4 + 4);
    c->ref = malloc(mn * 8 + 8), c->ref2 = malloc(mn * 8 + 8);
    small_ints(c->a, sa);
    small_ints(c->b, sb);
    small_ints(c->b2, sb);
    small_ints(c->bias, (size_t)c->n);
    for (int i = 0; i < c->m; i++)
        for (int j = 0; j < c->n; j++) {
            c->ref[(size_t)i * c->n + j] = dot(c, c->b, i, j);
            if (c->kind == SK_GATED)
                c->ref2[(size_t)i * c->n + j] = dot(c, c->b2, i, j);
        }
    int in = c->kind == SK_F32_NT ? 4 : c->kind == SK_I8 ? 1 : 2;
    bool bf = c->kind == SK_GATED;
    c->da = upload(c->a, sa, in, bf);
    c->db = upload(c->b, sb, in, bf);
    c->db2 = c->kind == SK_GATED ? upload(c->b2, sb, in, bf) : 0;
    c->dbias = c->kind == SK_F16 ? upload(c->bias, (size_t)c->n, 4, false) : 0;
    c->out_bytes = mn * (c->kind == SK_F16 ? 2 : 4);
    c->tiles_n = (c->n + 127) / 128;
    return c->da && c->db && (c->kind != SK_GATED || c->db2) && (c->kind != SK_F16 || c->dbias) &&
           gpu_alloc(&c->dc, c->out_bytes + 16) &&
           (c->kind != SK_ROWS || gpu_alloc(&c->dr, (size_t)c->m * c->tiles_n * 4 + 16));
}

static void teardown(Case *c)
{
    gpu_free(c->da), gpu_free(c->db), gpu_free(c->db2), gpu_free(c->dbias), gpu_free(c->dc), gpu_free(c->dr);
    free(c->a), free(c->b), free(c->b2), free(c->bias), free(c->ref), free(c->ref2);
}

/* Element e of the output as the kernel must have written it; false where it is wrong. */
static bool check_one(const Case *c, const unsigned char *out, size_t e)
{
    double r = c->ref[e];
    switch (c->kind) {
    case SK_F16: {
        uint16_t got, want = to_f16(fmaxf((float)r + c->bias[e % (size_t)c->n], 0.0f));
        memcpy(&got, out + 2 * e, 2);
        return got == want;
    }
    case SK_I8: {
        int32_t got;
        memcpy(&got, out + 4 * e, 4);
        return got == (int32_t)r;
    }
    case SK_F32_NT: case SK_ROWS: case SK_ATOMIC: {
        float got;
        memcpy(&got, out + 4 * e, 4);
        return got == (float)(r + (c->kind == SK_ATOMIC));     /* sk_atomic adds into ones */
    }
    default: {
        float got;
        memcpy(&got, out + 4 * e, 4);
        double u = c->ref2[e], want = r / (1.0 + exp(-r)) * u;
        return fabs(got - want) <= ldexp(fabs(want), -17) + 1e-30 && got == got;
    }
    }
}

/* sk_rows's row sums: R[i, t] is the sum of row i of C over tile t's columns, exact (integers
 * under 2^24). The number of wrong ones; *first the first. */
static size_t check_rows(const Case *c, const float *r, size_t *first)
{
    size_t bad = 0;
    for (int i = 0; i < c->m; i++)
        for (int t = 0; t < c->tiles_n; t++) {
            double want = 0;
            for (int j = t * 128; j < c->n && j < t * 128 + 128; j++)
                want += c->ref[(size_t)i * c->n + j];
            if (r[(size_t)i * c->tiles_n + t] != (float)want && !bad++)
                *first = (size_t)i * c->tiles_n + t;
        }
    return bad;
}

static void run(tilert_module *mod, const char *arch, Case *c, int split, CUstream stream, int round)
{
    char desc[200];
    snprintf(desc, sizeof desc, "%s %s M=%d N=%d K=%d split=%s%.0d%s%s", arch, kname[c->kind], c->m, c->n,
             c->k, split ? "" : "auto", split, stream ? " (own stream)" : "", round ? " (again)" : "");
    char env[16];
    snprintf(env, sizeof env, "%d", split);
    if (split)
        setenv("TILERT_SPLIT", env, 1);
    else
        unsetenv("TILERT_SPLIT");
    tilert_kernel *k = NULL;
    unsigned char *out = malloc(c->out_bytes + 4);
    tilert_arg args[8];
    int na = 0;
    args[na++] = tilert_ptr(c->da);
    args[na++] = tilert_ptr(c->db);
    if (c->kind == SK_GATED)
        args[na++] = tilert_ptr(c->db2);
    if (c->kind == SK_F16)
        args[na++] = tilert_ptr(c->dbias);
    args[na++] = tilert_ptr(c->dc);
    if (c->kind == SK_ROWS)
        args[na++] = tilert_ptr(c->dr);
    args[na++] = tilert_i32(c->m);
    args[na++] = tilert_i32(c->k);
    args[na++] = tilert_i32(c->n);
    if (c->kind == SK_ROWS)
        args[na++] = tilert_i32(c->tiles_n);
    size_t nr = c->kind == SK_ROWS ? (size_t)c->m * c->tiles_n : 0;
    float *rows = malloc(nr * 4 + 4);
    tilert_status s = TILERT_OK;
    if (!rows || !gpu_fill32(c->dc, c->kind == SK_ATOMIC ? 0x3f800000u : GPU_POISON, (c->out_bytes + 3) / 4) || (nr && !gpu_fill32(c->dr, GPU_POISON, nr)) ||
        tilert_get_kernel(mod, kname[c->kind], &k) || (s = tilert_launch(k, stream, args, na)) ||
        !gpu_check(cuStreamSynchronize(stream), "sync") || !gpu_download(out, c->dc, c->out_bytes) ||
        (nr && !gpu_download(rows, c->dr, nr * 4))) {
        printf("FAIL %s: %s %s\n", desc, tilert_status_name(s), tilert_last_error());
        failed++;
        free(out);
        free(rows);
        return;
    }
    size_t bad = 0, first = 0, n = (size_t)c->m * c->n;
    for (size_t e = 0; e < n; e++)
        if (!check_one(c, out, e) && !bad++)
            first = e;
    size_t rfirst = 0, rbad = nr ? check_rows(c, rows, &rfirst) : 0;
    if (bad) {
        printf("FAIL %s: %zu of %zu elements wrong, the first (%zu, %zu)\n", desc, bad, n, first / (size_t)c->n,
               first % (size_t)c->n);
        failed++;
    } else if (rbad) {
        printf("FAIL %s: %zu of %zu row sums wrong, the first (%zu, %zu)\n", desc, rbad, nr,
               rfirst / (size_t)c->tiles_n, rfirst % (size_t)c->tiles_n);
        failed++;
    } else {
        printf("ok %s\n", desc);
        passed++;
    }
    free(out);
    free(rows);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: split_k EXAMPLES_DIR\n");
        return 2;
    }
    tilert_context *ctx;
    int rc = gpu_test_begin(&ctx, "K loops split over blocks");
    if (rc >= 0)
        return rc;
    /* M, N, K: few rows (the launcher splits by itself), a loop of two iterations (sixteen
       slices leave most empty), sizes no tile divides, K not a multiple of 8 (the loop's
       unaligned version), tile counts that grow from one case to the next, and last a grid whose
       sixteen forced slices outnumber the blocks the GPU runs at once (the stream's workspace
       made anew, larger; blocks waiting for a pair's first that has arrived) */
    static const int mnk[][3] = {
        { 1, 136, 72 }, { 100, 256, 1000 }, { 16, 1024, 4096 }, { 128, 384, 2112 }, { 200, 136, 1536 },
        { 16, 4096, 1024 },
    };
    static const int splits[] = { 0, 2, 3, 16 };
    size_t nsizes = test_small() ? 2 : COUNT(mnk), nsplits = test_small() ? 2 : COUNT(splits);
    CUstream own = NULL;
    if (!gpu_check(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    static const char *const archs[] = { "sm_80", "sm_90", "sm_90a" };
    for (size_t ai = 0; ai < COUNT(archs); ai++) {
        if (strncmp(archs[ai], "sm_90", 5) == 0 && tilert_device_arch(ctx) != 90)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/split_k/split_k_%s.ptx", argv[1], archs[ai]);
        tilert_module *mod;
        if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK) {
            printf("FAIL load %s: %s\n", path, tilert_last_error());
            failed++;
            continue;
        }
        for (int kind = 0; kind < SK_COUNT; kind++)
            for (size_t i = 0; i < nsizes; i++) {
                int kk = mnk[i][2];
                if (kind == SK_I8)
                    kk = (kk + 15) / 16 * 16;     /* its assume(K % 16 == 0) */
                Case c;
                memset(&c, 0, sizeof c);
                c.kind = (Kind)kind, c.m = mnk[i][0], c.n = mnk[i][1], c.k = kk;
                if (!setup(&c)) {
                    printf("FAIL %s %s: setup\n", archs[ai], kname[kind]);
                    failed++;
                    teardown(&c);
                    continue;
                }
                for (size_t j = 0; j < nsplits; j++) {
                    run(mod, archs[ai], &c, splits[j], NULL, 0);
                    run(mod, archs[ai], &c, splits[j], NULL, 1);
                    run(mod, archs[ai], &c, splits[j], own, 0);
                }
                teardown(&c);
            }
        tilert_unload(mod);
    }
    unsetenv("TILERT_SPLIT");
    cuStreamDestroy(own);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
