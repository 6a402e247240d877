/* lse_bwd_util.c: the K_LSE_BWD kind -- examples/lse_bwd.tile against the same computation in
 * CUDA C++ (bench/lse_bwd_ref.cu), which the Makefile builds with nvcc into
 * build/bench/lse_bwd_ref.cubin next to this program. Without that cubin the rows are skipped.
 *
 * Workload sizes: m images, n pixels each (16 x 16), k output channels; 1152 product channels,
 * which with patches are 128 image channels x 9 taps. Buffers per set: GO, O [m, k, n], X (the
 * unfolded input [m, 1152, n], or the image [m, 128, n]), W, Bi [k, 1152], DX like X; the
 * reference's DX in ref[s][0]. */
#define _XOPEN_SOURCE 700   /* readlink */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"

enum { PCH = 1152, TAPS = 9, IMG_W = 16, SAMPLES = 4096 };

enum { L_GO, L_O, L_X, L_W, L_BI, L_DX };

static CUmodule ref_mod;
static CUfunction ref_fn[2];
static int ref_regs[2] = { -1, -1 };
static bool ref_tried;

/* The cubin next to the running program. */
static bool load_ref(void)
{
    if (ref_tried)
        return ref_fn[0] != NULL;
    ref_tried = true;
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return false;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    strcpy(slash ? slash + 1 : path, "lse_bwd_ref.cubin");
    if (cuModuleLoad(&ref_mod, path) != CUDA_SUCCESS) {
        fprintf(stderr, "bench: lse_bwd: no reference %s (made by `make bench` with nvcc)\n", path);
        return false;
    }
    const char *names[2] = { "lse_bwd_plain", "lse_bwd_patches" };
    for (int i = 0; i < 2; i++) {
        if (!cu_ok(cuModuleGetFunction(&ref_fn[i], ref_mod, names[i]), names[i])) {
            ref_fn[0] = NULL;
            return false;
        }
        cuFuncGetAttribute(&ref_regs[i], CU_FUNC_ATTRIBUTE_NUM_REGS, ref_fn[i]);
    }
    return true;
}

static size_t x_elems(const Workload *w) { return (size_t)w->m * (w->patches ? PCH / TAPS : PCH) * (size_t)w->n; }
static size_t o_elems(const Workload *w) { return (size_t)w->m * (size_t)w->k * (size_t)w->n; }

size_t lse_set_bytes(const Workload *w)
{
    return 4 * (2 * o_elems(w) + 3 * x_elems(w) + 2 * (size_t)w->k * PCH);
}

bool lse_setup(Run *r)
{
    const Workload *w = r->w;
    if (!load_ref())
        return false;
    size_t no = o_elems(w), nx = x_elems(w), nw = (size_t)w->k * PCH;
    for (int s = 0; s < r->nsets; s++) {
        CUdeviceptr *b = r->buf[s];
        bool keep = s == 0;
        if (!dalloc(&b[L_GO], 4 * no) || !dalloc(&b[L_O], 4 * no) || !dalloc(&b[L_X], 4 * nx)
            || !dalloc(&b[L_W], 4 * nw) || !dalloc(&b[L_BI], 4 * nw) || !dalloc(&b[L_DX], 4 * nx)
            || !dalloc(&r->ref[s][0], 4 * nx)
            || !fill_random(b[L_GO], no, DT_F32, 500 + 8 * s, -1, 1, keep ? &r->host[L_GO] : NULL)
            || !fill_random(b[L_O], no, DT_F32, 501 + 8 * s, 0, 2, keep ? &r->host[L_O] : NULL)
            || !fill_random(b[L_X], nx, DT_F32, 502 + 8 * s, -1, 1, keep ? &r->host[L_X] : NULL)
            || !fill_random(b[L_W], nw, DT_F32, 503 + 8 * s, -1, 1, keep ? &r->host[L_W] : NULL)
            || !fill_random(b[L_BI], nw, DT_F32, 504 + 8 * s, -1, 1, keep ? &r->host[L_BI] : NULL))
            return false;
    }
    return true;
}

/* GO O X W Bi DX [IW] B CO HW CI: the parameters, then the sizes by first appearance. */
int lse_args(Run *r, int s, tilert_arg *a)
{
    const Workload *w = r->w;
    int i = 0;
    for (int b = L_GO; b <= L_DX; b++)
        a[i++] = tilert_ptr(r->buf[s][b]);
    if (w->patches)
        a[i++] = tilert_i32(IMG_W);
    a[i++] = tilert_i32((int32_t)w->m);
    a[i++] = tilert_i32((int32_t)w->k);
    a[i++] = tilert_i32((int32_t)w->n);
    a[i++] = tilert_i32(w->patches ? PCH / TAPS : PCH);
    return i;
}

/* The convolution variant adds into DX: both outputs start from zero (untimed). */
bool lse_before(Run *r, int s)
{
    if (!r->w->patches)
        return true;
    size_t nx = x_elems(r->w);
    return cu_ok(cuMemsetD32Async(r->buf[s][L_DX], 0, nx, r->stream), "cuMemsetD32Async")
           && cu_ok(cuMemsetD32Async(r->ref[s][0], 0, nx, r->stream), "cuMemsetD32Async");
}

bool lse_ref(Run *r, int s)
{
    const Workload *w = r->w;
    CUdeviceptr *b = r->buf[s];
    int B = (int)w->m, CO = (int)w->k, C = PCH, HW = (int)w->n, H = HW / IMG_W, W = IMG_W;
    void *p[12] = { &b[L_GO], &b[L_O], &b[L_X], &b[L_W], &b[L_BI], &r->ref[s][0], &B, &CO, &C, &HW, &H, &W };
    unsigned gx = (unsigned)(((int64_t)B * HW + 63) / 64), gy = (unsigned)((C + 63) / 64);
    return cu_ok(cuLaunchKernel(ref_fn[w->patches], gx, gy, 1, 16, 16, 1, 0, r->stream, p, NULL),
                 "the nvcc reference");
}

/* Element (b, c, p) of the result in double, with the sum of its terms' magnitudes. With patches
 * c is an image channel and the sum runs over the taps that read pixel p. */
static double lse_exact(Run *r, int b, int c, int p, double *mag)
{
    const Workload *w = r->w;
    int CO = (int)w->k, HW = (int)w->n, H = HW / IMG_W;
    const float *go = r->host[L_GO], *o = r->host[L_O], *x = r->host[L_X], *wt = r->host[L_W], *bi = r->host[L_BI];
    int C = w->patches ? PCH / TAPS : PCH;
    double sum = 0;
    *mag = 0;
    for (int t = 0; t < (w->patches ? TAPS : 1); t++) {
        int q = p, pc = c;                 /* the position whose product channel pc reads (b, c, p) */
        if (w->patches) {
            int dh = t / 3 - 1, dw = t % 3 - 1, h = p / IMG_W - dh, ww = p % IMG_W - dw;
            if (h < 0 || h >= H || ww < 0 || ww >= IMG_W)
                continue;
            q = h * IMG_W + ww;
            pc = c * TAPS + t;
        }
        double xv = x[((size_t)b * C + c) * HW + p];
        for (int k = 0; k < CO; k++) {
            size_t oi = ((size_t)b * CO + k) * HW + q;
            double wv = wt[(size_t)k * PCH + pc];
            double term = go[oi] * exp2(wv * xv + bi[(size_t)k * PCH + pc] - o[oi]) * wv;
            sum += term;
            *mag += fabs(term);
        }
    }
    return sum;
}

/* Set 0 after one tilec launch: runs the reference too, then checks both at SAMPLES elements
 * against double. Each term carries exp2's 2 ulp and a few roundings, the sum of CO (x 9 taps)
 * of them one rounding per addition: the limit is (terms + 8) 2^-23 of the magnitudes. */
bool lse_check(Run *r, char *msg, size_t len)
{
    const Workload *w = r->w;
    size_t nx = x_elems(w);
    if (w->patches && !cu_ok(cuMemsetD32Async(r->ref[0][0], 0, nx, r->stream), "cuMemsetD32Async"))
        return false;
    if (!lse_ref(r, 0) || !cu_ok(cuStreamSynchronize(r->stream), "the reference"))
        return false;
    float *got = download(r->buf[0][L_DX], nx, DT_F32), *ref = download(r->ref[0][0], nx, DT_F32);
    double worst[2] = { 0, 0 };
    bool ok = got && ref;
    int C = w->patches ? PCH / TAPS : PCH, HW = (int)w->n;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int i = 0; ok && i < SAMPLES; i++) {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
        size_t e = (size_t)((s * 0x2545f4914f6cdd1du) % nx);
        int p = (int)(e % (size_t)HW), c = (int)(e / (size_t)HW % (size_t)C), b = (int)(e / ((size_t)HW * C));
        double mag, want = lse_exact(r, b, c, p, &mag);
        double lim = (w->k * (w->patches ? TAPS : 1) + 8) * 0x1p-23 * mag + 1e-30;
        double v[2] = { got[e], ref[e] };
        for (int j = 0; j < 2; j++) {
            double q = fabs(v[j] - want) / lim;
            worst[j] = isnan(q) ? INFINITY : q > worst[j] ? q : worst[j];
        }
    }
    free(got);
    free(ref);
    if (!ok)
        return false;
    snprintf(msg, len, "%d samples: tilec %.2f, nvcc %.2f of the limit", SAMPLES, worst[0], worst[1]);
    return worst[0] <= 1 && worst[1] <= 1;
}

void lse_describe(const Workload *w, char *size, size_t len, char *ref, size_t rlen)
{
    snprintf(size, len, "%s B%lld", w->patches ? "patches" : "plain", (long long)w->m);
    load_ref();
    snprintf(ref, rlen, "nvcc, %d regs", ref_regs[w->patches]);
}

/* Per term a multiply-add, a subtraction, exp2 and two multiplies (as the FLOP count: 6). */
double lse_work(const Workload *w)
{
    return 6.0 * (double)w->m * (double)w->n * PCH * (double)w->k;
}
