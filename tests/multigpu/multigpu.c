/* multigpu.c: libtilert inside a multi-GPU program (`make check-multigpu EXDIR`).
 *
 * The cases, each over the kernels of workloads.h run both through their generated launchers
 * and through modules loaded from the compiled examples, on fresh random inputs, every result
 * checked against the CPU and every buffer checked to be on the thread's device and context:
 *
 *   devices      one host thread per visible GPU, all launching at once, each on its device's
 *                primary context and its own stream; the launchers must pick the code for
 *                each device (cubin of its arch, else the PTX)
 *   one context  many threads launching on one context: the launchers' first load raced by
 *                all of them, one module's kernels (and their shared-memory attribute) shared
 *   two contexts the primary context and one the program made (cuCtxCreate, tilert_attach)
 *                on one device, used at once; launchers refuse the non-primary one
 *   unload       a module unloaded and loaded again, over and over, in one context (another
 *                device's, or with one GPU another context of the same device) while a thread
 *                keeps launching in another; the same with the launchers' per-context unload
 *                across devices (needs two GPUs, else skipped); a second handle on a primary
 *                context released while the first keeps launching
 *   no context   a thread with no current context: launchers run in the context of the last
 *                explicit load (the last device), and the thread is left with no context
 *
 * Memory is never shared between devices and peer access is never enabled, so a kernel that
 * ran on any device but its buffers' would fault rather than pass. Without a GPU: skipped.
 * Ends with `N passed, M failed[, K skipped]`. MULTIGPU_ROUNDS (default 3) sets how many
 * times each thread runs each kernel each way; TILEC_TEST_SEED repeats a run. */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref_util.h"
#include "vecadd.h"
#include "workloads.h"

enum { MAX_DEV = 16, ONE_CONTEXT_THREADS = 8, UNLOAD_CYCLES = 8 };

static const char *exdir = "build/examples";
static uint64_t seed;
static int rounds = 3;
static int ndev;
static int arch_of[MAX_DEV];
static int passed, failed, skipped;

/* A case's verdict from its workers (run on the main thread after the joins). */
static void verdict(const char *name, Worker *ws, int n)
{
    int p = 0, f = 0;
    for (int i = 0; i < n; i++)
        p += ws[i].passed, f += ws[i].failed;
    passed += p;
    failed += f;
    say("%s %s: %d checks passed, %d failed\n", f ? "FAIL" : "ok", name, p, f);
}

static void run_all(Worker *w, bool launchers)
{
    for (int r = 0; r < rounds; r++)
        for (int wl = 0; wl < W_COUNT; wl++) {
            run_workload(w, (Workload)wl, VIA_MODULE);
            if (launchers)
                run_workload(w, (Workload)wl, VIA_LAUNCHER);
        }
}

/* Every launcher's code in the context current on this thread is what device arch calls for. */
static void check_codes(Worker *w, int arch)
{
    for (int wl = 0; wl < W_COUNT; wl++)
        worker_expect(w, !strcmp(launcher_code((Workload)wl), expected_code(arch)),
                      "%s's launcher runs \"%s\" here, want \"%s\"", workload_name[wl],
                      launcher_code((Workload)wl), expected_code(arch));
}

/* A thread's start: ctx made current on it and w begun there, failures counted in w. */
static bool thread_begin(Worker *w, tilert_context *ctx, int dev, const char *where, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    snprintf(w->where, sizeof w->where, "%s", where);
    return worker_expect(w, cuCtxSetCurrent(tilert_cu_context(ctx)) == CUDA_SUCCESS, "cuCtxSetCurrent") &&
           worker_begin(w, ctx, dev, where, seed);
}

/* Its end: its stream and modules gone, no context left current. */
static void thread_end(Worker *w)
{
    worker_end(w);
    (void)cuCtxSetCurrent(NULL);
}

/* ---------------------------------------------------------------- devices */

typedef struct {
    int dev;
    Worker w;
    pthread_barrier_t *start;
} DevJob;

static void *device_thread(void *arg)
{
    DevJob *j = arg;
    Worker *w = &j->w;
    tilert_context *ctx = NULL;
    char where[64];
    snprintf(where, sizeof where, "device %d", j->dev);
    bool ok;
    if (tilert_init(j->dev, &ctx) == TILERT_OK) {
        ok = thread_begin(w, ctx, j->dev, where, seed + 1000 * (uint64_t)j->dev);
    } else {
        memset(w, 0, sizeof *w);
        snprintf(w->where, sizeof w->where, "%s", where);
        ok = worker_expect(w, false, "tilert_init(%d): %s", j->dev, tilert_last_error());
    }
    ok = ok && worker_expect(w, tilert_device_arch(ctx) == arch_of[j->dev],
                             "tilert_device_arch is %d, the device is sm_%d",
                             tilert_device_arch(ctx), arch_of[j->dev]);
    ok = ok && worker_load_modules(w, exdir);
    pthread_barrier_wait(j->start);   /* every device launches at once */
    if (ok) {
        run_all(w, true);
        check_codes(w, arch_of[j->dev]);
    }
    thread_end(w);
    tilert_release(ctx);
    return NULL;
}

static void case_devices(void)
{
    DevJob jobs[MAX_DEV];
    pthread_t t[MAX_DEV];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)ndev);
    for (int d = 0; d < ndev; d++) {
        jobs[d].dev = d;
        jobs[d].start = &start;
        pthread_create(&t[d], NULL, device_thread, &jobs[d]);
    }
    Worker ws[MAX_DEV];
    for (int d = 0; d < ndev; d++) {
        pthread_join(t[d], NULL);
        ws[d] = jobs[d].w;
    }
    pthread_barrier_destroy(&start);
    char name[64];
    snprintf(name, sizeof name, "devices: %d at once, a thread each", ndev);
    verdict(name, ws, ndev);
}

/* ---------------------------------------------------------------- one context, many threads */

typedef struct {
    int index;
    tilert_context *ctx;
    tilert_module **mods;   /* shared by every thread */
    Worker w;
    pthread_barrier_t *start;
} CtxJob;

static void *context_thread(void *arg)
{
    CtxJob *j = arg;
    Worker *w = &j->w;
    char where[64];
    snprintf(where, sizeof where, "device 0, thread %d of %d", j->index, ONE_CONTEXT_THREADS);
    bool ok = thread_begin(w, j->ctx, 0, where, seed + 77 + (uint64_t)j->index);
    memcpy(w->mod, j->mods, sizeof w->mod);
    pthread_barrier_wait(j->start);   /* the launchers' first load, by all at once */
    if (ok) {
        run_all(w, true);
        check_codes(w, arch_of[0]);
    }
    memset(w->mod, 0, sizeof w->mod);   /* the main thread's to unload */
    thread_end(w);
    return NULL;
}

static void case_one_context(void)
{
    Worker main_w;
    tilert_context *ctx;
    memset(&main_w, 0, sizeof main_w);
    if (tilert_init(0, &ctx) != TILERT_OK) {
        say("FAIL one context: tilert_init(0): %s\n", tilert_last_error());
        failed++;
        return;
    }
    (void)cuCtxSetCurrent(tilert_cu_context(ctx));
    bool ok = worker_begin(&main_w, ctx, 0, "device 0, main thread", seed) &&
              worker_load_modules(&main_w, exdir);
    for (int wl = 0; wl < W_COUNT; wl++)
        launcher_unload((Workload)wl);   /* so that the threads' first launches load */
    CtxJob jobs[ONE_CONTEXT_THREADS];
    pthread_t t[ONE_CONTEXT_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, ONE_CONTEXT_THREADS);
    for (int i = 0; ok && i < ONE_CONTEXT_THREADS; i++) {
        jobs[i] = (CtxJob){.index = i, .ctx = ctx, .mods = main_w.mod, .start = &start};
        pthread_create(&t[i], NULL, context_thread, &jobs[i]);
    }
    Worker ws[ONE_CONTEXT_THREADS + 1];
    int n = 0;
    for (int i = 0; ok && i < ONE_CONTEXT_THREADS; i++) {
        pthread_join(t[i], NULL);
        ws[n++] = jobs[i].w;
    }
    pthread_barrier_destroy(&start);
    worker_end(&main_w);
    ws[n++] = main_w;
    (void)cuCtxSetCurrent(NULL);
    tilert_release(ctx);
    char name[64];
    snprintf(name, sizeof name, "one context: %d threads on device 0", ONE_CONTEXT_THREADS);
    verdict(name, ws, n);
}

/* ---------------------------------------------------------------- two contexts on one device */

/* A context of the program's own on device dev, not left current. NULL on failure (printed). */
static CUcontext own_context(int dev)
{
    CUdevice d;
    CUcontext c = NULL, popped;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUresult r = cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxCreate(&c, &params, 0, d);
    if (r != CUDA_SUCCESS) {
        say("FAIL cuCtxCreate on device %d: %s\n", dev, cu_name(r));
        return NULL;
    }
    (void)cuCtxPopCurrent(&popped);   /* cuCtxCreate made it current */
    return c;
}

typedef struct {
    tilert_context *ctx;
    bool primary;
    Worker w;
    pthread_barrier_t *start;
} TwoJob;

static void *two_thread(void *arg)
{
    TwoJob *j = arg;
    Worker *w = &j->w;
    const char *where = j->primary ? "device 0, primary context" : "device 0, own context";
    bool ok = thread_begin(w, j->ctx, 0, where, seed + (j->primary ? 5 : 6));
    ok = ok && worker_load_modules(w, exdir);
    pthread_barrier_wait(j->start);
    if (ok) {
        run_all(w, j->primary);
        if (!j->primary) {
            /* launchers run in primary contexts only, and say so */
            tilert_status s = vecadd_vecadd_launch(w->stream, 0, 0, 0, 1.0f, 1);
            worker_expect(w, s == TILERT_ERR_CUDA && strstr(tilert_last_error(), "primary context"),
                          "a launcher in a context of the program's own: %s (%s), want "
                          "TILERT_ERR_CUDA naming primary contexts", tilert_status_name(s),
                          tilert_last_error());
        }
    }
    thread_end(w);
    return NULL;
}

static void case_two_contexts(void)
{
    tilert_context *prim = NULL, *mine = NULL;
    CUcontext own = own_context(0);
    Worker check;
    memset(&check, 0, sizeof check);
    snprintf(check.where, sizeof check.where, "device 0, own context");
    if (!own) {
        failed++;
        return;
    }
    tilert_status s1 = tilert_init(0, &prim), s2 = tilert_attach(own, &mine);
    bool ok = worker_expect(&check, s1 == TILERT_OK && s2 == TILERT_OK, "tilert_init/tilert_attach: %s",
                            tilert_last_error());
    ok = ok && worker_expect(&check, tilert_cu_context(mine) == own && tilert_cu_context(prim) != own &&
                                         tilert_device_arch(mine) == arch_of[0],
                             "tilert_attach: context %p arch %d, want %p and %d",
                             (void *)tilert_cu_context(mine), tilert_device_arch(mine), (void *)own,
                             arch_of[0]);
    TwoJob jobs[2];
    pthread_t t[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    for (int i = 0; ok && i < 2; i++) {
        jobs[i] = (TwoJob){.ctx = i ? mine : prim, .primary = i == 0, .start = &start};
        pthread_create(&t[i], NULL, two_thread, &jobs[i]);
    }
    Worker ws[3];
    int n = 0;
    for (int i = 0; ok && i < 2; i++) {
        pthread_join(t[i], NULL);
        ws[n++] = jobs[i].w;
    }
    pthread_barrier_destroy(&start);
    tilert_release(mine);
    tilert_release(prim);
    /* released, the program's context is still the program's */
    unsigned version = 0;
    worker_expect(&check, cuCtxGetApiVersion(own, &version) == CUDA_SUCCESS,
                  "the program's context is gone after tilert_release");
    (void)cuCtxDestroy(own);
    ws[n++] = check;
    verdict("two contexts: primary and the program's own on device 0, at once", ws, n);
}

/* ---------------------------------------------------------------- unload while launching */

typedef struct {
    tilert_context *ctx;
    int dev;
    bool launchers;          /* through the launchers, else modules of its own */
    const char *where;
    atomic_int *stop;
    Worker w;
} LoopJob;

/* Launches until told to stop (and at least a round). */
static void *launching_thread(void *arg)
{
    LoopJob *j = arg;
    Worker *w = &j->w;
    bool ok = thread_begin(w, j->ctx, j->dev, j->where, seed + 31);
    ok = ok && (j->launchers || worker_load_modules(w, exdir));
    for (int i = 0; ok && (i < W_COUNT || !atomic_load(j->stop)); i++)
        ok = run_workload(w, (Workload)(i % W_COUNT), j->launchers ? VIA_LAUNCHER : VIA_MODULE);
    thread_end(w);
    return NULL;
}

/* Loads, launches and unloads, UNLOAD_CYCLES times, in its own context. */
static void *unloading_thread(void *arg)
{
    LoopJob *j = arg;
    Worker *w = &j->w;
    bool ok = thread_begin(w, j->ctx, j->dev, j->where, seed + 37);
    for (int c = 0; ok && c < UNLOAD_CYCLES; c++) {
        if (!j->launchers)
            ok = worker_load_modules(w, exdir);
        for (int wl = 0; ok && wl < W_COUNT; wl++)
            ok = run_workload(w, (Workload)wl, j->launchers ? VIA_LAUNCHER : VIA_MODULE);
        if (j->launchers) {
            if (ok)
                check_codes(w, arch_of[j->dev]);
            for (int wl = 0; wl < W_COUNT; wl++) {
                launcher_unload_context((Workload)wl, j->ctx);
                ok &= worker_expect(w, !strcmp(launcher_code((Workload)wl), "not loaded"),
                                    "%s's launcher still runs \"%s\" after unloading this context",
                                    workload_name[wl], launcher_code((Workload)wl));
            }
        } else {
            worker_unload_modules(w);
        }
    }
    atomic_store(j->stop, 1);
    thread_end(w);
    return NULL;
}

static void unload_pair(const char *name, tilert_context *keep, int keep_dev, const char *keep_where,
                        tilert_context *cycle, int cycle_dev, const char *cycle_where, bool launchers)
{
    atomic_int stop = 0;
    LoopJob a = {.ctx = keep, .dev = keep_dev, .launchers = launchers, .where = keep_where, .stop = &stop};
    LoopJob b = {.ctx = cycle, .dev = cycle_dev, .launchers = launchers, .where = cycle_where, .stop = &stop};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, launching_thread, &a);
    pthread_create(&tb, NULL, unloading_thread, &b);
    pthread_join(tb, NULL);
    pthread_join(ta, NULL);
    Worker ws[2] = {a.w, b.w};
    verdict(name, ws, 2);
}

static void case_unload(void)
{
    tilert_context *c0 = NULL, *c1 = NULL, *mine = NULL;
    CUcontext own = NULL;
    if (tilert_init(0, &c0) != TILERT_OK) {
        say("FAIL unload: tilert_init(0): %s\n", tilert_last_error());
        failed++;
        return;
    }
    /* modules: across devices where there are two, else across two contexts of device 0 */
    if (ndev >= 2 && tilert_init(1, &c1) == TILERT_OK) {
        unload_pair("unload: modules cycled on device 1 while device 0 launches", c0, 0, "device 0",
                    c1, 1, "device 1", false);
        unload_pair("unload: launchers cycled on device 1 while device 0 launches", c0, 0,
                    "device 0", c1, 1, "device 1", true);
        tilert_release(c1);
    } else {
        say("skipped unload: launchers cycled on one device while another launches: one GPU\n");
        skipped++;
    }
    if ((own = own_context(0)) && tilert_attach(own, &mine) == TILERT_OK) {
        unload_pair("unload: modules cycled in a context of device 0 while another launches", c0,
                    0, "device 0, primary context", mine, 0, "device 0, own context", false);
        tilert_release(mine);
    } else {
        failed++;
    }
    if (own)
        (void)cuCtxDestroy(own);

    /* Two handles on the primary context: dropping one must not take the context from the
     * other (whose modules and memory live in it). */
    tilert_context *second = NULL;
    Worker w;
    memset(&w, 0, sizeof w);
    snprintf(w.where, sizeof w.where, "device 0, first handle");
    if (worker_expect(&w, tilert_init(0, &second) == TILERT_OK, "tilert_init(0) again: %s", tilert_last_error())) {
        (void)cuCtxSetCurrent(tilert_cu_context(c0));
        if (worker_begin(&w, c0, 0, "device 0, first handle", seed + 41) && worker_load_modules(&w, exdir)) {
            run_workload(&w, W_MATMUL_F16, VIA_MODULE);
            tilert_release(second);
            for (int wl = 0; wl < W_COUNT; wl++)
                run_workload(&w, (Workload)wl, VIA_MODULE);
        } else {
            tilert_release(second);
        }
        worker_end(&w);
        (void)cuCtxSetCurrent(NULL);
    }
    tilert_release(c0);
    verdict("unload: a second handle on device 0's primary context released mid-use", &w, 1);
}

/* ---------------------------------------------------------------- no current context */

/* A thread with no current context: after an explicit load into the last device's context, a
 * launcher runs there, and the thread still has no context afterwards. */
static void case_no_context(void)
{
    int dev = ndev - 1;
    Worker w;
    memset(&w, 0, sizeof w);
    snprintf(w.where, sizeof w.where, "no current context, loaded on device %d", dev);
    tilert_context *ctx = NULL;
    (void)cuCtxSetCurrent(NULL);
    if (!worker_expect(&w, tilert_init(dev, &ctx) == TILERT_OK, "tilert_init: %s", tilert_last_error())) {
        verdict("no context", &w, 1);
        return;
    }
    vecadd_unload();
    tilert_status s = vecadd_load(ctx);
    worker_expect(&w, s == TILERT_OK, "vecadd_load: %s", tilert_last_error());
    worker_expect(&w, !strcmp(vecadd_code(), expected_code(arch_of[dev])),
                  "with no current context vecadd runs \"%s\", want \"%s\"", vecadd_code(),
                  expected_code(arch_of[dev]));
    enum { N = 5000 };
    static float x[N], y[N], z[N];
    static double ref[N], bound[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 17) - 8, y[i] = (float)(i % 5);
    CUdeviceptr dx = 0, dy = 0, dz = 0;
    CUcontext popped, cur = (CUcontext)1;
    bool ok = cuCtxPushCurrent(tilert_cu_context(ctx)) == CUDA_SUCCESS;
    ok = ok && cuMemAlloc(&dx, sizeof x) == CUDA_SUCCESS && cuMemAlloc(&dy, sizeof y) == CUDA_SUCCESS &&
         cuMemAlloc(&dz, sizeof z) == CUDA_SUCCESS && cuMemcpyHtoD(dx, x, sizeof x) == CUDA_SUCCESS &&
         cuMemcpyHtoD(dy, y, sizeof y) == CUDA_SUCCESS && cuMemsetD32(dz, GPU_POISON, N) == CUDA_SUCCESS &&
         cuCtxSynchronize() == CUDA_SUCCESS;
    (void)cuCtxPopCurrent(&popped);
    if (worker_expect(&w, ok, "setting up buffers on device %d", dev)) {
        s = vecadd_vecadd_launch(0, dx, dy, dz, 2.0f, N);
        (void)cuCtxGetCurrent(&cur);
        worker_expect(&w, s == TILERT_OK, "vecadd with no current context: %s", tilert_last_error());
        worker_expect(&w, cur == NULL, "the launch left a context current on the thread");
        ok = cuCtxPushCurrent(tilert_cu_context(ctx)) == CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS &&
             cuMemcpyDtoH(z, dz, sizeof z) == CUDA_SUCCESS;
        (void)cuCtxPopCurrent(&popped);
        ref_vecadd(x, y, 2.0f, ref, bound, N);
        BoundCheck c = check_bounds(z, ref, bound, N);
        worker_expect(&w, ok && c.bad == 0, "vecadd on device %d with no current context: %zu wrong", dev, c.bad);
    }
    if (cuCtxPushCurrent(tilert_cu_context(ctx)) == CUDA_SUCCESS) {
        gpu_free(dx), gpu_free(dy), gpu_free(dz);
        (void)cuCtxPopCurrent(&popped);
    }
    vecadd_unload();
    tilert_release(ctx);
    char name[80];
    snprintf(name, sizeof name, "no context: launchers run where the last load was (device %d)", dev);
    verdict(name, &w, 1);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        exdir = argv[1];
    const char *r = getenv("MULTIGPU_ROUNDS");
    if (r && atoi(r) > 0)
        rounds = atoi(r);
    tilert_context *probe;
    tilert_status s = tilert_init(0, &probe);
    if (s == TILERT_ERR_NO_DEVICE) {
        printf("skipped: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", tilert_last_error());
        return 0;
    }
    if (s != TILERT_OK) {
        printf("FAIL device setup: %s\n0 passed, 1 failed\n", tilert_last_error());
        return 1;
    }
    tilert_release(probe);
    if (cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev < 1) {
        printf("FAIL cuDeviceGetCount\n0 passed, 1 failed\n");
        return 1;
    }
    if (ndev > MAX_DEV)
        ndev = MAX_DEV;
    seed = rng_seed_from("TILEC_TEST_SEED");
    printf("multigpu: %d device%s, %d rounds, seed %llu (TILEC_TEST_SEED=%llu repeats it)\n", ndev,
           ndev == 1 ? "" : "s", rounds, (unsigned long long)seed, (unsigned long long)seed);
    for (int d = 0; d < ndev; d++) {
        CUdevice dev;
        char name[128] = "?";
        int major = 0, minor = 0;
        if (cuDeviceGet(&dev, d) == CUDA_SUCCESS) {
            (void)cuDeviceGetName(name, sizeof name, dev);
            (void)cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
            (void)cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        }
        arch_of[d] = 10 * major + minor;
        printf("  device %d: %s, sm_%d, launchers load \"%s\"\n", d, name, arch_of[d],
               expected_code(arch_of[d]));
    }
    case_devices();
    case_one_context();
    case_two_contexts();
    case_unload();
    case_no_context();
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
