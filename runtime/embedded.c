/* embedded.c: loading the code that `tilec --emit=c` embeds, once per CUDA context.
 *
 * Generated launchers stay thin (typed arguments in, a tilert_arg array out); the policy lives
 * here, once: which context a launch uses, which of the embedded binaries suits the device, and
 * a small table of loaded modules keyed by CUcontext. One mutex guards every table: loads are
 * rare, and a launch holds it only for a lookup (unless it has to load first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilert_internal.h"

typedef struct {
    CUcontext cu;              /* the key: a primary context */
    tilert_context *ctx;       /* our own reference to it */
    tilert_module *mod;
    tilert_kernel **kernels;   /* by the generated launcher's index */
    char code[48];             /* "cubin sm_90a" / "ptx sm_80 (JIT)" */
} Entry;

struct tilert_embedded_state {
    Entry **e; int n, cap;     /* entries stay put: tilert_embedded_code hands out their text */
    CUcontext fallback;        /* the context of the last explicit load; NULL: device 0 */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* "sm_90a" -> 90 and *arch_specific = true; -1 when it does not read as an arch. */
static int parse_arch(const char *s, bool *arch_specific)
{
    *arch_specific = false;
    if (!s || strncmp(s, "sm_", 3) != 0)
        return -1;
    int v = 0;
    const char *p = s + 3;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && v < 10000)
        v = v * 10 + (*p++ - '0');
    if (*p == 'a' || *p == 'f') {   /* sm_90a, sm_100f: this arch (family) only */
        *arch_specific = true;
        p++;
    }
    return *p ? -1 : v;
}

static Entry *find(tilert_embedded_state *st, CUcontext cu)
{
    for (int i = 0; st && i < st->n; i++)
        if (st->e[i]->cu == cu)
            return st->e[i];
    return NULL;
}

/* The device ordinal of a CUdevice handle (tilert_init takes ordinals). */
static tilert_status ordinal_of(CUdevice dev, int *out)
{
    int count = 0;
    CUresult r = cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return rt_cuda_error("cuDeviceGetCount", r);
    for (int i = 0; i < count; i++) {
        CUdevice d;
        if (cuDeviceGet(&d, i) == CUDA_SUCCESS && d == dev) {
            *out = i;
            return TILERT_OK;
        }
    }
    return rt_error(TILERT_ERR_CUDA, "the current context's device is not among the %d devices",
                    count);
}

/* Loads m's code into ctx: the cubin of the device's exact arch, else the PTX by JIT. */
static tilert_status load_code(tilert_embedded *m, tilert_context *ctx, tilert_module **mod,
                               char *code, size_t code_size)
{
    int dev_arch = tilert_device_arch(ctx);
    for (int i = 0; i < m->ncubins; i++) {
        bool specific;
        if (parse_arch(m->cubins[i].arch, &specific) != dev_arch)
            continue;
        snprintf(code, code_size, "cubin %s", m->cubins[i].arch);
        /* Each arch's code has its own metadata (shared memory, TMA tensor maps); files
         * generated before it was embedded have only the PTX's. */
        const char *meta = m->cubins[i].meta ? m->cubins[i].meta : m->meta;
        return tilert_load_cubin(ctx, m->cubins[i].data, m->cubins[i].size, meta, mod);
    }
    bool specific;
    int ptx_arch = parse_arch(m->ptx_arch, &specific);
    if (m->ptx && ptx_arch > 0 && (specific ? dev_arch == ptx_arch : dev_arch >= ptx_arch)) {
        snprintf(code, code_size, "ptx %s (JIT)", m->ptx_arch);
        return tilert_load_ptx(ctx, m->ptx, mod);
    }
    /* Nothing runs here: say what the device is and what there is. */
    char have[512] = "";
    size_t len = 0;
    for (int i = 0; i < m->ncubins && len < sizeof have; i++)
        len += (size_t)snprintf(have + len, sizeof have - len, "%scubin %s", i ? ", " : "",
                                m->cubins[i].arch);
    if (m->ptx && len < sizeof have)
        snprintf(have + len, sizeof have - len, "%sPTX for %s%s", m->ncubins ? ", " : "",
                 m->ptx_arch, specific ? " only" : " and newer");
    return rt_error(TILERT_ERR_ARCH, "%s: no code for this device (sm_%d); the program embeds: %s",
                    m->name, dev_arch, have[0] ? have : "nothing");
}

static void drop(Entry *e)
{
    free(e->kernels);
    if (e->mod)
        tilert_unload(e->mod);
    if (e->ctx)
        tilert_release(e->ctx);
    free(e);
}

/* The entry for device `ordinal`'s primary context, loading it if it is not there yet. */
static tilert_status entry_for_device(tilert_embedded *m, int ordinal, Entry **out)
{
    tilert_context *ctx;
    tilert_status s = tilert_init(ordinal, &ctx);
    if (s != TILERT_OK)
        return s;
    CUcontext cu = tilert_cu_context(ctx);
    if ((*out = find(m->state, cu))) {
        tilert_release(ctx);   /* the entry holds its own reference */
        return TILERT_OK;
    }
    if (!m->state) {
        m->state = calloc(1, sizeof *m->state);
        if (!m->state) {
            tilert_release(ctx);
            return rt_error(TILERT_ERR_NO_MEMORY, "%s: out of memory", m->name);
        }
    }
    tilert_embedded_state *st = m->state;
    if (st->n == st->cap) {
        int ncap = st->cap ? 2 * st->cap : 4;
        Entry **ne = realloc(st->e, (size_t)ncap * sizeof *ne);
        if (!ne) {
            tilert_release(ctx);
            return rt_error(TILERT_ERR_NO_MEMORY, "%s: out of memory", m->name);
        }
        st->e = ne;
        st->cap = ncap;
    }
    Entry *e = calloc(1, sizeof *e);
    if (e)
        e->kernels = calloc(m->nkernels > 0 ? (size_t)m->nkernels : 1, sizeof *e->kernels);
    if (!e || !e->kernels) {
        free(e);
        tilert_release(ctx);
        return rt_error(TILERT_ERR_NO_MEMORY, "%s: out of memory", m->name);
    }
    e->cu = cu;
    e->ctx = ctx;
    s = load_code(m, ctx, &e->mod, e->code, sizeof e->code);
    for (int i = 0; s == TILERT_OK && i < m->nkernels; i++)
        s = tilert_get_kernel(e->mod, m->kernels[i], &e->kernels[i]);
    if (s != TILERT_OK) {
        drop(e);
        return s;
    }
    st->e[st->n++] = e;
    *out = e;
    return TILERT_OK;
}

/* The entry a launch from this thread uses (see tilert.h), loaded if `load`, else NULL when it
 * is not loaded yet. Called with the lock held. */
static tilert_status current_entry(tilert_embedded *m, bool load, Entry **out)
{
    *out = NULL;
    tilert_status s = rt_driver_init();
    if (s != TILERT_OK)
        return s;
    CUcontext cu = NULL;
    if (cuCtxGetCurrent(&cu) != CUDA_SUCCESS)
        cu = NULL;
    if (!cu)
        cu = m->state ? m->state->fallback : NULL;
    if (cu) {
        if ((*out = find(m->state, cu)) || !load)
            return TILERT_OK;
        CUdevice dev;
        CUresult r = cuCtxGetDevice(&dev);
        if (r != CUDA_SUCCESS)
            return rt_cuda_error("cuCtxGetDevice", r);
        int ordinal;
        if ((s = ordinal_of(dev, &ordinal)) != TILERT_OK)
            return s;
        if ((s = entry_for_device(m, ordinal, out)) != TILERT_OK)
            return s;
        if ((*out)->cu != cu) {
            *out = NULL;
            return rt_error(TILERT_ERR_CUDA,
                            "%s: the CUDA context current on this thread is not the primary "
                            "context of device %d; generated launchers run in primary contexts "
                            "(tilert_init, the CUDA runtime)", m->name, ordinal);
        }
        return TILERT_OK;
    }
    if (!load) {
        /* Device 0's primary context, if some earlier launch loaded there. */
        CUdevice d0;
        if (cuDeviceGet(&d0, 0) == CUDA_SUCCESS)
            for (int i = 0; m->state && i < m->state->n && !*out; i++)
                if (m->state->e[i]->ctx->dev == d0)
                    *out = m->state->e[i];
        return TILERT_OK;
    }
    return entry_for_device(m, 0, out);
}

tilert_status tilert_embedded_load(tilert_embedded *m, tilert_context *ctx)
{
    pthread_mutex_lock(&lock);
    Entry *e;
    tilert_status s;
    if (ctx) {
        int ordinal;
        s = ordinal_of(ctx->dev, &ordinal);
        if (s == TILERT_OK)
            s = entry_for_device(m, ordinal, &e);
        if (s == TILERT_OK)
            m->state->fallback = e->cu;
    } else {
        s = current_entry(m, true, &e);
    }
    pthread_mutex_unlock(&lock);
    return s;
}

tilert_status tilert_embedded_kernel(tilert_embedded *m, int kernel, tilert_kernel **out)
{
    *out = NULL;
    if (kernel < 0 || kernel >= m->nkernels)
        return rt_error(TILERT_ERR_NOT_FOUND, "%s: no kernel number %d", m->name, kernel);
    pthread_mutex_lock(&lock);
    Entry *e;
    tilert_status s = current_entry(m, true, &e);
    if (s == TILERT_OK)
        *out = e->kernels[kernel];
    pthread_mutex_unlock(&lock);
    return s;
}

tilert_status tilert_embedded_launch(tilert_embedded *m, int kernel, CUstream stream,
                                     const tilert_arg *args, int nargs)
{
    tilert_kernel *k;
    tilert_status s = tilert_embedded_kernel(m, kernel, &k);
    if (s != TILERT_OK)
        return s;
    return tilert_launch(k, stream, args, nargs);
}

void tilert_embedded_unload(tilert_embedded *m)
{
    pthread_mutex_lock(&lock);
    tilert_embedded_state *st = m->state;
    m->state = NULL;
    pthread_mutex_unlock(&lock);
    if (!st)
        return;
    for (int i = 0; i < st->n; i++)
        drop(st->e[i]);
    free(st->e);
    free(st);
}

void tilert_embedded_unload_context(tilert_embedded *m, tilert_context *ctx)
{
    if (!ctx)
        return;
    Entry *gone = NULL;
    pthread_mutex_lock(&lock);
    tilert_embedded_state *st = m->state;
    for (int i = 0; st && i < st->n && !gone; i++)
        if (st->e[i]->cu == ctx->ctx) {
            gone = st->e[i];
            memmove(&st->e[i], &st->e[i + 1], (size_t)(st->n - i - 1) * sizeof *st->e);
            st->n--;
        }
    if (gone && st->fallback == gone->cu)
        st->fallback = NULL;
    pthread_mutex_unlock(&lock);
    /* Out of the table, no other thread can reach it: unload without holding up launches
     * elsewhere. */
    if (gone)
        drop(gone);
}

const char *tilert_embedded_code(tilert_embedded *m)
{
    pthread_mutex_lock(&lock);
    Entry *e = NULL;
    current_entry(m, false, &e);
    /* The text lives as long as the entry: until unload. */
    const char *code = e ? e->code : "not loaded";
    pthread_mutex_unlock(&lock);
    return code;
}
