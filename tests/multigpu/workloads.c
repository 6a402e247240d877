/* workloads.c: one checked launch of an example kernel from any host thread (workloads.h). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layernorm.h"
#include "matmul_f16.h"
#include "matmul_tf32.h"
#include "softmax.h"
#include "vecadd.h"

#include "ref_util.h"
#include "tilert_internal.h"   /* a kernel's module and context, to check where it was loaded */
#include "workloads.h"

const char *const workload_name[W_COUNT] = {
    "vecadd", "softmax", "layernorm", "matmul_f16", "matmul_tf32"
};

static pthread_mutex_t say_lock = PTHREAD_MUTEX_INITIALIZER;

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&say_lock);
    vprintf(fmt, ap);
    fflush(stdout);
    pthread_mutex_unlock(&say_lock);
    va_end(ap);
}

const char *cu_name(CUresult r)
{
    const char *n = NULL;
    return cuGetErrorName(r, &n) == CUDA_SUCCESS && n ? n : "an unknown CUDA error";
}

bool worker_expect(Worker *w, bool ok, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (ok)
        w->passed++;
    else {
        w->failed++;
        say("FAIL %s: %s\n", w->where, what);
    }
    return ok;
}

/* A step on the way to a result: a failure is counted and printed, success is not (the result
 * it leads to is). */
static bool need(Worker *w, bool ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool need(Worker *w, bool ok, const char *fmt, ...)
{
    if (ok)
        return true;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    w->failed++;
    say("FAIL %s: %s\n", w->where, what);
    return false;
}

/* ---------------------------------------------------------------- the thread's generator */

static uint64_t next(Worker *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int pick(Worker *w, int lo, int hi)   /* uniform in [lo, hi] */
{
    return lo + (int)(next(w) % (uint64_t)(hi - lo + 1));
}

static void fill(Worker *w, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)(next(w) >> 40) * (1.0f / 16777216.0f);
}

/* ---------------------------------------------------------------- set-up and tear-down */

bool worker_begin(Worker *w, tilert_context *ctx, int ordinal, const char *where, uint64_t seed)
{
    int passed = w->passed, failed = w->failed;   /* checks made before, kept */
    memset(w, 0, sizeof *w);
    w->passed = passed;
    w->failed = failed;
    snprintf(w->where, sizeof w->where, "%s", where);
    w->ctx = ctx;
    w->ordinal = ordinal;
    w->rng = seed;
    CUresult r = cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING);
    if (!worker_expect(w, r == CUDA_SUCCESS, "cuStreamCreate: %s", cu_name(r)))
        return false;
    CUcontext owner = NULL;
    r = cuStreamGetCtx(w->stream, &owner);
    return worker_expect(w, r == CUDA_SUCCESS && owner == tilert_cu_context(ctx),
                         "the thread's stream is not in its context (%s)", cu_name(r));
}

void worker_end(Worker *w)
{
    worker_unload_modules(w);
    if (w->stream)
        (void)cuStreamDestroy(w->stream);
    w->stream = NULL;
}

bool worker_load_modules(Worker *w, const char *exdir)
{
    bool ok = true;
    for (int i = 0; i < W_COUNT; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.ptx", exdir, workload_name[i]);
        tilert_status s = tilert_load_ptx_file(w->ctx, path, &w->mod[i]);
        ok &= worker_expect(w, s == TILERT_OK, "tilert_load_ptx_file(%s): %s: %s", path,
                            tilert_status_name(s), tilert_last_error());
    }
    return ok;
}

void worker_unload_modules(Worker *w)
{
    for (int i = 0; i < W_COUNT; i++) {
        tilert_unload(w->mod[i]);
        w->mod[i] = NULL;
    }
}

/* ---------------------------------------------------------------- the generated launchers */

const char *launcher_code(Workload wl)
{
    switch (wl) {
    case W_VECADD: return vecadd_code();
    case W_SOFTMAX: return softmax_code();
    case W_LAYERNORM: return layernorm_code();
    case W_MATMUL_F16: return matmul_f16_code();
    default: return matmul_tf32_code();
    }
}

void launcher_unload(Workload wl)
{
    switch (wl) {
    case W_VECADD: vecadd_unload(); break;
    case W_SOFTMAX: softmax_unload(); break;
    case W_LAYERNORM: layernorm_unload(); break;
    case W_MATMUL_F16: matmul_f16_unload(); break;
    default: matmul_tf32_unload(); break;
    }
}

void launcher_unload_context(Workload wl, tilert_context *ctx)
{
    switch (wl) {
    case W_VECADD: vecadd_unload_context(ctx); break;
    case W_SOFTMAX: softmax_unload_context(ctx); break;
    case W_LAYERNORM: layernorm_unload_context(ctx); break;
    case W_MATMUL_F16: matmul_f16_unload_context(ctx); break;
    default: matmul_tf32_unload_context(ctx); break;
    }
}

tilert_status launcher_load(Workload wl, tilert_context *ctx)
{
    switch (wl) {
    case W_VECADD: return vecadd_load(ctx);
    case W_SOFTMAX: return softmax_load(ctx);
    case W_LAYERNORM: return layernorm_load(ctx);
    case W_MATMUL_F16: return matmul_f16_load(ctx);
    default: return matmul_tf32_load(ctx);
    }
}

/* The launchers embed cubins for sm_80 and sm_90a and the sm_80 PTX (multigpu.mk): the cubin
 * of the device's own arch, else the PTX. */
const char *expected_code(int arch)
{
    return arch == 80 ? "cubin sm_80" : arch == 90 ? "cubin sm_90a" : "ptx sm_80 (JIT)";
}

/* The same arguments both ways: the launcher takes them typed. */
static tilert_status launch(Worker *w, Workload wl, Via via, const tilert_arg *a, int na)
{
    if (via == VIA_MODULE) {
        tilert_kernel *k;
        tilert_status s = tilert_get_kernel(w->mod[wl], workload_name[wl], &k);
        if (s != TILERT_OK)
            return s;
        if (!need(w, k->mod->ctx == w->ctx && k->mod->ctx->ctx == tilert_cu_context(w->ctx),
                           "%s's module is not in the thread's context", workload_name[wl]))
            return TILERT_ERR_CUDA;
        return tilert_launch(k, w->stream, a, na);
    }
    CUstream st = w->stream;
    switch (wl) {
    case W_VECADD:
        return vecadd_vecadd_launch(st, a[0].v.ptr, a[1].v.ptr, a[2].v.ptr, a[3].v.f32, a[4].v.i32);
    case W_SOFTMAX:
        return softmax_softmax_launch(st, a[0].v.ptr, a[1].v.ptr, a[2].v.i32, a[3].v.i32);
    case W_LAYERNORM:
        return layernorm_layernorm_launch(st, a[0].v.ptr, a[1].v.ptr, a[2].v.ptr, a[3].v.ptr,
                                          a[4].v.f32, a[5].v.i32, a[6].v.i32);
    case W_MATMUL_F16:
        return matmul_f16_matmul_f16_launch(st, a[0].v.ptr, a[1].v.ptr, a[2].v.ptr, a[3].v.i32,
                                            a[4].v.i32, a[5].v.i32);
    default:
        return matmul_tf32_matmul_tf32_launch(st, a[0].v.ptr, a[1].v.ptr, a[2].v.ptr, a[3].v.i32,
                                              a[4].v.i32, a[5].v.i32);
    }
}

/* ---------------------------------------------------------------- device buffers */

enum { GUARD = 64 };                   /* poisoned words after every buffer */
enum { F32_POISON = 0x7fc0dead, HALF_POISON = 0x7fff7fff };

typedef struct {
    CUdeviceptr p[8];
    size_t words[8];                   /* each one's words, guard included */
    int n;
} Bufs;

/* A buffer of `bytes` plus the guard, all `poison`, then host[0..bytes) over its start (host
 * NULL: nothing); checked to be on w's device and in w's context. Copies and fills go on the
 * thread's stream, ahead of the launch. 0 on failure (counted). */
static CUdeviceptr buffer(Worker *w, Bufs *b, const void *host, size_t bytes, uint32_t poison)
{
    CUdeviceptr p;
    size_t words = (bytes + 3) / 4 + GUARD;
    CUresult r = cuMemAlloc(&p, words * 4);
    if (!need(w, r == CUDA_SUCCESS, "cuMemAlloc(%zu): %s", words * 4, cu_name(r)))
        return 0;
    b->p[b->n] = p;
    b->words[b->n++] = words;
    int ordinal = -1;
    CUcontext owner = NULL;
    CUresult r1 = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    CUresult r2 = cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p);
    if (!need(w, r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && ordinal == w->ordinal &&
                              owner == tilert_cu_context(w->ctx),
                       "a buffer is on device %d (want %d), in context %p (want %p)", ordinal,
                       w->ordinal, (void *)owner, (void *)tilert_cu_context(w->ctx)))
        return 0;
    r = cuMemsetD32Async(p, poison, words, w->stream);
    if (r == CUDA_SUCCESS && host && bytes)
        r = cuMemcpyHtoDAsync(p, host, bytes, w->stream);
    return need(w, r == CUDA_SUCCESS, "filling a buffer: %s", cu_name(r)) ? p : 0;
}

static void free_bufs(Bufs *b)
{
    for (int i = 0; i < b->n; i++)
        (void)cuMemFree(b->p[i]);
    b->n = 0;
}

/* The words of buffer i (guard included) after everything on the stream. */
static uint32_t *read_back(Worker *w, Bufs *b, int i)
{
    uint32_t *h = malloc(b->words[i] * 4);
    if (!h) {
        need(w, false, "out of host memory");
        return NULL;
    }
    CUresult r = cuMemcpyDtoHAsync(h, b->p[i], b->words[i] * 4, w->stream);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(w->stream);
    if (!need(w, r == CUDA_SUCCESS, "reading the output back: %s", cu_name(r))) {
        free(h);
        return NULL;
    }
    return h;
}

/* ---------------------------------------------------------------- checks */

/* n outputs (f32, or f16 when half) in words against ref and bound: none unwritten or NaN, the
 * guard untouched, each within its bound. */
static bool check(Worker *w, const char *desc, const uint32_t *words, bool half, size_t n,
                  const double *ref, const double *bound, size_t cols)
{
    float *x = malloc(n * 4 + 4);
    if (!x)
        return need(w, false, "%s: out of host memory", desc);
    const uint16_t *h = (const uint16_t *)words;
    size_t nan = 0, first = 0, oob = 0;
    for (size_t i = 0; i < n; i++) {
        if (half)
            x[i] = from_f16(h[i]);
        else
            memcpy(&x[i], &words[i], 4);
        if ((isnan(x[i]) || isinf(x[i])) && nan++ == 0)
            first = i;
    }
    size_t first_word = half ? (n + 1) / 2 : n;
    for (size_t i = first_word; i < first_word + GUARD; i++)
        oob += words[i] != (half ? (uint32_t)HALF_POISON : (uint32_t)F32_POISON);
    if (half && n % 2)                 /* the half after the last output, in its word */
        oob += h[n] != 0x7fff;
    BoundCheck c = check_bounds(x, ref, bound, n);
    char text[256];
    bound_text(text, sizeof text, &c, x, ref, bound, cols);
    free(x);
    if (nan)
        return need(w, false, "%s: %zu of %zu outputs NaN or never written (first at %zu)",
                             desc, nan, n, first);
    if (oob)
        return need(w, false, "%s: %zu words written past the end of the output", desc, oob);
    return worker_expect(w, c.bad == 0, "%s: %s", desc, text);
}

/* The launch went through, left the caller's context current, and the stream finished. */
static bool launched(Worker *w, const char *desc, tilert_status s)
{
    CUcontext cur = NULL;
    (void)cuCtxGetCurrent(&cur);
    if (!need(w, s == TILERT_OK, "%s: %s: %s", desc, tilert_status_name(s), tilert_last_error()))
        return false;
    return need(w, cur == tilert_cu_context(w->ctx),
                         "%s: the launch changed the thread's current context", desc);
}

/* ---------------------------------------------------------------- the workloads */

static bool run_vecadd(Worker *w, Via via, const char *desc)
{
    int n = pick(w, 1, 200000);
    float alpha = (float)pick(w, -4, 4) * 0.5f;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    double *ref = malloc((size_t)n * 8), *bound = malloc((size_t)n * 8);
    Bufs b = {0};
    bool ok = false;
    char d[160];
    snprintf(d, sizeof d, "%s N=%d", desc, n);
    if (!x || !y || !ref || !bound) {
        need(w, false, "%s: out of host memory", d);
        goto done;
    }
    fill(w, x, (size_t)n, -1, 1);
    fill(w, y, (size_t)n, -1, 1);
    CUdeviceptr dx, dy, dz;
    if (!(dx = buffer(w, &b, x, (size_t)n * 4, F32_POISON)) ||
        !(dy = buffer(w, &b, y, (size_t)n * 4, F32_POISON)) ||
        !(dz = buffer(w, &b, NULL, (size_t)n * 4, F32_POISON)))
        goto done;
    tilert_arg a[5] = {tilert_ptr(dx), tilert_ptr(dy), tilert_ptr(dz), tilert_f32(alpha), tilert_i32(n)};
    if (!launched(w, d, launch(w, W_VECADD, via, a, 5)))
        goto done;
    ref_vecadd(x, y, alpha, ref, bound, (size_t)n);
    uint32_t *out = read_back(w, &b, 2);
    if (out)
        ok = check(w, d, out, false, (size_t)n, ref, bound, 0);
    free(out);
done:
    (void)cuStreamSynchronize(w->stream);
    free_bufs(&b);
    free(x), free(y), free(ref), free(bound);
    return ok;
}

/* softmax and layernorm: rows of up to 8192 elements (the examples' BN). */
static bool run_rows(Worker *w, Workload wl, Via via, const char *desc)
{
    int rows = pick(w, 1, 40), n = pick(w, 1, 8192);
    size_t sz = (size_t)rows * n;
    bool ln = wl == W_LAYERNORM;
    float *x = malloc(sz * 4), *wt = malloc((size_t)n * 4), *bi = malloc((size_t)n * 4);
    double *ref = malloc(sz * 8), *bound = malloc(sz * 8);
    Bufs b = {0};
    bool ok = false;
    char d[160];
    snprintf(d, sizeof d, "%s R=%d N=%d", desc, rows, n);
    if (!x || !wt || !bi || !ref || !bound) {
        need(w, false, "%s: out of host memory", d);
        goto done;
    }
    fill(w, x, sz, -3, 3);
    fill(w, wt, (size_t)n, -1, 1);
    fill(w, bi, (size_t)n, -1, 1);
    CUdeviceptr dx, dy, dw = 0, db = 0;
    if (!(dx = buffer(w, &b, x, sz * 4, F32_POISON)) ||
        (ln && (!(dw = buffer(w, &b, wt, (size_t)n * 4, F32_POISON)) ||
                !(db = buffer(w, &b, bi, (size_t)n * 4, F32_POISON)))) ||
        !(dy = buffer(w, &b, NULL, sz * 4, F32_POISON)))
        goto done;
    tilert_arg a[7];
    int na = 0;
    a[na++] = tilert_ptr(dx);
    if (ln) {
        a[na++] = tilert_ptr(dw);
        a[na++] = tilert_ptr(db);
    }
    a[na++] = tilert_ptr(dy);
    if (ln)
        a[na++] = tilert_f32(1e-5f);
    a[na++] = tilert_i32(rows);
    a[na++] = tilert_i32(n);
    if (!launched(w, d, launch(w, wl, via, a, na)))
        goto done;
    if (ln)
        ref_layernorm(x, wt, bi, 1e-5f, ref, bound, rows, n);
    else
        ref_softmax(x, ref, bound, rows, n);
    uint32_t *out = read_back(w, &b, b.n - 1);
    if (out)
        ok = check(w, d, out, false, sz, ref, bound, (size_t)n);
    free(out);
done:
    (void)cuStreamSynchronize(w->stream);
    free_bufs(&b);
    free(x), free(wt), free(bi), free(ref), free(bound);
    return ok;
}

/* C = A @ B: f16 operands and output (the f32 accumulation's bound, then the rounding to f16),
 * or f32 operands taken as tf32 and an f32 output. Sizes keep the examples' assumes (K and N
 * multiples of 8 for f16, of 4 for tf32). */
static bool run_matmul(Worker *w, Workload wl, Via via, const char *desc)
{
    bool f16 = wl == W_MATMUL_F16;
    int q = f16 ? 8 : 4;
    int m = pick(w, 1, 300), n = q * pick(w, 1, 280 / q * 2), k = q * pick(w, 1, 320 / q);
    if (w->products++ % 8 == 1)
        k = 0;
    size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    float *ha = malloc(sa * 4 + 4), *hb = malloc(sb * 4 + 4);
    float *am = malloc(sa * 4 + 4), *ar = malloc(sa * 4 + 4), *bm = malloc(sb * 4 + 4), *br = malloc(sb * 4 + 4);
    uint16_t *h16a = malloc(sa * 2 + 2), *h16b = malloc(sb * 2 + 2);
    double *ref = malloc(sc * 8 + 8), *bound = malloc(sc * 8 + 8);
    Bufs b = {0};
    bool ok = false;
    char d[160];
    snprintf(d, sizeof d, "%s M=%d N=%d K=%d", desc, m, n, k);
    if (!ha || !hb || !am || !ar || !bm || !br || !h16a || !h16b || !ref || !bound) {
        need(w, false, "%s: out of host memory", d);
        goto done;
    }
    fill(w, ha, sa, -1, 1);
    fill(w, hb, sb, -1, 1);
    CUdeviceptr da, db, dc;
    if (f16) {
        /* the reference reads the operands as the device does: rounded to f16 */
        for (size_t i = 0; i < sa; i++)
            ha[i] = from_f16(h16a[i] = to_f16(ha[i]));
        for (size_t i = 0; i < sb; i++)
            hb[i] = from_f16(h16b[i] = to_f16(hb[i]));
        da = buffer(w, &b, h16a, sa * 2, HALF_POISON);
        db = da ? buffer(w, &b, h16b, sb * 2, HALF_POISON) : 0;
    } else {
        da = buffer(w, &b, ha, sa * 4, F32_POISON);
        db = da ? buffer(w, &b, hb, sb * 4, F32_POISON) : 0;
    }
    if (!da || !db || !(dc = buffer(w, &b, NULL, sc * (f16 ? 2 : 4), f16 ? HALF_POISON : F32_POISON)))
        goto done;
    tilert_arg a[6] = {tilert_ptr(da), tilert_ptr(db), tilert_ptr(dc), tilert_i32(m), tilert_i32(k), tilert_i32(n)};
    if (!launched(w, d, launch(w, wl, via, a, 6)))
        goto done;
    if (f16) {
        ref_matmul_bound(ha, NULL, hb, NULL, ref, bound, m, n, k, SUM_TENSOR);
        bound_store(ref, bound, sc, U_F16, 0x1p-25);
    } else {
        for (size_t i = 0; i < sa; i++)
            tf32_operand(ha[i], &am[i], &ar[i]);
        for (size_t i = 0; i < sb; i++)
            tf32_operand(hb[i], &bm[i], &br[i]);
        ref_matmul_bound(am, ar, bm, br, ref, bound, m, n, k, SUM_TENSOR);
    }
    uint32_t *out = read_back(w, &b, 2);
    if (out)
        ok = check(w, d, out, f16, sc, ref, bound, (size_t)n);
    /* A TMA copy from an empty operand reads the context's zero buffer: it must be this
     * context's, on this device. */
    if (ok && k == 0 && via == VIA_MODULE && w->ctx->zero_buffer) {
        int ordinal = -1;
        CUcontext owner = NULL;
        CUresult r1 = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, w->ctx->zero_buffer);
        CUresult r2 = cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, w->ctx->zero_buffer);
        ok = worker_expect(w, r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && ordinal == w->ordinal &&
                                  owner == tilert_cu_context(w->ctx),
                           "%s: the zero buffer for empty tensor maps is on device %d, context %p",
                           d, ordinal, (void *)owner);
    }
    free(out);
done:
    (void)cuStreamSynchronize(w->stream);
    free_bufs(&b);
    free(ha), free(hb), free(am), free(ar), free(bm), free(br), free(h16a), free(h16b);
    free(ref), free(bound);
    return ok;
}

bool run_workload(Worker *w, Workload wl, Via via)
{
    char desc[128];
    snprintf(desc, sizeof desc, "%s %s", workload_name[wl],
             via == VIA_MODULE ? "(module from PTX file)" : "(generated launcher)");
    switch (wl) {
    case W_VECADD: return run_vecadd(w, via, desc);
    case W_SOFTMAX:
    case W_LAYERNORM: return run_rows(w, wl, via, desc);
    default: return run_matmul(w, wl, via, desc);
    }
}
