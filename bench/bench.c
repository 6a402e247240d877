/* bench.c: times each example kernel against its reference in one process, with CUDA events.
 *
 * For every row of the workload table (workloads_util.c): fill random inputs (several sets rotated
 * when one set would stay in L2), check the tilec result once against the reference, warm up,
 * then time REPS launches of each, interleaved (tilec, reference, tilec, ...), each timed launch
 * between its own pair of events and right after an untimed launch of the same kernel (so that
 * neither pays for the cache state the other leaves), and report the medians.
 *
 *   bench [--csv FILE] [--ptx-dir DIR] [--only NAME,..] [--shape MxNxK,..] [--reps N]
 *         [--warmup N] [--device N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

typedef struct {
    const char *csv;
    const char *ptx_dir;
    const char *only;
    const char *shapes;    /* --shape: GEMM rows at these sizes instead of the table's */
    int reps, warmup, device;
} Opts;

typedef struct {
    char size[48], ref[48], check[160];
    bool checked;
    double tilec_ms, ref_ms;
    int regs_pred, regs_ptxas, local_bytes, nsets;
} Result;

enum { MAX_SHAPES = 16 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench [options]\n"
            "  --csv FILE      also write the table as CSV\n"
            "  --ptx-dir DIR   where NAME.ptx of each example is (default build/examples)\n"
            "  --only LIST     comma-separated kernel names to run (default: all)\n"
            "  --shape LIST    comma-separated MxNxK: each selected GEMM kernel's first row of\n"
            "                  the table, timed at these sizes instead (other kinds skipped)\n"
            "  --reps N        timed repetitions per kernel, median reported (default 30, >= 20)\n"
            "  --warmup N      untimed launches first (default 5)\n"
            "  --device N      CUDA device (default 0)\n"
            "  --list          print the workloads and exit\n");
}

static bool selected(const Opts *o, const char *name)
{
    size_t n = strlen(name);
    if (!o->only)
        return true;
    for (const char *p = o->only; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return true;
        p += len + (end != NULL);
    }
    return false;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0
        && (s = malloc((size_t)n + 1)) != NULL) {
        if (fread(s, 1, (size_t)n, f) != (size_t)n) {
            free(s);
            s = NULL;
        } else {
            s[n] = '\0';
        }
    }
    fclose(f);
    return s;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

static bool launch(tilert_kernel *k, Run *r, int set)
{
    tilert_arg a[MAX_ARGS];
    int n = kind_of(r->w)->args(r, set, a);
    /* a kernel that adds into C starts from zeros, which the caller pays for */
    if (r->w->zero_c &&
        !cu_ok(cuMemsetD32Async(r->buf[set][G_C], 0, (size_t)(r->w->m * r->w->n), r->stream), "cuMemsetD32Async"))
        return false;
    tilert_status st = tilert_launch(k, r->stream, a, n);
    if (st != TILERT_OK) {
        fprintf(stderr, "bench: %s: launch failed: %s: %s\n", r->w->kernel,
                tilert_status_name(st), tilert_last_error());
        return false;
    }
    return true;
}

/* The registers ptxas really gives the kernel: the driver JIT of the same PTX, queried directly
 * (the runtime's kernel handle is opaque; the JIT result is the same for the same PTX). */
static void actual_registers(const char *ptx, const char *name, Result *res)
{
    CUmodule m;
    CUfunction f;
    int regs = -1, local = -1;
    if (cuModuleLoadData(&m, ptx) != CUDA_SUCCESS)
        return;
    if (cuModuleGetFunction(&f, m, name) == CUDA_SUCCESS) {
        cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    }
    res->regs_ptxas = regs;
    res->local_bytes = local;
    cuModuleUnload(m);
}

/* Times reps launches of tilec and of the reference, interleaved; medians into res. */
static bool time_both(const Opts *o, tilert_kernel *k, Run *r, Result *res)
{
    const Kind *kd = kind_of(r->w);
    int n = o->reps;
    CUevent *ev = calloc((size_t)(4 * n), sizeof *ev);
    float *t = malloc((size_t)n * sizeof *t), *u = malloc((size_t)n * sizeof *u);
    bool ok = ev && t && u;
    int made = 0;
    for (; ok && made < 4 * n; made++)
        ok = cu_ok(cuEventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; ok && i < o->warmup; i++)
        ok = kd->before(r, i % r->nsets) && launch(k, r, i % r->nsets)
             && kd->before(r, i % r->nsets) && kd->reference(r, i % r->nsets);
    /* Each timed launch follows an untimed one of the same kernel on the other input set, so
       that it starts from the cache state its own kind leaves behind (a steady stream of calls).
       Timed right after the other side, a kernel that only reads would pay for writing back the
       lines a copy left dirty in L2 (tens of MiB at the copy's end: about 10 us on an H100),
       a cost that belongs to the copy. */
    for (int i = 0; ok && i < n; i++) {
        int p = 2 * i % r->nsets, s = (2 * i + 1) % r->nsets;   /* sets in turn */
        CUevent *e = ev + 4 * i;
        ok = kd->before(r, p) && launch(k, r, p)
             && kd->before(r, s) && cu_ok(cuEventRecord(e[0], r->stream), "cuEventRecord")
             && launch(k, r, s) && cu_ok(cuEventRecord(e[1], r->stream), "cuEventRecord")
             && kd->before(r, p) && kd->reference(r, p)
             && kd->before(r, s) && cu_ok(cuEventRecord(e[2], r->stream), "cuEventRecord")
             && kd->reference(r, s) && cu_ok(cuEventRecord(e[3], r->stream), "cuEventRecord");
    }
    ok = ok && cu_ok(cuStreamSynchronize(r->stream), "timed runs");
    for (int i = 0; ok && i < n; i++)
        ok = cu_ok(cuEventElapsedTime(&t[i], ev[4 * i], ev[4 * i + 1]), "cuEventElapsedTime")
             && cu_ok(cuEventElapsedTime(&u[i], ev[4 * i + 2], ev[4 * i + 3]), "cuEventElapsedTime");
    if (ok) {
        res->tilec_ms = median(t, n);
        res->ref_ms = median(u, n);
    }
    for (int i = 0; i < made; i++)
        cuEventDestroy(ev[i]);
    free(ev); free(t); free(u);
    return ok;
}

/* One table row: load, set up, check once, time. false: the row is skipped (reason printed). */
static bool run_workload(const Opts *o, tilert_context *ctx, Run *r, size_t l2, Result *res)
{
    const Workload *w = r->w;
    const Kind *kd = kind_of(w);
    char path[1024];
    tilert_module *mod = NULL;
    tilert_kernel *k = NULL;
    tilert_kernel_info info;
    tilert_arg args[MAX_ARGS];
    tilert_status st;
    bool ok = false;

    snprintf(path, sizeof path, "%s/%s.ptx", o->ptx_dir, w->file ? w->file : w->kernel);
    char *ptx = read_file(path);
    if (!ptx) {
        fprintf(stderr, "bench: %s: no %s: row skipped\n", w->kernel, path);
        return false;
    }
    kd->describe(w, res->size, sizeof res->size, res->ref, sizeof res->ref);
    if ((st = tilert_load_ptx(ctx, ptx, &mod)) != TILERT_OK
        || (st = tilert_get_kernel(mod, w->kernel, &k)) != TILERT_OK
        || (st = tilert_kernel_get_info(k, &info)) != TILERT_OK) {
        fprintf(stderr, "bench: %s: %s: %s: row skipped\n", path, tilert_status_name(st),
                tilert_last_error());
        goto out;
    }
    if (info.nargs != kd->args(r, 0, args)) {
        fprintf(stderr, "bench: %s: the kernel takes %d arguments, the %s workload passes %d: "
                "row skipped\n", w->kernel, info.nargs, kd->name, kd->args(r, 0, args));
        goto out;
    }
    res->regs_pred = info.regs;
    res->regs_ptxas = res->local_bytes = -1;
    actual_registers(ptx, w->kernel, res);

    /* Rotate input sets when one set would sit in L2 between launches. */
    size_t set = kd->set_bytes(w);
    r->nsets = set >= 2 * l2 ? 1 : (int)((4 * l2 + set - 1) / set);
    if (r->nsets > MAX_SETS)
        r->nsets = MAX_SETS;
    res->nsets = r->nsets;
    if (!kd->setup(r)) {
        fprintf(stderr, "bench: %s %s: setting up the inputs failed: row skipped\n", w->kernel,
                res->size);
        goto out;
    }
    if (!kd->before(r, 0) || !launch(k, r, 0)
        || !cu_ok(cuStreamSynchronize(r->stream), "first tilec run"))
        goto out;
    res->checked = kd->check(r, res->check, sizeof res->check);
    if (!res->checked)
        fprintf(stderr, "bench: %s %s: result check FAILED: %s\n", w->kernel, res->size,
                res->check);
    ok = time_both(o, k, r, res);
out:
    if (mod)
        tilert_unload(mod);
    free(ptx);
    return ok;
}

static void print_header(void)
{
    printf("%-15s %-16s %9s  %-20s %9s %6s %15s %15s %8s\n", "kernel", "size", "tilec ms",
           "reference", "ref ms", "ratio", "tilec", "reference", "regs");
}

static void perf_text(char *out, size_t len, const Workload *w, double ms)
{
    double work = kind_of(w)->work(w);
    if (kind_of(w)->is_flops)
        snprintf(out, len, "%.2f TFLOP/s", work / (ms * 1e9));
    else
        snprintf(out, len, "%.0f GB/s", work / (ms * 1e6));
}

static void print_row(const Workload *w, const Result *res)
{
    char a[32], b[32], regs[24];
    perf_text(a, sizeof a, w, res->tilec_ms);
    perf_text(b, sizeof b, w, res->ref_ms);
    snprintf(regs, sizeof regs, "%d/%d", res->regs_pred, res->regs_ptxas);
    printf("%-15s %-16s %9.3f  %-20s %9.3f %6.2f %15s %15s %8s%s\n", w->kernel, res->size,
           res->tilec_ms, res->ref, res->ref_ms, res->ref_ms / res->tilec_ms, a, b, regs,
           res->checked ? "" : "  CHECK FAILED");
    fflush(stdout);
}

static void csv_field(FILE *f, const char *s, bool last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static void csv_row(FILE *f, const char *device, const Workload *w, const Result *res, int reps)
{
    const Kind *kd = kind_of(w);
    double work = kd->work(w), scale = kd->is_flops ? 1e9 : 1e6;
    char num[64];
    csv_field(f, device, false);
    csv_field(f, w->kernel, false);
    csv_field(f, res->size, false);
    snprintf(num, sizeof num, "%.5f", res->tilec_ms); csv_field(f, num, false);
    csv_field(f, res->ref, false);
    snprintf(num, sizeof num, "%.5f", res->ref_ms); csv_field(f, num, false);
    snprintf(num, sizeof num, "%.4f", res->ref_ms / res->tilec_ms); csv_field(f, num, false);
    csv_field(f, kd->is_flops ? "TFLOP/s" : "GB/s", false);
    snprintf(num, sizeof num, "%.3f", work / (res->tilec_ms * scale)); csv_field(f, num, false);
    snprintf(num, sizeof num, "%.3f", work / (res->ref_ms * scale)); csv_field(f, num, false);
    snprintf(num, sizeof num, "%d", res->regs_pred); csv_field(f, num, false);
    snprintf(num, sizeof num, "%d", res->regs_ptxas); csv_field(f, num, false);
    snprintf(num, sizeof num, "%d", res->local_bytes); csv_field(f, num, false);
    csv_field(f, res->checked ? "ok" : "FAIL", false);
    csv_field(f, res->check, false);
    snprintf(num, sizeof num, "%d", res->nsets); csv_field(f, num, false);
    snprintf(num, sizeof num, "%d", reps); csv_field(f, num, true);
}

/* MxNxK,.. with positive sizes, at most MAX_SHAPES of them */
static bool shapes_ok(const char *s)
{
    int n = 0;
    while (*s) {
        long long m, nn, k;
        int used = 0;
        if (sscanf(s, "%lldx%lldx%lld%n", &m, &nn, &k, &used) != 3 || m < 1 || nn < 1 || k < 1
            || (s[used] && s[used] != ',') || ++n > MAX_SHAPES)
            return false;
        s += used + (s[used] == ',');
    }
    return n > 0;
}

static bool parse_opts(Opts *o, int argc, char **argv)
{
    o->csv = NULL; o->ptx_dir = "build/examples"; o->only = NULL; o->shapes = NULL;
    o->reps = 30; o->warmup = 5; o->device = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--list")) {
            for (int j = 0; j < nworkloads; j++) {
                char size[48], ref[48];
                kind_of(&workloads[j])->describe(&workloads[j], size, sizeof size, ref, sizeof ref);
                printf("%-15s %-16s %s\n", workloads[j].kernel, size, ref);
            }
            exit(0);
        } else if (v && !strcmp(a, "--csv")) { o->csv = v; i++;
        } else if (v && !strcmp(a, "--ptx-dir")) { o->ptx_dir = v; i++;
        } else if (v && !strcmp(a, "--only")) { o->only = v; i++;
        } else if (v && !strcmp(a, "--shape")) { o->shapes = v; i++;
        } else if (v && !strcmp(a, "--reps")) { o->reps = atoi(v); i++;
        } else if (v && !strcmp(a, "--warmup")) { o->warmup = atoi(v); i++;
        } else if (v && !strcmp(a, "--device")) { o->device = atoi(v); i++;
        } else {
            fprintf(stderr, "bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return false;
        }
    }
    if (o->shapes && !shapes_ok(o->shapes)) {
        fprintf(stderr, "bench: --shape wants MxNxK[,MxNxK..] (positive, at most %d): '%s'\n",
                MAX_SHAPES, o->shapes);
        return false;
    }
    if (o->reps < 20) {
        fprintf(stderr, "bench: --reps %d is below 20: using 20\n", o->reps);
        o->reps = 20;
    }
    if (o->warmup < 1)
        o->warmup = 1;
    return true;
}

/* --shape: the rows of workload i at each listed size, where i is the first GEMM row of its
 * kernel (a kernel's later rows would repeat it); 0 rows otherwise. Sizes were checked by
 * parse_opts. */
static int shape_rows(const Opts *o, int i, Workload *rows)
{
    const Workload *w = &workloads[i];
    int n = 0;
    if (w->kind != K_GEMM)
        return 0;
    for (int j = 0; j < i; j++)
        if (!strcmp(workloads[j].kernel, w->kernel))
            return 0;
    for (const char *p = o->shapes; *p && n < MAX_SHAPES;) {
        long long m, nn, k;
        int used = 0;
        if (sscanf(p, "%lldx%lldx%lld%n", &m, &nn, &k, &used) != 3)
            break;
        rows[n] = *w;
        rows[n].m = m; rows[n].n = nn; rows[n].k = k;
        n++;
        p += used + (p[used] == ',');
    }
    return n;
}

int main(int argc, char **argv)
{
    Opts o;
    tilert_context *ctx = NULL;
    char device[128] = "unknown device";
    CUdevice dev;
    int l2 = 50 << 20, failed = 0;
    FILE *csv = NULL;
    Run r;

    if (!parse_opts(&o, argc, argv))
        return 2;
    tilert_status st = tilert_init(o.device, &ctx);
    if (st != TILERT_OK) {
        printf("bench: no GPU (%s: %s): kernel timings skipped\n", tilert_status_name(st),
               tilert_last_error());
        return 0;
    }
    memset(&r, 0, sizeof r);
    if (!cu_ok(cuCtxSetCurrent(tilert_cu_context(ctx)), "cuCtxSetCurrent")
        || !cu_ok(cuCtxGetDevice(&dev), "cuCtxGetDevice")
        || !cu_ok(cuStreamCreate(&r.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return 1;
    cuDeviceGetName(device, sizeof device, dev);
    cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    if (cublasCreate(&r.blas) != CUBLAS_STATUS_SUCCESS
        || cublasSetStream(r.blas, r.stream) != CUBLAS_STATUS_SUCCESS
        || cublasSetMathMode(r.blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench: cuBLAS initialisation failed\n");
        return 1;
    }
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        perror(o.csv);
        return 1;
    }
    if (csv)
        fputs("device,kernel,size,tilec_ms,reference,ref_ms,ratio,unit,tilec_perf,ref_perf,"
              "regs_pred,regs_ptxas,local_bytes,check,check_detail,sets,reps\n", csv);
    printf("%s, L2 %d MiB; medians of %d runs; ratio = ref ms / tilec ms (> 1: tilec faster)\n",
           device, l2 >> 20, o.reps);
    print_header();
    for (int i = 0; i < nworkloads; i++) {
        Workload shaped[MAX_SHAPES];
        int nrows = 1;
        if (!selected(&o, workloads[i].kernel))
            continue;
        shaped[0] = workloads[i];
        if (o.shapes && !(nrows = shape_rows(&o, i, shaped)))
            continue;
        for (int j = 0; j < nrows; j++) {
            const Workload *w = &shaped[j];
            Result res;
            memset(&res, 0, sizeof res);
            r.w = w;
            if (run_workload(&o, ctx, &r, (size_t)l2, &res)) {
                print_row(w, &res);
                if (csv)
                    csv_row(csv, device, w, &res, o.reps);
                failed += !res.checked;
            }
            run_free(&r);
        }
    }
    if (csv)
        fclose(csv);
    cublasDestroy(r.blas);
    cuStreamDestroy(r.stream);
    tilert_release(ctx);
    if (failed)
        fprintf(stderr, "bench: %d result check(s) failed: see above\n", failed);
    return failed ? 1 : 0;
}
