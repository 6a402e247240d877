/* timing.c: the surviving candidates on the GPU, timed with the benchmark's method.
 *
 * As bench/bench.c does: random inputs (several sets rotated when one set would stay in L2, so
 * no launch finds its data there), a warm-up, then --reps launches of each candidate, each
 * between its own pair of events, and the median. The candidates are interleaved, each round
 * in another order, so that clock and temperature drift falls on all of them alike. Every
 * launch goes through tilert_launch, with its checks: a candidate whose assume() facts refuse a
 * shape is not applicable there (its row says why), never a crash. */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include "tilert.h"
#include "tune.h"

enum { MAX_SETS = 16 };
/* Sets larger than this are not kept on the host for the result check (it would need three
 * copies). */
#define CHECK_MAX_BYTES ((size_t)4 << 30)

static bool cu_ok(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "CUDA_ERROR_UNKNOWN";
    fprintf(stderr, "tilec-tune: error: %s: %s\n", what, name);
    return false;
}

static int cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

static double median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    Buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&b, chunk, n);
    fclose(f);
    return b.s;
}

/* The device buffers of one size set: nsets copies of every tensor, and the arguments of each. */
typedef struct {
    int nsets, nin;
    Input in[MAX_KARGS];
    CUdeviceptr buf[MAX_SETS][MAX_KARGS];
    tilert_arg args[MAX_SETS][MAX_KARGS];
    /* the result check (check.c): set 0 as filled, and what the defaults wrote (NULL: a tensor
     * they left alone, an input); no host0 when one set is too large to keep a copy */
    void *host0[MAX_KARGS], *ref[MAX_KARGS];
} Inputs;

static void inputs_free(Inputs *x)
{
    for (int s = 0; s < x->nsets; s++)
        for (int i = 0; i < x->nin; i++)
            if (x->buf[s][i]) {
                cuMemFree(x->buf[s][i]);
                x->buf[s][i] = 0;
            }
    for (int i = 0; i < x->nin; i++) {
        free(x->host0[i]);
        free(x->ref[i]);
        x->host0[i] = x->ref[i] = NULL;
    }
    x->nsets = 0;
}

static tilert_arg scalar_arg(const Input *in)
{
    tilert_arg a;
    memset(&a, 0, sizeof a);
    switch (in->type) {
    case TY_F32: a.kind = TILERT_ARG_F32; a.v.f32 = (float)in->fval; break;
    case TY_F16: a.kind = TILERT_ARG_F16BITS; a.v.bits16 = half_bits((float)in->fval, false); break;
    case TY_BF16: a.kind = TILERT_ARG_BF16BITS; a.v.bits16 = half_bits((float)in->fval, true); break;
    case TY_U32: a.kind = TILERT_ARG_U32; a.v.u32 = (uint32_t)in->ival; break;
    case TY_I64: a.kind = TILERT_ARG_I64; a.v.i64 = in->ival; break;
    case TY_BOOL: a.kind = TILERT_ARG_BOOL; a.v.b = in->ival != 0; break;
    default: a.kind = TILERT_ARG_I32; a.v.i32 = (int32_t)in->ival; break;
    }
    return a;
}

/* Allocates and fills the sets: as many as cover 4x the L2 cache when one set is under 2x it
 * (the benchmark's rule), as memory allows. false with the reason printed. */
static bool inputs_setup(Inputs *x, const SizeSet *set, size_t l2)
{
    size_t set_bytes = 0, largest = 0;
    int64_t bound = INT32_MAX;
    for (int i = 0; i < set->n; i++)
        if (set->value[i] < bound)
            bound = set->value[i];
    for (int i = 0; i < x->nin; i++)
        if (x->in[i].kind == IN_TENSOR) {
            size_t b = (size_t)x->in[i].elems * (size_t)type_size(x->in[i].type);
            set_bytes += b;
            if (b > largest)
                largest = b;
        }
    int nsets = set_bytes >= 2 * l2 || set_bytes == 0 ? 1 : (int)((4 * l2 + set_bytes - 1) / set_bytes);
    if (nsets > MAX_SETS)
        nsets = MAX_SETS;
    size_t free_b = 0, total_b = 0;
    if (cuMemGetInfo(&free_b, &total_b) == CUDA_SUCCESS && set_bytes > 0) {
        size_t fit = free_b / 10 * 8 / set_bytes;    /* leave a fifth for the modules and driver */
        if (fit < 1) {
            fprintf(stderr, "tilec-tune: error: --sizes %s: the tensors need %zu MiB, the device "
                    "has %zu MiB free\n", set->text, set_bytes >> 20, free_b >> 20);
            return false;
        }
        if ((size_t)nsets > fit)
            nsets = (int)fit;
    }
    void *host = malloc(largest ? largest : 1);
    if (!host) {
        fprintf(stderr, "tilec-tune: error: out of memory\n");
        return false;
    }
    bool ok = true;
    x->nsets = nsets;
    for (int s = 0; s < nsets && ok; s++)
        for (int i = 0; i < x->nin && ok; i++) {
            const Input *in = &x->in[i];
            if (in->kind == IN_SIZE) {
                x->args[s][i] = tilert_i32((int32_t)in->ival);
                continue;
            }
            if (in->kind == IN_SCALAR) {
                x->args[s][i] = scalar_arg(in);
                continue;
            }
            size_t bytes = (size_t)in->elems * (size_t)type_size(in->type);
            ok = cu_ok(cuMemAlloc(&x->buf[s][i], bytes ? bytes : 16), "cuMemAlloc");
            if (ok && bytes) {
                /* set 0 is kept for the result check, when it is not huge */
                void *dst = s == 0 && set_bytes <= CHECK_MAX_BYTES ? malloc(bytes) : NULL;
                x->host0[i] = dst;
                if (!dst)
                    dst = host;
                fill_host(dst, in->elems, in->type, 0x7ead5eedull + (uint64_t)(s * MAX_KARGS + i), bound);
                ok = cu_ok(cuMemcpyHtoD(x->buf[s][i], dst, bytes), "cuMemcpyHtoD");
            }
            x->args[s][i] = tilert_ptr(x->buf[s][i]);
        }
    free(host);
    return ok;
}

/* Can the result check run at this set: a host copy of every tensor of set 0? */
static bool can_check(const Inputs *x)
{
    for (int i = 0; i < x->nin; i++)
        if (x->in[i].kind == IN_TENSOR && x->in[i].elems > 0 && !x->host0[i])
            return false;
    return true;
}

static size_t tensor_bytes(const Input *in)
{
    return (size_t)in->elems * (size_t)type_size(in->type);
}

/* After the defaults' launch on set 0: their outputs (the tensors that changed) are kept as the
 * reference. false: no reference (the note says why). */
static bool keep_reference(Inputs *x)
{
    for (int i = 0; i < x->nin; i++) {
        if (x->in[i].kind != IN_TENSOR || x->in[i].elems == 0)
            continue;
        size_t bytes = tensor_bytes(&x->in[i]);
        void *got = malloc(bytes);
        if (!got || !cu_ok(cuMemcpyDtoH(got, x->buf[0][i], bytes), "cuMemcpyDtoH")) {
            free(got);
            return false;
        }
        if (memcmp(got, x->host0[i], bytes))
            x->ref[i] = got;
        else
            free(got);
    }
    return true;
}

/* Set 0's outputs back to their initial contents, so the next candidate starts where the
 * defaults did (a kernel may accumulate into its output). */
static bool restore_outputs(const Inputs *x)
{
    for (int i = 0; i < x->nin; i++)
        if (x->ref[i] && !cu_ok(cuMemcpyHtoD(x->buf[0][i], x->host0[i], tensor_bytes(&x->in[i])),
                                "cuMemcpyHtoD"))
            return false;
    return true;
}

/* The candidate's outputs against the defaults'; why says which tensor and element differ. */
static bool compare_outputs(const Inputs *x, char *why, size_t why_size, bool *ok)
{
    for (int i = 0; i < x->nin; i++) {
        if (!x->ref[i])
            continue;
        size_t bytes = tensor_bytes(&x->in[i]);
        void *got = malloc(bytes);
        char detail[200];
        if (!got || !cu_ok(cuMemcpyDtoH(got, x->buf[0][i], bytes), "cuMemcpyDtoH")) {
            free(got);
            *ok = false;
            return true;
        }
        bool same = same_result(got, x->ref[i], x->in[i].elems, x->in[i].type, detail, sizeof detail);
        free(got);
        if (!same) {
            snprintf(why, why_size, "wrong result: %s %s", x->in[i].name, detail);
            return false;
        }
    }
    return true;
}

/* A trial launch of each candidate at set 0, the defaults first: those the launcher refuses are
 * not applicable at this shape, those whose outputs differ from the defaults' are wrong there.
 * false on an error on the GPU, which leaves the context unusable. */
static bool trial(Candidate *cs, int n, tilert_kernel **ks, int t, Inputs *x, CUstream stream,
                  const SizeSet *set)
{
    bool check = can_check(x), have_ref = false;
    for (int c = 0; c < n; c++) {
        if (!ks[c])
            continue;
        if (have_ref && !restore_outputs(x))
            return false;
        tilert_status st = tilert_launch(ks[c], stream, x->args[0], x->nin);
        if (st != TILERT_OK) {
            snprintf(cs[c].na[t], sizeof cs[c].na[t], "%s: %s", tilert_status_name(st), tilert_last_error());
            cs[c].ms[t] = -1;
            continue;
        }
        CUresult r = cuStreamSynchronize(stream);
        if (r != CUDA_SUCCESS) {
            const char *name = NULL;
            cuGetErrorName(r, &name);
            fprintf(stderr, "\ntilec-tune: error: %s failed on the GPU at %s: %s; no timing is "
                    "possible after it\n", cs[c].label, set->text, name ? name : "CUDA error");
            return false;
        }
        cs[c].ms[t] = 0;
        bool ok = true;
        if (check && cs[c].is_default) {
            have_ref = keep_reference(x);
        } else if (have_ref && !compare_outputs(x, cs[c].na[t], sizeof cs[c].na[t], &ok)) {
            cs[c].ms[t] = -1;
        }
        if (!ok)
            return false;
    }
    if (!have_ref)
        fprintf(stderr, "tilec-tune: note: at %s the results are not compared: %s\n", set->text,
                !check ? "the inputs are too large to keep a copy"
                       : "the defaults do not run there");
    return true;
}

/* Warm-up, then reps rounds of one timed launch of each applicable candidate. */
static bool time_set(const TuneArgs *a, Candidate *cs, int n, tilert_kernel **ks, int t, Inputs *x,
                     CUstream stream, int *round_done, int rounds_total)
{
    int act[MAX_CANDIDATES], nact = 0;
    for (int c = 0; c < n; c++)
        if (ks[c] && cs[c].ms[t] >= 0)
            act[nact++] = c;
    if (nact == 0)
        return true;
    CUevent *ev = calloc((size_t)(2 * nact), sizeof *ev);
    float *times = malloc(sizeof *times * (size_t)nact * (size_t)a->reps);
    bool ok = ev && times;
    int made = 0, launch = 0;
    for (; ok && made < 2 * nact; made++)
        ok = cu_ok(cuEventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate");
    for (int w = 0; ok && w < a->warmup; w++)
        for (int j = 0; ok && j < nact; j++)
            ok = tilert_launch(ks[act[j]], stream, x->args[launch++ % x->nsets], x->nin) == TILERT_OK;
    for (int r = 0; ok && r < a->reps; r++) {
        for (int j = 0; ok && j < nact; j++) {
            int c = (j + r) % nact;     /* each round starts with another candidate */
            ok = cu_ok(cuEventRecord(ev[2 * c], stream), "cuEventRecord")
                 && tilert_launch(ks[act[c]], stream, x->args[launch++ % x->nsets], x->nin) == TILERT_OK
                 && cu_ok(cuEventRecord(ev[2 * c + 1], stream), "cuEventRecord");
        }
        ok = ok && cu_ok(cuStreamSynchronize(stream), "the timed launches");
        for (int c = 0; ok && c < nact; c++)
            ok = cu_ok(cuEventElapsedTime(&times[(size_t)c * (size_t)a->reps + (size_t)r],
                                          ev[2 * c], ev[2 * c + 1]), "cuEventElapsedTime");
        progress(a->progress, "timing", ++*round_done, rounds_total);
    }
    if (!ok && tilert_last_error()[0])
        fprintf(stderr, "\ntilec-tune: error: %s\n", tilert_last_error());
    for (int c = 0; ok && c < nact; c++)
        cs[act[c]].ms[t] = median(times + (size_t)c * (size_t)a->reps, a->reps);
    for (int i = 0; i < made; i++)
        cuEventDestroy(ev[i]);
    free(ev);
    free(times);
    return ok;
}

bool time_candidates(const TuneArgs *a, const Source *s, Candidate *cs, int n, bool *skipped,
                     char *device, size_t device_size)
{
    tilert_context *ctx = NULL;
    *skipped = false;
    for (int c = 0; c < n; c++)
        for (int t = 0; t < a->nsizesets; t++) {
            cs[c].ms[t] = -1;
            snprintf(cs[c].na[t], sizeof cs[c].na[t], "not timed");
        }
    tilert_status st = tilert_init(a->device, &ctx);
    if (st != TILERT_OK) {
        fprintf(stderr, "tilec-tune: no GPU (%s: %s): timings skipped\n", tilert_status_name(st),
                tilert_last_error());
        *skipped = true;
        return true;
    }
    CUstream stream = NULL;
    CUdevice dev;
    int l2 = 50 << 20;
    if (!cu_ok(cuCtxSetCurrent(tilert_cu_context(ctx)), "cuCtxSetCurrent")
        || !cu_ok(cuCtxGetDevice(&dev), "cuCtxGetDevice")
        || !cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) {
        tilert_release(ctx);
        return false;
    }
    cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    if (cuDeviceGetName(device, (int)device_size, dev) != CUDA_SUCCESS)
        snprintf(device, device_size, "device %d", a->device);

    /* Load every live candidate once: the driver's JIT of its PTX. */
    tilert_module **mods = calloc((size_t)n, sizeof *mods);
    tilert_kernel **ks = calloc((size_t)n, sizeof *ks);
    bool ok = mods && ks;
    for (int c = 0; ok && c < n; c++) {
        progress(a->progress, "loading (the driver compiles each PTX)", c, n);
        if (!cs[c].alive)
            continue;
        char *ptx = read_text(cs[c].ptx_path);
        tilert_kernel_info info;
        if (!ptx) {
            snprintf(cs[c].why, sizeof cs[c].why, "cannot read %s", cs[c].ptx_path);
        } else if ((st = tilert_load_ptx(ctx, ptx, &mods[c])) != TILERT_OK
                   || (st = tilert_get_kernel(mods[c], s->k->name, &ks[c])) != TILERT_OK
                   || (st = tilert_kernel_get_info(ks[c], &info)) != TILERT_OK) {
            snprintf(cs[c].why, sizeof cs[c].why, "the driver cannot load it: %s: %.300s",
                     tilert_status_name(st), tilert_last_error());
        }
        free(ptx);
        if (cs[c].why[0]) {
            cs[c].alive = false;
            ks[c] = NULL;
        }
    }

    progress(a->progress, "loading (the driver compiles each PTX)", n, n);
    int rounds_total = a->nsizesets * a->reps, round_done = 0;
    Inputs *x = calloc(1, sizeof *x);
    ok = ok && x;
    for (int t = 0; ok && t < a->nsizesets; t++) {
        char why[300];
        if (!max_inputs(a, s, cs, n, &a->sizes[t], x->in, &x->nin, why, sizeof why)) {
            fprintf(stderr, "tilec-tune: error: --sizes %s: %s\n", a->sizes[t].text, why);
            ok = false;
            break;
        }
        ok = inputs_setup(x, &a->sizes[t], (size_t)l2)
             && trial(cs, n, ks, t, x, stream, &a->sizes[t])
             && time_set(a, cs, n, ks, t, x, stream, &round_done, rounds_total);
        inputs_free(x);
    }
    progress(a->progress, "timing", rounds_total, rounds_total);
    free(x);
    for (int c = 0; c < n; c++)
        if (mods && mods[c])
            tilert_unload(mods[c]);
    free(mods);
    free(ks);
    cuStreamDestroy(stream);
    cuCtxSetCurrent(NULL);
    tilert_release(ctx);
    return ok;
}
