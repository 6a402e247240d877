/* pipeline.c: the matmul unpipelined and pipelined at S = 1, 2, 3, 4 stages against a CPU reference, at trip
 * counts that are zero, one, smaller than S, and not multiples of the tile. Inputs are fresh
 * random values; outputs are poisoned first, so every element must be written, and each must be
 * within its error bound of IEEE FFMA (ref_util.h; K = 0: exactly 0). TILEC_TEST_SMALL: fewer
 * sizes, the same trip counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_util.h"
#include "ref_util.h"

static int passed, failed;

static void run_case(tilert_kernel *k, int stages, int m, int n, int kk)
{
    char desc[128];
    snprintf(desc, sizeof desc, "matmul_f32 pipeline(%d) M=%d N=%d K=%d (%d k-steps)", stages, m, n, kk, (kk + 7) / 8);
    size_t sa = (size_t)m * kk, sb = (size_t)kk * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4), *hc = malloc(sc * 4 + 4);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    CUdeviceptr da = 0, db = 0, dc = 0;
    bool ok = ha && hb && hc && ref && bound;
    if (ok) {
        rng_fill(ha, sa, -1, 1);
        rng_fill(hb, sb, -1, 1);
        ref_matmul_bound(ha, NULL, hb, NULL, ref, bound, m, n, kk, SUM_FMA);
        ok = gpu_alloc(&da, sa * 4 + 16) && gpu_alloc(&db, sb * 4 + 16) && gpu_alloc(&dc, sc * 4 + 16) &&
             (!sa || gpu_upload(da, ha, sa * 4)) && (!sb || gpu_upload(db, hb, sb * 4)) &&
             gpu_fill32(dc, 0x7fc00001u, sc);   /* NaN: anything left unwritten shows */
    }
    if (!ok) {
        printf("FAIL %s: setup\n", desc);
        failed++;
        goto done;
    }
    tilert_arg a[] = { tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(kk), tilert_i32(n) };
    fflush(stdout);
    tilert_status s = tilert_launch(k, 0, a, 6);
    if (s != TILERT_OK || !gpu_sync() || !gpu_download(hc, dc, sc * 4)) {
        printf("FAIL %s: launch: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    /* K = 0: all bounds 0, C must be 0 */
    report_outputs(desc, hc, ref, bound, sc, (size_t)n) ? passed++ : failed++;
done:
    gpu_free(da);
    gpu_free(db);
    gpu_free(dc);
    free(ha), free(hb), free(hc), free(ref), free(bound);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    int only = argc > 2 ? atoi(argv[2]) : -1;   /* one stage count, for a debugger */
    tilert_context *ctx = NULL;
    int rc = gpu_test_begin(&ctx, "pipelined matmul");
    if (rc >= 0)
        return rc;
    /* K = 0 (no iteration), 8 (one), 16 (two: fewer than S = 3, 4), 24, 100 (ragged), 1000;
       small: all but 1000, on one tile (128 x 128) and on less and more than one */
    bool small = test_small();
    static const int ks[] = { 0, 8, 16, 24, 100, 1000 };
    static const int mn[][2] = { { 1, 4 }, { 129, 100 }, { 256, 256 }, { 200, 132 } };
    static const int mn_small[][2] = { { 1, 4 }, { 128, 128 }, { 129, 100 } };
    for (int stages = 0; stages <= 4; stages++) {   /* 0: the unpipelined loop */
        if (only >= 0 && stages != only)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/pipeline/matmul_f32_s%d.ptx", dir, stages);
        tilert_module *mod;
        tilert_kernel *k;
        if (tilert_load_ptx_file(ctx, path, &mod) != TILERT_OK || tilert_get_kernel(mod, "matmul_f32", &k) != TILERT_OK) {
            printf("FAIL load %s: %s\n", path, tilert_last_error());
            failed++;
            continue;
        }
        size_t nks = sizeof ks / sizeof *ks - (small ? 1 : 0);
        size_t nmn = small ? sizeof mn_small / sizeof *mn_small : sizeof mn / sizeof *mn;
        for (size_t i = 0; i < nks; i++)
            for (size_t j = 0; j < nmn; j++)
                run_case(k, stages, small ? mn_small[j][0] : mn[j][0], small ? mn_small[j][1] : mn[j][1], ks[i]);
        tilert_unload(mod);
    }
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
